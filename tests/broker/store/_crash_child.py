"""A child process for the crash test: opens a SYNC-flush store and appends from several
threads until it is killed, writing one acknowledgement line per message once its put has
returned PUT_OK (so only durable messages are acknowledged).

Run as ``python -m tests.broker.store._crash_child DATA_DIR SEED``. Lines on stdout:
``R`` when the store is open, ``A queue_id queue_offset physical_offset length crc32`` per
acknowledged message, ``E status`` if a put fails (the test treats that as a failure).
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
import zlib
from pathlib import Path

from aeromq.broker.store import FlushMode, InboundMessage, MessageStore, StoreConfig

TOPIC = "Crash"
QUEUES = 4
WRITERS = 3


def crash_config(data_dir: Path) -> StoreConfig:
    return StoreConfig(
        data_dir,
        commit_log_segment_bytes=32 * 1024,
        consume_queue_entries_per_segment=64,
        flush_mode=FlushMode.SYNC,
        flush_consume_queue_interval_ms=30,
        index_slots=61,
        index_entries=256,
    )


def _write(line: str) -> None:
    os.write(1, line.encode())


def _writer(store: MessageStore, seed: int, writer: int) -> None:
    rng = random.Random(seed * 1000 + writer)
    sequence = 0
    while True:
        queue_id = rng.randrange(QUEUES)
        count = rng.choice((1, 1, 1, 2, 4, 8))
        messages = []
        for _ in range(count):
            body = f"{seed}:{writer}:{sequence}:".encode() + rng.randbytes(rng.randrange(300))
            properties = {"TAGS": f"t{queue_id}"}
            if sequence % 7 == 0:
                properties["KEYS"] = f"key-{seed}-{writer}-{sequence}"
            messages.append(InboundMessage(TOPIC, queue_id, body, properties))
            sequence += 1
        result = store.put_messages(messages)
        if not result.ok:
            _write(f"E {result.status.name}\n")
            return
        time.sleep(0.0005)  # keep the volume (and the checks after each kill) small
        _write(
            "".join(
                f"A {queue_id} {result.queue_offset + i} {position} "
                f"{len(m.body)} {zlib.crc32(m.body)}\n"
                for i, (m, position) in enumerate(
                    zip(messages, result.physical_offsets, strict=True)
                )
            )
        )


def main() -> None:
    data_dir, seed = Path(sys.argv[1]), int(sys.argv[2])
    store = MessageStore(crash_config(data_dir))
    store.start()
    _write("R\n")
    threads = [
        threading.Thread(target=_writer, args=(store, seed, w), daemon=True) for w in range(WRITERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.shutdown()


if __name__ == "__main__":
    main()
