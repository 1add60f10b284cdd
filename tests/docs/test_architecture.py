"""The architecture page (``docs/architecture.md``) names every room of the tree, and every room
it names exists: a package or subpackage moved, added or removed without the page following
fails here."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "architecture.md"
PACKAGES = ("transport", "proto", "common", "client", "producer", "consumer", "broker", "aio",
            "pipeline")  # fmt: skip


def _rooms() -> set[str]:
    """Each package (``broker/``) and its subpackages one level down (``broker/store/``), as
    folders holding an ``__init__.py``, and the command line's room ``aeromq/_cli/``."""
    rooms = {"aeromq/_cli/"}
    for package in PACKAGES:
        rooms.add(f"{package}/")
        for sub in (REPO / package).iterdir():
            if (sub / "__init__.py").is_file():
                rooms.add(f"{package}/{sub.name}/")
    return rooms


def _named(text: str) -> set[str]:
    """The rooms the page names in code spans: ``broker/store/`` (the table's first column
    and the prose)."""
    return {
        name
        for span in re.findall(r"`([^`\n]+)`", text)
        for name in [span.strip()]
        if name.endswith("/") and name.split("/")[0] in (*PACKAGES, "aeromq")
    }


def test_should_name_every_room_of_the_tree() -> None:
    missing = sorted(_rooms() - _named(PAGE.read_text()))
    assert missing == [], f"rooms the architecture page does not name: {missing}"


def test_should_name_only_rooms_that_exist() -> None:
    stale = sorted(room for room in _named(PAGE.read_text()) if not (REPO / room).is_dir())
    assert stale == [], f"rooms the architecture page names that do not exist: {stale}"
