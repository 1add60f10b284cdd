"""Helpers for the client and consumer tests."""

from __future__ import annotations

import re


def isort_key(name: str) -> tuple[int, list[object]]:
    """Ruff's RUF022 order of ``__all__``: CONSTANTS, then CamelCase, then the rest, each in
    natural order (digit runs compared as numbers)."""
    category = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    parts = re.split(r"(\d+)", name)
    return category, [int(part) if part.isdigit() else part for part in parts]
