"""Peer: a real Aeron client (pyaeron) that subscribes and checks a plan of messages.

``subscriber.py DIR CHANNEL STREAM --seed S --count N --max-length L [--tags T,...]
[--stop-after K] [--end-of-stream]``

Adds a subscription in the driver of ``DIR`` and emits ``subscribed``; emits ``image`` when the
first publisher's image shows up. Polls whole messages (pyaeron's fragment assembler) and checks
each against the plans of the senders ``tags`` (same seed, count and max length each). Once all
arrived, or ``K`` of them with ``--stop-after`` (then it polls one fragment at a time and stops
exactly there), it emits ``received`` with the count, the errors and the image position. With
``--end-of-stream`` it goes on until the image reports the end of its stream and emits
``end_of_stream``. Then it waits for ``exit``.
"""

from __future__ import annotations

import argparse
import time

import pyaeron
from _peer import Commands, Plan, Verifier, emit, fail

_RECEIVE_TIMEOUT_S = 20.0
_COMMAND_TIMEOUT_S = 60.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("channel")
    parser.add_argument("stream", type=int)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--max-length", type=int, required=True)
    parser.add_argument("--tags", default="1")
    parser.add_argument("--stop-after", type=int, default=0)
    parser.add_argument("--end-of-stream", action="store_true")
    args = parser.parse_args()
    commands = Commands()
    plan = Plan(args.seed, args.count, args.max_length)
    verifier = Verifier({int(tag): plan for tag in args.tags.split(",")})
    aeron = pyaeron.Aeron(dir=args.dir)
    subscription = aeron.add_subscription(args.channel, args.stream)
    emit("subscribed", stream_id=args.stream)

    def on_message(buffer: pyaeron.BufferView, header: pyaeron.Header) -> None:
        verifier.on_message(buffer.tobytes())

    deadline = time.monotonic() + _RECEIVE_TIMEOUT_S
    while subscription.image_count == 0:
        if time.monotonic() > deadline:
            fail("no image")
        time.sleep(0.001)
    image = subscription.image_at_index(0)
    emit("image", session_id=image.session_id, source_identity=image.source_identity)
    limit = 1 if args.stop_after else 10
    wanted = args.stop_after or sum(len(plan) for plan in verifier.plans.values())
    while verifier.count < wanted:
        if subscription.poll(on_message, limit) == 0:
            if time.monotonic() > deadline:
                fail(f"received {verifier.count} of {wanted}: {verifier.summary()}")
            time.sleep(0.0001)
    emit("received", position=image.position, session_id=image.session_id, **verifier.summary())
    if args.end_of_stream:
        while not image.is_end_of_stream:
            subscription.poll(on_message, 10)
            if time.monotonic() > deadline + _RECEIVE_TIMEOUT_S:
                fail("no end of stream")
            time.sleep(0.001)
        emit("end_of_stream", position=image.position, count=verifier.count)
    commands.wait(_COMMAND_TIMEOUT_S)
    aeron.close()


if __name__ == "__main__":
    main()
