from __future__ import annotations

import pytest

from aeromq.transport.command import control_protocol as cp
from aeromq.transport.command.control_protocol import ErrorCode, type_name


def test_should_use_aerons_command_and_response_type_ids() -> None:
    assert list(range(0x01, 0x10)) == [
        cp.ADD_PUBLICATION,
        cp.REMOVE_PUBLICATION,
        cp.ADD_EXCLUSIVE_PUBLICATION,
        cp.ADD_SUBSCRIPTION,
        cp.REMOVE_SUBSCRIPTION,
        cp.CLIENT_KEEPALIVE,
        cp.ADD_DESTINATION,
        cp.REMOVE_DESTINATION,
        cp.ADD_COUNTER,
        cp.REMOVE_COUNTER,
        cp.CLIENT_CLOSE,
        cp.ADD_RCV_DESTINATION,
        cp.REMOVE_RCV_DESTINATION,
        cp.TERMINATE_DRIVER,
        cp.ADD_STATIC_COUNTER,
    ]
    assert list(range(0x0F01, 0x0F0C)) == [
        cp.ON_ERROR,
        cp.ON_AVAILABLE_IMAGE,
        cp.ON_PUBLICATION_READY,
        cp.ON_OPERATION_SUCCESS,
        cp.ON_UNAVAILABLE_IMAGE,
        cp.ON_EXCLUSIVE_PUBLICATION_READY,
        cp.ON_SUBSCRIPTION_READY,
        cp.ON_COUNTER_READY,
        cp.ON_UNAVAILABLE_COUNTER,
        cp.ON_CLIENT_TIMEOUT,
        cp.ON_STATIC_COUNTER,
    ]


def test_should_name_type_ids_for_logs() -> None:
    assert type_name(0x0E) == "TERMINATE_DRIVER"
    assert type_name(0x0F0A) == "ON_CLIENT_TIMEOUT"
    assert type_name(0x77) == "UNKNOWN(0x77)"


@pytest.mark.parametrize(
    ("code", "value"),
    [
        (ErrorCode.UNKNOWN_CODE_VALUE, -1),
        (ErrorCode.UNUSED, 0),
        (ErrorCode.INVALID_CHANNEL, 1),
        (ErrorCode.UNKNOWN_SUBSCRIPTION, 2),
        (ErrorCode.UNKNOWN_PUBLICATION, 3),
        (ErrorCode.CHANNEL_ENDPOINT_ERROR, 4),
        (ErrorCode.UNKNOWN_COUNTER, 5),
        (ErrorCode.UNKNOWN_COMMAND_TYPE_ID, 6),
        (ErrorCode.MALFORMED_COMMAND, 7),
        (ErrorCode.NOT_SUPPORTED, 8),
        (ErrorCode.UNKNOWN_HOST, 9),
        (ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE, 10),
        (ErrorCode.GENERIC_ERROR, 11),
        (ErrorCode.STORAGE_SPACE, 12),
        (ErrorCode.IMAGE_REJECTED, 13),
        (ErrorCode.PUBLICATION_REVOKED, 14),
    ],
)
def test_should_use_aerons_error_code_values(code: ErrorCode, value: int) -> None:
    assert code == value
    assert ErrorCode.of(value) is code


def test_should_map_unknown_error_code_values_to_unknown_code_value() -> None:
    assert ErrorCode.of(15) is ErrorCode.UNKNOWN_CODE_VALUE
    assert ErrorCode.of(-7) is ErrorCode.UNKNOWN_CODE_VALUE


def test_should_export_a_sorted_all_of_importable_names() -> None:
    from aeromq.transport import command as package

    # ruff's isort-style order (RUF022): CONSTANTS, then Classes, then functions.
    def order(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert package.__all__ == sorted(package.__all__, key=order)
    assert all(hasattr(package, name) for name in package.__all__)
