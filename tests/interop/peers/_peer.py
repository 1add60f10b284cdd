"""What the interop peers and the tests share: message plans, payloads, checks, the line protocol.

Stdlib only: the peer scripts import it under CPython 3.12 (next to pyaeron, without aeromq), and
the tests import it under 3.11, so both sides build and check the very same bytes.

- A :class:`Plan` is the list of message lengths a sender sends, drawn from a seed: mostly small
  messages, some near the MTU, and some longer than one frame, which Aeron fragments.
- :func:`payload` is message ``index`` of sender ``tag``: an 8-byte prefix (tag, index; both u32
  little-endian) then a pattern that depends on both, so a reordered, cut, mixed or stale message
  is caught.
- A :class:`Verifier` checks what arrives against the plans of one or more senders (messages of
  several senders may interleave, each sender's in order).
- The line protocol: a peer prints one JSON object per line on stdout (:func:`emit`, always with
  an ``event`` key) and reads JSON commands, one per line, from stdin (:class:`Commands`).
"""

from __future__ import annotations

import json
import random
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

PREFIX = struct.Struct("<II")
_BLOCK = bytes(range(251))  # a prime length: the pattern does not line up with frame alignment


def payload(tag: int, index: int, length: int) -> bytes:
    """Message ``index`` of sender ``tag``, ``length`` bytes (at least the 8-byte prefix)."""
    shift = (tag * 97 + index * 31) % len(_BLOCK)
    pattern = _BLOCK[shift:] + _BLOCK[:shift]
    body_length = length - PREFIX.size
    body = (pattern * (body_length // len(pattern) + 1))[:body_length]
    return PREFIX.pack(tag, index) + body


class Plan:
    """The lengths of ``count`` messages from ``seed``: 8..max_length bytes, a quarter fragmented
    (longer than ``fragment_over``) when ``max_length`` allows it."""

    def __init__(self, seed: int, count: int, max_length: int, fragment_over: int = 1376) -> None:
        rng = random.Random(seed)
        lengths = []
        for index in range(count):
            kind = index % 4
            if kind == 3 and max_length > fragment_over:
                lengths.append(rng.randint(fragment_over + 1, max_length))
            elif kind == 2:
                lengths.append(rng.randint(PREFIX.size, min(max_length, fragment_over)))
            else:
                lengths.append(rng.randint(PREFIX.size, min(max_length, 200)))
        self.lengths = lengths

    def __len__(self) -> int:
        return len(self.lengths)

    def messages(self, tag: int) -> Iterator[bytes]:
        for index, length in enumerate(self.lengths):
            yield payload(tag, index, length)

    @property
    def total_bytes(self) -> int:
        return sum(self.lengths)


class Verifier:
    """Checks messages from the senders ``plans`` (tag -> plan); keeps the first few errors."""

    def __init__(self, plans: dict[int, Plan]) -> None:
        self.plans = plans
        self.next_index = dict.fromkeys(plans, 0)
        self.count = 0
        self.errors: list[str] = []

    def on_message(self, message: bytes) -> None:
        self.count += 1
        if len(message) < PREFIX.size:
            self._error(f"message {self.count} is {len(message)} bytes")
            return
        tag, index = PREFIX.unpack_from(message)
        plan = self.plans.get(tag)
        if plan is None:
            self._error(f"message {self.count} has unknown tag {tag}")
            return
        expected_index = self.next_index[tag]
        if index != expected_index:
            self._error(f"tag {tag}: got index {index}, expected {expected_index}")
        elif index >= len(plan):
            self._error(f"tag {tag}: index {index} past the plan's {len(plan)}")
        elif message != payload(tag, index, plan.lengths[index]):
            self._error(f"tag {tag}: message {index} differs ({len(message)} bytes)")
        self.next_index[tag] = index + 1

    def _error(self, text: str) -> None:
        if len(self.errors) < 5:
            self.errors.append(text)

    @property
    def done(self) -> bool:
        return all(self.next_index[tag] >= len(plan) for tag, plan in self.plans.items())

    def summary(self) -> dict[str, Any]:
        return {"count": self.count, "errors": self.errors, "next_index": self.next_index}


def emit(event: str, **values: Any) -> None:
    """One JSON line on stdout, flushed: ``{"event": event, **values}``."""
    sys.stdout.write(json.dumps({"event": event, **values}) + "\n")
    sys.stdout.flush()


class Commands:
    """JSON commands from stdin, read on a daemon thread; EOF reads as ``{"command": "exit"}``."""

    def __init__(self) -> None:
        self._queue: deque[dict[str, Any]] = deque()
        self._ready = threading.Condition()
        threading.Thread(target=self._read, name="commands", daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            if line.strip():
                self._put(json.loads(line))
        self._put({"command": "exit"})

    def _put(self, command: dict[str, Any]) -> None:
        with self._ready:
            self._queue.append(command)
            self._ready.notify_all()

    def poll(self) -> dict[str, Any] | None:
        """The next command if one has arrived, else None (does not wait)."""
        with self._ready:
            return self._queue.popleft() if self._queue else None

    def wait(self, timeout_s: float) -> dict[str, Any]:
        """The next command; ``exit`` if none comes within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._ready:
            while not self._queue:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return {"command": "exit", "reason": "timeout"}
                self._ready.wait(remaining)
            return self._queue.popleft()


def fail(message: str) -> None:
    """Report an error to the test and exit with status 1."""
    emit("error", message=message)
    sys.exit(1)
