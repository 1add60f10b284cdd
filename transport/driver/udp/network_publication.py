"""``NetworkPublication``: a publication's log sent over UDP (Aeron's ``NetworkPublication``).

Two threads share it. The **sender** (:meth:`send`, :meth:`on_status_message`, :meth:`on_nak`,
:meth:`on_rttm`, :meth:`trigger_send_setup`) moves the sender position (snd-pos) through the
log:

- until a status message (SM) arrives it sends a SETUP every 100 ms (and again when a receiver
  asks for one with an SM's SEND_SETUP flag);
- it scans the term from snd-pos for complete frames and sends them, packed into datagrams of
  at most the MTU, up to ``max_messages_per_send`` datagrams per duty cycle and never past the
  sender limit (snd-lmt) that flow control sets from the receivers' windows. A PAD frame goes
  as its header alone. When the sender reaches its limit with data waiting, it counts a
  back-pressure event (snd-bpe and ``Sender flow control limits``);
- when it has had nothing to send for 100 ms it sends a heartbeat (a DATA header of length 0 at
  snd-pos); once the stream has ended and everything was sent the heartbeats carry the EOS flag,
  and the first of them goes at once rather than at the next interval (so receivers learn of
  the end even when the linger is shorter than the heartbeat interval);
- NAKs go through the :class:`~transport.driver.udp.retransmit_handler.RetransmitHandler`, which
  resends a gap once (within the last half term) and ignores duplicate NAKs while it lingers.

The **conductor** (:meth:`update_pub_pos_and_lmt`, :meth:`on_time_event`, :meth:`incref`,
:meth:`decref`) moves the publisher limit (pub-lmt = snd-pos + term window, once receivers are
connected, cleaning the term behind), samples pub-pos, unblocks a log whose writer died
mid-claim, and runs the life cycle: ACTIVE; DRAINING when the last client link is gone (until
everything is sent; then the heartbeat carries EOS); LINGER for the linger time (cut short by a
unicast receiver's EOS status message); DONE, when the conductor removes it from the sender and
frees it once the sender has let go (``has_sender_released``).
"""

from __future__ import annotations

from enum import IntEnum

from aeromq.transport.concurrent import AtomicBuffer, AtomicCounter, Position
from aeromq.transport.driver.log_factory import delete_log
from aeromq.transport.driver.log_unblocker import is_possibly_blocked, unblock_log
from aeromq.transport.driver.term_cleaner import clean_term
from aeromq.transport.driver.udp.flow_control import FlowControl, UnicastFlowControl
from aeromq.transport.driver.udp.publication_frames import PublicationFrames
from aeromq.transport.driver.udp.retransmit_handler import RetransmitHandler
from aeromq.transport.driver.udp.send_channel_endpoint import SendChannelEndpoint
from aeromq.transport.logbuffer.frame_descriptor import compute_max_message_length
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_IS_CONNECTED_OFFSET,
    PARTITION_COUNT,
    producer_position,
    set_end_of_stream_position,
    set_is_publication_revoked,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.logbuffer.term_scanner import scan_for_availability
from aeromq.transport.protocol import (
    DATA_HEADER_LENGTH,
    SETUP_HEADER_LENGTH,
)

__all__ = [
    "HEARTBEAT_TIMEOUT_NS",
    "SETUP_TIMEOUT_NS",
    "NetworkPublication",
    "NetworkPublicationState",
]

HEARTBEAT_TIMEOUT_NS = 100_000_000
SETUP_TIMEOUT_NS = 100_000_000
_LOW_32 = 0xFFFF_FFFF


class NetworkPublicationState(IntEnum):
    ACTIVE = 0
    DRAINING = 1
    LINGER = 2
    DONE = 3


class NetworkPublication:
    """The driver's state for one UDP publication (see module)."""

    def __init__(
        self,
        *,
        log: LogBuffers,
        endpoint: SendChannelEndpoint,
        registration_id: int,
        session_id: int,
        stream_id: int,
        channel: str,
        initial_term_id: int,
        starting_term_id: int,
        starting_term_offset: int,
        is_exclusive: bool,
        pub_pos: Position,
        pub_lmt: Position,
        snd_pos: Position,
        snd_lmt: Position,
        snd_bpe: AtomicCounter,
        flow_control: FlowControl,
        retransmit_handler: RetransmitHandler,
        term_window_length: int,
        mtu_length: int,
        max_messages_per_send: int,
        connection_timeout_ns: int,
        linger_timeout_ns: int,
        unblock_timeout_ns: int,
        multicast_ttl: int,
        signal_eos: bool,
        short_sends: AtomicCounter,
        heartbeats_sent: AtomicCounter,
        sender_flow_control_limits: AtomicCounter,
        retransmits_sent: AtomicCounter,
        retransmitted_bytes: AtomicCounter,
        unblocked_publications: AtomicCounter,
        now_ns: int,
        snd_naks_received: AtomicCounter | None = None,
    ) -> None:
        self.log = log
        self.log_file_name = str(log.path)
        self.endpoint = endpoint
        self.registration_id = registration_id
        self.session_id = session_id
        self.stream_id = stream_id
        self.channel = channel
        self.initial_term_id = initial_term_id
        self.starting_term_id = starting_term_id
        self.starting_term_offset = starting_term_offset
        self.is_exclusive = is_exclusive
        self.pub_pos = pub_pos
        self.pub_lmt = pub_lmt
        self.snd_pos = snd_pos
        self.snd_lmt = snd_lmt
        self.snd_bpe = snd_bpe
        self.snd_naks_received = snd_naks_received
        self.flow_control = flow_control
        self.retransmit_handler = retransmit_handler
        self.term_length = log.term_length
        self.term_length_mask = log.term_length - 1
        self.position_bits_to_shift = log.term_length.bit_length() - 1
        self.term_window_length = term_window_length
        self.mtu_length = mtu_length
        self.max_messages_per_send = max_messages_per_send
        self.connection_timeout_ns = connection_timeout_ns
        self.linger_timeout_ns = linger_timeout_ns
        self.unblock_timeout_ns = unblock_timeout_ns
        self.signal_eos = signal_eos
        self._short_sends = short_sends
        self._heartbeats_sent = heartbeats_sent
        self._sender_flow_control_limits = sender_flow_control_limits
        self._retransmits_sent = retransmits_sent
        self._retransmitted_bytes = retransmitted_bytes
        self._unblocked_publications = unblocked_publications
        self._term_buffers = log.term_buffers
        kind = type(flow_control)
        # unicast's on_idle keeps the limit and any receiver suffices: neither is called
        self._limit_moves_when_idle = kind.on_idle is not UnicastFlowControl.on_idle
        self._receivers_suffice = (
            kind.has_required_receivers is UnicastFlowControl.has_required_receivers
        )
        self._term_views = tuple(memoryview(term) for term in log.term_buffers)
        self._meta = log.meta_data_buffer
        self._send = endpoint.send
        self._resend_handler = self.resend

        # Sender fields: snd-pos and snd-lmt have one writer, the sender, which keeps copies.
        start = snd_pos.get()
        self._snd_pos = start
        self._snd_lmt = snd_lmt.get()
        self.has_initial_connection = False
        self.track_sender_limits = False
        self.is_setup_elicited = False
        self.time_of_last_data_or_heartbeat_ns = now_ns - HEARTBEAT_TIMEOUT_NS - 1
        self.time_of_last_setup_ns = now_ns - SETUP_TIMEOUT_NS - 1
        self.status_message_deadline_ns = now_ns + connection_timeout_ns

        # Shared flags (a Python attribute store is atomic under the GIL).
        self.has_receivers = False
        self.is_connected = False
        self.is_end_of_stream = False
        self.has_sender_released = False
        self.has_received_sm_eos = False
        self._eos_sent = False

        # Conductor fields.
        self.state = NetworkPublicationState.ACTIVE
        self.ref_count = 1
        self.has_reached_end_of_life = False
        self.clean_position = start
        self.last_snd_pos = start
        self.time_of_last_activity_ns = now_ns

        self._frames = PublicationFrames(
            session_id=session_id,
            stream_id=stream_id,
            initial_term_id=initial_term_id,
            term_length=self.term_length,
            mtu_length=mtu_length,
            multicast_ttl=multicast_ttl,
        )

    # ----------------------------------------------------------------------------------------
    # Positions

    def producer_position(self) -> int:
        """Where the next frame will be appended (from the active term's raw tail)."""
        return producer_position(
            self._meta, self.term_length, self.position_bits_to_shift, self.initial_term_id
        )

    def sender_position(self) -> int:
        """snd-pos (acquire load): how far the sender has sent, in bytes of the stream."""
        return self.snd_pos.get_volatile()

    def is_active(self) -> bool:
        """Whether a concurrent ADD_PUBLICATION may join it (the publication factory asks)."""
        return self.state is NetworkPublicationState.ACTIVE

    def may_take_storage(self) -> bool:
        """Whether a writer may still back more of the log: while ACTIVE (its links hold it;
        ``transport/driver/log_storage.py``)."""
        return self.state is NetworkPublicationState.ACTIVE

    def holds_session_id(self) -> bool:
        """Whether its session id is taken for the stream on its endpoint: until it is DONE."""
        return self.state is not NetworkPublicationState.DONE

    # ----------------------------------------------------------------------------------------
    # Sender thread

    def owes_soon(self) -> bool:
        """Whether the sender owes this publication something a park should not wait for: a
        resend a NAK asked for (or its linger). Its own data comes with a wake (an in-process
        publisher's) or not at all soon; SETUPs and heartbeats run on timers of 100 ms."""
        return bool(self.retransmit_handler.actions)

    def has_unsent(self) -> bool:
        """Whether :meth:`send` would send a frame now: one waits at snd-pos and fits the
        window (the sender's ``left_work``). Sender thread."""
        snd_pos = self._snd_pos
        window = self._snd_lmt - snd_pos
        term = self._term_buffers[(snd_pos >> self.position_bits_to_shift) % PARTITION_COUNT]
        offset = snd_pos & self.term_length_mask
        if window <= 0 or term.get_int32_volatile(offset) <= 0:
            return False
        return scan_for_availability(term, offset, min(window, self.mtu_length))[0] > 0

    def send(self, now_ns: int) -> int:
        """One duty cycle: SETUP if due, data, else a heartbeat; retransmit timers. Bytes sent.
        With nothing to send or due it reads one frame length and compares times: no call of
        its own (the data's send is called only when a frame waits at snd-pos, or the window
        is shut while the sender limit is tracked)."""
        snd_pos = self._snd_pos
        term_offset = snd_pos & self.term_length_mask
        if not self.has_initial_connection or self.is_setup_elicited:
            self._setup_message_check(now_ns, snd_pos, term_offset)

        available_window = self._snd_lmt - snd_pos
        if available_window <= 0:
            bytes_sent = 0
            if self.track_sender_limits:  # the window shut on data: count it once
                self.snd_bpe.increment_ordered()
                self._sender_flow_control_limits.increment_ordered()
                self.track_sender_limits = False
        else:
            index = (snd_pos >> self.position_bits_to_shift) % PARTITION_COUNT
            term_buffer = self._term_buffers[index]
            if term_buffer.get_int32_volatile(term_offset) > 0:
                bytes_sent = self._send_data(
                    now_ns, snd_pos, term_offset, available_window, index, term_buffer
                )
            else:
                bytes_sent = 0  # no frame at snd-pos (or one still being written)
        if bytes_sent == 0:
            if (
                now_ns > self.time_of_last_data_or_heartbeat_ns + HEARTBEAT_TIMEOUT_NS
                or self.is_end_of_stream
            ):
                self._heartbeat_message_check(now_ns, snd_pos, term_offset)
            if self._limit_moves_when_idle:
                self._set_snd_lmt(
                    self.flow_control.on_idle(now_ns, self._snd_lmt, snd_pos, self.is_end_of_stream)
                )
        if self.has_receivers and now_ns > self.status_message_deadline_ns:
            self.has_receivers = False
        if self.retransmit_handler.actions:
            self.retransmit_handler.process_timeouts(now_ns, self._resend_handler)
        return bytes_sent

    def _send_data(
        self,
        now_ns: int,
        snd_pos: int,
        term_offset: int,
        available_window: int,
        index: int,
        term_buffer: AtomicBuffer,
    ) -> int:
        """Send the frames from snd-pos (a frame waits there and the window is open: checked
        by :meth:`send`)."""
        view = self._term_views[index]
        term_length = self.term_length
        mtu = self.mtu_length
        send = self._send
        bytes_sent = 0
        position = snd_pos
        for _ in range(self.max_messages_per_send):
            available, padding = scan_for_availability(
                term_buffer, term_offset, available_window if available_window < mtu else mtu
            )
            if available == 0:
                break
            sent = send(view[term_offset : term_offset + available])
            if sent != available:
                if sent >= 0:
                    self._short_sends.increment()
                break
            bytes_sent += available
            total = available + padding
            available_window -= total
            term_offset += total
            position += total
            if term_offset >= term_length or available_window <= 0:
                break
        if position != snd_pos:
            self.time_of_last_data_or_heartbeat_ns = now_ns
            self.track_sender_limits = True
            self._snd_pos = position
            self.snd_pos.set_ordered(position)
        return bytes_sent

    def _setup_message_check(self, now_ns: int, snd_pos: int, term_offset: int) -> None:
        if now_ns <= self.time_of_last_setup_ns + SETUP_TIMEOUT_NS:
            return
        sent = self._send(self._frames.setup(self._term_id_of(snd_pos), term_offset))
        if 0 <= sent < SETUP_HEADER_LENGTH:
            self._short_sends.increment()
        self.time_of_last_setup_ns = now_ns
        if self.has_receivers:
            self.is_setup_elicited = False

    def _heartbeat_message_check(self, now_ns: int, snd_pos: int, term_offset: int) -> None:
        eos = self.signal_eos and self.is_end_of_stream
        if not self.has_initial_connection or (
            now_ns <= self.time_of_last_data_or_heartbeat_ns + HEARTBEAT_TIMEOUT_NS
            and (not eos or self._eos_sent)
        ):
            return
        self._eos_sent = eos
        sent = self._send(self._frames.heartbeat(self._term_id_of(snd_pos), term_offset, eos))
        if 0 <= sent < DATA_HEADER_LENGTH:
            self._short_sends.increment()
        self._heartbeats_sent.increment_ordered()
        self.time_of_last_data_or_heartbeat_ns = now_ns

    def _term_id_of(self, position: int) -> int:
        term_id = (position >> self.position_bits_to_shift) + self.initial_term_id
        return ((term_id + 2**31) & _LOW_32) - 2**31

    def _set_snd_lmt(self, snd_lmt: int) -> None:
        if snd_lmt != self._snd_lmt:
            self._snd_lmt = snd_lmt
            self.snd_lmt.set_ordered(snd_lmt)

    def resend(self, term_id: int, term_offset: int, length: int) -> None:
        """Send ``length`` bytes of the term again from (``term_id``, ``term_offset``)."""
        snd_pos = self._snd_pos
        bits = self.position_bits_to_shift
        term_count = ((term_id - self.initial_term_id + 2**31) & _LOW_32) - 2**31
        resend_position = (term_count << bits) + term_offset
        term_length = self.term_length
        bottom = snd_pos - term_length // 2 - compute_max_message_length(term_length)
        if not bottom <= resend_position < snd_pos:
            return
        index = (resend_position >> bits) % PARTITION_COUNT
        term_buffer = self._term_buffers[index]
        view = self._term_views[index]
        remaining = self.flow_control.max_retransmission_length(length)
        offset = term_offset
        mtu = self.mtu_length
        while remaining > 0:
            available, padding = scan_for_availability(
                term_buffer, offset, remaining if remaining < mtu else mtu
            )
            if available <= 0:
                break
            sent = self._send(view[offset : offset + available])
            if sent != available:
                if sent >= 0:
                    self._short_sends.increment()
                break
            self._retransmitted_bytes.add_ordered(available)
            offset += available + padding
            remaining -= available + padding
        self._retransmits_sent.increment_ordered()

    def on_nak(self, term_id: int, term_offset: int, length: int, now_ns: int) -> None:
        """A receiver's NAK for ``length`` bytes at ``term_offset`` of ``term_id``.

        Caller: the sender thread (the send endpoint's poll). Counted, then handed to the
        retransmit handler, which resends the range once (duplicates ignored while it lingers).
        """
        if self.snd_naks_received is not None:
            self.snd_naks_received.increment_ordered()
        self.retransmit_handler.on_nak(
            term_id, term_offset, length, self.term_length, now_ns, self._resend_handler
        )

    def on_status_message(
        self,
        receiver_id: int,
        consumption_term_id: int,
        consumption_term_offset: int,
        receiver_window: int,
        is_eos: bool,
        now_ns: int,
    ) -> bool:
        """A receiver's status message; True for a keepalive: it moved nothing (the connection,
        the end of stream) but perhaps the sender limit over space no frame waits for (all
        written was sent), so the sender has no more to do for it (``sender``'s module)."""
        before = (self._snd_lmt, self.is_connected, self.has_initial_connection)
        had_eos = self.has_received_sm_eos
        self.status_message_deadline_ns = now_ns + self.connection_timeout_ns
        self.has_receivers = True
        self.has_initial_connection = True
        if is_eos and not self.endpoint.is_multicast:
            self.has_received_sm_eos = True
        term_count = ((consumption_term_id - self.initial_term_id + 2**31) & _LOW_32) - 2**31
        position = (term_count << self.position_bits_to_shift) + consumption_term_offset
        self._set_snd_lmt(
            self.flow_control.on_status_message(
                receiver_id, position, receiver_window, self._snd_lmt, now_ns
            )
        )
        self.update_connected_status(self.has_required_receivers())
        if had_eos != self.has_received_sm_eos or before[1:] != (
            self.is_connected,
            self.has_initial_connection,
        ):
            return False
        return before[0] == self._snd_lmt or self.producer_position() <= self._snd_pos

    def trigger_send_setup(self) -> None:
        """A receiver asked for a SETUP (an SM with SEND_SETUP): send one on the next cycle."""
        if not self.is_end_of_stream:
            self.is_setup_elicited = True

    def on_rttm(self, is_reply_requested: bool, echo_timestamp_ns: int, receiver_id: int) -> None:
        """Answer a receiver's round-trip measurement request."""
        if not is_reply_requested:
            return
        self._send(self._frames.rttm_reply(echo_timestamp_ns, receiver_id))

    def has_required_receivers(self) -> bool:
        """Whether a receiver has reported and flow control has the receivers it needs."""
        return self.has_receivers and self.flow_control.has_required_receivers()

    def update_connected_status(self, connected: bool) -> None:
        """Store ``connected`` in the log's is-connected flag, if it changed (release store)."""
        if connected != self.is_connected:
            self._meta.put_int32_ordered(LOG_IS_CONNECTED_OFFSET, 1 if connected else 0)
            self.is_connected = connected

    def sender_release(self) -> None:
        """The sender let go of it (its last command about it ran).

        Caller: the sender thread. The conductor frees it only after this.
        """
        self.has_sender_released = True

    # ----------------------------------------------------------------------------------------
    # Conductor thread

    def update_pub_pos_and_lmt(self) -> int:
        """Move pub-lmt to snd-pos + term window while receivers are connected (work 0/1)."""
        if self.state is not NetworkPublicationState.ACTIVE:
            return 0
        snd_pos = self.snd_pos.get_volatile()
        if self.has_receivers and (
            self._receivers_suffice or self.flow_control.has_required_receivers()
        ):
            proposed = snd_pos + self.term_window_length
            if proposed > self.pub_lmt.get():
                self.clean_buffer(snd_pos - self.term_length)
                self.pub_lmt.set_ordered(proposed)
                return 1
        elif self.pub_lmt.get() > snd_pos:
            self.pub_lmt.set_ordered(snd_pos)
            self.clean_buffer(snd_pos - self.term_length)
            return 1
        return 0

    def clean_buffer(self, position: int) -> None:
        """Zero the log from the clean position towards ``position`` (one term at most)."""
        self.clean_position = clean_term(
            self._term_buffers,
            self.clean_position,
            position,
            self.term_length,
            self.position_bits_to_shift,
        )

    def on_time_event(self, now_ns: int) -> None:
        """The conductor's timer work, and the life cycle's steps (see the module).

        ACTIVE: the connected flag, pub-pos, a blocked log unblocked after the unblock timeout.
        DRAINING: to LINGER once all is sent (or no receiver is left). LINGER: to DONE after the
        linger timeout or a unicast receiver's EOS.
        """
        state = self.state
        if state is NetworkPublicationState.ACTIVE:
            self.update_connected_status(self.has_required_receivers())
            producer_position = self.producer_position()
            self.pub_pos.set_ordered(producer_position)
            if not self.is_exclusive:
                self._check_for_blocked_publisher(now_ns, producer_position)
        elif state is NetworkPublicationState.DRAINING:
            producer_position = self.producer_position()
            self.pub_pos.set_ordered(producer_position)
            snd_pos = self.snd_pos.get_volatile()
            if producer_position > snd_pos:
                if self._unblock(snd_pos):
                    self._unblocked_publications.increment_ordered()
                    return
                if self.has_receivers:
                    return
            else:
                self.is_end_of_stream = True
            self.state = NetworkPublicationState.LINGER
            self.time_of_last_activity_ns = now_ns
        elif state is NetworkPublicationState.LINGER and (
            self.has_received_sm_eos
            or now_ns > self.time_of_last_activity_ns + self.linger_timeout_ns
        ):
            self.state = NetworkPublicationState.DONE
            self.has_reached_end_of_life = True

    def _check_for_blocked_publisher(self, now_ns: int, producer_position: int) -> None:
        snd_pos = self.snd_pos.get_volatile()
        if snd_pos == self.last_snd_pos and is_possibly_blocked(
            self._meta, self.position_bits_to_shift, producer_position, snd_pos
        ):
            if now_ns > self.time_of_last_activity_ns + self.unblock_timeout_ns and self._unblock(
                snd_pos
            ):
                self._unblocked_publications.increment_ordered()
        else:
            self.time_of_last_activity_ns = now_ns
            self.last_snd_pos = snd_pos

    def _unblock(self, position: int) -> bool:
        log = self.log
        return unblock_log(log.term_buffers, log.meta_data_buffer, position, log.term_length)

    def incref(self) -> None:
        """One more client link holds it (a concurrent ADD_PUBLICATION joined)."""
        self.ref_count += 1

    def decref(self) -> None:
        """Release one client link; the last one starts the end of the stream."""
        self.ref_count -= 1
        if self.ref_count == 0:
            producer_position = self.producer_position()
            self.state = NetworkPublicationState.DRAINING
            self.pub_lmt.set_ordered(producer_position)
            set_end_of_stream_position(self._meta, producer_position)
            if self.snd_pos.get_volatile() >= producer_position:
                self.is_end_of_stream = True

    def revoke(self) -> None:
        """Mark the log revoked, so clients stop using it (Aeron 1.48's revoke flag)."""
        set_is_publication_revoked(self._meta, True)

    def unmap(self) -> None:
        """Release the views of the log and unmap it (idempotent); the file stays."""
        for view in self._term_views:
            view.release()
        self._frames.release()
        self.log.close()

    def close(self) -> bool:
        """Free the counters, unmap and delete the log; False if the file could not go."""
        for counter in (self.pub_pos, self.pub_lmt, self.snd_pos, self.snd_lmt, self.snd_bpe):
            if not counter.is_closed:
                counter.close()
        if self.snd_naks_received is not None and not self.snd_naks_received.is_closed:
            self.snd_naks_received.close()
        self.unmap()
        return delete_log(self.log_file_name)

    def __repr__(self) -> str:
        return (
            f"NetworkPublication(registration_id={self.registration_id}, session_id="
            f"{self.session_id}, stream_id={self.stream_id}, state={self.state.name})"
        )
