"""Java ``String`` semantics. Expected values were printed by OpenJDK 17 (``s.hashCode()``,
``Collections.sort``); the first is also checkable by hand:
"TagA" = 84*31^3 + 97*31^2 + 103*31 + 65 = 2502444 + 93217 + 3193 + 65 = 2598919."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aeromq.common import compare_key, hash_code


def _java_formula(value: str) -> int:
    data = value.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = h * 31 + int.from_bytes(data[i : i + 2], "big")
    h %= 1 << 32
    return h - (1 << 32) if h >= 1 << 31 else h


def test_should_hash_as_java_string_hash_code() -> None:
    assert hash_code("TagA") == 2598919
    assert hash_code("TagB") == 2598920
    assert hash_code("") == 0
    assert hash_code("*") == 42
    assert hash_code("hello world, this is long") == 2047144808
    assert hash_code("polygenelubricants") == -(2**31)


def test_should_hash_utf16_code_units_not_code_points() -> None:
    assert hash_code("\u4e2d\u6587") == 646394
    assert hash_code("\U0001f600") == 1772899  # two surrogates: 0xD83D * 31 + 0xDE00
    assert hash_code("a\uffffb") == 2124900


@given(st.text())
def test_should_match_the_java_formula_for_any_text(value: str) -> None:
    assert hash_code(value) == _java_formula(value)
    assert -(2**31) <= hash_code(value) < 2**31


def test_should_sort_as_java_compare_to() -> None:
    values = ["\U0001f600", "\uffff", "b", "a", "ab", "\ue000"]
    assert sorted(values, key=compare_key) == ["a", "ab", "b", "\U0001f600", "\ue000", "\uffff"]
    assert sorted(values) != sorted(values, key=compare_key)  # Python's order differs here
