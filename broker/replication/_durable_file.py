"""Small files replaced or removed durably, in named steps a test can stop at.

:func:`replace_durably` writes ``<name>.tmp`` beside the target, fsyncs it, renames it over the
target and fsyncs the directory: after a crash at any moment the target holds the old content
or the new, never a mix (a leftover ``.tmp`` is garbage; :func:`remove_stale_temporary` drops
it). :func:`remove_durably` unlinks and fsyncs the directory. Each passes the name of every
step it has completed to ``on_step`` (:data:`REPLACE_STEPS`, :data:`REMOVE_STEPS`), the seam
through which the crash tests kill the process or inject a failure between two steps.

The store has its own atomic writer for its JSON files; this one adds the steps, and the epoch
file needs nothing else. Caller: :mod:`aeromq.broker.replication.epoch_file`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Final

from aeromq.broker.replication._errors import EpochFileError
from aeromq.transport.concurrent.file_modes import DEFAULT_FILE_MODE, make_dirs

__all__ = [
    "REMOVE_STEPS",
    "RENAMED_STEP",
    "REPLACE_STEPS",
    "TEMP_SUFFIX",
    "StepHook",
    "fsync_directory",
    "remove_durably",
    "remove_stale_temporary",
    "replace_durably",
]

TEMP_SUFFIX: Final = ".tmp"
REPLACE_STEPS: Final = ("temp-created", "temp-written", "temp-synced", "renamed", "dir-synced")
REMOVE_STEPS: Final = ("unlinked", "dir-synced")
# The step an error names once the rename is done: the target holds the new content.
RENAMED_STEP: Final = "fsync directory"

StepHook = Callable[[str], None]


def _no_step(_: str) -> None:
    pass


def fsync_directory(directory: Path) -> None:
    """Make a directory's entries (created, renamed, removed files) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(
    path: Path, data: bytes, *, mode: int = DEFAULT_FILE_MODE, on_step: StepHook = _no_step
) -> None:
    """Replace ``path`` with ``data``, atomically and durably. Raises :class:`EpochFileError`
    (``path``, ``step``, ``reason``) when the system refuses a step; the target then still
    holds its old content, or (``step`` :data:`RENAMED_STEP`) the new one, not known durable."""
    temp = path.with_name(path.name + TEMP_SUFFIX)
    step = "create"
    try:
        make_dirs(path.parent, mode)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.fchmod(fd, mode)
            on_step("temp-created")
            step = "write"
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            on_step("temp-written")
            step = "fsync"
            os.fsync(fd)
        finally:
            os.close(fd)
        on_step("temp-synced")
        step = "rename"
        os.replace(temp, path)
        step = RENAMED_STEP  # from here on the target holds the new content
        on_step("renamed")
        fsync_directory(path.parent)
        on_step("dir-synced")
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise EpochFileError(
            "cannot write file", path=str(path), step=step, reason=str(exc)
        ) from exc


def remove_durably(path: Path, *, on_step: StepHook = _no_step) -> None:
    """Remove ``path`` (if it exists) and make the removal durable."""
    try:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        on_step("unlinked")
        fsync_directory(path.parent)
        on_step("dir-synced")
    except OSError as exc:
        raise EpochFileError("cannot remove file", path=str(path), reason=str(exc)) from exc


def remove_stale_temporary(path: Path) -> None:
    """Drop the ``.tmp`` an interrupted :func:`replace_durably` of ``path`` left behind."""
    with contextlib.suppress(FileNotFoundError):
        path.with_name(path.name + TEMP_SUFFIX).unlink()
