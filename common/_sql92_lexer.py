"""The SQL92 filter's lexer: an expression's tokens with their positions (``common._sql92``).

Tokens: string literals (``'it''s'``), numbers (``5``, ``5L``, ``1.5``, ``.5``, ``1e3``,
``0x1F``), names (``[A-Za-z_$][A-Za-z0-9_.$]*``; the keywords below in any case), and the
operators ``= <> != > >= < <= ( ) , + -``. Every token carries its 0-based character position,
which syntax errors report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from aeromq.common._errors import InvalidExpressionError

__all__ = ["KEYWORDS", "Token", "Value", "syntax_error", "tokens"]

Value = str | int | float | bool | None
"""What an expression evaluates to: a literal, a property (a string), a truth value or NULL."""

KEYWORDS: Final = frozenset(
    {
        "AND", "OR", "NOT", "BETWEEN", "IN", "IS", "NULL", "TRUE", "FALSE",
        "CONTAINS", "STARTSWITH", "ENDSWITH",
    }
)  # fmt: skip

_TOKEN: Final = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<string>'(?:[^']|'')*')
    | (?P<hex>0[xX][0-9a-fA-F]+)
    | (?P<decimal>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
    | (?P<integer>\d+)[lL]?
    | (?P<name>[A-Za-z_$][A-Za-z0-9_.$]*)
    | (?P<op><>|!=|>=|<=|[=<>(),+-])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # string, number, name, keyword, op, end
    text: str
    position: int
    value: Value = None


def tokens(expression: str) -> list[Token]:
    found: list[Token] = []
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None:
            raise syntax_error(
                expression, position, f"unexpected character {expression[position]!r}"
            )
        kind = match.lastgroup or ""
        text = match.group()
        if kind == "string":
            found.append(Token("string", text, position, text[1:-1].replace("''", "'")))
        elif kind == "hex":
            found.append(Token("number", text, position, int(text, 16)))
        elif kind == "decimal":
            found.append(Token("number", text, position, float(text)))
        elif kind == "integer":
            found.append(Token("number", text, position, int(match.group("integer"))))
        elif kind == "name":
            upper = text.upper()
            if upper in KEYWORDS:
                found.append(Token("keyword", upper, position))
            else:
                found.append(Token("name", text, position))
        elif kind == "op":
            found.append(Token("op", text, position))
        position = match.end()
    found.append(Token("end", "end of expression", len(expression)))
    return found


def syntax_error(expression: str, position: int, problem: str) -> InvalidExpressionError:
    return InvalidExpressionError(
        f"SQL92 syntax error: {problem}", expression=expression, position=position
    )
