"""libpython's text, and what shares its 2 MiB pages, moved onto huge pages (an experiment).

Imported by a tree's ``aeromq/__init__.py`` (``../latab.sh``), with ``_hugetext`` built beside
it from ``_hugetext.c``. It finds libpython's executable mapping in ``/proc/self/maps``, widens
it to 2 MiB boundaries, checks that every page there is a read-only or executable mapping of the
library, and has ``_hugetext.remap`` copy the range onto anonymous huge pages and move them over
the original with one ``mremap`` (atomic for threads that run there meanwhile). ``RESULT`` holds
the range remapped, None when there was nothing to do, or the error. Not part of the project:
measured no faster (see ``../../round.md``).
"""

from __future__ import annotations

import os

import _hugetext  # type: ignore[import-not-found]  # (built beside this file by hand)

HUGE_PAGE_BYTES = 2 << 20


def _library_maps() -> list[tuple[int, int, str]]:
    """(start, end, permissions) of each mapping of libpython in this process."""
    maps = []
    with open("/proc/self/maps") as lines:
        for line in lines:
            parts = line.split()
            if len(parts) >= 6 and "libpython" in parts[5]:
                start, end = (int(address, 16) for address in parts[0].split("-"))
                maps.append((start, end, parts[1]))
    return maps


def apply() -> tuple[int, int] | None:
    """Remap libpython's text onto huge pages; the range remapped, or None."""
    maps = _library_maps()
    text = [m for m in maps if m[2].startswith("r-x")]
    if not text:
        return None
    low = text[0][0] & ~(HUGE_PAGE_BYTES - 1)
    high = (text[0][1] + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1)
    covered = [m for m in maps if m[0] < high and m[1] > low]
    if any("w" in m[2] for m in covered):
        return None
    if min(m[0] for m in covered) > low or max(m[1] for m in covered) < high:
        return None
    _hugetext.remap(low, high)
    return low, high


RESULT: tuple[int, int] | Exception | None = None
if os.environ.get("AEROMQ_HUGETEXT", "1") == "1":
    try:
        RESULT = apply()
    except Exception as error:  # an experiment: reported, not raised
        RESULT = error
