"""The record batch's layout is written once per language: every constant of the C header
(``common/record_batch/record_batch.h``) is the one of ``descriptor.py`` with its name, every
offset of the descriptor is in the header, and the C passes' own tables (the checker's codes,
the reader's columns) name what the Python modules name, in the same order."""

from __future__ import annotations

import re
from pathlib import Path

from aeromq.common import record_batch
from aeromq.common.record_batch import COLUMNS_I32, COLUMNS_I64, BatchCheck, descriptor

HOME = Path(record_batch.__file__).parent
_DEFINE = re.compile(r"^#define[ \t]+([A-Z][A-Z0-9_]*)[ \t]+(.+?)[ \t]*(?:/\*.*)?$", re.MULTILINE)


def _defines() -> dict[str, str]:
    """``#define NAME value`` of the header (the include guard, which has no value, left out)."""
    return dict(_DEFINE.findall((HOME / "record_batch.h").read_text()))


def _value(text: str) -> int | tuple[int, ...]:
    """A C integer literal (decimal or hex, with an ``u`` suffix or not), or a brace list."""
    if text.startswith("{"):
        return tuple(int(item) for item in text.strip("{}").split(","))
    return int(text.rstrip("uU"), 0)


def _enum(source: str, first: str) -> list[tuple[str, int]]:
    """``(name, value)`` of the C ``enum { ... }`` of ``source`` whose first name is
    ``first``, in order (C's values: one more than the one before, unless given)."""
    body = re.search(r"enum\s*\{\s*(" + first + r"\b[^}]*)\}", source)
    assert body is not None, first
    items: list[tuple[str, int]] = []
    for item in re.sub(r"/\*.*?\*/", "", body.group(1)).split(","):
        name, _, value = item.partition("=")
        if name.strip():
            given = int(value) if value.strip() else (items[-1][1] + 1 if items else 0)
            items.append((name.strip(), given))
    return items


def test_should_give_every_constant_of_the_c_header_the_descriptors_value() -> None:
    defines = _defines()
    assert len(defines) >= 20
    for name, text in defines.items():
        assert hasattr(descriptor, name), f"record_batch.h defines {name}, descriptor.py does not"
        assert _value(text) == getattr(descriptor, name), name


def test_should_have_every_offset_and_length_of_the_descriptor_in_the_c_header() -> None:
    defines = _defines()
    wanted = [
        name
        for name in descriptor.__all__
        if name.endswith(("_OFFSET", "_LENGTH", "_COLUMN", "_COUNT", "_MAGIC", "_START"))
        or name in ("RECORD_OVERHEAD", "COLUMN_WIDTHS")
    ]
    python_only = {"BROKER_FIELDS_LENGTH", "MAX_PROPERTIES_LENGTH"}  # no C pass needs them
    missing = sorted(set(wanted) - set(defines) - python_only)
    assert missing == []
    assert "TOPIC_OFFSET" in wanted and "CRC_START" in wanted and "BATCH_MAGIC" in wanted


def test_should_name_the_checkers_codes_as_batch_check_does() -> None:
    items = _enum((HOME / "_checker.c").read_text(), "CHECK_OK")
    codes = [(name.removeprefix("CHECK_"), code) for name, code in items if name != "CHECK_FAILED"]
    assert codes == [(check.name, check.value) for check in BatchCheck]


def test_should_order_the_readers_columns_as_the_python_reader_does() -> None:
    source = (HOME / "_reader.c").read_text()
    i64 = [name for name, _ in _enum(source, "C_BATCH")]
    i32 = [name for name, _ in _enum(source, "C_BODY_LENGTH")]
    assert i64[-1] == "I64_COLUMNS" and i32[-1] == "I32_COLUMNS"
    assert [name.removeprefix("C_").lower() for name in i64[:-1]] == list(COLUMNS_I64)
    assert [name.removeprefix("C_").lower() for name in i32[:-1]] == list(COLUMNS_I32)
