"""``PublicationFrames``: the frames a network publication sends besides its data.

A SETUP (until a receiver answers, and when one asks), a heartbeat (a DATA header of length 0
at snd-pos, with the EOS flag once the stream has ended) and an RTTM reply. Each is a template
filled once with the stream's fields; a send changes only the fields that move (the term id and
offset, the flags) and sends the template's view. Caller: the sender thread, through
:class:`~transport.driver.udp.network_publication.NetworkPublication`.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol import (
    BEGIN_AND_END_FLAGS,
    BEGIN_END_AND_EOS_FLAGS,
    DATA_HEADER_LENGTH,
    FLAGS_FIELD_OFFSET,
    SETUP_HEADER_LENGTH,
    DataHeaderFlyweight,
    RttmFlyweight,
    SetupFlyweight,
)

__all__ = ["RTTM_BUFFER_LENGTH", "PublicationFrames"]

RTTM_BUFFER_LENGTH: Final = 64
"""Room for an RTTM frame (its header is shorter)."""


class PublicationFrames:
    """The SETUP, heartbeat and RTTM templates of one publication (see module)."""

    __slots__ = (
        "_heartbeat",
        "_heartbeat_buffer",
        "_heartbeat_view",
        "_rttm",
        "_rttm_buffer",
        "_session_id",
        "_setup",
        "_setup_view",
        "_stream_id",
    )

    def __init__(
        self,
        *,
        session_id: int,
        stream_id: int,
        initial_term_id: int,
        term_length: int,
        mtu_length: int,
        multicast_ttl: int,
    ) -> None:
        self._session_id = session_id
        self._stream_id = stream_id
        setup_buffer = AtomicBuffer.allocate(SETUP_HEADER_LENGTH)
        self._setup_view = memoryview(setup_buffer)
        self._setup = SetupFlyweight(setup_buffer)
        self._setup.put_setup(
            session_id=session_id,
            stream_id=stream_id,
            initial_term_id=initial_term_id,
            active_term_id=initial_term_id,
            term_offset=0,
            term_length=term_length,
            mtu=mtu_length,
            ttl=multicast_ttl,
        )
        self._heartbeat_buffer = AtomicBuffer.allocate(DATA_HEADER_LENGTH)
        self._heartbeat_view = memoryview(self._heartbeat_buffer)
        self._heartbeat = DataHeaderFlyweight(self._heartbeat_buffer)
        self._heartbeat.put_heartbeat(
            session_id=session_id, stream_id=stream_id, term_id=initial_term_id, term_offset=0
        )
        self._rttm_buffer = AtomicBuffer.allocate(RTTM_BUFFER_LENGTH)
        self._rttm = RttmFlyweight(self._rttm_buffer)

    def setup(self, term_id: int, term_offset: int) -> memoryview:
        """The SETUP for the active term ``term_id`` at ``term_offset`` (its whole view)."""
        setup = self._setup
        setup.active_term_id = term_id
        setup.term_offset = term_offset
        return self._setup_view

    def heartbeat(self, term_id: int, term_offset: int, eos: bool) -> memoryview:
        """The heartbeat at (``term_id``, ``term_offset``), with the EOS flag if ``eos``."""
        heartbeat = self._heartbeat
        heartbeat.term_id = term_id
        heartbeat.term_offset = term_offset
        self._heartbeat_buffer.put_int8(
            FLAGS_FIELD_OFFSET, BEGIN_END_AND_EOS_FLAGS if eos else BEGIN_AND_END_FLAGS
        )
        return self._heartbeat_view

    def rttm_reply(self, echo_timestamp_ns: int, receiver_id: int) -> memoryview:
        """An RTTM reply echoing ``echo_timestamp_ns`` to ``receiver_id``."""
        length = self._rttm.put_rttm(
            session_id=self._session_id,
            stream_id=self._stream_id,
            echo_timestamp_ns=echo_timestamp_ns,
            reception_delta_ns=0,
            receiver_id=receiver_id,
        )
        return memoryview(self._rttm_buffer)[:length]

    def release(self) -> None:
        """Release the templates' views (the publication is unmapped); idempotent."""
        self._setup_view.release()
        self._heartbeat_view.release()
