"""What a SETUP may make the driver hold: the term length cap, the bound per source address, the
refusals counted and logged once per source and interval (``udp/image_admission.py``)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from aeromq.transport.concurrent import AtomicBuffer, AtomicCounter
from aeromq.transport.driver import MediaDriverContext, UdpSettings
from aeromq.transport.driver.udp.image_admission import (
    DEFAULT_IMAGE_MAX_TERM_LENGTH,
    LOGS_AT_CAP,
    REFUSAL_LOG_INTERVAL_NS,
    ImageAdmission,
)

MIB = 1 << 20
STREAM = 10


@dataclasses.dataclass
class _Subscriber:
    max_term_length: int | None = None


def _admission(tmp_path: Path, **udp: int) -> tuple[ImageAdmission, AtomicCounter]:
    context = MediaDriverContext(aeron_dir=str(tmp_path / "aeron"), udp=UdpSettings(**udp))
    counter = AtomicCounter(AtomicBuffer(bytearray(128)), 0)
    return ImageAdmission(context, counter), counter


def test_should_cap_the_term_at_64_mib_or_the_drivers_own_or_its_setting(tmp_path: Path) -> None:
    admission, _ = _admission(tmp_path)
    assert admission.default_max_term_length == DEFAULT_IMAGE_MAX_TERM_LENGTH == 64 * MIB
    bigger = MediaDriverContext(aeron_dir=str(tmp_path), term_buffer_length=256 * MIB)
    counter = AtomicCounter(AtomicBuffer(bytearray(128)), 0)
    assert ImageAdmission(bigger, counter).default_max_term_length == 256 * MIB
    set_low, _ = _admission(tmp_path, image_max_term_length=MIB)
    assert set_low.default_max_term_length == MIB


def test_should_take_the_largest_cap_of_the_subscriptions_an_image_would_serve(
    tmp_path: Path,
) -> None:
    admission, _ = _admission(tmp_path, image_max_term_length=MIB)
    assert admission.max_term_length([_Subscriber()]) == MIB
    assert admission.max_term_length([_Subscriber(), _Subscriber(1024 * MIB)]) == 1024 * MIB
    assert admission.max_term_length([_Subscriber(64 * 1024)]) == 64 * 1024


def test_should_refuse_a_term_over_the_cap_and_count_it(tmp_path: Path) -> None:
    admission, refused = _admission(tmp_path)
    source = ("127.0.0.1", 40000)
    assert not admission.admit(source, 1, STREAM, 1 << 30, [_Subscriber()], 0)
    assert refused.get() == 1
    assert admission.held(source) == (0, 0)
    assert admission.admit(source, 2, STREAM, 64 * MIB, [_Subscriber()], 0)
    assert admission.held(source) == (1, admission.log_length(64 * MIB))


def test_should_bound_what_one_source_address_holds_whatever_its_port(tmp_path: Path) -> None:
    admission, refused = _admission(
        tmp_path, max_images_per_source=2, max_image_bytes_per_source=8 * MIB
    )
    subscribers = [_Subscriber()]
    assert admission.admit(("127.0.0.1", 1), 1, STREAM, 64 * 1024, subscribers, 0)
    assert admission.admit(("127.0.0.1", 2), 2, STREAM, 64 * 1024, subscribers, 0)
    assert not admission.admit(("127.0.0.1", 3), 3, STREAM, 64 * 1024, subscribers, 0)
    assert admission.admit(("127.0.0.2", 1), 4, STREAM, 64 * 1024, subscribers, 0)
    assert not admission.admit(("127.0.0.2", 1), 5, STREAM, 4 * MIB, subscribers, 0)  # 12 MiB
    assert refused.get() == 2
    admission.release(("127.0.0.1", 1), 64 * 1024)
    assert admission.admit(("127.0.0.1", 9), 6, STREAM, 64 * 1024, subscribers, 0)


def test_should_log_a_source_once_per_interval_with_the_count_since(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    admission, refused = _admission(tmp_path)
    caplog.set_level(logging.WARNING, logger="aeromq.transport.driver.udp.image_admission")
    for index in range(5):
        admission.admit(("10.0.0.1", 5), index, STREAM, 1 << 30, [_Subscriber()], index)
    admission.admit(("10.0.0.2", 5), 9, STREAM, 1 << 30, [_Subscriber()], 10)
    admission.admit(("10.0.0.1", 5), 10, STREAM, 1 << 30, [], REFUSAL_LOG_INTERVAL_NS + 1)
    lines = [record.getMessage() for record in caplog.records]
    assert refused.get() == 7
    assert len(lines) == 3
    assert "source=10.0.0.1 refused_since_last_line=0" in lines[0]
    assert "term_length=1073741824 max_term_length=67108864" in lines[0]
    assert "source=10.0.0.2" in lines[1]
    assert "source=10.0.0.1 refused_since_last_line=4" in lines[2]


def test_should_let_a_raised_cap_hold_a_few_logs_of_its_size_from_one_source(
    tmp_path: Path,
) -> None:
    admission, _ = _admission(tmp_path, max_image_bytes_per_source=8 * MIB)
    raised = [_Subscriber(1024 * MIB)]  # a replication follower's channel, say
    for session_id in range(LOGS_AT_CAP):
        assert admission.admit(("10.0.0.9", 1), session_id, STREAM, 1024 * MIB, raised, 0)
    assert not admission.admit(("10.0.0.9", 1), 99, STREAM, 1024 * MIB, raised, 0)
    assert not admission.admit(("10.0.0.9", 1), 98, STREAM, 64 * 1024, [_Subscriber()], 0)
