"""The values the etcd client hands back (keys as text, values as bytes), built from etcd's
protobuf messages, and the pure helpers that build requests: the prefix range end, and the
compares and operations of a transaction.

Caller: :class:`~aeromq.broker.etcd.EtcdClient`, its lease keeper and watcher; the broker's
group membership (to come) builds its transactions with :func:`mod_revision_equals`,
:func:`create_revision_equals`, :func:`put_op`, :func:`delete_op` and :func:`get_op`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from aeromq.proto.etcd import kv_pb2, rpc_pb2

__all__ = [
    "EventType",
    "KeyValue",
    "Lease",
    "LeaseStatus",
    "RangeResult",
    "TxnResult",
    "WatchEvent",
    "create_revision_equals",
    "delete_op",
    "encode_key",
    "get_op",
    "mod_revision_equals",
    "prefix_range_end",
    "put_op",
    "value_equals",
    "version_equals",
]


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One key as etcd holds it. ``create_revision`` and ``mod_revision`` are store revisions
    (a compare-and-swap names them); ``version`` counts puts since creation; ``lease_id`` is 0
    for a key without a lease."""

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease_id: int

    @classmethod
    def from_proto(cls, kv: kv_pb2.KeyValue) -> KeyValue:
        """The value of an ``mvccpb.KeyValue``."""
        return cls(
            kv.key.decode("utf-8", "surrogateescape"),
            kv.value,
            kv.create_revision,
            kv.mod_revision,
            kv.version,
            kv.lease,
        )


@dataclass(frozen=True, slots=True)
class RangeResult:
    """The keys a read found, sorted by key, and the store ``revision`` the read saw (watch from
    ``revision + 1`` to miss no change after it)."""

    kvs: tuple[KeyValue, ...]
    revision: int


@dataclass(frozen=True, slots=True)
class TxnResult:
    """What a transaction did: ``succeeded`` (every compare held, the success branch ran),
    ``revision`` (the store revision after it: the new ``mod_revision`` of keys it put when it
    succeeded) and ``kvs``, the keys the range operations of the branch that ran found, in order
    (a failed compare-and-swap reads the key's current value there)."""

    succeeded: bool
    revision: int
    kvs: tuple[KeyValue, ...] = ()


@dataclass(frozen=True, slots=True)
class Lease:
    """A granted lease: its ``id``, the ``ttl_s`` etcd chose (never below its minimum, see
    :class:`~aeromq.broker.etcd.EtcdServer`) and ``deadline_s``, the monotonic time until which
    it is known valid: the send time of the grant plus ``ttl_s``."""

    id: int
    ttl_s: int
    deadline_s: float


@dataclass(frozen=True, slots=True)
class LeaseStatus:
    """etcd's view of a lease: ``ttl_s`` left (-1 once expired or revoked; the lease ends in
    under ``ttl_s + 1`` seconds), ``granted_ttl_s`` and the ``keys`` put with it."""

    id: int
    ttl_s: int
    granted_ttl_s: int
    keys: tuple[str, ...]


class EventType(enum.Enum):
    """What happened to a key: a put (created or changed) or a delete (also a lease's expiry)."""

    PUT = kv_pb2.Event.PUT
    DELETE = kv_pb2.Event.DELETE


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change seen by a watch. For a delete, ``kv`` holds the key and, as ``mod_revision``,
    the revision of the delete (its value is empty)."""

    type: EventType
    kv: KeyValue

    @property
    def revision(self) -> int:
        """The store revision of the change."""
        return self.kv.mod_revision

    @classmethod
    def from_proto(cls, event: kv_pb2.Event) -> WatchEvent:
        """The value of an ``mvccpb.Event``."""
        return cls(EventType(event.type), KeyValue.from_proto(event.kv))


def encode_key(key: str) -> bytes:
    """A key's bytes on the wire: UTF-8 (a key read with bytes that are not UTF-8 keeps them as
    surrogates, and encodes back to the same bytes)."""
    return key.encode("utf-8", "surrogateescape")


def prefix_range_end(prefix: bytes) -> bytes:
    """The ``range_end`` that makes ``[prefix, range_end)`` every key starting with ``prefix``:
    the prefix with its last byte below 0xff incremented (etcd's ``GetPrefixRangeEnd``); an
    empty prefix or one of 0xff bytes only gives ``b"\\x00"`` (every key)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b"\x00"
    return stripped[:-1] + bytes([stripped[-1] + 1])


_EQUAL: Final = rpc_pb2.Compare.EQUAL


def mod_revision_equals(key: str, revision: int) -> rpc_pb2.Compare:
    """Holds when ``key`` was last changed at ``revision`` (0: the key does not exist)."""
    target = rpc_pb2.Compare.MOD
    return rpc_pb2.Compare(result=_EQUAL, target=target, key=encode_key(key), mod_revision=revision)


def create_revision_equals(key: str, revision: int) -> rpc_pb2.Compare:
    """Holds when ``key`` was created at ``revision`` (0: the key does not exist)."""
    target = rpc_pb2.Compare.CREATE
    return rpc_pb2.Compare(
        result=_EQUAL, target=target, key=encode_key(key), create_revision=revision
    )


def version_equals(key: str, version: int) -> rpc_pb2.Compare:
    """Holds when ``key`` has had ``version`` puts since its creation (0: it does not exist)."""
    target = rpc_pb2.Compare.VERSION
    return rpc_pb2.Compare(result=_EQUAL, target=target, key=encode_key(key), version=version)


def value_equals(key: str, value: bytes) -> rpc_pb2.Compare:
    """Holds when ``key`` holds exactly ``value``."""
    target = rpc_pb2.Compare.VALUE
    return rpc_pb2.Compare(result=_EQUAL, target=target, key=encode_key(key), value=value)


def put_op(key: str, value: bytes, lease_id: int = 0) -> rpc_pb2.RequestOp:
    """A put of ``key`` inside a transaction (``lease_id`` 0: no lease)."""
    return rpc_pb2.RequestOp(
        request_put=rpc_pb2.PutRequest(key=encode_key(key), value=value, lease=lease_id)
    )


def delete_op(key: str) -> rpc_pb2.RequestOp:
    """A delete of ``key`` inside a transaction."""
    return rpc_pb2.RequestOp(request_delete_range=rpc_pb2.DeleteRangeRequest(key=encode_key(key)))


def get_op(key: str) -> rpc_pb2.RequestOp:
    """A read of ``key`` inside a transaction; what it finds is in :attr:`TxnResult.kvs`."""
    return rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=encode_key(key)))
