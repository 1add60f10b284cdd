"""Peer: the real Aeron C media driver (pyaeron's embedded one) in its own process.

``real_driver.py DIR [--term-length N] [--ipc-term-length N] [--mtu N]``

Starts the driver in ``DIR`` (deleted on start and on shutdown), emits ``ready`` with the
directory, the pid and the Aeron version, then serves until a ``stop`` command or the end of stdin,
and emits ``stopped``. Other settings come from Aeron's environment variables
(``AERON_CLIENT_LIVENESS_TIMEOUT``, ...), which the C driver reads itself.
"""

from __future__ import annotations

import argparse
import os

import pyaeron
from _peer import Commands, emit

_SERVE_TIMEOUT_S = 120.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--term-length", type=int, default=64 * 1024)
    parser.add_argument("--ipc-term-length", type=int, default=64 * 1024)
    parser.add_argument("--mtu", type=int, default=1408)
    args = parser.parse_args()
    commands = Commands()
    driver = pyaeron.MediaDriver(
        dir=args.dir,
        threading="shared",
        dir_delete_on_start=True,
        dir_delete_on_shutdown=True,
        term_buffer_length=args.term_length,
        ipc_term_buffer_length=args.ipc_term_length,
        mtu_length=args.mtu,
    )
    emit("ready", dir=driver.dir, pid=os.getpid(), version=pyaeron.aeron_version)
    while commands.wait(_SERVE_TIMEOUT_S).get("command") not in ("stop", "exit"):
        pass
    driver.close()
    emit("stopped")


if __name__ == "__main__":
    main()
