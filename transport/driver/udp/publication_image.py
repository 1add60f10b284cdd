"""``PublicationImage``: a remote publication rebuilt in a local log (Aeron's ``PublicationImage``).

The conductor creates an image when a SETUP arrives for a stream some subscription wants: a log
file in ``images/``, rcv-hwm and rcv-pos counters, and a sub-pos per subscription. Two threads
then share it.

The **receiver** (:meth:`insert_packet`, :meth:`do_work`):

- inserts each DATA datagram into its term at the offset the header gives (frames arrive out of
  order and twice; a slot already filled is left alone), moving rcv-hwm. A datagram beyond the
  window of the last status message plus half a term is a flow control over-run, one before it
  an under-run: both are counted and dropped. A heartbeat only moves rcv-hwm; with the EOS flag
  it sets the log's end-of-stream position;
- rebuilds: scans from rcv-pos to rcv-hwm for the first gap
  (:class:`~transport.driver.udp.loss_detector.LossDetector`), moves rcv-pos to it, and for a gap
  that lasts past the NAK delay sends a NAK (or, for ``reliable=false``, pads over it);
- rings the doorbells its subscriptions' channels name (:meth:`ring_doorbells`, after a duty
  cycle that received data) when the rebuild position moved since the last ring: a subscriber
  asleep on one wakes once per cycle that gave it something to read;
- sends a status message (consumed position = the slowest subscriber, window = the receiver
  window) when the subscribers have moved a quarter window past the last one, and at least
  every status message timeout; with the EOS flag once the image is draining. It cleans the
  term a whole term behind the slowest subscriber.

The **conductor** (:meth:`on_time_event`, :meth:`add_subscriber`, :meth:`remove_subscriber`,
:meth:`add_doorbell`) runs the life cycle: ACTIVE until there is no subscriber, no packet for the liveness timeout,
or the stream ended and everything was rebuilt; DRAINING until the subscribers have read all of
it (and a few EOS status messages went out); LINGER, when subscribers are told the image is
gone, until they let go or the liveness timeout; DONE, when the conductor frees it.
"""

from __future__ import annotations

from enum import IntEnum

from aeromq.transport.concurrent import AtomicBuffer, AtomicCounter, Position
from aeromq.transport.concurrent.doorbell import Doorbell
from aeromq.transport.driver.log_factory import delete_log
from aeromq.transport.driver.subscriber_position import (
    ImageListener,
    SubscriberPosition,
    TetherState,
    check_untethered_subscribers,
)
from aeromq.transport.driver.term_cleaner import clean_term
from aeromq.transport.driver.term_gap_filler import try_fill_gap
from aeromq.transport.driver.udp.loss_detector import (
    TIMER_INACTIVE,
    FeedbackDelayGenerator,
    LossDetector,
)
from aeromq.transport.driver.udp.receive_channel_endpoint import ReceiveChannelEndpoint
from aeromq.transport.driver.udp.udp_channel import Sockaddr
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_ACTIVE_TRANSPORT_COUNT_OFFSET,
    LOG_END_OF_STREAM_POSITION_OFFSET,
    PARTITION_COUNT,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.logbuffer.term_rebuilder import insert
from aeromq.transport.protocol import DATA_HEADER_LENGTH, EOS_FLAG, FLAGS_FIELD_OFFSET, SM_EOS_FLAG

__all__ = ["ImageState", "PublicationImage"]

RECEIVE_DESTINATION_TIMEOUT_NS = 5_000_000_000
"""A source silent this long gets no more status messages or NAKs (Aeron's value)."""
SM_EOS_MULTIPLE = 5
"""A draining image keeps sending EOS status messages for this many SM timeouts."""
_LOW_32 = 0xFFFF_FFFF
_NO_POSITION = 2**63 - 1
"""No subscriber position yet (the minimum's start)."""


class ImageState(IntEnum):
    ACTIVE = 0
    DRAINING = 1
    LINGER = 2
    DONE = 3


class PublicationImage:
    """One image (see module)."""

    def __init__(
        self,
        *,
        log: LogBuffers,
        endpoint: ReceiveChannelEndpoint,
        correlation_id: int,
        session_id: int,
        stream_id: int,
        initial_term_id: int,
        active_term_id: int,
        initial_term_offset: int,
        rcv_hwm: Position,
        rcv_pos: Position,
        control_address: Sockaddr,
        source_address: Sockaddr,
        delay_generator: FeedbackDelayGenerator,
        is_reliable: bool,
        receiver_window_length: int,
        status_message_timeout_ns: int,
        image_liveness_timeout_ns: int,
        untethered_window_limit_timeout_ns: int,
        untethered_resting_timeout_ns: int,
        heartbeats_received: AtomicCounter,
        flow_control_under_runs: AtomicCounter,
        flow_control_over_runs: AtomicCounter,
        status_messages_sent: AtomicCounter,
        naks_sent: AtomicCounter,
        loss_gap_fills: AtomicCounter,
        now_ns: int,
        rcv_naks_sent: AtomicCounter | None = None,
    ) -> None:
        self.log = log
        self.log_file_name = str(log.path)
        self.endpoint = endpoint
        self.correlation_id = correlation_id
        self.session_id = session_id
        self.stream_id = stream_id
        self.initial_term_id = initial_term_id
        self.rcv_hwm = rcv_hwm
        self.rcv_pos = rcv_pos
        self.control_address = control_address
        self.source_address = source_address
        self.is_reliable = is_reliable
        self.term_length = log.term_length
        self.term_length_mask = log.term_length - 1
        self.position_bits_to_shift = log.term_length.bit_length() - 1
        self.receiver_window_length = receiver_window_length
        self.status_message_timeout_ns = status_message_timeout_ns
        self.image_liveness_timeout_ns = image_liveness_timeout_ns
        self.untethered_window_limit_timeout_ns = untethered_window_limit_timeout_ns
        self.untethered_resting_timeout_ns = untethered_resting_timeout_ns
        self._heartbeats_received = heartbeats_received
        self._under_runs = flow_control_under_runs
        self._over_runs = flow_control_over_runs
        self._status_messages_sent = status_messages_sent
        self._naks_sent = naks_sent
        self.rcv_naks_sent = rcv_naks_sent
        self._loss_gap_fills = loss_gap_fills
        self._term_buffers = log.term_buffers
        self._meta = log.meta_data_buffer
        self.loss_detector = LossDetector(delay_generator, self._on_gap)

        bits = self.position_bits_to_shift
        term_count = ((active_term_id - initial_term_id + 2**31) & _LOW_32) - 2**31
        initial_position = (term_count << bits) + initial_term_offset
        self.join_position = initial_position
        rcv_hwm.set_ordered(initial_position)
        rcv_pos.set_ordered(initial_position)

        # Receiver fields; rcv-hwm and rcv-pos have one writer, the receiver, which keeps copies.
        self._hwm = initial_position
        self._rcv_pos = initial_position
        self._next_sm_position = initial_position
        self._sm_pending = True
        self.last_sm_position = initial_position
        self._overrun_threshold = initial_position + self.term_length // 2
        self._time_of_last_sm_ns = now_ns - status_message_timeout_ns - 1
        self._time_of_last_activity_ns = now_ns
        self._active_transport_count = -1
        self.clean_position = initial_position
        self._rung_position = initial_position

        # Shared: the receiver writes, the conductor reads.
        self.time_of_last_packet_ns = now_ns
        self.is_end_of_stream = False
        self.is_sending_eos_sm = False
        self.has_receiver_released = False
        self.subscribers: list[SubscriberPosition] = []
        self.doorbells: tuple[Doorbell, ...] = ()
        """Rung by the receiver when new data can be read (the conductor replaces the tuple)."""

        # Conductor fields.
        self._doorbells_by_counter: dict[int, Doorbell] = {}
        self.state = ImageState.ACTIVE
        self.time_of_last_state_change_ns = now_ns
        self.listener: ImageListener[PublicationImage] | None = None

    # ----------------------------------------------------------------------------------------
    # Receiver thread

    def insert_packet(
        self,
        term_id: int,
        term_offset: int,
        buffer: AtomicBuffer,
        length: int,
        address: Sockaddr,
        now_ns: int,
    ) -> bool:
        """Put one DATA/PAD datagram (or heartbeat) into the log (see module); True for a
        keepalive: a heartbeat that moved nothing (the high-water mark, the end of stream)."""
        term_count = ((term_id - self.initial_term_id + 2**31) & _LOW_32) - 2**31
        if term_count < 0:
            return False
        packet_position = (term_count << self.position_bits_to_shift) + term_offset
        is_heartbeat = length == DATA_HEADER_LENGTH and buffer.get_int32(0) == 0
        proposed_position = packet_position if is_heartbeat else packet_position + length
        if proposed_position > self._overrun_threshold:
            self._over_runs.increment_ordered()
            return False
        if is_heartbeat:
            window_bottom = self.last_sm_position - self.term_length
            keepalive = False
            if packet_position >= window_bottom:
                self._time_of_last_activity_ns = now_ns
                self.time_of_last_packet_ns = now_ns
                keepalive = True
                if buffer.get_uint8(FLAGS_FIELD_OFFSET) & EOS_FLAG and not self.is_end_of_stream:
                    self._meta.put_int64_ordered(LOG_END_OF_STREAM_POSITION_OFFSET, packet_position)
                    self.is_end_of_stream = True
                    keepalive = False
                if proposed_position > self._hwm:
                    self._hwm = proposed_position
                    self.rcv_hwm.set_ordered(proposed_position)
                    keepalive = False
                self._heartbeats_received.increment_ordered()
            else:
                self._under_runs.increment_ordered()
            return keepalive
        elif packet_position >= self.last_sm_position:
            self._time_of_last_activity_ns = now_ns
            self.time_of_last_packet_ns = now_ns
            insert(
                self._term_buffers[(term_count) % PARTITION_COUNT],
                term_offset,
                buffer,
                0,
                length,
            )
            if proposed_position > self._hwm:
                self._hwm = proposed_position
                self.rcv_hwm.set_ordered(proposed_position)
        else:
            self._under_runs.increment_ordered()
            if proposed_position >= self.last_sm_position - self.receiver_window_length:
                self._time_of_last_activity_ns = now_ns
        return False

    def owes_soon(self) -> bool:
        """Whether the receiver owes this image something a park should not wait for: a status
        message due, a NAK timer running, or a status message that falls due as soon as its
        subscribers read what was received (more than a quarter window past the last one)."""
        return (
            self._sm_pending
            or self.loss_detector.expiry_ns != TIMER_INACTIVE
            or self._rcv_pos > self._next_sm_position + (self.receiver_window_length >> 2)
        )

    def do_work(self, now_ns: int) -> int:
        """Rebuild, detect loss, send due status messages; the work done: the rebuild moved.
        A status message sent is not work (``receiver``'s module): it leaves the receiver
        nothing more to do. (The rebuild is written out here, not in a method of its own: one
        Python call less an image a duty cycle.)"""
        work_count = 0
        subscribers = self.subscribers
        min_sub_pos = _NO_POSITION
        if subscribers:
            max_sub_pos = 0
            for subscriber in subscribers:
                if subscriber.state is not TetherState.RESTING:
                    position = subscriber.position.get_volatile()
                    if position < min_sub_pos:
                        min_sub_pos = position
                    if position > max_sub_pos:
                        max_sub_pos = position
        if min_sub_pos != _NO_POSITION:
            rcv_pos = self._rcv_pos
            rebuild_position = rcv_pos if rcv_pos > max_sub_pos else max_sub_pos
            if rebuild_position >= self._hwm:  # all received is rebuilt: no gap, no NAK owed
                self.loss_detector.expiry_ns = TIMER_INACTIVE
                new_rebuild_position = rebuild_position
            else:
                bits = self.position_bits_to_shift
                mask = self.term_length_mask
                rebuild_offset, _ = self.loss_detector.scan(
                    self._term_buffers[(rebuild_position >> bits) % PARTITION_COUNT],
                    rebuild_position,
                    self._hwm,
                    now_ns,
                    mask,
                    bits,
                    self.initial_term_id,
                )
                new_rebuild_position = (
                    rebuild_position - (rebuild_position & mask)
                ) + rebuild_offset
            if new_rebuild_position > rcv_pos:
                self._rcv_pos = new_rebuild_position
                self.rcv_pos.set_ordered(new_rebuild_position)
                work_count = 1
            if min_sub_pos > self._next_sm_position + (self.receiver_window_length >> 2):
                self._clean_buffer_to(min_sub_pos - self.term_length)
                self._next_sm_position = min_sub_pos
                self._sm_pending = True
        if self._sm_pending or now_ns > self._time_of_last_sm_ns + self.status_message_timeout_ns:
            self._send_status_message(now_ns)
        return work_count

    def status_after_reads(self, now_ns: int) -> None:
        """Send the status message its subscribers' reads made due since this cycle's rebuild:
        a subscriber on the receiver's own thread (an agent hosted there) reads after it, and
        the sender hears of the space at once, beside what that subscriber answered, rather
        than a duty cycle later on its own (``receiver``'s module). Receiver thread."""
        subscribers = self.subscribers
        if not subscribers:
            return
        min_sub_pos = _NO_POSITION
        for subscriber in subscribers:
            if subscriber.state is not TetherState.RESTING:
                position = subscriber.position.get_volatile()
                if position < min_sub_pos:
                    min_sub_pos = position
        if min_sub_pos == _NO_POSITION:
            return
        if min_sub_pos > self._next_sm_position + (self.receiver_window_length >> 2):
            self._clean_buffer_to(min_sub_pos - self.term_length)
            self._next_sm_position = min_sub_pos
            self._send_status_message(now_ns)

    def ring_doorbells(self) -> None:
        """Ring :attr:`doorbells` if the rebuild position moved since the last ring (see
        module). Receiver thread, after :meth:`do_work` in a cycle that received data."""
        position = self._rcv_pos
        if position != self._rung_position:
            self._rung_position = position
            for bell in self.doorbells:
                bell.ring()

    def _send_status_message(self, now_ns: int) -> None:
        self._sm_pending = False
        self._time_of_last_sm_ns = now_ns
        sm_position = self._next_sm_position
        alive = now_ns < self._time_of_last_activity_ns + RECEIVE_DESTINATION_TIMEOUT_NS
        if alive:
            bits = self.position_bits_to_shift
            term_id = (((sm_position >> bits) + self.initial_term_id + 2**31) & _LOW_32) - 2**31
            sent = self.endpoint.send_status_message(
                self.control_address,
                self.session_id,
                self.stream_id,
                term_id,
                sm_position & self.term_length_mask,
                self.receiver_window_length,
                SM_EOS_FLAG if self.is_sending_eos_sm else 0,
            )
            if sent > 0:
                self._status_messages_sent.increment_ordered()
        self.last_sm_position = sm_position
        self._overrun_threshold = sm_position + self.term_length // 2
        active = 1 if now_ns < self.time_of_last_packet_ns + self.image_liveness_timeout_ns else 0
        if active != self._active_transport_count:
            self._active_transport_count = active
            self._meta.put_int32_ordered(LOG_ACTIVE_TRANSPORT_COUNT_OFFSET, active)

    def _on_gap(self, term_id: int, term_offset: int, length: int) -> None:
        if self.is_reliable:
            sent = self.endpoint.send_nak(
                self.control_address, self.session_id, self.stream_id, term_id, term_offset, length
            )
            if sent > 0:
                self._naks_sent.increment_ordered()
                if self.rcv_naks_sent is not None:
                    self.rcv_naks_sent.increment_ordered()
        else:
            index = ((term_id - self.initial_term_id) & _LOW_32) % PARTITION_COUNT
            if try_fill_gap(self._meta, self._term_buffers[index], term_id, term_offset, length):
                self._loss_gap_fills.increment_ordered()

    def _clean_buffer_to(self, position: int) -> None:
        self.clean_position = clean_term(
            self._term_buffers,
            self.clean_position,
            position,
            self.term_length,
            self.position_bits_to_shift,
        )

    def on_rttm_request(self, echo_timestamp_ns: int) -> None:
        """The sender asked for an RTTM reply: echo its timestamp back."""
        self.endpoint.send_rttm(
            self.control_address, self.session_id, self.stream_id, echo_timestamp_ns
        )

    def receiver_release(self) -> None:
        """The receiver let go of it (its last command about it ran).

        Caller: the receiver thread. The conductor frees it only after this.
        """
        self.has_receiver_released = True

    # ----------------------------------------------------------------------------------------
    # Conductor thread

    def add_subscriber(self, subscriber: SubscriberPosition) -> None:
        """Track a subscriber's sub-pos (the list is replaced, so the receiver reads it safely)."""
        self.subscribers = [*self.subscribers, subscriber]

    def add_doorbell(self, counter_id: int, doorbell: Doorbell) -> None:
        """Ring ``doorbell`` when new data can be read, until the sub-pos ``counter_id`` is
        removed (the tuple is replaced, so the receiver reads it safely)."""
        self._doorbells_by_counter[counter_id] = doorbell
        self.doorbells = tuple(self._doorbells_by_counter.values())

    def remove_subscriber(self, counter_id: int) -> SubscriberPosition | None:
        """Stop tracking the sub-pos ``counter_id`` (and ringing its doorbell); the caller
        frees the counter."""
        if self._doorbells_by_counter.pop(counter_id, None) is not None:
            self.doorbells = tuple(self._doorbells_by_counter.values())
        for subscriber in self.subscribers:
            if subscriber.counter_id == counter_id:
                self.subscribers = [s for s in self.subscribers if s is not subscriber]
                return subscriber
        return None

    def is_drained(self) -> bool:
        """Whether every subscriber has read up to the rebuild position (rcv-pos)."""
        rebuild_position = self.rcv_pos.get_volatile()
        return all(s.position.get_volatile() >= rebuild_position for s in self.subscribers)

    def may_take_storage(self) -> bool:
        """Whether the receiver may still back more of the log: until LINGER, when it stops
        inserting (``transport/driver/log_storage.py``)."""
        return self.state is ImageState.ACTIVE or self.state is ImageState.DRAINING

    def is_accepting_subscriptions(self) -> bool:
        """Whether a new subscription may join: only while ACTIVE."""
        return self.state is ImageState.ACTIVE

    def on_time_event(self, now_ns: int) -> ImageState | None:
        """The timer's work; return the new state when it changed."""
        state = self.state
        if state is ImageState.ACTIVE:
            self._check_untethered_subscribers(now_ns)
            if (
                not self.subscribers
                or now_ns > self.time_of_last_packet_ns + self.image_liveness_timeout_ns
                or (
                    self.is_end_of_stream
                    and self.rcv_pos.get_volatile() >= self.rcv_hwm.get_volatile()
                )
            ):
                self.is_sending_eos_sm = True
                self._sm_pending = True  # tell the sender now, not at the next timeout
                return self._change_state(ImageState.DRAINING, now_ns)
        elif state is ImageState.DRAINING:
            eos_time_ns = SM_EOS_MULTIPLE * self.status_message_timeout_ns
            if self.is_drained() and now_ns > self.time_of_last_state_change_ns + eos_time_ns:
                return self._change_state(ImageState.LINGER, now_ns)
        elif state is ImageState.LINGER and (
            not self.subscribers
            or now_ns > self.time_of_last_state_change_ns + self.image_liveness_timeout_ns
        ):
            return self._change_state(ImageState.DONE, now_ns)
        return None

    def _change_state(self, state: ImageState, now_ns: int) -> ImageState:
        self.state = state
        self.time_of_last_state_change_ns = now_ns
        return state

    def _check_untethered_subscribers(self, now_ns: int) -> None:
        listener = self.listener
        if listener is None:
            return
        max_sub_pos = 0
        for subscriber in self.subscribers:
            if subscriber.is_tether:
                max_sub_pos = max(max_sub_pos, subscriber.position.get_volatile())
        window = self.receiver_window_length
        check_untethered_subscribers(
            self,
            listener,
            self.subscribers,
            now_ns,
            window_limit=max_sub_pos - window + window // 4,
            window_limit_timeout_ns=self.untethered_window_limit_timeout_ns,
            resting_timeout_ns=self.untethered_resting_timeout_ns,
            rejoin_position=self.rcv_pos.get_volatile,
        )

    def close(self) -> bool:
        """Free rcv-hwm, rcv-pos and rcv-naks-sent, unmap and delete the log; False if the
        file stayed.

        The caller frees the sub-pos counters (it allocated them).
        """
        for counter in (self.rcv_hwm, self.rcv_pos):
            if not counter.is_closed:
                counter.close()
        if self.rcv_naks_sent is not None and not self.rcv_naks_sent.is_closed:
            self.rcv_naks_sent.close()
        self.subscribers = []
        self.log.close()
        return delete_log(self.log_file_name)

    def __repr__(self) -> str:
        return (
            f"PublicationImage(correlation_id={self.correlation_id}, session_id="
            f"{self.session_id}, stream_id={self.stream_id}, state={self.state.name})"
        )
