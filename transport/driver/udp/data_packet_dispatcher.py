"""``DataPacketDispatcher``: routes a receive endpoint's frames to images by (stream, session).

Aeron's ``aeron_data_packet_dispatcher.c``. For each stream some subscription on the endpoint
wants (all sessions, or only named ones) it keeps the images by session id and, for sessions
without an image, a state:

==================  ==========================================================================
PENDING_SETUP       data arrived for a wanted session with no image: a status message with
                    SEND_SETUP went to the source; asked again after the pending setup timeout
INIT_IN_PROGRESS    a SETUP arrived: the conductor is creating the image
COOL_DOWN           the image went away; its late frames are ignored until the conductor has
                    freed it (so a stream that just ended does not come straight back)
NO_INTEREST         a session of this stream that no subscription wants (remembered so its
                    frames cost one lookup)
==================  ==========================================================================

DATA for an image goes to :meth:`PublicationImage.insert_packet`; a SETUP for a wanted session
with no image asks the conductor to create one (through the conductor proxy, which decides whether
it may: ``image_admission.py``; a SETUP the proxy's full queue did not take is forgotten, the
sender sends another); an RTTM asking for
a reply is answered. Frames for streams nobody wants are dropped here, uncounted (a multicast
group carries other people's streams).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Protocol

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.udp.udp_channel import Sockaddr
from aeromq.transport.protocol import (
    EOS_FLAG,
    FLAGS_FIELD_OFFSET,
    RTTM_REPLY_FLAG,
    SM_SEND_SETUP_FLAG,
)

if TYPE_CHECKING:
    from aeromq.transport.driver.udp.publication_image import PublicationImage
    from aeromq.transport.driver.udp.receive_channel_endpoint import ReceiveChannelEndpoint

__all__ = [
    "COOL_DOWN",
    "INIT_IN_PROGRESS",
    "MAX_SESSION_STATES",
    "NO_INTEREST",
    "PENDING_SETUP",
    "DataPacketDispatcher",
    "ImageCreator",
    "StreamInterest",
]

PENDING_SETUP = 1
INIT_IN_PROGRESS = 2
COOL_DOWN = 3
NO_INTEREST = 4
MAX_SESSION_STATES = 4096
"""Sessions a stream remembers without an image at most: NO_INTEREST is not remembered past it
(frames of forged session ids cost a lookup each, not memory)."""

_DATA_IDS = struct.Struct("<8xiiii")  # term offset, session id, stream id, term id
_SETUP = struct.Struct("<8xiiiiiiii")  # term offset, session, stream, initial/active term id,
# term length, mtu, ttl
_RTTM = struct.Struct("<5xB2xiiq")  # flags, session id, stream id, echo timestamp


class ImageCreator(Protocol):
    """The conductor proxy's command to create an image (receiver -> conductor)."""

    def create_publication_image(
        self,
        endpoint: ReceiveChannelEndpoint,
        session_id: int,
        stream_id: int,
        initial_term_id: int,
        active_term_id: int,
        term_offset: int,
        term_length: int,
        mtu_length: int,
        control_address: Sockaddr,
        source_address: Sockaddr,
    ) -> bool: ...


class StreamInterest:
    """One stream's images and session states on one endpoint."""

    __slots__ = ("images", "is_all_sessions", "states", "subscribed_sessions")

    def __init__(self, is_all_sessions: bool) -> None:
        self.is_all_sessions = is_all_sessions
        self.subscribed_sessions: set[int] = set()
        self.images: dict[int, PublicationImage] = {}
        self.states: dict[int, int] = {}

    def wants(self, session_id: int) -> bool:
        return self.is_all_sessions or session_id in self.subscribed_sessions


class DataPacketDispatcher:
    """The receive endpoint's routing table (see module). Receiver thread only."""

    __slots__ = ("_creator", "_pending_setup_timeout_ns", "interests", "pending_setups")

    def __init__(self, creator: ImageCreator, pending_setup_timeout_ns: int) -> None:
        self._creator = creator
        self._pending_setup_timeout_ns = pending_setup_timeout_ns
        self.interests: dict[int, StreamInterest] = {}
        self.pending_setups: dict[tuple[int, int], int] = {}
        """The SETUPs asked for, by (session id, stream id), to the time the request lapses:
        read only outside this class (the receiver tests its truth each duty cycle: while it is
        empty, :meth:`check_pending_setups` has no work)."""

    # Subscriptions --------------------------------------------------------------------------

    def add_subscription(self, stream_id: int) -> None:
        interest = self.interests.get(stream_id)
        if interest is None:
            self.interests[stream_id] = StreamInterest(True)
        elif not interest.is_all_sessions:
            interest.is_all_sessions = True
            for session_id in [s for s, v in interest.states.items() if v == NO_INTEREST]:
                del interest.states[session_id]

    def add_subscription_by_session(self, stream_id: int, session_id: int) -> None:
        interest = self.interests.get(stream_id)
        if interest is None:
            interest = self.interests[stream_id] = StreamInterest(False)
        interest.subscribed_sessions.add(session_id)
        if interest.states.get(session_id) == NO_INTEREST:
            del interest.states[session_id]

    def remove_subscription(self, stream_id: int) -> None:
        interest = self.interests.get(stream_id)
        if interest is None:
            return
        interest.is_all_sessions = False
        wanted = interest.subscribed_sessions
        interest.images = {s: i for s, i in interest.images.items() if s in wanted}
        interest.states = {s: v for s, v in interest.states.items() if s in wanted}
        if not wanted:
            del self.interests[stream_id]

    def remove_subscription_by_session(self, stream_id: int, session_id: int) -> None:
        interest = self.interests.get(stream_id)
        if interest is None:
            return
        interest.subscribed_sessions.discard(session_id)
        if not interest.is_all_sessions:
            interest.images.pop(session_id, None)
            interest.states.pop(session_id, None)
            if not interest.subscribed_sessions:
                del self.interests[stream_id]

    # Images ---------------------------------------------------------------------------------

    def add_publication_image(self, image: PublicationImage) -> None:
        interest = self.interests.get(image.stream_id)
        if interest is not None:
            interest.states.pop(image.session_id, None)
            interest.images[image.session_id] = image
        self.pending_setups.pop((image.session_id, image.stream_id), None)

    def remove_publication_image(self, image: PublicationImage) -> None:
        interest = self.interests.get(image.stream_id)
        if interest is not None and interest.images.get(image.session_id) is image:
            del interest.images[image.session_id]
            interest.states[image.session_id] = COOL_DOWN

    def remove_cool_down(self, session_id: int, stream_id: int) -> None:
        self._remove_state(session_id, stream_id, COOL_DOWN)

    def remove_init_in_progress(self, session_id: int, stream_id: int) -> None:
        self._remove_state(session_id, stream_id, INIT_IN_PROGRESS)

    def _remove_state(self, session_id: int, stream_id: int, state: int) -> None:
        interest = self.interests.get(stream_id)
        if interest is not None and interest.states.get(session_id) == state:
            del interest.states[session_id]

    def check_pending_setups(self, now_ns: int) -> int:
        """Forget pending setups that timed out, so the next frame asks again."""
        pending = self.pending_setups
        if not pending:
            return 0
        expired = [key for key, deadline_ns in pending.items() if now_ns > deadline_ns]
        for session_id, stream_id in expired:
            del pending[(session_id, stream_id)]
            self._remove_state(session_id, stream_id, PENDING_SETUP)
        return len(expired)

    def has_images(self) -> bool:
        return any(interest.images for interest in self.interests.values())

    # Frames ---------------------------------------------------------------------------------

    def on_data(
        self,
        endpoint: ReceiveChannelEndpoint,
        buffer: AtomicBuffer,
        length: int,
        address: Sockaddr,
        now_ns: int,
    ) -> bool:
        """Dispatch a DATA/PAD frame; True when it was an image's keepalive (a heartbeat that
        moved nothing: :meth:`PublicationImage.insert_packet`)."""
        term_offset, session_id, stream_id, term_id = _DATA_IDS.unpack_from(buffer, 0)
        interest = self.interests.get(stream_id)
        if interest is None:
            return False
        image = interest.images.get(session_id)
        if image is not None:
            return image.insert_packet(term_id, term_offset, buffer, length, address, now_ns)
        if session_id in interest.states or buffer.get_uint8(FLAGS_FIELD_OFFSET) & EOS_FLAG:
            return False
        if interest.wants(session_id):
            interest.states[session_id] = PENDING_SETUP
            self.pending_setups[(session_id, stream_id)] = now_ns + self._pending_setup_timeout_ns
            endpoint.send_status_message(
                endpoint.control_address_for(address),
                session_id,
                stream_id,
                0,
                0,
                0,
                SM_SEND_SETUP_FLAG,
            )
        elif len(interest.states) < MAX_SESSION_STATES:
            interest.states[session_id] = NO_INTEREST
        return False

    def on_setup(
        self, endpoint: ReceiveChannelEndpoint, buffer: AtomicBuffer, address: Sockaddr
    ) -> None:
        (
            term_offset,
            session_id,
            stream_id,
            initial_term_id,
            active_term_id,
            term_length,
            mtu_length,
            _ttl,
        ) = _SETUP.unpack_from(buffer, 0)
        interest = self.interests.get(stream_id)
        if interest is None or session_id in interest.images:
            return
        state = interest.states.get(session_id)
        if state == PENDING_SETUP or (state is None and interest.wants(session_id)):
            if self._creator.create_publication_image(
                endpoint,
                session_id,
                stream_id,
                initial_term_id,
                active_term_id,
                term_offset,
                term_length,
                mtu_length,
                endpoint.control_address_for(address),
                address,
            ):
                interest.states[session_id] = INIT_IN_PROGRESS
                self.pending_setups.pop((session_id, stream_id), None)
        elif state is None and len(interest.states) < MAX_SESSION_STATES:
            interest.states[session_id] = NO_INTEREST

    def on_rttm(
        self, endpoint: ReceiveChannelEndpoint, buffer: AtomicBuffer, address: Sockaddr
    ) -> None:
        flags, session_id, stream_id, echo_timestamp_ns = _RTTM.unpack_from(buffer, 0)
        interest = self.interests.get(stream_id)
        if interest is None:
            return
        image = interest.images.get(session_id)
        if image is not None and flags & RTTM_REPLY_FLAG:
            image.on_rttm_request(echo_timestamp_ns)
