"""What ``aeromq admin`` runs against and how it prints (Callers: :mod:`~aeromq._cli.admin` and
:mod:`~aeromq._cli.admin_commands`).

:class:`Target` is the server a command runs on (a broker, or a name server and, through it,
every broker concerned); :class:`Output` prints tables as text or, with ``--json``, each row as
one JSON object; :class:`UsageError` is a bad argument found after parsing (exit status 2).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TextIO

from aeromq.client import ClientTls, Credentials, GrpcClient
from aeromq.common import IllegalArgumentError, NotSupportedError
from aeromq.proto import common_pb2

__all__ = ["Output", "Target", "UsageError", "parse_time_ms", "perm_text", "write_table"]


class UsageError(IllegalArgumentError):
    pass


class Target:
    """The server the command runs against and, through a name server, its brokers."""

    def __init__(self, address: str, kind: str | None, timeout_s: float) -> None:
        self.address = address
        self.timeout_s = timeout_s
        self._credentials = Credentials.from_env()  # AEROMQ_USER, AEROMQ_SECRET
        self._tls = ClientTls.from_env()  # AEROMQ_TLS_CA_FILE, AEROMQ_TLS_CERT_FILE, ..._KEY_FILE
        self.client = self._connect(address)
        self._brokers: dict[str, GrpcClient] = {}
        if kind is None:
            try:
                self.client.list_clusters(namesrv=True)
                kind = "namesrv"
            except NotSupportedError:
                kind = "broker"
        self.is_namesrv = kind == "namesrv"

    def close(self) -> None:
        self.client.close()
        for client in self._brokers.values():
            client.close()

    def clusters(self) -> list[common_pb2.ClusterInfo]:
        return self.client.list_clusters(namesrv=self.is_namesrv)

    def brokers(self, cluster: str | None = None) -> list[tuple[str, GrpcClient]]:
        """(broker name, client) of every broker concerned, sorted by name."""
        if not self.is_namesrv:
            name = self.client.list_clusters()[0].brokers[0].broker_name
            return [(name, self.client)]
        found: list[tuple[str, GrpcClient]] = []
        for info in self.clusters():
            if cluster is not None and info.cluster_name != cluster:
                continue
            for broker in info.brokers:
                found.append((broker.broker_name, self._broker(broker.endpoints.grpc_address)))
        return sorted(found, key=lambda pair: pair[0])

    def brokers_of_topic(self, topic: str) -> list[tuple[str, GrpcClient]]:
        if not self.is_namesrv:
            self.client.query_route(topic)  # TopicNotFoundError if the broker lacks it
            return self.brokers()
        route = self.client.query_route(topic, namesrv=True)
        return [
            (b.broker_name, self._broker(b.endpoints.grpc_address))
            for b in sorted(route.broker_datas, key=lambda b: b.broker_name)
        ]

    def connect(self, address: str) -> GrpcClient:
        """A client of the broker at ``address`` (kept, closed with the target)."""
        return self._broker(address)

    def _broker(self, address: str) -> GrpcClient:
        found = self._brokers.get(address)
        if found is None:
            found = self._brokers[address] = self._connect(address)
        return found

    def _connect(self, address: str) -> GrpcClient:
        return GrpcClient(
            address, timeout_s=self.timeout_s, credentials=self._credentials, tls=self._tls
        )


class Output:
    """Tables and notes as text, or each table row as a JSON object (notes dropped)."""

    def __init__(self, stream: TextIO, as_json: bool) -> None:
        self.stream = stream
        self.as_json = as_json

    def write(self, text: str) -> None:
        """A note for a person (``created topic T``); not part of ``--json`` output."""
        if not self.as_json:
            self.stream.write(text)

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        if self.as_json:
            keys = [h.lower() for h in headers]
            for row in rows:
                values = [None if c == "-" else c for c in row]
                self.stream.write(json.dumps(dict(zip(keys, values, strict=True))) + "\n")
        else:
            write_table(self.stream, headers, rows)

    def record(self, record: dict[str, object]) -> None:
        """One JSON object (``--json`` only)."""
        if self.as_json:
            self.stream.write(json.dumps(record, sort_keys=True) + "\n")


def write_table(out: TextIO, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")


def perm_text(perm: int) -> str:
    return ("r" if perm & 0x4 else "-") + ("w" if perm & 0x2 else "-")


def parse_time_ms(text: str) -> int:
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError as exc:
        raise UsageError(f"--time must be epoch milliseconds or ISO 8601: value={text!r}") from exc
