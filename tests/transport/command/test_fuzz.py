"""Random bytes fed to every decoder: the only exception allowed is MalformedCommandError."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.transport._errors import MalformedCommandError
from aeromq.transport.concurrent import AtomicBuffer
from tests.transport.command.specs import ENCODE_CAPACITY, SPECS

CAPACITY = 256


@settings(max_examples=400, deadline=None)
@given(
    data=st.binary(min_size=CAPACITY, max_size=CAPACITY),
    offset=st.integers(-4, CAPACITY + 4),
    length=st.integers(-4, CAPACITY + 4),
)
def test_should_raise_only_malformed_command_error_on_random_bytes(
    data: bytes, offset: int, length: int
) -> None:
    buffer = AtomicBuffer.allocate(CAPACITY)
    buffer.put_bytes(0, data)
    for spec in SPECS:
        with contextlib.suppress(MalformedCommandError):
            spec.decode(buffer, offset, length)


@settings(max_examples=200, deadline=None)
@given(
    spec_index=st.integers(0, len(SPECS) - 1),
    position=st.integers(0, 63),
    value=st.integers(0, 255),
    data=st.data(),
)
def test_should_decode_or_reject_a_valid_message_with_one_byte_changed(
    spec_index: int, position: int, value: int, data: st.DataObject
) -> None:
    spec = SPECS[spec_index]
    values = {name: data.draw(strategy, label=name) for name, strategy in spec.fields.items()}
    buffer = AtomicBuffer.allocate(ENCODE_CAPACITY)
    length = spec.encode(buffer, 0, **values)
    buffer.put_int8(position % length, value - 128)
    with contextlib.suppress(MalformedCommandError):
        spec.decode(buffer, 0, length)
