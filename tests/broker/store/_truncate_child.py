"""A child process for the truncation crash test: opens a broker group's store as a follower and
truncates its log, killing itself (SIGKILL) as the truncation completes the step named.

Run as ``python -m tests.broker.store._truncate_child DATA_DIR OFFSET STEP``; it writes ``R``
to stdout once the store is open.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from aeromq.broker.store import MessageStore

from ._group import group_config


def main() -> None:
    data_dir, offset, step = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    store = MessageStore(group_config(data_dir))
    store.start()
    os.write(1, b"R\n")

    def on_step(name: str) -> None:
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)

    store.truncate_to(offset, on_step=on_step)
    os.kill(os.getpid(), signal.SIGKILL)  # no step named: killed once it is all done


if __name__ == "__main__":
    main()
