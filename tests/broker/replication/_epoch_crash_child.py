"""A child process for the epoch file's crash tests: runs one change and kills itself
(SIGKILL) right after the step named, or runs changes until it is killed.

Run as ``python -m tests.broker.replication._epoch_crash_child DATA_DIR CHANGE [STEP]``, CHANGE
one of ``append`` (epoch 7 at 700), ``truncate`` (from offset 300), ``write-intent`` (300),
``clear-intent``, ``loop`` (append epochs until killed; writes ``E <epoch>`` once each is
durable). The test prepares the data directory before and reads it after.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from aeromq.broker.replication import (
    EpochFile,
    clear_truncate_intent,
    write_truncate_intent,
)


def main(data_dir: Path, change: str, crash_step: str | None) -> None:
    def on_step(step: str) -> None:
        if step == crash_step:
            os.kill(os.getpid(), signal.SIGKILL)

    if change == "append":
        EpochFile(data_dir, on_step=on_step).append(7, 700)
    elif change == "truncate":
        EpochFile(data_dir, on_step=on_step).truncate_from(300)
    elif change == "write-intent":
        write_truncate_intent(data_dir, 300, on_step=on_step)
    elif change == "clear-intent":
        clear_truncate_intent(data_dir, on_step=on_step)
    elif change == "loop":
        epochs = EpochFile(data_dir)
        last = epochs.last
        epoch, offset = (last.epoch, last.start_offset) if last is not None else (0, 0)
        os.write(1, b"R\n")
        while True:
            epoch, offset = epoch + 1, offset + 100
            epochs.append(epoch, offset)
            os.write(1, f"E {epoch}\n".encode())
    else:
        raise SystemExit(f"unknown change: {change!r}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
