from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.client import (
    SUB_ALL,
    ExpressionType,
    InvalidExpressionError,
    MessageSelector,
    NotSupportedError,
    SubscriptionData,
    build_subscription_data,
    parse_tag_expression,
    tag_hash_code,
)


@pytest.mark.parametrize("expression", [None, "", "   ", "*", " * "])
def test_should_read_empty_and_star_as_every_tag(expression: str | None) -> None:
    assert parse_tag_expression(expression) == ()
    subscription = build_subscription_data("T", expression)
    assert subscription == SubscriptionData("T", SUB_ALL)
    assert subscription.is_sub_all
    assert subscription.matches_tag(None)
    assert subscription.matches_tag("Anything")
    assert subscription.matches_tag_code(12345)


@pytest.mark.parametrize(
    ("expression", "tags"),
    [
        ("TagA", ("TagA",)),
        ("TagA||TagB", ("TagA", "TagB")),
        ("  TagA ||\tTagB  ", ("TagA", "TagB")),
        ("TagB || TagA || TagB", ("TagB", "TagA")),
    ],
)
def test_should_parse_tags_joined_by_or(expression: str, tags: tuple[str, ...]) -> None:
    assert parse_tag_expression(expression) == tags


def test_should_store_java_hash_codes_of_the_tags() -> None:
    subscription = build_subscription_data("TopicTest", "TagA || TagB")
    assert subscription.tags == ("TagA", "TagB")
    assert subscription.codes == frozenset({2598919, 2598920})
    assert subscription.sub_string == "TagA || TagB"
    assert subscription.expression_type is ExpressionType.TAG
    assert tag_hash_code("TagA") == 2598919


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("TagA ||", "a tag must not be empty: expression='TagA ||' alternative=1 tag=''"),
        ("|| TagA", "a tag must not be empty: expression='|| TagA' alternative=0 tag=''"),
        (
            "TagA |||| TagB",
            "a tag must not be empty: expression='TagA |||| TagB' alternative=1 tag=''",
        ),
        ("TagA | TagB", "a tag must not contain '|': expression='TagA | TagB' alternative=0 "
         "tag='TagA | TagB'"),
        ("TagA ||| TagB", "a tag must not contain '|': expression='TagA ||| TagB' alternative=1 "
         "tag='| TagB'"),
        ("TagA TagB", "a tag must not contain whitespace: expression='TagA TagB' alternative=0 "
         "tag='TagA TagB'"),
        ("TagA || *", "'*' cannot be combined with tags: expression='TagA || *' alternative=1"),
    ],
)  # fmt: skip
def test_should_reject_bad_syntax_with_a_typed_error(expression: str, message: str) -> None:
    with pytest.raises(InvalidExpressionError) as raised:
        build_subscription_data("T", expression)
    assert str(raised.value) == message
    assert raised.value.code == 23  # SUBSCRIPTION_PARSE_FAILED


def test_should_match_tags_exactly_on_the_client_and_by_code_on_the_broker() -> None:
    subscription = build_subscription_data("T", "TagA || TagB")
    assert subscription.matches_tag("TagA")
    assert not subscription.matches_tag("TagC")
    assert not subscription.matches_tag(None)
    assert subscription.matches_tag_code(tag_hash_code("TagB"))
    assert not subscription.matches_tag_code(tag_hash_code("TagC"))


def test_should_let_the_client_drop_a_tag_whose_hash_collides() -> None:
    assert tag_hash_code("Aa") == tag_hash_code("BB")  # a classic Java collision
    subscription = build_subscription_data("T", "Aa")
    assert subscription.matches_tag_code(tag_hash_code("BB"))
    assert not subscription.matches_tag("BB")


def test_should_make_selectors_by_tag_and_by_sql() -> None:
    assert MessageSelector.by_tag(None) == MessageSelector(ExpressionType.TAG, "*")
    assert MessageSelector.by_tag("A || B").expression == "A || B"
    assert MessageSelector.by_sql("a > 1").expression_type is ExpressionType.SQL92
    assert build_subscription_data("T", MessageSelector.by_tag("A")).tags == ("A",)


def test_should_carry_sql_subscriptions_and_refuse_tag_checks_on_them() -> None:
    subscription = build_subscription_data("T", MessageSelector.by_sql("a > 1 AND b = 'x'"))
    assert subscription.expression_type is ExpressionType.SQL92
    assert subscription.sub_string == "a > 1 AND b = 'x'"
    assert not subscription.is_sub_all
    with pytest.raises(NotSupportedError) as raised:
        subscription.matches_tag("A")
    assert str(raised.value).startswith("a SQL92 subscription has no tags to match")
    with pytest.raises(NotSupportedError):
        subscription.matches_tag_code(1)


def test_should_reject_a_sql_expression_that_does_not_compile_with_its_position() -> None:
    with pytest.raises(InvalidExpressionError) as raised:
        build_subscription_data("T", MessageSelector.by_sql("a > 1 AND b ="))
    assert raised.value.values["position"] == 13


def test_should_reject_an_empty_sql_expression() -> None:
    with pytest.raises(InvalidExpressionError, match="a SQL92 expression must not be empty"):
        build_subscription_data("T", MessageSelector.by_sql(" "))


_TAG = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="|*\x01\x02"),
    min_size=1,
).filter(lambda tag: not any(char.isspace() for char in tag))


@given(st.lists(_TAG, min_size=1, max_size=5), st.sampled_from(["||", " || ", "\t||  "]))
def test_should_round_trip_any_list_of_valid_tags(tags: list[str], separator: str) -> None:
    parsed = parse_tag_expression(separator.join(tags))
    assert parsed == tuple(dict.fromkeys(tags))
    assert build_subscription_data("T", " || ".join(parsed)).tags == parsed
