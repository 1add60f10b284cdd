"""A pyaeron publisher for a benchmark case, the twin of the aeromq suites' publisher workers.

``pyaeron_publisher.py DIR CHANNEL STREAM SIZE SHAPE COUNT``: an exclusive publication; emits
``ready`` once connected, waits for ``go``, then sends ``COUNT`` messages of ``SIZE`` bytes, each
stamped with its sequence number, by ``offer`` or (``SHAPE`` ``try_claim``) by claiming, stamping
in place and committing; it yields the CPU on back pressure. It emits ``sent`` and waits for
``stop`` (the subscriber has read everything) before it closes.
"""

from __future__ import annotations

import os
import sys

from pyaeron_common import SEQ, await_connected, emit, pyaeron, wait_for  # type: ignore[import-not-found]  # a sibling script, run from bench/peers


def main() -> None:
    aeron_dir, channel = sys.argv[1], sys.argv[2]
    stream_id, size, shape, count = (
        int(sys.argv[3]),
        int(sys.argv[4]),
        sys.argv[5],
        int(sys.argv[6]),
    )
    aeron = pyaeron.Aeron(dir=aeron_dir)
    publication = aeron.add_exclusive_publication(channel, stream_id)
    await_connected(publication)
    emit("ready")
    wait_for("go")
    pack, yield_cpu = SEQ.pack_into, os.sched_yield
    if shape == "try_claim":
        try_claim, claim_type = publication.try_claim, pyaeron.BufferClaim
        for seq in range(count):
            claim = try_claim(size)
            while type(claim) is not claim_type:
                yield_cpu()
                claim = try_claim(size)
            pack(claim.buffer, 0, seq)
            claim.commit()
    else:
        payload = bytearray(size)
        offer = publication.offer
        for seq in range(count):
            pack(payload, 0, seq)
            while not offer(payload):
                yield_cpu()
    emit("sent", position=publication.position)
    wait_for("stop")  # the subscriber has read everything: the stream may end
    aeron.close()


if __name__ == "__main__":
    main()
