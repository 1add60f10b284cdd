"""Subscription expressions: tag expressions, ``MessageSelector`` and ``SubscriptionData``.

A tag expression is ``"*"`` (every message) or tags joined by ``||`` with optional whitespace
around them: ``"TagA || TagB"``. None, ``""`` and whitespace mean ``"*"``. RocketMQ's
``FilterAPI`` silently drops what it cannot use; here these are errors
(:class:`~common.InvalidExpressionError`): an empty alternative (``"A ||"``, ``"A |||| B"``),
a single ``|`` (``"A | B"``), whitespace inside a tag (``"A B"``), and ``*`` beside tags.

The broker filters on tag hash codes (:func:`tag_hash_code`, Java's ``String.hashCode``, stored
in every consume-queue entry: the broker's store and the clients call this one function); hash
codes can collide, so the client filters again on the tag strings
(:meth:`SubscriptionData.matches_tag`), as RocketMQ's client does. The broker parses a pull's
expression with :func:`build_subscription_data` too.

SQL92 selectors (:meth:`MessageSelector.by_sql`) are compiled by :func:`build_subscription_data`
(:func:`~common.compile_sql92`), so a bad one is refused with the position of the error where
the subscription is made; the broker evaluates them on the pull path against each message's
properties. The tag checks below (:meth:`SubscriptionData.matches_tag`) are for tag
subscriptions only and raise :class:`~common.NotSupportedError` for a SQL92 one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from aeromq.common._errors import InvalidExpressionError, NotSupportedError
from aeromq.common._java_string import hash_code
from aeromq.common._sql92 import compile_sql92
from aeromq.common._validators import tag_problem

__all__ = [
    "SUB_ALL",
    "ExpressionType",
    "MessageSelector",
    "SubscriptionData",
    "build_subscription_data",
    "parse_tag_expression",
    "tag_hash_code",
]

SUB_ALL = "*"
_OR = "||"


class ExpressionType(StrEnum):
    """The language of a subscription expression (RocketMQ's ``ExpressionType``)."""

    TAG = "TAG"
    SQL92 = "SQL92"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """Selects messages at the broker: ``MessageSelector.by_tag("A || B")`` or ``by_sql(...)``."""

    expression_type: ExpressionType
    expression: str

    @classmethod
    def by_tag(cls, expression: str | None) -> MessageSelector:
        """A tag expression; None, empty or ``"*"`` selects every message."""
        return cls(ExpressionType.TAG, expression or SUB_ALL)

    @classmethod
    def by_sql(cls, sql: str) -> MessageSelector:
        """A SQL92 expression on the message's properties, evaluated by the broker."""
        return cls(ExpressionType.SQL92, sql)


@lru_cache(maxsize=4096)
def tag_hash_code(tag: str) -> int:
    """The tag's hash as RocketMQ stores it in the consume queue: Java's ``tag.hashCode()``.

    The broker's store writes it into every consume-queue entry and clients subscribe with it,
    so both call this function."""
    return hash_code(tag)


def parse_tag_expression(expression: str | None) -> tuple[str, ...]:
    """The distinct tags of a tag expression in order of appearance; ``()`` means every tag."""
    text = (expression or "").strip()
    if text == SUB_ALL or not text:
        return ()
    tags: dict[str, None] = {}
    for position, alternative in enumerate(text.split(_OR)):
        tag = alternative.strip()
        if tag == SUB_ALL:
            raise InvalidExpressionError(
                "'*' cannot be combined with tags", expression=expression, alternative=position
            )
        problem = tag_problem(tag)
        if problem is not None:
            raise InvalidExpressionError(
                problem, expression=expression, alternative=position, tag=tag
            )
        tags[tag] = None
    return tuple(tags)


@dataclass(frozen=True, slots=True)
class SubscriptionData:
    """What a consumer subscribes to on one topic (RocketMQ's ``SubscriptionData``).

    ``tags`` is empty for ``*``; ``codes`` are the tags' hash codes, which the broker matches
    against the consume queue; ``sub_string`` is the expression in a normal form (``"*"`` or
    ``"A || B"``), so equal subscriptions compare equal. SQL92 keeps its expression as given.
    """

    topic: str
    sub_string: str
    expression_type: ExpressionType = ExpressionType.TAG
    tags: tuple[str, ...] = ()
    codes: frozenset[int] = frozenset()

    @property
    def is_sub_all(self) -> bool:
        """Every message matches (a ``*`` tag subscription)."""
        return self.expression_type is ExpressionType.TAG and not self.tags

    def matches_tag(self, tag: str | None) -> bool:
        """Whether a message with ``tag`` (None: no tag) is wanted: the client-side check."""
        if self.expression_type is not ExpressionType.TAG:
            raise _sql_not_supported(self)
        return not self.tags or (tag is not None and tag in self.tags)

    def matches_tag_code(self, code: int) -> bool:
        """Whether a consume-queue entry with tag hash ``code`` may match: the broker's check."""
        if self.expression_type is not ExpressionType.TAG:
            raise _sql_not_supported(self)
        return not self.tags or code in self.codes


def _sql_not_supported(subscription: SubscriptionData) -> NotSupportedError:
    return NotSupportedError(
        "a SQL92 subscription has no tags to match: the broker evaluates its expression",
        topic=subscription.topic,
        expression=subscription.sub_string,
    )


def build_subscription_data(
    topic: str, expression: str | MessageSelector | None = None
) -> SubscriptionData:
    """The subscription for ``topic`` with a tag expression or a selector (RocketMQ's
    ``FilterAPI.build``). An empty SQL92 expression is an error, as in RocketMQ, and so is
    one that does not compile (:class:`~common.InvalidExpressionError` with its ``position``)."""
    if isinstance(expression, MessageSelector):
        if expression.expression_type is ExpressionType.SQL92:
            if not expression.expression or expression.expression.isspace():
                raise InvalidExpressionError("a SQL92 expression must not be empty", topic=topic)
            compile_sql92(expression.expression)
            return SubscriptionData(topic, expression.expression, ExpressionType.SQL92)
        expression = expression.expression
    tags = parse_tag_expression(expression)
    if not tags:
        return SubscriptionData(topic, SUB_ALL)
    return SubscriptionData(
        topic,
        " || ".join(tags),
        tags=tags,
        codes=frozenset(tag_hash_code(tag) for tag in tags),
    )
