"""How much of a file this process has mapped in (``/proc/self/smaps``), for the tests that
check a store file's pages are taken out of the map."""

from __future__ import annotations

from pathlib import Path

import pytest

HAS_SMAPS = Path("/proc/self/smaps").exists()
needs_smaps = pytest.mark.skipif(not HAS_SMAPS, reason="needs /proc/self/smaps")


def resident_kib(path: Path) -> int:
    """The resident size of this process's map of ``path`` (the first map of it)."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for at, line in enumerate(lines):
        if line.endswith(" " + str(path)):
            for field in lines[at + 1 :]:
                if field.startswith("Rss:"):
                    return int(field.split()[1])
    raise AssertionError(f"no map of {path} in /proc/self/smaps")
