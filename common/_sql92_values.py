"""The SQL92 filter's values: SQL's three-valued comparisons over string properties
(``common._sql92``).

Properties are strings; one compared with a number is read as a number, and one that is not
a number makes the comparison false. Ordering and BETWEEN compare numbers only; ``=`` compares
strings, numbers or booleans; IN and the string tests compare strings. NULL (a missing property)
makes every comparison unknown (None), and NOT unknown is unknown. Each ``*_of`` builder makes
the evaluator of one operator from the evaluators of its operands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from aeromq.common._sql92_lexer import Value

__all__ = [
    "AFTER_NOT",
    "ORDERINGS",
    "STRING_TESTS",
    "Evaluator",
    "between_of",
    "equal",
    "in_of",
    "negative_of",
    "not_",
    "ordering_of",
    "string_test_of",
]

Evaluator = Callable[[Mapping[str, str]], Value]
"""Evaluates an expression (or a part) over a message's properties."""


def _number(value: Value) -> int | float | None:
    """``value`` as a number, or None (a string that is not one, a boolean, NULL)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return value
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def _boolean(value: Value) -> bool | None:
    """``value`` as a boolean (``"true"``/``"false"`` in any case), or None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "false"):
            return text == "true"
    return None


def equal(left: Value, right: Value) -> bool | None:
    if left is None or right is None:
        return None
    if isinstance(left, bool) or isinstance(right, bool):
        truth = _boolean(left)
        return truth is not None and truth == _boolean(right)
    if isinstance(left, str) and isinstance(right, str):
        return left == right
    a, b = _number(left), _number(right)
    return a is not None and b is not None and a == b


def _order(left: Value, right: Value) -> tuple[int | float, int | float] | None:
    """Both as numbers, or None (unknown or not comparable)."""
    if left is None or right is None:
        return None
    a, b = _number(left), _number(right)
    if a is None or b is None:
        return None
    return a, b


def not_(value: Value) -> Value:
    return None if value is None else not value


ORDERINGS: Final = frozenset({">", ">=", "<", "<="})
STRING_TESTS: Final = frozenset({"CONTAINS", "STARTSWITH", "ENDSWITH"})
AFTER_NOT: Final = frozenset({"BETWEEN", "IN", *STRING_TESTS})


def negative_of(operand: Evaluator) -> Evaluator:
    def evaluate(properties: Mapping[str, str]) -> Value:
        number = _number(operand(properties))
        return None if number is None else -number

    return evaluate


def ordering_of(operator: str, left: Evaluator, right: Evaluator) -> Evaluator:
    def evaluate(properties: Mapping[str, str]) -> Value:
        pair = _order(left(properties), right(properties))
        if pair is None:
            return None
        a, b = pair
        if operator == ">":
            return a > b
        if operator == ">=":
            return a >= b
        if operator == "<":
            return a < b
        return a <= b

    return evaluate


def between_of(operand: Evaluator, low: Evaluator, high: Evaluator, negate: bool) -> Evaluator:
    def evaluate(properties: Mapping[str, str]) -> Value:
        value = operand(properties)
        above = _order(value, low(properties))
        below = _order(value, high(properties))
        if above is None or below is None:
            return None
        inside = above[0] >= above[1] and below[0] <= below[1]
        return not inside if negate else inside

    return evaluate


def in_of(operand: Evaluator, values: frozenset[str], negate: bool) -> Evaluator:
    def evaluate(properties: Mapping[str, str]) -> Value:
        value = operand(properties)
        if value is None:
            return None
        found = isinstance(value, str) and value in values
        return not found if negate else found

    return evaluate


def string_test_of(test: str, operand: Evaluator, literal: str, negate: bool) -> Evaluator:
    def evaluate(properties: Mapping[str, str]) -> Value:
        value = operand(properties)
        if not isinstance(value, str):
            return None
        if test == "CONTAINS":
            found = literal in value
        elif test == "STARTSWITH":
            found = value.startswith(literal)
        else:
            found = value.endswith(literal)
        return not found if negate else found

    return evaluate
