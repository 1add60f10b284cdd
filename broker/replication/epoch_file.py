"""The leader epochs of a member's commit log (``<data dir>/epochs``) and the truncation intent
(``<data dir>/truncate.intent``), both durable.

The epoch file holds one line per leader epoch whose bytes this log has, ``<epoch>
<start_offset>\\n``, epochs strictly increasing and start offsets never decreasing: epoch E's
bytes are ``[start of E, start of the next epoch)``, the last epoch's run to the log end offset
(LEO). A new leader appends ``(E, LEO)`` before it writes any byte of E; a follower appends the
epoch of the first APPEND of a new epoch before writing it. Every change rewrites the whole file
atomically and durably (temporary file, fsync, rename, fsync of the directory), so after a crash
at any moment the file holds the old list or the new one.

The lookups serve the truncation handshake of a rejoining follower (Kafka KIP-101 and KIP-279,
RocketMQ's epoch handshake): the leader answers a follower's last epoch F with
``largest_at_most(F)`` and that epoch's ``end_offset_of``; the follower, if it has that very
epoch, truncates to ``truncation_point`` (the lower of the two ends), else asks again with its
own largest epoch below the answer.

``truncate.intent`` holds the offset a follower is truncating to while it zeroes its log tail:
written (durably) before the first byte changes, removed (durably) after the epoch file was
rewritten; a start that finds it redoes the truncation first.

Caller: the broker's replication (to come): the leader on election, the follower's fetcher,
the ``ReplicaEpochEnd`` call, recovery at start. Affects: the two files in the data directory.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NamedTuple

from aeromq.broker._errors import InvalidArgumentError
from aeromq.broker.replication._durable_file import (
    RENAMED_STEP,
    StepHook,
    remove_durably,
    remove_stale_temporary,
    replace_durably,
)
from aeromq.broker.replication._errors import CorruptEpochFileError, EpochFileError

__all__ = [
    "EPOCH_FILE_NAME",
    "TRUNCATE_INTENT_FILE_NAME",
    "EpochEntry",
    "EpochFile",
    "clear_truncate_intent",
    "read_truncate_intent",
    "write_truncate_intent",
]

EPOCH_FILE_NAME: Final = "epochs"
TRUNCATE_INTENT_FILE_NAME: Final = "truncate.intent"


def _no_step(_: str) -> None:
    pass


class EpochEntry(NamedTuple):
    """Epoch ``epoch`` starts at commit log offset ``start_offset``."""

    epoch: int
    start_offset: int


class EpochFile:
    """The epochs of the log in ``data_dir``, loaded at construction (none if the file does not
    exist). Raises :class:`CorruptEpochFileError` naming the file and the line that is wrong.

    One thread changes it (:meth:`append`, :meth:`truncate_from`); any thread may read.
    ``on_step`` sees every step of a rewrite (see ``_durable_file``): a test seam.
    """

    def __init__(self, data_dir: Path, *, on_step: StepHook = _no_step) -> None:
        self._path = data_dir / EPOCH_FILE_NAME
        self._on_step = on_step
        self._write_lock = threading.Lock()
        remove_stale_temporary(self._path)
        self._entries = _load(self._path)

    @property
    def path(self) -> Path:
        """The file's path."""
        return self._path

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        """Every epoch, oldest first."""
        return self._entries

    @property
    def last(self) -> EpochEntry | None:
        """The newest epoch (None when the log has no epoch yet)."""
        entries = self._entries
        return entries[-1] if entries else None

    def append(self, epoch: int, start_offset: int) -> None:
        """Add epoch ``epoch`` starting at ``start_offset`` and make it durable before returning.
        Raises :class:`~aeromq.broker.InvalidArgumentError` unless the epoch is above the last
        one and starts at or after it, :class:`EpochFileError` if the disk refuses (the list
        in memory is then unchanged)."""
        with self._write_lock:
            entries = self._entries
            last = entries[-1] if entries else None
            if epoch < 0 or start_offset < 0:
                raise InvalidArgumentError(
                    "epoch and start offset must not be negative",
                    epoch=epoch,
                    start_offset=start_offset,
                )
            if last is not None and (epoch <= last.epoch or start_offset < last.start_offset):
                raise InvalidArgumentError(
                    "epoch must follow the last one",
                    epoch=epoch,
                    start_offset=start_offset,
                    last_epoch=last.epoch,
                    last_start_offset=last.start_offset,
                )
            self._rewrite((*entries, EpochEntry(epoch, start_offset)))

    def truncate_from(self, offset: int) -> tuple[EpochEntry, ...]:
        """Drop the epochs that start at or after ``offset`` (step c of a truncation), durably;
        returns the dropped ones."""
        with self._write_lock:
            kept = tuple(entry for entry in self._entries if entry.start_offset < offset)
            dropped = self._entries[len(kept) :]
            if dropped:
                self._rewrite(kept)
            return dropped

    def largest_at_most(self, epoch: int) -> EpochEntry | None:
        """The newest epoch not above ``epoch`` (None if every epoch here is above it)."""
        found = None
        for entry in self._entries:
            if entry.epoch > epoch:
                break
            found = entry
        return found

    def end_offset_of(self, epoch: int, leo: int) -> int:
        """Where the bytes of epochs up to ``epoch`` end in this log: the start of the first
        epoch above ``epoch``, or ``leo`` when there is none. For an epoch this log has, that is
        its end; for one it skipped, the end of the newest epoch below it."""
        for entry in self._entries:
            if entry.epoch > epoch:
                return entry.start_offset
        return leo

    def truncation_point(self, leader_epoch: int, leader_end_offset: int, leo: int) -> int | None:
        """A follower's side of the handshake: given the leader's answer (``leader_epoch``, the
        largest epoch the leader has at or below the one asked about, and its end offset there),
        the offset to truncate to (``min(my end of leader_epoch, leader_end_offset)``, capped
        at ``leo``), or None when this log does not have ``leader_epoch``: then ask again with
        ``largest_at_most(leader_epoch)``'s epoch (KIP-279)."""
        mine = self.largest_at_most(leader_epoch)
        if mine is None or mine.epoch != leader_epoch:
            return None
        return min(self.end_offset_of(leader_epoch, leo), leader_end_offset, leo)

    def _rewrite(self, entries: tuple[EpochEntry, ...]) -> None:
        """Replace the file; the list in memory follows what the file holds, also when a
        failure came after the rename."""
        try:
            replace_durably(self._path, _format(entries), on_step=self._on_step)
        except EpochFileError as exc:
            if exc.values.get("step") == RENAMED_STEP:
                self._entries = entries
            raise
        self._entries = entries


def _format(entries: Sequence[EpochEntry]) -> bytes:
    return "".join(f"{epoch} {start_offset}\n" for epoch, start_offset in entries).encode("ascii")


def _load(path: Path) -> tuple[EpochEntry, ...]:
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return ()
    except OSError as exc:
        raise EpochFileError("cannot read file", path=str(path), reason=str(exc)) from exc
    entries: list[EpochEntry] = []
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    for number, raw in enumerate(lines, start=1):
        entry = _parse(raw)
        problem = _problem(entry, entries[-1] if entries else None)
        if entry is None or problem is not None:
            raise CorruptEpochFileError(
                f"corrupt epoch file: {problem}",
                path=str(path),
                line_number=number,
                line=raw.decode("ascii", "backslashreplace"),
            )
        entries.append(entry)
    return tuple(entries)


def _problem(entry: EpochEntry | None, previous: EpochEntry | None) -> str | None:
    """What is wrong with a line (None: nothing)."""
    if entry is None:
        return "not '<epoch> <start_offset>' with both non-negative integers"
    if previous is not None and entry.epoch <= previous.epoch:
        return "epoch not above the previous line's"
    if previous is not None and entry.start_offset < previous.start_offset:
        return "start offset below the previous line's"
    return None


def _parse(raw: bytes) -> EpochEntry | None:
    fields = raw.split(b" ")
    if len(fields) != 2 or not all(field.isdigit() for field in fields):
        return None
    return EpochEntry(int(fields[0]), int(fields[1]))


def write_truncate_intent(data_dir: Path, offset: int, *, on_step: StepHook = _no_step) -> None:
    """Record, durably, that the log is being truncated to ``offset`` (step a)."""
    if offset < 0:
        raise InvalidArgumentError("truncation offset must not be negative", offset=offset)
    path = data_dir / TRUNCATE_INTENT_FILE_NAME
    replace_durably(path, f"{offset}\n".encode("ascii"), on_step=on_step)


def read_truncate_intent(data_dir: Path) -> int | None:
    """The offset of an unfinished truncation, or None when there is none. Raises
    :class:`CorruptEpochFileError` when the file does not hold one non-negative integer."""
    path = data_dir / TRUNCATE_INTENT_FILE_NAME
    remove_stale_temporary(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EpochFileError("cannot read file", path=str(path), reason=str(exc)) from exc
    text = raw.removesuffix(b"\n")
    if not text.isdigit():
        raise CorruptEpochFileError(
            "corrupt truncation intent: not one non-negative integer",
            path=str(path),
            line_number=1,
            line=raw.decode("ascii", "backslashreplace"),
        )
    return int(text)


def clear_truncate_intent(data_dir: Path, *, on_step: StepHook = _no_step) -> None:
    """Remove the truncation intent, durably (step d): the truncation is complete."""
    remove_durably(data_dir / TRUNCATE_INTENT_FILE_NAME, on_step=on_step)
