from __future__ import annotations

import pytest

from aeromq import broker
from aeromq.broker import (
    BrokerError,
    BrokerStateError,
    ConfigError,
    CorruptRecordError,
    FlushTimeoutError,
    InvalidArgumentError,
    StoreError,
    StoreIOError,
    StoreLockedError,
    UnknownTopicError,
    _errors,
    error_for_code,
    store,
)


def _isort_key(name: str) -> tuple[int, str]:
    """Constants, then classes, then functions (ruff's RUF022 order)."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_should_export_a_sorted_public_api() -> None:
    assert broker.__all__ == sorted(broker.__all__, key=_isort_key)
    for name in broker.__all__:
        assert hasattr(broker, name), name
    assert store.__all__ == sorted(store.__all__, key=_isort_key)
    assert set(store.__all__) <= set(broker.__all__)


@pytest.mark.parametrize(
    ("error", "bases"),
    [
        (ConfigError, (BrokerError, ValueError)),
        (InvalidArgumentError, (BrokerError, ValueError)),
        (BrokerStateError, (BrokerError,)),
        (UnknownTopicError, (BrokerError, KeyError)),
        (StoreError, (BrokerError,)),
        (StoreLockedError, (StoreError,)),
        (StoreIOError, (StoreError, OSError)),
        (CorruptRecordError, (StoreError,)),
        (FlushTimeoutError, (StoreError, TimeoutError)),
    ],
)
def test_should_place_each_error_in_the_documented_tree(
    error: type[BrokerError], bases: tuple[type[BaseException], ...]
) -> None:
    for base in bases:
        assert issubclass(error, base)
    assert error.__name__ in (_errors.__doc__ or "")


def test_should_format_values_as_key_value_and_keep_them() -> None:
    error = CorruptRecordError("record failed its check", physical_offset=4096, check="BAD_CRC")
    assert str(error) == "record failed its check: physical_offset=4096 check='BAD_CRC'"
    assert error.physical_offset == 4096  # type: ignore[attr-defined]
    assert error.values == {"physical_offset": 4096, "check": "BAD_CRC"}
    assert str(UnknownTopicError("no such topic", topic="T")) == "no such topic: topic='T'"


def test_should_say_which_errors_are_retriable_and_map_codes_back() -> None:
    assert StoreLockedError.retriable and StoreIOError.retriable and FlushTimeoutError.retriable
    assert not CorruptRecordError.retriable and not InvalidArgumentError.retriable
    for error in (InvalidArgumentError, BrokerStateError, UnknownTopicError, FlushTimeoutError):
        assert error_for_code(error.code) is error
    assert error_for_code(BrokerError.code) is BrokerError
    assert error_for_code(99999) is BrokerError
