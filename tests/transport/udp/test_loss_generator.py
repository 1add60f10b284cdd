"""LossGenerator: seeded, per frame type, counted."""

from __future__ import annotations

import pytest

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol import (
    HDR_TYPE_DATA,
    HDR_TYPE_NAK,
    HDR_TYPE_PAD,
    HDR_TYPE_SETUP,
    HDR_TYPE_SM,
)
from aeromq.transport.testing.loss_generator import LossGenerator


def _frame(frame_type: int) -> AtomicBuffer:
    buffer = AtomicBuffer.allocate(64)
    buffer.put_int16(6, frame_type)
    return buffer


def _decisions(generator: LossGenerator, frame_type: int, count: int) -> list[bool]:
    buffer = _frame(frame_type)
    return [generator.should_drop(buffer, 32) for _ in range(count)]


def test_should_drop_the_same_datagrams_for_the_same_seed() -> None:
    first = _decisions(LossGenerator(data_loss_rate=0.3, seed=11), HDR_TYPE_DATA, 500)
    second = _decisions(LossGenerator(data_loss_rate=0.3, seed=11), HDR_TYPE_DATA, 500)
    other = _decisions(LossGenerator(data_loss_rate=0.3, seed=12), HDR_TYPE_DATA, 500)
    assert first == second
    assert first != other
    assert 100 < sum(first) < 200


def test_should_drop_only_the_frame_types_given() -> None:
    generator = LossGenerator(nak_loss_rate=1.0, sm_loss_rate=0.0)
    assert all(_decisions(generator, HDR_TYPE_NAK, 10))
    assert not any(_decisions(generator, HDR_TYPE_SM, 10))
    assert not any(_decisions(generator, HDR_TYPE_DATA, 10))
    assert generator.dropped == {"nak": 10}
    assert not generator.should_drop(_frame(HDR_TYPE_NAK), 7)  # too short to have a type


def test_should_count_pad_as_data_and_setup_apart() -> None:
    generator = LossGenerator(data_loss_rate=1.0, setup_loss_rate=1.0, seed=3)
    assert _decisions(generator, HDR_TYPE_PAD, 2) == [True, True]
    assert _decisions(generator, HDR_TYPE_SETUP, 1) == [True]
    assert generator.dropped == {"data": 2, "setup": 1}


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_should_refuse_a_rate_outside_zero_to_one(rate: float) -> None:
    with pytest.raises(ConfigurationError, match="loss rate"):
        LossGenerator(sm_loss_rate=rate)
