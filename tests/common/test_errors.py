from __future__ import annotations

import pytest

from aeromq import client
from aeromq.client import (
    ERROR_FOR_CODE,
    AccessDeniedError,
    AuthenticationError,
    BrokerBusyError,
    BrokerUnavailableError,
    ClientError,
    DiskFullError,
    IllegalArgumentError,
    InvalidExpressionError,
    MessageIllegalError,
    MessageTooLargeError,
    NoPermissionError,
    NotEnoughReplicasError,
    NotLeaderError,
    NotSupportedError,
    OffsetIllegalError,
    ReplicationTimeoutError,
    RequestTimeoutError,
    ResponseCode,
    TopicNotFoundError,
    error_for_code,
)
from aeromq.common import _errors


def test_should_format_values_as_key_value_and_keep_them_as_attributes() -> None:
    error = TopicNotFoundError("no route for topic", topic="T1", broker="b-a")
    assert str(error) == "no route for topic: topic='T1' broker='b-a'"
    assert error.topic == "T1"  # type: ignore[attr-defined]
    assert error.values == {"topic": "T1", "broker": "b-a"}


def test_should_keep_a_bare_message_without_values() -> None:
    assert str(ClientError("plain")) == "plain"


def test_should_root_every_public_error_at_client_error() -> None:
    errors = [
        getattr(client, name)
        for name in client.__all__
        if isinstance(getattr(client, name), type)
        and issubclass(getattr(client, name), BaseException)
    ]
    assert len(errors) == 23
    assert all(issubclass(error, ClientError) for error in errors)
    tree = _errors.__doc__ or ""
    assert all(f" {error.__name__} " in tree for error in errors)


def test_should_also_be_the_builtin_errors_callers_expect() -> None:
    assert issubclass(IllegalArgumentError, ValueError)
    assert issubclass(MessageTooLargeError, MessageIllegalError)
    assert issubclass(InvalidExpressionError, IllegalArgumentError)
    assert issubclass(RequestTimeoutError, TimeoutError)
    assert issubclass(NotSupportedError, NotImplementedError)


def test_should_mark_only_transient_failures_retriable() -> None:
    retriable = {
        BrokerBusyError,
        BrokerUnavailableError,
        DiskFullError,
        NotEnoughReplicasError,
        NotLeaderError,
        ReplicationTimeoutError,
        RequestTimeoutError,
    }
    for error_class in set(ERROR_FOR_CODE.values()) | {ClientError}:
        assert error_class.retriable is (error_class in retriable), error_class


def test_should_map_wire_codes_to_their_classes_and_keep_the_code() -> None:
    error = error_for_code(ResponseCode.TOPIC_NOT_EXIST, "topic not found", topic="T")
    assert type(error) is TopicNotFoundError
    assert error.code == 17
    assert str(error) == "topic not found: topic='T'"
    assert type(error_for_code(ResponseCode.FLOW_CONTROL, "busy")) is BrokerBusyError
    assert type(error_for_code(ResponseCode.PULL_OFFSET_MOVED, "moved")) is OffsetIllegalError
    assert error_for_code(ResponseCode.SLAVE_NOT_AVAILABLE, "x").code == 11
    full = error_for_code(ResponseCode.DISK_FULL, "disk full: free_bytes=1 needed_bytes=2")
    assert type(full) is DiskFullError and isinstance(full, BrokerBusyError) and full.retriable


def test_should_register_each_class_under_its_own_code() -> None:
    for error_class in ERROR_FOR_CODE.values():
        assert error_class.code is not None
        assert ERROR_FOR_CODE[error_class.code] is error_class


def test_should_fall_back_to_the_root_for_an_unknown_code() -> None:
    error = error_for_code(9999, "strange", detail=1)
    assert type(error) is ClientError
    assert error.code == 9999


def test_should_refuse_to_make_an_error_of_success() -> None:
    with pytest.raises(IllegalArgumentError, match="SUCCESS response is not an error"):
        error_for_code(ResponseCode.SUCCESS, "fine")


def test_should_map_the_access_control_codes_to_their_errors() -> None:
    denied = error_for_code(ResponseCode.FORBIDDEN, "access denied", user="app")
    assert type(denied) is AccessDeniedError and isinstance(denied, NoPermissionError)
    refused = error_for_code(ResponseCode.UNAUTHORIZED, "bad user or secret", user="app")
    assert type(refused) is AuthenticationError and not refused.retriable


def test_should_reexport_every_public_name_of_the_shared_errors_module() -> None:
    assert set(_errors.__all__) <= set(client.__all__)
