"""Peer: a real Aeron client that leaves a known set of counters in a driver's cnc.dat.

``counters_scenario.py DIR``

Adds, in this order: a subscription to ``aeron:ipc`` stream 1001, a concurrent publication to
it, an exclusive publication to ``aeron:ipc?term-length=65536`` stream 1002 and a subscription
to ``aeron:ipc`` stream 1002. Offers five 100-byte messages on the first and three 50-byte ones
on the second, reads the first three messages of stream 1001, and emits ``ready`` with its
client id, the session ids and every position. Then it idles until ``exit``.
"""

from __future__ import annotations

import argparse
import time

import pyaeron
from _peer import Commands, emit, fail

_TIMEOUT_S = 10.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    args = parser.parse_args()
    commands = Commands()
    aeron = pyaeron.Aeron(dir=args.dir)
    subscription = aeron.add_subscription("aeron:ipc", 1001)
    publication = aeron.add_publication("aeron:ipc", 1001)
    exclusive = aeron.add_exclusive_publication("aeron:ipc?term-length=65536", 1002)
    other = aeron.add_subscription("aeron:ipc", 1002)
    deadline = time.monotonic() + _TIMEOUT_S
    while not (publication.is_connected and exclusive.is_connected):
        if time.monotonic() > deadline:
            fail("publications not connected")
        time.sleep(0.001)
    for message, target, count in ((b"a" * 100, publication, 5), (b"b" * 50, exclusive, 3)):
        for _ in range(count):
            while not target.offer(message):
                if time.monotonic() > deadline:
                    fail("offer refused")
                time.sleep(0.001)
    read = 0

    def on_fragment(buffer: pyaeron.BufferView, header: pyaeron.Header) -> None:
        nonlocal read
        read += 1

    while read < 3:
        subscription.poll(on_fragment, 3 - read)
        if time.monotonic() > deadline:
            fail("messages not read")
    emit(
        "ready",
        client_id=aeron.client_id,
        sessions=[publication.session_id, exclusive.session_id],
        publication_position=publication.position,
        exclusive_position=exclusive.position,
        subscriber_position=subscription.image_at_index(0).position,
        other_position=other.image_at_index(0).position,
    )
    commands.wait(60.0)
    aeron.close()


if __name__ == "__main__":
    main()
