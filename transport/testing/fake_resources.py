"""What the fake driver keeps per publication and per subscription, and how they pair up.

:class:`FakePublication` is a log buffer file the fake driver made for one or more publication
commands, with its limit counter, its subscribers' position counters and its cleaning;
:class:`FakeSubscription` is one ADD_SUBSCRIPTION. A publication and a subscription pair up
(an image) when :func:`matches` says so: same stream id, same channel before its ``?``, and the
publication has not reached its end of stream.

Caller: :class:`~transport.testing.fake_conductor.FakeConductor`, which makes, pairs and drops
them; tests read them through :class:`~transport.testing.fake_driver.FakeDriver`
(``publications``, ``publication_for``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from aeromq.transport.logbuffer.log_buffer_descriptor import (
    active_raw_tail_volatile,
    compute_position,
    position_bits_to_shift,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers

__all__ = [
    "HEARTBEAT_TYPE_ID",
    "IPC_SOURCE_IDENTITY",
    "MAX_POSITION",
    "NO_ID_ALLOCATED",
    "PUBLISHER_LIMIT_TYPE_ID",
    "SUBSCRIBER_POSITION_TYPE_ID",
    "FakePublication",
    "FakeSubscription",
    "matches",
    "same_channel",
    "stream_key",
]

HEARTBEAT_TYPE_ID: Final = 11
"""Counter type of a client's heartbeat (key = client id)."""
PUBLISHER_LIMIT_TYPE_ID: Final = 1
"""Counter type of a publication's limit (pub-lmt)."""
SUBSCRIBER_POSITION_TYPE_ID: Final = 4
"""Counter type of a subscriber's position in an image (sub-pos)."""
NO_ID_ALLOCATED: Final = -1
"""Channel status indicator of an IPC channel (Aeron's ``ChannelEndpointStatus``)."""
MAX_POSITION: Final = 2**63 - 1
"""End of stream position of a publication that has not ended."""
IPC_SOURCE_IDENTITY: Final = "aeron:ipc"
"""Source identity of an IPC image."""

_KEY: Final = struct.Struct("<qiii")


@dataclass
class FakePublication:
    """A log buffer the fake driver made for one or more publication commands."""

    registration_id: int
    channel: str
    stream_id: int
    session_id: int
    exclusive: bool
    log_buffers: LogBuffers
    path: Path
    limit_counter_id: int
    term_window_length: int
    ref_count: int = 1
    limit_frozen: bool = False
    end_of_stream_position: int = MAX_POSITION
    clean_position: int = 0
    images: dict[int, int] = field(default_factory=dict)
    """Subscription registration id -> sub-pos counter id."""

    def clean_to(self, position: int) -> None:
        """Zero the terms up to ``position`` (behind the slowest subscriber), as Aeron's
        ``cleanBufferTo``, so appenders always write over zeroed memory."""
        term_length = self.log_buffers.term_length
        bits = position_bits_to_shift(term_length)
        while position > self.clean_position:
            clean_position = self.clean_position
            term = self.log_buffers.term_buffers[(clean_position >> bits) % 3]
            term_offset = clean_position & (term_length - 1)
            length = min(position - clean_position, term_length - term_offset)
            term.set_memory(term_offset + 8, length - 8, 0)
            term.put_int64_ordered(term_offset, 0)
            self.clean_position = clean_position + length

    def producer_position(self) -> int:
        """The position the publishers have appended up to (the active term's tail)."""
        meta = self.log_buffers.meta_data_buffer
        metadata = self.log_buffers.metadata
        raw_tail = active_raw_tail_volatile(meta)
        term_length = self.log_buffers.term_length
        return compute_position(
            raw_tail >> 32,
            min(raw_tail & 0xFFFF_FFFF, term_length),
            position_bits_to_shift(term_length),
            metadata.initial_term_id,
        )


@dataclass
class FakeSubscription:
    """One ADD_SUBSCRIPTION the fake driver answered."""

    registration_id: int
    client_id: int
    channel: str
    stream_id: int


def same_channel(a: str, b: str) -> bool:
    """Whether two channels are one (the same text before their parameters)."""
    return a.split("?", 1)[0] == b.split("?", 1)[0]


def matches(publication: FakePublication, subscription: FakeSubscription) -> bool:
    """Whether ``subscription`` gets an image of ``publication``."""
    return (
        publication.stream_id == subscription.stream_id
        and publication.end_of_stream_position == MAX_POSITION
        and same_channel(publication.channel, subscription.channel)
    )


def stream_key(registration_id: int, session_id: int, stream_id: int, channel: str) -> bytes:
    """The key of a pub-lmt or sub-pos counter: the ids, then the channel (cut to fit)."""
    encoded = channel.encode("ascii", "replace")[: 112 - _KEY.size]
    return _KEY.pack(registration_id, session_id, stream_id, len(encoded)) + encoded
