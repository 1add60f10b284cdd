"""Whole-file replacement that survives a crash at any moment: write a temporary file beside
the target, fsync it, rename it over the target, fsync the directory. A reader sees the old
content or the new, never a mix. Used for the checkpoint, consumer offsets and topic config.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from aeromq.broker._errors import StoreError, StoreIOError
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE, make_dirs
from aeromq.broker.store._mapped_file import fsync_directory

__all__ = ["read_json", "write_atomically", "write_json_atomically"]

_TEMP_SUFFIX = ".tmp"


def write_atomically(path: Path, data: bytes, *, mode: int = DEFAULT_FILE_MODE) -> None:
    """Replace ``path`` with ``data`` atomically and durably; the file gets ``mode``."""
    temp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}{_TEMP_SUFFIX}")
    try:
        make_dirs(path.parent, mode)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
        fsync_directory(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise StoreIOError("cannot write file", path=str(path), reason=str(exc)) from exc


def write_json_atomically(path: Path, value: object, *, mode: int = DEFAULT_FILE_MODE) -> None:
    """``write_atomically`` of ``value`` as indented, key-sorted JSON."""
    write_atomically(path, json.dumps(value, indent=2, sort_keys=True).encode(), mode=mode)


def read_json(path: Path) -> Any | None:
    """The JSON value in ``path``, or None when the file does not exist. Leftover temporary
    files of an interrupted write are removed (the target still holds the previous value)."""
    for stale in path.parent.glob(f"{path.name}.*{_TEMP_SUFFIX}"):
        with contextlib.suppress(OSError):
            stale.unlink()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreIOError("cannot read file", path=str(path), reason=str(exc)) from exc
    try:
        return json.loads(data)
    except ValueError as exc:
        raise StoreError("file is not valid JSON", path=str(path), reason=str(exc)) from exc
