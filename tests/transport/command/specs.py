"""One entry per command-protocol message: its codec, its dataclass and a hypothesis strategy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from hypothesis import strategies as st

from aeromq.transport import command as c
from aeromq.transport.command import (
    client_timeout,
    correlated_message,
    counter_message,
    counter_update,
    error_response,
    image_buffers_ready,
    image_message,
    operation_succeeded,
    publication_buffers_ready,
    publication_message,
    remove_message,
    subscription_message,
    subscription_ready,
    terminate_driver_message,
)

TEXT_FIELDS = {"channel", "log_file_name", "source_identity", "label", "error_message"}
BYTES_FIELDS = {"key", "token"}

I64 = st.integers(-(2**63), 2**63 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
NAME = st.text(max_size=80)
BLOB = st.binary(max_size=80)
ENCODE_CAPACITY = 4096
"""Room for any message these specs draw, at an offset of up to 64: a ``NAME`` takes up to 320
bytes of UTF-8 and a message has up to two (256 and 512 bytes were too few at times)."""


@dataclass(frozen=True)
class Spec:
    name: str
    module: ModuleType
    encode: Callable[..., int]
    decode: Callable[..., Any]
    fields: dict[str, st.SearchStrategy[Any]]
    diagram_offsets: tuple[int, ...]
    """Offsets labelled in the module's diagram, as Aeron's C struct lays the fields out."""
    fixed_length: int
    """Length of the fixed part: where the variable blocks start, or the whole message."""


SPECS = [
    Spec(
        "correlated",
        correlated_message,
        c.encode_correlated_message,
        c.decode_correlated_message,
        {"client_id": I64, "correlation_id": I64},
        (0, 8),
        16,
    ),
    Spec(
        "publication",
        publication_message,
        c.encode_publication_message,
        c.decode_publication_message,
        {"client_id": I64, "correlation_id": I64, "stream_id": I32, "channel": NAME},
        (0, 8, 16, 20, 24),
        24,
    ),
    Spec(
        "subscription",
        subscription_message,
        c.encode_subscription_message,
        c.decode_subscription_message,
        {
            "client_id": I64,
            "correlation_id": I64,
            "registration_correlation_id": I64,
            "stream_id": I32,
            "channel": NAME,
        },
        (0, 8, 16, 24, 28, 32),
        32,
    ),
    Spec(
        "remove",
        remove_message,
        c.encode_remove_message,
        c.decode_remove_message,
        {"client_id": I64, "correlation_id": I64, "registration_id": I64},
        (0, 8, 16, 24),
        32,
    ),
    Spec(
        "remove publication",
        remove_message,
        c.encode_remove_publication_message,
        c.decode_remove_publication_message,
        {"client_id": I64, "correlation_id": I64, "registration_id": I64, "flags": I64},
        (0, 8, 16, 24),
        32,
    ),
    Spec(
        "counter",
        counter_message,
        c.encode_counter_message,
        c.decode_counter_message,
        {
            "client_id": I64,
            "correlation_id": I64,
            "type_id": I32,
            "key": BLOB,
            "label": NAME,
        },
        (0, 8, 16, 20, 24),
        20,
    ),
    Spec(
        "terminate driver",
        terminate_driver_message,
        c.encode_terminate_driver_message,
        c.decode_terminate_driver_message,
        {"client_id": I64, "correlation_id": I64, "token": BLOB},
        (0, 8, 16, 20),
        20,
    ),
    Spec(
        "publication buffers ready",
        publication_buffers_ready,
        c.encode_publication_buffers_ready,
        c.decode_publication_buffers_ready,
        {
            "correlation_id": I64,
            "registration_id": I64,
            "session_id": I32,
            "stream_id": I32,
            "position_limit_counter_id": I32,
            "channel_status_indicator_id": I32,
            "log_file_name": NAME,
        },
        (0, 8, 16, 20, 24, 28, 32, 36),
        36,
    ),
    Spec(
        "subscription ready",
        subscription_ready,
        c.encode_subscription_ready,
        c.decode_subscription_ready,
        {"correlation_id": I64, "channel_status_indicator_id": I32},
        (0, 8),
        12,
    ),
    Spec(
        "image buffers ready",
        image_buffers_ready,
        c.encode_image_buffers_ready,
        c.decode_image_buffers_ready,
        {
            "correlation_id": I64,
            "session_id": I32,
            "stream_id": I32,
            "subscriber_registration_id": I64,
            "subscriber_position_id": I32,
            "log_file_name": NAME,
            "source_identity": NAME,
        },
        (0, 8, 12, 16, 24, 28, 32),
        28,
    ),
    Spec(
        "image message",
        image_message,
        c.encode_image_message,
        c.decode_image_message,
        {
            "correlation_id": I64,
            "subscription_registration_id": I64,
            "stream_id": I32,
            "channel": NAME,
        },
        (0, 8, 16, 20, 24),
        24,
    ),
    Spec(
        "error response",
        error_response,
        c.encode_error_response,
        c.decode_error_response,
        {"offending_command_correlation_id": I64, "error_code": I32, "error_message": NAME},
        (0, 8, 12, 16),
        16,
    ),
    Spec(
        "operation succeeded",
        operation_succeeded,
        c.encode_operation_succeeded,
        c.decode_operation_succeeded,
        {"correlation_id": I64},
        (0,),
        8,
    ),
    Spec(
        "counter update",
        counter_update,
        c.encode_counter_update,
        c.decode_counter_update,
        {"correlation_id": I64, "counter_id": I32},
        (0, 8),
        12,
    ),
    Spec(
        "client timeout",
        client_timeout,
        c.encode_client_timeout,
        c.decode_client_timeout,
        {"client_id": I64},
        (0,),
        8,
    ),
]

SPEC_IDS = [spec.name for spec in SPECS]


def sample_values(spec: Spec) -> dict[str, Any]:
    """Fixed values for every field: strings and blocks non-empty, so every length matters."""
    values: dict[str, Any] = {}
    for index, name in enumerate(spec.fields):
        if name in TEXT_FIELDS:
            values[name] = "aeron:udp?endpoint=localhost:40123"
        elif name in BYTES_FIELDS:
            values[name] = b"\x01\x02\x03"
        else:
            values[name] = 1000 + index
    return values
