"""A small tmpfs mounted for one test (root only): a real file system that fills up."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(directory: Path, size_mib: int) -> Iterator[Path]:
    """Mount a ``size_mib`` MiB tmpfs at ``directory`` for the block; skips the test when this
    process may not mount (not root, or a sandbox that forbids it)."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], timeout=30, check=False)


def fill(path: Path, max_bytes: int) -> int:
    """Write zeros into ``path`` until the file system is full or ``max_bytes`` are written;
    returns the bytes written."""
    written = 0
    chunk = b"\0" * 65536
    with path.open("wb", buffering=0) as out:
        while written < max_bytes:
            try:
                written += out.write(chunk[: min(len(chunk), max_bytes - written)]) or 0
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    return written
