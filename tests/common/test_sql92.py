"""RocketMQ's SQL92 filter: one test per operator, NULL logic, coercion, and syntax errors
with their positions."""

from __future__ import annotations

import pytest

from aeromq.common import InvalidExpressionError, compile_sql92

MESSAGE = {"a": "5", "b": "x", "price": "9.5", "TAGS": "TagA", "flag": "true", "name": "it's"}


def matches(expression: str, properties: dict[str, str] | None = None) -> bool:
    return compile_sql92(expression).matches(MESSAGE if properties is None else properties)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a = 5", True),
        ("a = 6", False),
        ("b = 'x'", True),
        ("b = 'y'", False),
        ("a <> 6", True),
        ("a <> 5", False),
        ("a != 6", True),
    ],
)
def test_should_compare_for_equality_strings_and_numbers(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a > 4", True),
        ("a > 5", False),
        ("a >= 5", True),
        ("a < 6", True),
        ("a < 5", False),
        ("a <= 5", True),
        ("price > 9.4", True),
        ("price < 9.5", False),
        ("a > -1", True),
        ("a < 0x10", True),
        ("a > 1e0", True),
    ],
)
def test_should_order_numbers(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


def test_should_not_order_strings_that_are_not_numbers() -> None:
    assert not matches("b > 1")
    assert not matches("NOT (b > 1)")  # unknown, and NOT unknown is unknown


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a BETWEEN 1 AND 5", True),
        ("a BETWEEN 5 AND 5", True),
        ("a BETWEEN 6 AND 9", False),
        ("a NOT BETWEEN 6 AND 9", True),
        ("a NOT BETWEEN 1 AND 9", False),
        ("price between 9 and 10", True),
    ],
)
def test_should_test_between_inclusively(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("TAGS IN ('TagA', 'TagB')", True),
        ("TAGS IN ('TagC')", False),
        ("TAGS NOT IN ('TagC')", True),
        ("TAGS NOT IN ('TagA')", False),
        ("name IN ('it''s')", True),
    ],
)
def test_should_test_membership_in_a_string_list(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("missing IS NULL", True),
        ("a IS NULL", False),
        ("a IS NOT NULL", True),
        ("missing IS NOT NULL", False),
    ],
)
def test_should_test_for_null(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a = 5 AND b = 'x'", True),
        ("a = 5 AND b = 'y'", False),
        ("a = 6 OR b = 'x'", True),
        ("a = 6 OR b = 'y'", False),
        ("NOT (a = 6)", True),
        ("NOT (a = 5)", False),
        ("a = 6 OR b = 'y' OR TAGS = 'TagA'", True),
        ("(a = 6 OR b = 'x') AND NOT (TAGS = 'TagB')", True),
        ("a = 6 AND b = 'x' OR TAGS = 'TagA'", True),  # AND binds tighter than OR
    ],
)
def test_should_combine_with_and_or_not(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("missing = 1 OR a = 5", True),  # unknown OR true
        ("missing = 1 AND a = 5", False),  # unknown AND true: unknown
        ("missing = 1 AND a = 6", False),
        ("NOT (missing = 1)", False),  # NOT unknown: unknown
    ],
)
def test_should_treat_a_missing_property_as_unknown(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("TRUE", True),
        ("FALSE", False),
        ("flag = TRUE", True),
        ("flag = FALSE", False),
        ("a = TRUE", False),
    ],
)
def test_should_use_boolean_literals(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("b CONTAINS 'x'", True),
        ("TAGS STARTSWITH 'Tag'", True),
        ("TAGS ENDSWITH 'B'", False),
        ("TAGS NOT ENDSWITH 'B'", True),
    ],
)
def test_should_test_strings_with_contains_startswith_endswith(
    expression: str, expected: bool
) -> None:
    assert matches(expression) is expected


def test_should_read_keywords_in_any_case_and_property_names_as_written() -> None:
    assert matches("TAGS in ('TagA') and A is null and a Between 1 AnD 9")
    assert not matches("tags in ('TagA')")


def test_should_compile_once_and_reuse_the_filter() -> None:
    assert compile_sql92("a > 1") is compile_sql92("a > 1")


def test_should_not_match_when_a_property_is_not_a_number() -> None:
    assert not matches("a > 1", {"a": "five"})
    assert matches("a > 1", {"a": " 7 "})


@pytest.mark.parametrize(
    ("expression", "position", "problem"),
    [
        ("a >", 3, "expected a value"),
        ("a > 1 AND", 9, "expected a value"),
        ("a", 0, "not a condition"),
        ("5", 0, "not a condition"),
        ("a > 1 b", 6, "expected AND, OR or the end"),
        ("b IN (1)", 6, "IN takes string literals"),
        ("b IN ('x' 'y')", 10, "in the IN list"),
        ("b = 'x", 4, "unexpected character"),
        ("a ! 3", 2, "unexpected character"),
        ("(a > 1", 6, "expected '\\)'"),
        ("a BETWEEN 1 5", 12, "AND in BETWEEN"),
        ("a IS 5", 5, "NULL after IS"),
        ("a > 1 AND b", 10, "need conditions"),
        ("NOT a", 4, "need conditions"),
        ("NOT a = 6", 4, "need conditions"),
        ("b CONTAINS 1", 11, "needs a string literal"),
        ("   ", 0, "empty"),
    ],
)
def test_should_refuse_a_syntax_error_with_its_position(
    expression: str, position: int, problem: str
) -> None:
    with pytest.raises(InvalidExpressionError, match=problem) as raised:
        compile_sql92(expression)
    assert raised.value.values["position"] == position
    assert raised.value.values["expression"] == expression
