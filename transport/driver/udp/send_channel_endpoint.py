"""``SendChannelEndpoint``: the socket a channel's publications send from, and their control.

Aeron's ``aeron_send_channel_endpoint.c``. One endpoint per channel (by canonical form), shared
by every publication on it. For unicast the socket binds to the channel's local control address
(``control``, ``interface`` or an ephemeral port) and connects to the endpoint; for multicast it
binds to the control port, joins the control group on the interface, and sends to the data
group.

The sender thread sends data through :meth:`send` and polls the socket for control frames
(:meth:`poll`). Each datagram is validated first (an invalid one is counted in ``Invalid
packets`` and dropped), then dispatched by (session id, stream id) to its publication:

- STATUS MESSAGE: ``Status Messages received``; SEND_SETUP asks the publication for a SETUP,
  otherwise it feeds flow control;
- NAK: ``NAKs received``; the publication's retransmit handler decides what to resend;
- RTTM: answered when it asks for a reply;
- ERR: ``Error Frames received``.

Frames of other types (a multicast socket also hears the group's data) and frames for sessions
that are not here are ignored.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

from aeromq.transport.concurrent import AtomicBuffer, AtomicCounter
from aeromq.transport.driver.udp.udp_channel import Sockaddr, UdpChannel
from aeromq.transport.driver.udp.udp_channel_transport import UdpChannelTransport
from aeromq.transport.protocol import (
    HDR_TYPE_ERR,
    HDR_TYPE_NAK,
    HDR_TYPE_RTTM,
    HDR_TYPE_SM,
    RTTM_REPLY_FLAG,
    SM_EOS_FLAG,
    SM_SEND_SETUP_FLAG,
    FrameStatus,
    validate_frame,
)

if TYPE_CHECKING:
    from aeromq.transport.driver.udp.network_publication import NetworkPublication

__all__ = ["SendChannelEndpoint", "publication_key"]

_VALID = FrameStatus.VALID
_FLAGS_AND_TYPE = struct.Struct("<5xBH")
_SESSION_AND_STREAM = struct.Struct("<8xii")
_STATUS_MESSAGE = struct.Struct("<8xiiiiiq")
_NAK = struct.Struct("<8xiiiii")
_RTTM = struct.Struct("<8xiiq8xq")


def publication_key(session_id: int, stream_id: int) -> int:
    """One int for (session id, stream id), the key publications are found by."""
    return ((session_id & 0xFFFF_FFFF) << 32) | (stream_id & 0xFFFF_FFFF)


class SendChannelEndpoint:
    """A channel's send socket and its publications by (session, stream) (see module)."""

    def __init__(
        self,
        channel: UdpChannel,
        transport: UdpChannelTransport,
        *,
        status: AtomicCounter,
        local_sockaddr: AtomicCounter | None = None,
        invalid_packets: AtomicCounter,
        status_messages_received: AtomicCounter,
        naks_received: AtomicCounter,
        error_frames_received: AtomicCounter,
        poll_limit: int = 16,
    ) -> None:
        self.channel = channel
        self.transport = transport
        self.status = status
        self.local_sockaddr = local_sockaddr
        self.is_multicast = channel.is_multicast
        self.publications: dict[int, NetworkPublication] = {}
        self.ref_count = 0
        self.has_sender_released = False
        self._invalid_packets = invalid_packets
        self._status_messages_received = status_messages_received
        self._naks_received = naks_received
        self._error_frames_received = error_frames_received
        self._poll_limit = poll_limit
        self._on_datagram = self.on_datagram
        self._now_ns = 0
        self.keepalive_bytes = 0
        """Bytes of status messages that moved nothing since the sender last took them:
        received, but not work for its idle strategy."""
        self.send: Callable[[memoryview], int]
        if channel.is_multicast:
            data_group = channel.remote_data
            send_to = transport.send_to
            self.send = lambda data: send_to(data, data_group)
        else:
            self.send = transport.send

    @property
    def local_address(self) -> Sockaddr:
        return self.transport.local_address

    # Sender thread ------------------------------------------------------------------------

    def add_publication(self, publication: NetworkPublication) -> None:
        self.publications[publication_key(publication.session_id, publication.stream_id)] = (
            publication
        )

    def remove_publication(self, publication: NetworkPublication) -> None:
        key = publication_key(publication.session_id, publication.stream_id)
        if self.publications.get(key) is publication:
            del self.publications[key]

    def poll(self, now_ns: int) -> int:
        """Read and dispatch waiting control frames; return the bytes received."""
        self._now_ns = now_ns
        return self.transport.poll(self._on_datagram, self._poll_limit)

    def on_datagram(self, buffer: AtomicBuffer, length: int, address: Sockaddr) -> None:
        """Validate one datagram and hand it to its publication (see module)."""
        if validate_frame(buffer, 0, length) is not _VALID:
            self._invalid_packets.increment()
            return
        flags, frame_type = _FLAGS_AND_TYPE.unpack_from(buffer, 0)
        if frame_type == HDR_TYPE_SM:
            session_id, stream_id, term_id, term_offset, window, receiver_id = (
                _STATUS_MESSAGE.unpack_from(buffer, 0)
            )
            publication = self.publications.get(publication_key(session_id, stream_id))
            if publication is None:
                return
            self._status_messages_received.increment_ordered()
            if flags & SM_SEND_SETUP_FLAG:
                publication.trigger_send_setup()
            elif publication.on_status_message(
                receiver_id,
                term_id,
                term_offset,
                window,
                bool(flags & SM_EOS_FLAG),
                self._now_ns,
            ):
                self.keepalive_bytes += length
        elif frame_type == HDR_TYPE_NAK:
            session_id, stream_id, term_id, term_offset, nak_length = _NAK.unpack_from(buffer, 0)
            publication = self.publications.get(publication_key(session_id, stream_id))
            if publication is not None:
                self._naks_received.increment_ordered()
                publication.on_nak(term_id, term_offset, nak_length, self._now_ns)
        elif frame_type == HDR_TYPE_RTTM:
            session_id, stream_id, echo_timestamp_ns, receiver_id = _RTTM.unpack_from(buffer, 0)
            publication = self.publications.get(publication_key(session_id, stream_id))
            if publication is not None:
                publication.on_rttm(bool(flags & RTTM_REPLY_FLAG), echo_timestamp_ns, receiver_id)
        elif frame_type == HDR_TYPE_ERR:
            session_id, stream_id = _SESSION_AND_STREAM.unpack_from(buffer, 0)
            if publication_key(session_id, stream_id) in self.publications:
                self._error_frames_received.increment_ordered()

    def sender_release(self) -> None:
        self.has_sender_released = True

    # Conductor thread ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the socket and free the status counter (after the sender let go)."""
        self.transport.close()
        for counter in (self.status, self.local_sockaddr):
            if counter is not None and not counter.is_closed:
                counter.close()

    def __repr__(self) -> str:
        return (
            f"SendChannelEndpoint(channel={self.channel.original_uri!r}, "
            f"local_address={self.local_address!r})"
        )
