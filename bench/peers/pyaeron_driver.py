"""The real Aeron C media driver (pyaeron's) for a benchmark: ``pyaeron_driver.py DIR TERM_LENGTH``.

SHARED threading (conductor, sender and receiver on one thread, as the aeromq drivers of the
``udp`` suite), the C driver's default idle strategy (backoff); ``TERM_LENGTH`` for IPC and UDP
terms. Emits ``ready``, then serves until stdin closes.
"""

from __future__ import annotations

import sys

from pyaeron_common import emit, pyaeron  # type: ignore[import-not-found]  # a sibling script, run from bench/peers


def main() -> None:
    aeron_dir, term_length = sys.argv[1], int(sys.argv[2])
    driver = pyaeron.MediaDriver(
        dir=aeron_dir,
        threading="shared",
        dir_delete_on_start=True,
        dir_delete_on_shutdown=True,
        term_buffer_length=term_length,
        ipc_term_buffer_length=term_length,
    )
    emit("ready", version=pyaeron.aeron_version)
    for _ in sys.stdin:
        pass
    driver.close()


if __name__ == "__main__":
    main()
