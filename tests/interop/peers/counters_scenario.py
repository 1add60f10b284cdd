"""Peer: a real Aeron client that leaves a known set of counters in a driver's cnc.dat.

``counters_scenario.py DIR [--udp-port PORT]``

Adds, in this order: a subscription to ``aeron:ipc`` stream 1001, a concurrent publication to
it, an exclusive publication to ``aeron:ipc?term-length=65536`` stream 1002 and a subscription
to ``aeron:ipc`` stream 1002. Offers five 100-byte messages on the first and three 50-byte ones
on the second; with ``--udp-port``, also a subscription to and a publication on
``aeron:udp?endpoint=127.0.0.1:PORT`` stream 1003 (the subscription from a second client), with
four 70-byte messages. It reads the first three messages of stream 1001, and emits ``ready``
with the client ids, the session ids and every position. Then it idles until ``exit``.
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
    parser.add_argument("--udp-port", type=int, default=0)
    args = parser.parse_args()
    commands = Commands()
    aeron = pyaeron.Aeron(dir=args.dir)
    subscription = aeron.add_subscription("aeron:ipc", 1001)
    publication = aeron.add_publication("aeron:ipc", 1001)
    exclusive = aeron.add_exclusive_publication("aeron:ipc?term-length=65536", 1002)
    other = aeron.add_subscription("aeron:ipc", 1002)
    udp = []
    clients = [aeron]
    if args.udp_port:  # the subscriber's client is another one, so owners tell them apart
        channel = f"aeron:udp?endpoint=127.0.0.1:{args.udp_port}"
        clients.append(pyaeron.Aeron(dir=args.dir))
        udp = [clients[1].add_subscription(channel, 1003), aeron.add_publication(channel, 1003)]
    deadline = time.monotonic() + _TIMEOUT_S
    while not (
        publication.is_connected and exclusive.is_connected and all(r.is_connected for r in udp)
    ):
        if time.monotonic() > deadline:
            fail("publications not connected")
        time.sleep(0.001)
    sends = [(b"a" * 100, publication, 5), (b"b" * 50, exclusive, 3)]
    if udp:
        sends.append((b"c" * 70, udp[1], 4))
    for message, target, count in sends:
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
        client_ids=[client.client_id for client in clients],
        sessions=[publication.session_id, exclusive.session_id]
        + ([udp[1].session_id] if udp else []),
        publication_position=publication.position,
        exclusive_position=exclusive.position,
        subscriber_position=subscription.image_at_index(0).position,
        other_position=other.image_at_index(0).position,
    )
    commands.wait(60.0)
    for client in reversed(clients):
        client.close()


if __name__ == "__main__":
    main()
