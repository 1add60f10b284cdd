"""``ReceiveChannelEndpoint``: the socket a channel's subscriptions receive on.

Aeron's ``aeron_receive_channel_endpoint.c``. One endpoint per channel (by canonical form),
shared by every subscription on it. For unicast the socket binds to the endpoint address; for
multicast it binds to the endpoint's port on any address and joins the data group on the
channel's interface.

The receiver thread polls it (:meth:`poll`). Every datagram is validated before anything else
reads it: a wrong version, a truncated frame, an unknown type, lengths that do not add up or
fields out of their range are counted in ``Invalid packets`` and dropped, so nothing a peer
sends can raise out of the receiver. Valid DATA/PAD (and heartbeats), SETUP and RTTM frames go
to the :class:`~transport.driver.udp.data_packet_dispatcher.DataPacketDispatcher`; other
types are ignored (a multicast port also hears the group's control traffic).

Images send their status messages, NAKs and RTTM replies through it; ``receiver_id`` (random
per endpoint, as Aeron's) tells the receivers of a multicast group apart in status messages.
"""

from __future__ import annotations

import secrets

from aeromq.transport.concurrent import AtomicBuffer, AtomicCounter
from aeromq.transport.driver.udp.data_packet_dispatcher import DataPacketDispatcher
from aeromq.transport.driver.udp.udp_channel import Sockaddr, UdpChannel
from aeromq.transport.driver.udp.udp_channel_transport import UdpChannelTransport
from aeromq.transport.protocol import (
    HDR_TYPE_DATA,
    HDR_TYPE_PAD,
    HDR_TYPE_RTTM,
    HDR_TYPE_SETUP,
    NAK_HEADER_LENGTH,
    RTTM_HEADER_LENGTH,
    SM_HEADER_LENGTH,
    TYPE_FIELD_OFFSET,
    FrameStatus,
    NakFlyweight,
    RttmFlyweight,
    StatusMessageFlyweight,
    validate_data_frames,
    validate_frame,
)

__all__ = ["ReceiveChannelEndpoint"]

_VALID = FrameStatus.VALID


class ReceiveChannelEndpoint:
    """A channel's receive socket, its dispatcher and its outgoing control frames."""

    def __init__(
        self,
        channel: UdpChannel,
        transport: UdpChannelTransport,
        dispatcher: DataPacketDispatcher,
        *,
        status: AtomicCounter,
        local_sockaddr: AtomicCounter | None = None,
        invalid_packets: AtomicCounter,
        short_sends: AtomicCounter,
        receiver_id: int | None = None,
        poll_limit: int = 64,
    ) -> None:
        self.channel = channel
        self.transport = transport
        self.dispatcher = dispatcher
        self.status = status
        self.local_sockaddr = local_sockaddr
        self.receiver_id = secrets.randbits(63) if receiver_id is None else receiver_id
        self.has_receiver_released = False
        self.stream_ref_counts: dict[int, int] = {}
        self.session_ref_counts: dict[tuple[int, int], int] = {}
        self._invalid_packets = invalid_packets
        self._short_sends = short_sends
        self._poll_limit = poll_limit
        self._on_datagram = self.on_datagram
        self._now_ns = 0
        self.keepalive_bytes = 0
        """Bytes of heartbeats that moved nothing since the receiver last took them: received,
        but not work for its idle strategy."""
        self._control_group = channel.remote_control if channel.is_multicast else None
        self._send_to = transport.send_to
        self._sm_buffer = AtomicBuffer.allocate(SM_HEADER_LENGTH)
        self._sm_view = memoryview(self._sm_buffer)
        self._sm = StatusMessageFlyweight(self._sm_buffer)
        self._nak_buffer = AtomicBuffer.allocate(NAK_HEADER_LENGTH)
        self._nak_view = memoryview(self._nak_buffer)
        self._nak = NakFlyweight(self._nak_buffer)
        self._rttm_buffer = AtomicBuffer.allocate(RTTM_HEADER_LENGTH)
        self._rttm_view = memoryview(self._rttm_buffer)
        self._rttm = RttmFlyweight(self._rttm_buffer)

    @property
    def local_address(self) -> Sockaddr:
        return self.transport.local_address

    def control_address_for(self, source_address: Sockaddr) -> Sockaddr:
        """Where control frames for a source go: the control group, or the source itself."""
        group = self._control_group
        return source_address if group is None else group

    # Receiver thread ------------------------------------------------------------------------

    def poll(self, now_ns: int) -> int:
        """Read and dispatch waiting datagrams; return the bytes received."""
        self._now_ns = now_ns
        return self.transport.poll(self._on_datagram, self._poll_limit)

    def on_datagram(self, buffer: AtomicBuffer, length: int, address: Sockaddr) -> None:
        """Validate one datagram and dispatch it (see module)."""
        frame_type = buffer.get_uint16(TYPE_FIELD_OFFSET) if length >= 8 else -1
        if frame_type in (HDR_TYPE_DATA, HDR_TYPE_PAD):
            if validate_data_frames(buffer, 0, length) is not _VALID:
                self._invalid_packets.increment()
                return
            if self.dispatcher.on_data(self, buffer, length, address, self._now_ns):
                self.keepalive_bytes += length
            return
        if validate_frame(buffer, 0, length) is not _VALID:
            self._invalid_packets.increment()
        elif frame_type == HDR_TYPE_SETUP:
            self.dispatcher.on_setup(self, buffer, address)
        elif frame_type == HDR_TYPE_RTTM:
            self.dispatcher.on_rttm(self, buffer, address)

    def send_status_message(
        self,
        address: Sockaddr,
        session_id: int,
        stream_id: int,
        term_id: int,
        term_offset: int,
        receiver_window: int,
        flags: int,
    ) -> int:
        length = self._sm.put_status_message(
            session_id=session_id,
            stream_id=stream_id,
            consumption_term_id=term_id,
            consumption_term_offset=term_offset,
            receiver_window=receiver_window,
            receiver_id=self.receiver_id,
            flags=flags,
        )
        return self._send(self._sm_view, length, address)

    def send_nak(
        self,
        address: Sockaddr,
        session_id: int,
        stream_id: int,
        term_id: int,
        term_offset: int,
        length: int,
    ) -> int:
        frame_length = self._nak.put_nak(
            session_id=session_id,
            stream_id=stream_id,
            term_id=term_id,
            term_offset=term_offset,
            length=length,
        )
        return self._send(self._nak_view, frame_length, address)

    def send_rttm(
        self, address: Sockaddr, session_id: int, stream_id: int, echo_timestamp_ns: int
    ) -> int:
        length = self._rttm.put_rttm(
            session_id=session_id,
            stream_id=stream_id,
            echo_timestamp_ns=echo_timestamp_ns,
            reception_delta_ns=0,
            receiver_id=self.receiver_id,
        )
        return self._send(self._rttm_view, length, address)

    def _send(self, view: memoryview, length: int, address: Sockaddr) -> int:
        sent = self._send_to(view if length == len(view) else view[:length], address)
        if 0 <= sent < length:
            self._short_sends.increment()
        return sent

    def receiver_release(self) -> None:
        self.has_receiver_released = True

    # Conductor thread -----------------------------------------------------------------------

    def incref_to_stream(self, stream_id: int) -> int:
        count = self.stream_ref_counts.get(stream_id, 0) + 1
        self.stream_ref_counts[stream_id] = count
        return count

    def decref_to_stream(self, stream_id: int) -> int:
        count = self.stream_ref_counts.get(stream_id, 0) - 1
        if count <= 0:
            self.stream_ref_counts.pop(stream_id, None)
            return 0
        self.stream_ref_counts[stream_id] = count
        return count

    def incref_to_stream_and_session(self, stream_id: int, session_id: int) -> int:
        key = (stream_id, session_id)
        count = self.session_ref_counts.get(key, 0) + 1
        self.session_ref_counts[key] = count
        return count

    def decref_to_stream_and_session(self, stream_id: int, session_id: int) -> int:
        key = (stream_id, session_id)
        count = self.session_ref_counts.get(key, 0) - 1
        if count <= 0:
            self.session_ref_counts.pop(key, None)
            return 0
        self.session_ref_counts[key] = count
        return count

    @property
    def has_subscriptions(self) -> bool:
        return bool(self.stream_ref_counts or self.session_ref_counts)

    def close(self) -> None:
        """Close the socket and free the status counter (after the receiver let go)."""
        for view in (self._sm_view, self._nak_view, self._rttm_view):
            view.release()
        self.transport.close()
        for counter in (self.status, self.local_sockaddr):
            if counter is not None and not counter.is_closed:
                counter.close()

    def __repr__(self) -> str:
        return (
            f"ReceiveChannelEndpoint(channel={self.channel.original_uri!r}, "
            f"local_address={self.local_address!r})"
        )
