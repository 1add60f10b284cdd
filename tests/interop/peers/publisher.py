"""Peer: a real Aeron client (pyaeron) that publishes a plan of messages.

``publisher.py DIR CHANNEL STREAM --seed S --count N --max-length L [--tag T] [--exclusive]
[--claim-every K] [--wait-for-go] [--mtu M]``

Connects to the driver in ``DIR``, adds a publication (concurrent, or exclusive), waits until it
is connected and emits ``connected`` (session id, max payload). With ``--wait-for-go`` it then
waits for a ``go`` command. It sends the plan's messages for tag ``T`` in order (every K-th one
with ``try_claim`` when it fits in one frame), retrying while back pressured, and emits
``published`` with the final position. Then it serves commands until ``exit``: ``report``
(emits ``report`` with the position and the publication limit) and ``close`` (closes the
publication, which ends the stream, and emits ``closed``).
"""

from __future__ import annotations

import argparse
import time

import pyaeron
from _peer import Commands, Plan, emit, fail

_CONNECT_TIMEOUT_S = 10.0
_OFFER_TIMEOUT_S = 10.0
_COMMAND_TIMEOUT_S = 60.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("channel")
    parser.add_argument("stream", type=int)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--max-length", type=int, required=True)
    parser.add_argument("--tag", type=int, default=1)
    parser.add_argument("--exclusive", action="store_true")
    parser.add_argument("--claim-every", type=int, default=0)
    parser.add_argument("--wait-for-go", action="store_true")
    parser.add_argument("--mtu", type=int, default=1408)
    args = parser.parse_args()
    commands = Commands()
    aeron = pyaeron.Aeron(dir=args.dir)
    if args.exclusive:
        publication = aeron.add_exclusive_publication(args.channel, args.stream)
    else:
        publication = aeron.add_publication(args.channel, args.stream)
    deadline = time.monotonic() + _CONNECT_TIMEOUT_S
    while not publication.is_connected:
        if time.monotonic() > deadline:
            fail(f"publication not connected after {_CONNECT_TIMEOUT_S}s")
        time.sleep(0.001)
    emit("connected", session_id=publication.session_id, stream_id=publication.stream_id)
    if args.wait_for_go and commands.wait(_COMMAND_TIMEOUT_S).get("command") != "go":
        fail("no go command")
    max_payload = getattr(publication, "max_payload_length", args.mtu - 32)  # not on exclusive
    plan = Plan(args.seed, args.count, args.max_length)
    claims = 0
    for index, message in enumerate(plan.messages(args.tag)):
        claim = args.claim_every and index % args.claim_every == 0 and len(message) <= max_payload
        deadline = time.monotonic() + _OFFER_TIMEOUT_S
        while True:
            if claim:
                result = publication.try_claim(len(message))
                if isinstance(result, pyaeron.BufferClaim):
                    result.buffer[:] = message
                    result.commit()
                    claims += 1
                    break
            elif publication.offer(message):
                break
            if time.monotonic() > deadline:
                fail(f"message {index} not accepted in {_OFFER_TIMEOUT_S}s")
            time.sleep(0.0001)
    emit("published", position=publication.position, count=len(plan), claims=claims)
    while True:
        command = commands.wait(_COMMAND_TIMEOUT_S).get("command")
        if command == "report":
            emit("report", position=publication.position, limit=_limit(publication))
        elif command == "close" and not publication.is_closed:
            position = publication.position
            publication.close()
            emit("closed", position=position)
        elif command == "exit":
            break
    aeron.close()


def _limit(publication: pyaeron.Publication | pyaeron.ExclusivePublication) -> int | None:
    return getattr(publication, "position_limit", None)  # not on an exclusive publication


if __name__ == "__main__":
    main()
