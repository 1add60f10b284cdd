"""RocketMQ's SQL92 property filter: parse an expression once, evaluate it per message.

``compile_sql92("a > 5 AND TAGS IN ('TagA', 'TagB')")`` gives a :class:`Sql92Filter`;
``filter.matches(properties)`` says whether a message with these properties (a mapping of
strings, the tag under ``TAGS``) is selected. A pure module: no I/O, no state besides a cache
of compiled expressions. The broker evaluates it on the pull path, and ``subscribe()`` compiles
it first so a bad expression is refused there.

The grammar (RocketMQ's ``SelectorParser.jj``; keywords in any case)::

    expression  := or
    or          := and ( OR and )*
    and         := equality ( AND equality )*
    equality    := comparison ( ( '=' | '<>' | '!=' ) comparison | IS [NOT] NULL )*
    comparison  := unary ( ( '>' | '>=' | '<' | '<=' ) unary
                         | [NOT] BETWEEN unary AND unary
                         | [NOT] IN '(' string ( ',' string )* ')'
                         | [NOT] ( CONTAINS | STARTSWITH | ENDSWITH ) string )*
    unary       := ( '+' | '-' | NOT ) unary | primary      (NOT binds tightest:
                                                          NOT (a = 1), not NOT a = 1)
    primary     := literal | identifier | '(' or ')'
    literal     := 'string' ('' inside is a quote) | integer | decimal (1.5, .5, 1e3)
                 | 0x hex | TRUE | FALSE | NULL
    identifier  := [A-Za-z_$] [A-Za-z0-9_.$]*

Evaluation: properties are strings; a property compared with a number is read as a number
(``"5" > 3``), and one that is not a number makes the comparison false. Ordering and BETWEEN
compare numbers only; ``=`` and ``<>`` compare strings, numbers or booleans; IN and the string
tests compare strings. A missing property is NULL: any comparison with it is unknown, and
AND, OR and NOT follow SQL's three-valued logic; a message matches only when the whole
expression is TRUE. The expression must be a condition: ``a`` or ``5`` alone is refused.

Errors: :class:`~common.InvalidExpressionError` with ``expression`` and ``position`` (the
0-based character index of the offending token) as attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import NoReturn

from aeromq.common._sql92_lexer import Token, Value, syntax_error, tokens
from aeromq.common._sql92_values import (
    AFTER_NOT,
    ORDERINGS,
    STRING_TESTS,
    Evaluator,
    between_of,
    equal,
    in_of,
    negative_of,
    not_,
    ordering_of,
    string_test_of,
)

__all__ = ["Sql92Filter", "compile_sql92"]


class _Parser:
    """Recursive descent over the tokens; each rule returns ``(evaluator, is_condition)``."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.tokens = tokens(expression)
        self.index = 0

    @property
    def token(self) -> Token:
        return self.tokens[self.index]

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def at(self, kind: str, text: str | None = None) -> bool:
        token = self.token
        return token.kind == kind and (text is None or token.text == text)

    def accept(self, kind: str, text: str | None = None) -> bool:
        if self.at(kind, text):
            self.index += 1
            return True
        return False

    def expect(self, kind: str, text: str, what: str) -> None:
        if not self.accept(kind, text):
            self.fail(f"expected {what}")

    def fail(self, problem: str, token: Token | None = None) -> NoReturn:
        token = token or self.token
        raise syntax_error(self.expression, token.position, f"{problem}, found {token.text!r}")

    def parse(self) -> Evaluator:
        start = self.token
        evaluate, condition = self.or_()
        if not self.at("end"):
            self.fail("expected AND, OR or the end")
        if not condition:
            self.fail("the expression is a value, not a condition", start)
        return evaluate

    def condition(self, part: tuple[Evaluator, bool], token: Token) -> Evaluator:
        evaluate, condition = part
        if not condition:
            self.fail("AND, OR and NOT need conditions", token)
        return evaluate

    def or_(self) -> tuple[Evaluator, bool]:
        start = self.token
        left = self.and_()
        if not self.at("keyword", "OR"):
            return left
        parts = [self.condition(left, start)]
        while self.accept("keyword", "OR"):
            token = self.token
            parts.append(self.condition(self.and_(), token))

        def evaluate(properties: Mapping[str, str]) -> Value:
            unknown = False
            for part in parts:
                value = part(properties)
                if value is True:
                    return True
                if value is None:
                    unknown = True
            return None if unknown else False

        return evaluate, True

    def and_(self) -> tuple[Evaluator, bool]:
        start = self.token
        left = self.equality()
        if not self.at("keyword", "AND"):
            return left
        parts = [self.condition(left, start)]
        while self.accept("keyword", "AND"):
            token = self.token
            parts.append(self.condition(self.equality(), token))

        def evaluate(properties: Mapping[str, str]) -> Value:
            unknown = False
            for part in parts:
                value = part(properties)
                if value is False:
                    return False
                if value is None:
                    unknown = True
            return None if unknown else True

        return evaluate, True

    def equality(self) -> tuple[Evaluator, bool]:
        left = self.comparison()
        while True:
            token = self.token
            if token.kind == "op" and token.text in ("=", "<>", "!="):
                self.take()
                left = self._equals(left[0], self.comparison()[0], token.text != "=")
            elif self.accept("keyword", "IS"):
                negate = self.accept("keyword", "NOT")
                self.expect("keyword", "NULL", "NULL after IS")
                left = self._is_null(left[0], negate)
            else:
                return left

    @staticmethod
    def _equals(left: Evaluator, right: Evaluator, negate: bool) -> tuple[Evaluator, bool]:
        if negate:
            return (lambda p: not_(equal(left(p), right(p)))), True
        return (lambda p: equal(left(p), right(p))), True

    @staticmethod
    def _is_null(operand: Evaluator, negate: bool) -> tuple[Evaluator, bool]:
        if negate:
            return (lambda p: operand(p) is not None), True
        return (lambda p: operand(p) is None), True

    def comparison(self) -> tuple[Evaluator, bool]:
        left = self.unary()
        while True:
            token = self.token
            if token.kind == "op" and token.text in ORDERINGS:
                self.take()
                left = ordering_of(token.text, left[0], self.unary()[0]), True
                continue
            negate = False
            if token.kind == "keyword" and token.text == "NOT":
                following = self.tokens[self.index + 1]
                if following.kind != "keyword" or following.text not in AFTER_NOT:
                    return left
                self.take()
                negate = True
                token = self.token
            if self.accept("keyword", "BETWEEN"):
                low = self.unary()[0]
                self.expect("keyword", "AND", "AND in BETWEEN")
                high = self.unary()[0]
                left = between_of(left[0], low, high, negate), True
            elif self.accept("keyword", "IN"):
                left = in_of(left[0], self.string_list(), negate), True
            elif token.kind == "keyword" and token.text in STRING_TESTS:
                self.take()
                literal = self.token
                if not self.accept("string"):
                    self.fail(f"{token.text} needs a string literal")
                assert isinstance(literal.value, str)
                left = string_test_of(token.text, left[0], literal.value, negate), True
            else:
                return left

    def string_list(self) -> frozenset[str]:
        self.expect("op", "(", "'(' after IN")
        values: set[str] = set()
        while True:
            literal = self.token
            if not self.accept("string"):
                self.fail("IN takes string literals")
            assert isinstance(literal.value, str)
            values.add(literal.value)
            if self.accept("op", ")"):
                return frozenset(values)
            self.expect("op", ",", "',' or ')' in the IN list")

    def unary(self) -> tuple[Evaluator, bool]:
        token = self.token
        if self.accept("op", "+") or self.accept("op", "-"):
            operand = self.unary()[0]
            if token.text == "+":
                return operand, False
            return negative_of(operand), False
        if self.accept("keyword", "NOT"):
            start = self.token
            operand = self.condition(self.unary(), start)
            return (lambda p: not_(operand(p))), True
        return self.primary()

    def primary(self) -> tuple[Evaluator, bool]:
        token = self.take()
        if token.kind in ("string", "number"):
            value = token.value
            return (lambda p: value), False
        if token.kind == "keyword" and token.text in ("TRUE", "FALSE"):
            truth = token.text == "TRUE"
            return (lambda p: truth), True
        if token.kind == "keyword" and token.text == "NULL":
            return (lambda p: None), False
        if token.kind == "name":
            name = token.text
            return (lambda p: p.get(name)), False
        if token.kind == "op" and token.text == "(":
            inner = self.or_()
            self.expect("op", ")", "')'")
            return inner
        self.fail("expected a value, a property or '('", token)


@dataclass(frozen=True, slots=True)
class Sql92Filter:
    """A compiled SQL92 expression (see the module doc)."""

    expression: str
    _evaluate: Evaluator

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether a message with ``properties`` is selected (the expression is TRUE)."""
        return self._evaluate(properties) is True


@lru_cache(maxsize=1024)
def compile_sql92(expression: str) -> Sql92Filter:
    """Parse ``expression`` once (cached); raises InvalidExpressionError with its position."""
    if not expression or expression.isspace():
        raise syntax_error(expression, 0, "the expression is empty")
    return Sql92Filter(expression, _Parser(expression).parse())
