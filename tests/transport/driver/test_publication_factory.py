"""PublicationFactory: the set-up rules IPC and UDP publications share."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

from aeromq.transport import RegistrationError
from aeromq.transport.channel_uri import ChannelUri
from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.counters_descriptor import COUNTER_LENGTH, RECORD_ALLOCATED
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.publication_factory import PublicationFactory
from aeromq.transport.driver.session_ids import SessionIdAllocator
from aeromq.transport.driver.udp.network_counters import (
    SENDER_POSITION_TYPE_ID,
    allocate_stream_counter,
)
from aeromq.transport.driver.uri_params import PublicationParams, publication_params
from tests.transport.driver.support import small_context


@dataclass
class _Metadata:
    mtu_length: int = 1408
    term_length: int = 65536


@dataclass
class _Log:
    metadata: _Metadata = field(default_factory=_Metadata)


@dataclass
class Candidate:
    session_id: int
    is_exclusive: bool = False
    active: bool = True
    holds: bool = True
    initial_term_id: int = 0
    starting_term_id: int = 0
    starting_term_offset: int = 0
    log: _Log = field(default_factory=_Log)
    ref_count: int = 1

    def is_active(self) -> bool:
        return self.active

    def holds_session_id(self) -> bool:
        return self.holds

    def incref(self) -> None:
        self.ref_count += 1


def _counters(counter_count: int = 64) -> CountersManager:
    values = AtomicBuffer.allocate(counter_count * COUNTER_LENGTH)
    return CountersManager(AtomicBuffer.allocate(4 * values.capacity), values)


def _factory(
    context: MediaDriverContext, counters: CountersManager | None = None
) -> PublicationFactory:
    return PublicationFactory(
        context,
        counters if counters is not None else _counters(),
        SessionIdAllocator(-1, 1, next_session_id=100),
    )


def _params(context: MediaDriverContext, channel: str) -> PublicationParams:
    return publication_params(channel, ChannelUri.parse(channel), context)


@pytest.fixture
def context(tmp_path: Path) -> MediaDriverContext:
    context = small_context(tmp_path / "aeron")
    Path(context.publications_dir()).mkdir(parents=True)
    return context


def test_should_join_the_first_active_concurrent_candidate(context: MediaDriverContext) -> None:
    factory = _factory(context)
    exclusive, lingering, active = (
        Candidate(7, is_exclusive=True),
        Candidate(8, active=False),
        Candidate(9),
    )
    params = _params(context, "aeron:ipc")
    shared, in_use = factory.find_shared(
        [exclusive, lingering, active], 10, "aeron:ipc", params, False
    )
    assert shared is active and active.ref_count == 2
    assert in_use == {7, 8, 9}
    shared, _ = factory.find_shared([active], 10, "aeron:ipc", params, True)
    assert shared is None and active.ref_count == 2  # an exclusive publication never joins


def test_should_refuse_a_pinned_session_id_another_publication_holds(
    context: MediaDriverContext,
) -> None:
    factory = _factory(context)
    channel = "aeron:ipc?session-id=7"
    with pytest.raises(RegistrationError, match="already in exclusive use") as raised:
        factory.find_shared(
            [Candidate(7, is_exclusive=True)], 10, channel, _params(context, channel), False
        )
    assert raised.value.code == ErrorCode.GENERIC_ERROR
    done = Candidate(7, is_exclusive=True, holds=False)
    assert factory.find_shared([done], 10, channel, _params(context, channel), False) == (
        None,
        set(),
    )


def test_should_refuse_joining_with_a_different_mtu(context: MediaDriverContext) -> None:
    factory = _factory(context)
    channel = "aeron:ipc?mtu=4096"
    with pytest.raises(RegistrationError, match="different 'mtu'"):
        factory.find_shared([Candidate(7)], 10, channel, _params(context, channel), False)


def test_should_set_up_a_log_and_counters_at_the_requested_position(
    context: MediaDriverContext,
) -> None:
    counters = _counters()
    factory = _factory(context, counters)
    channel = "aeron:udp?endpoint=localhost:1|init-term-id=5|term-id=7|term-offset=64"
    new = factory.create(
        33,
        1001,
        10,
        channel,
        _params(context, channel),
        False,
        {100},
        window_length=0,
        spies_simulate_connection=False,
        media_counters=[partial(allocate_stream_counter, counters, SENDER_POSITION_TYPE_ID)],
    )
    args = new.args
    assert args["session_id"] == 101  # the next free one
    assert (args["initial_term_id"], args["starting_term_id"], args["starting_term_offset"]) == (
        5,
        7,
        64,
    )
    assert new.position == 2 * context.term_buffer_length + 64
    assert args["pub_pos"].get() == args["pub_lmt"].get() == new.position
    assert args["term_window_length"] == context.term_buffer_length // 2
    (snd_pos_id,) = new.media_counter_ids
    assert counters.get_counter_label(snd_pos_id).startswith("snd-pos: 1001 101 10 ")
    assert counters.get_counter_value(snd_pos_id) == 0  # the media sets its own positions
    assert Path(context.publications_dir(), "1001.logbuffer").exists()
    assert args["log"].metadata.correlation_id == 1001
    args["log"].close()


def test_should_free_every_counter_when_one_cannot_be_allocated(
    context: MediaDriverContext,
) -> None:
    counters = _counters(counter_count=2)
    factory = _factory(context, counters)
    channel = "aeron:ipc"
    with pytest.raises(RegistrationError, match="cannot add publication") as raised:
        factory.create(
            33,
            1001,
            10,
            channel,
            _params(context, channel),
            False,
            set(),
            window_length=0,
            spies_simulate_connection=False,
            media_counters=[partial(allocate_stream_counter, counters, SENDER_POSITION_TYPE_ID)],
        )
    assert raised.value.code == ErrorCode.GENERIC_ERROR
    assert all(counters.get_counter_state(i) != RECORD_ALLOCATED for i in range(2))
    assert not Path(context.publications_dir(), "1001.logbuffer").exists()
