"""Helpers for the tests of stores in a broker group: configs, batches, and the replication
layer's part played by hand (copy the leader's log to a follower, set the high watermark)."""

from __future__ import annotations

import threading
from pathlib import Path

from aeromq.broker.store import MessageStore, PutMessageResult
from aeromq.common.record_batch import encode_batch

from .conftest import group_config

__all__ = [
    "PRODUCER",
    "TOPIC",
    "Replication",
    "append",
    "batch",
    "commit",
    "group_config",
    "log_bytes",
]

TOPIC = "GroupTopic"
PRODUCER = 0x5EED_0000_0000_0001


def batch(
    bodies: list[bytes],
    *,
    topic: str = TOPIC,
    keys: str | None = None,
    sequence: int | None = None,
    producer: int = PRODUCER,
) -> bytes:
    """A record batch of ``bodies`` (a tag each, ``KEYS`` when given), with a producer state
    when ``sequence`` is given."""
    properties = [f"KEYS\x01{keys}\x02".encode()] * len(bodies) if keys is not None else None
    return bytes(
        encode_batch(
            topic.encode(),
            bodies,
            ["TagA"] * len(bodies),
            properties,
            producer_id=producer if sequence is not None else None,
            base_sequence=sequence or 0,
        )
    )


def append(
    store: MessageStore,
    bodies: list[bytes],
    queue_id: int = 0,
    *,
    keys: str | None = None,
    sequence: int | None = None,
) -> PutMessageResult:
    """``put_batch_async`` of a ``batch`` to ``TOPIC``, its answer not waited for: the result as
    appended."""
    return store.put_batch_async(
        batch(bodies, keys=keys, sequence=sequence), TOPIC, queue_id, lambda result: None
    )


def replicate(
    leader: MessageStore, follower: MessageStore, *, piece: int = 0, max_bytes: int = 4096
) -> int:
    """Copy to ``follower`` the leader's log it lacks, in ``read_log`` reads of ``max_bytes``,
    each handed over in pieces of ``piece`` bytes (whole when 0); returns the follower's end."""
    offset = follower.max_physical_offset
    while offset < leader.max_physical_offset:
        view = leader.read_log(offset, max_bytes)
        data = bytes(view)
        view.release()
        step = piece or len(data)
        for at in range(0, len(data), step):
            follower.append_replicated(offset + at, data[at : at + step])
        offset += len(data)
    return follower.max_physical_offset


def commit(*stores: MessageStore) -> int:
    """Flush every member, then set the high watermark (the least flushed offset) on each, as
    the replication layer does; returns it."""
    watermark = min(store.flush() for store in stores)
    for store in stores:
        store.set_high_watermark(watermark)
    return watermark


def log_bytes(store_dir: Path) -> dict[str, bytes]:
    """Every commit log segment of a store's data directory, by file name."""
    return {path.name: path.read_bytes() for path in sorted((store_dir / "commitlog").iterdir())}


class Replication:
    """The replication layer's part on a thread: copies the leader's log to the followers and
    sets every member's high watermark, every 5 ms, until stopped."""

    def __init__(self, leader: MessageStore, *followers: MessageStore) -> None:
        self.leader, self.followers = leader, followers
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            for follower in self.followers:
                replicate(self.leader, follower)
            commit(self.leader, *self.followers)

    def stop(self) -> None:
        """Stop copying (within 10 s)."""
        self._stop.set()
        self._thread.join(10)
