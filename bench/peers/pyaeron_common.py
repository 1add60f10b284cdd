"""What the pyaeron benchmark workers share: the line protocol and the message stamp.

The workers run under the CPython 3.12 of the pyaeron environment (``bench/_pyaeron.py`` starts
them), import nothing of aeromq, and talk to the parent as the interop peers do: one JSON object
per line on stdout (:func:`emit`), commands one per line on stdin (:func:`wait_for`).
"""

from __future__ import annotations

import importlib
import json
import struct
import sys
from typing import Any

pyaeron: Any = importlib.import_module("pyaeron")  # only in the 3.12 environment: untyped here

SEQ = struct.Struct("<q")
STOP = -(2**62)  # never a sequence number (warm-up pings count up from below zero)


def emit(event: str, **values: object) -> None:
    sys.stdout.write(json.dumps({"event": event, **values}) + "\n")
    sys.stdout.flush()


def wait_for(command: str) -> None:
    """Block until the parent sends ``command``; exit quietly if stdin closes first."""
    for line in sys.stdin:
        if json.loads(line).get("command") == command:
            return
    sys.exit(0)


def await_connected(publication: Any, timeout_s: float = 30.0) -> None:  # pyaeron's, untyped
    import time

    deadline = time.monotonic() + timeout_s
    while not publication.is_connected:
        if time.monotonic() > deadline:
            emit("error", message="publication never connected")
            sys.exit(1)
        time.sleep(0.001)
