"""``ConsoleApp``: the read-only web console of one broker, a WSGI application.

Caller: the observability HTTP server's threads, one request each. Affects: nothing; every
page reads the broker in this process (its store, control plane, topic meter, history and the
media driver's counters). There is no action that changes anything: creating topics or
resetting offsets waits for the broker's credentials.

Routes (all ``GET``): ``/console/`` and ``/console/<page>`` (whole pages, see
``_pages.PAGES``), ``/console/fragments/<name>`` (the tables htmx reloads),
``/console/api/series`` (the charts' JSON), ``/console/static/<file>`` (the vendored htmx and
uPlot, and the console's own script and style). Anything else is 404.
"""

from __future__ import annotations

import html
import json
import mimetypes
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qs

from aeromq.broker._errors import BrokerError
from aeromq.broker.observability import _pages
from aeromq.broker.observability._console_admin import ConsoleAdmin
from aeromq.broker.observability._history import History
from aeromq.broker.processor.messages import stored_message_pb
from aeromq.proto import admin_pb2
from aeromq.transport.tools.counter_snapshot import read_counters

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from aeromq.broker.broker import Broker
    from aeromq.broker.processor.admin import ControlPlane
    from aeromq.broker.store import MessageStore

__all__ = ["STATIC_DIR", "ConsoleApp"]

STATIC_DIR: Final = Path(__file__).with_name("static")
_BROWSE_MAX: Final = 32
_ACTIONS_PREFIX: Final = "/console/actions/"


class ConsoleApp:
    """The console of ``broker`` (running), its charts from ``history`` (see module)."""

    def __init__(self, broker: Broker, history: History) -> None:
        self._broker = broker
        self._history = history
        self._static = {p.name: p for p in STATIC_DIR.iterdir() if p.is_file()}
        self._admin = ConsoleAdmin(broker)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        query = {k: v[0].strip() for k, v in parse_qs(str(environ.get("QUERY_STRING", ""))).items()}
        method = environ.get("REQUEST_METHOD", "GET")
        if method == "POST" and path.startswith(_ACTIONS_PREFIX):
            status, text = self._admin.handle(path.removeprefix(_ACTIONS_PREFIX), environ)
            return _respond(
                start_response,
                status,
                "text/plain; charset=utf-8",
                text.encode(),
                headers=[("WWW-Authenticate", 'Basic realm="aeromq console"')]
                if status.startswith("401")
                else [],
            )
        if method not in ("GET", "HEAD"):
            return _respond(start_response, "405 Method Not Allowed", "text/plain", b"read-only")
        rest = path.removeprefix("/console/") if path.startswith("/console/") else None
        if rest is None:
            return _respond(start_response, "404 Not Found", "text/plain", b"not found")
        if rest.startswith("static/"):
            return self._static_file(rest.removeprefix("static/"), start_response)
        if rest == "api/series":
            data = json.dumps(self._history.series()).encode()
            return _respond(start_response, "200 OK", "application/json", data)
        fragments = self._fragments()
        if rest.startswith("fragments/"):
            render = fragments.get(rest.removeprefix("fragments/"))
            if render is None:
                return _respond(start_response, "404 Not Found", "text/plain", b"not found")
            return _html(start_response, render(query))
        pages = {name for name, _ in _pages.PAGES}
        if rest not in pages:
            return _respond(start_response, "404 Not Found", "text/plain", b"not found")
        body = self._page(rest, query, fragments)
        return _html(start_response, _pages.page(rest, self._broker.config.broker_name, body))

    # -- pages ---------------------------------------------------------------------------------

    def _fragments(self) -> dict[str, Callable[[dict[str, str]], str]]:
        return {
            "overview": lambda q: self._overview(),
            "topics": lambda q: self._topics(),
            "groups": lambda q: self._groups(),
            "messages": self._messages,
            "cluster": lambda q: self._cluster(),
            "transport": lambda q: self._transport(),
        }

    def _page(
        self,
        name: str,
        query: dict[str, str],
        fragments: dict[str, Callable[[dict[str, str]], str]],
    ) -> str:
        if name == "":
            charts = (
                "<h2>Rates</h2><div class=chart id=rates-chart></div>"
                "<h2>Lag</h2><div class=chart id=lag-chart></div>"
            )
            return _pages.live("overview", self._overview()) + charts
        if name == "messages":
            results = self._messages(query)
            return _pages.messages_form(query) + f"<div id=results>{results}</div>"
        actions = _pages.admin_form(name) if self._admin.enabled else ""
        return _pages.live(name, fragments[name](query)) + actions

    def _control(self) -> tuple[MessageStore, ControlPlane]:
        store, control = self._broker.store, self._broker.control_plane
        if store is None or control is None:
            raise BrokerError("the broker is not running")
        return store, control

    def _overview(self) -> str:
        _, control = self._control()
        stats = control.stats.broker_stats()
        rows: list[tuple[str, _pages.Cell]] = [
            ("broker", stats.broker_name),
            ("cluster", stats.cluster_name),
            ("gRPC", self._broker.grpc_address),
            ("uptime (s)", stats.uptime_ms // 1000),
            ("topics", stats.topic_count),
            ("groups", stats.group_count),
            ("consumers", stats.consumer_count),
            ("commit log bytes", stats.commit_log_max_offset - max(0, stats.commit_log_min_offset)),
            ("messages stored", stats.counters.get("send.messages", 0)),
            ("messages pulled", stats.counters.get("pull.messages", 0)),
            ("sessions", stats.counters.get("session.live", 0)),
        ]
        return _pages.table("broker", ("", "now"), rows, "")

    def _topics(self) -> str:
        store, _ = self._control()
        traffic = {t.topic: t for t in self._broker.meter.snapshot()}
        rates = self._latest_rates()
        rows = []
        for config in sorted(store.topic_config.topics(), key=lambda c: c.topic_name):
            name = config.topic_name
            queues = max(config.read_queue_nums, config.write_queue_nums)
            stored = sum(store.get_max_offset(name, q) for q in range(queues))
            seen = traffic.get(name)
            rows.append(
                (
                    name,
                    config.write_queue_nums,
                    config.read_queue_nums,
                    stored,
                    0 if seen is None else seen.messages_in,
                    0 if seen is None else seen.messages_out,
                    rates.get(f"{name} in", 0.0),
                    rates.get(f"{name} out", 0.0),
                )
            )
        headers = (
            "topic",
            "write queues",
            "read queues",
            "messages (max offsets)",
            "in since start",
            "out since start",
            "in / s",
            "out / s",
        )
        return _pages.table("topics", headers, rows, "no topic yet")

    def _latest_rates(self) -> dict[str, float]:
        rates = self._history.series()["rates"]
        return {name: line[-1] for name, line in rates.items() if line}

    def _groups(self) -> str:
        _, control = self._control()
        parts = []
        for group in control.offsets.known_groups():
            try:
                progress = control.offsets.consumer_progress(group)
            except BrokerError:
                continue
            members = list(control.groups.membership(group).consumer_ids)
            rows = [
                (q.topic, q.queue_id, q.consumer_offset, q.broker_offset, q.lag)
                for q in progress.queues
            ]
            parts.append(
                f"<h2>{html.escape(group)}: lag {progress.total_lag}</h2>"
                f"<p>members: {html.escape(', '.join(members) or 'none online')}</p>"
                + _pages.table(
                    f"group-{group}",
                    ("topic", "queue", "committed", "max offset", "lag"),
                    rows,
                    "no queue",
                )
            )
        return "".join(parts) or "<p class=empty>no consumer group yet</p>"

    def _messages(self, query: dict[str, str]) -> str:
        store, control = self._control()
        topic, key, message_id = query.get("topic", ""), query.get("key", ""), query.get("id", "")
        queue, offset = query.get("queue", ""), query.get("offset", "")
        try:
            if message_id:
                request = admin_pb2.QueryMessageRequest(message_id=message_id)
            elif topic and key:
                request = admin_pb2.QueryMessageRequest(topic=topic, key=key)
            elif topic and queue and offset:
                found = store.get_messages(topic, int(queue), int(offset), _BROWSE_MAX).messages
                return _pages.message_results([stored_message_pb(m) for m in found], None, True)
            else:
                return _pages.message_results([], None, bool(query))
            answer = control.query_message(request)
        except ValueError:
            return _pages.message_results([], f"queue and offset must be numbers: {query}", True)
        if answer.status.code:
            return _pages.message_results([], answer.status.message, True)
        return _pages.message_results(list(answer.messages), None, True)

    def _cluster(self) -> str:
        """The name server's view when the broker registers with one, else its own."""
        _, control = self._control()
        registrar = self._broker.registrar
        source = "this broker"
        clusters = control.routes.list_clusters()
        if registrar is not None:
            try:
                clusters = registrar.list_clusters()
                source = f"the name server {registrar.namesrv_address}"
            except BrokerError as exc:
                source = f"this broker (the name server did not answer: {exc})"
        rows = [
            (
                cluster.cluster_name,
                broker.broker_name,
                broker.endpoints.grpc_address,
                broker.endpoints.udp_channel or "none",
                broker.topic_count,
            )
            for cluster in clusters
            for broker in cluster.brokers
        ]
        headers = ("cluster", "broker", "gRPC", "UDP ingress", "topics")
        seen = f"<p id=cluster-source>as {html.escape(source)} sees it</p>"
        return seen + _pages.table("brokers", headers, rows, "no broker")

    def _transport(self) -> str:
        aeron = self._broker.aeron
        if aeron is None:
            return "<p class=empty>no media driver</p>"
        rows = [
            (c.counter_id, c.type_id, c.value, c.label)
            for c in read_counters(aeron.counters_reader)
        ]
        return _pages.table("counters", ("id", "type", "value", "label"), rows, "no counter")

    def _static_file(self, name: str, start_response: StartResponse) -> Iterable[bytes]:
        path = self._static.get(name)
        if path is None:
            return _respond(start_response, "404 Not Found", "text/plain", b"not found")
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return _respond(start_response, "200 OK", kind, path.read_bytes(), cache=True)


def _html(start_response: StartResponse, text: str) -> Iterable[bytes]:
    return _respond(start_response, "200 OK", "text/html; charset=utf-8", text.encode())


def _respond(
    start_response: StartResponse,
    status: str,
    kind: str,
    body: bytes,
    *,
    cache: bool = False,
    headers: Iterable[tuple[str, str]] = (),
) -> Iterable[bytes]:
    headers = [("Content-Type", kind), ("Content-Length", str(len(body))), *headers]
    headers.append(("Cache-Control", "max-age=300" if cache else "no-store"))
    start_response(status, headers)
    return [body]
