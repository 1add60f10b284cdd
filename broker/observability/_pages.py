"""The web console's HTML, rendered on the server from plain data: no I/O here.

Caller: :mod:`~broker.observability._console`, which gathers the data. Every page is one
layout (a header of links, a ``<main>``) around tables; a table that changes is a *fragment*
the page reloads with htmx (``hx-get`` every 2 s), and the message browser's form asks for its
results fragment the same way (it also works as a plain form without script). Every value is
escaped (``html.escape``); message bodies are cut to ``BODY_PREVIEW_CHARS``.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Sequence
from typing import Final

from aeromq.proto import admin_pb2

__all__ = [
    "BODY_PREVIEW_CHARS",
    "PAGES",
    "live",
    "message_results",
    "messages_form",
    "page",
    "table",
]

BODY_PREVIEW_CHARS: Final = 200
REFRESH: Final = "every 2s"
PAGES: Final = (
    ("", "Overview"),
    ("topics", "Topics"),
    ("groups", "Groups"),
    ("messages", "Messages"),
    ("cluster", "Cluster"),
    ("transport", "Transport"),
)
"""(path under ``/console/``, title) of every page, in the header's order."""

Cell = str | int | float | None


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def page(current: str, broker_name: str, body: str) -> str:
    """A whole page: the layout around ``body`` (already HTML)."""
    links = "".join(
        f'<a href="/console/{path}"{" class=here" if path == current else ""}>{_e(title)}</a>'
        for path, title in PAGES
    )
    title = dict(PAGES).get(current, "")
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>aeromq {_e(broker_name)}: {_e(title)}</title>"
        '<link rel=stylesheet href="/console/static/uPlot.min.css">'
        '<link rel=stylesheet href="/console/static/console.css">'
        '<script src="/console/static/htmx.min.js"></script>'
        '<script src="/console/static/uPlot.iife.min.js"></script>'
        '<script src="/console/static/console.js"></script>'
        f"</head><body><header><span class=name>aeromq {_e(broker_name)}</span>{links}"
        '<a href="/metrics">/metrics</a></header>'
        f"<main><h1>{_e(title)}</h1>{body}</main></body></html>\n"
    )


def live(fragment: str, inner: str) -> str:
    """``inner`` in a block that htmx reloads from ``/console/fragments/<fragment>``."""
    return (
        f'<div id="{_e(fragment)}-live" hx-get="/console/fragments/{_e(fragment)}" '
        f'hx-trigger="{REFRESH}" hx-swap="innerHTML">{inner}</div>'
    )


def table(table_id: str, headers: Sequence[str], rows: Iterable[Sequence[Cell]], empty: str) -> str:
    """A table (numbers right-aligned), or ``empty`` in italics when there are no rows."""
    body = []
    for row in rows:
        cells = "".join(
            f"<td class=num>{_e(c)}</td>" if isinstance(c, int | float) else f"<td>{_e(c)}</td>"
            for c in row
        )
        body.append(f"<tr>{cells}</tr>")
    if not body:
        return f'<p class=empty id="{_e(table_id)}">{_e(empty)}</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return f'<table id="{_e(table_id)}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def messages_form(values: dict[str, str]) -> str:
    """The message browser's three searches: by key, by id, by queue and offset."""

    def field(name: str, label: str, size: int = 16) -> str:
        return (
            f'<label>{_e(label)} <input name="{name}" id="q-{name}" size={size} '
            f'value="{_e(values.get(name, ""))}"></label> '
        )

    return (
        '<form id=message-search action="/console/messages" method=get '
        'hx-get="/console/fragments/messages" hx-target="#results" hx-push-url="true">'
        f"<fieldset><legend>by key</legend>{field('topic', 'topic')}{field('key', 'key')}"
        "</fieldset>"
        f"<fieldset><legend>by id</legend>{field('id', 'message id', 34)}</fieldset>"
        f"<fieldset><legend>by queue and offset</legend>{field('queue', 'queue', 4)}"
        f"{field('offset', 'offset', 8)} (with the topic)</fieldset>"
        "<button type=submit id=search-button>search</button></form>"
    )


def _time_ms(stamp_ms: int) -> str:
    seconds, ms = divmod(stamp_ms, 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"


def message_results(
    messages: Sequence[admin_pb2.StoredMessage], error: str | None, asked: bool
) -> str:
    """The results of a search: one row per message, or what went wrong."""
    if error is not None:
        return f"<p class=error id=search-error>{_e(error)}</p>"
    if not asked:
        return "<p class=empty>search by key, by id, or by queue and offset</p>"
    rows = []
    for m in messages:
        body = m.body.decode("utf-8", "replace")
        if len(body) > BODY_PREVIEW_CHARS:
            body = body[:BODY_PREVIEW_CHARS] + "..."
        properties = " ".join(f"{k}={v}" for k, v in sorted(m.properties.items()))
        rows.append(
            (
                m.topic,
                m.queue_id,
                m.queue_offset,
                m.offset_msg_id,
                properties,
                _time_ms(m.store_timestamp_ms),
                body,
            )
        )
    headers = ("topic", "queue", "offset", "message id", "properties", "stored", "body")
    return table("messages", headers, rows, "no message found")


def admin_form(page_name: str) -> str:
    """The admin action of a page (topics: create one; groups: reset offsets), posted with the
    credentials of an ACL user (the browser asks for them); "" for other pages."""
    if page_name == "topics":
        return (
            '<form id=create-topic action="/console/actions/create-topic" method=post>'
            "<fieldset><legend>create a topic (admin)</legend>"
            "<label>topic <input name=topic size=24 required></label> "
            "<label>queues <input name=queues type=number min=1 max=1024 value=4></label> "
            "<button>create</button></fieldset></form>"
        )
    if page_name == "groups":
        return (
            '<form id=reset-offset action="/console/actions/reset-offset" method=post>'
            "<fieldset><legend>reset a group's offsets (admin)</legend>"
            "<label>group <input name=group size=20 required></label> "
            "<label>topic <input name=topic size=20 required></label> "
            "<label>to <select name=target><option>earliest</option><option>latest</option>"
            "<option>time</option></select></label> "
            "<label>timestamp (ms) <input name=timestamp_ms size=14 value=0></label> "
            "<button>reset</button></fieldset></form>"
        )
    return ""
