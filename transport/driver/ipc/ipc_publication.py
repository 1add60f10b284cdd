"""``IpcPublication``: the driver's side of one shared-memory log (Aeron's ``IpcPublication``).

The driver creates the log buffer file, fills its metadata, and then, on its duty cycle:

- moves the publisher limit (pub-lmt) to the slowest tethered subscriber position (sub-pos) plus
  the term window, with a trip gain of an eighth of the window so the counter is not rewritten
  for every message. With no subscriber the limit falls back to the consumer position: the
  publication is not connected and cannot move on;
- zeroes ("cleans") what every subscriber has consumed, a term at most at a time, so appenders
  always write into zeroed memory (Aeron's ``cleanBufferTo``), one term behind the slowest
  subscriber (as Aeron's images clean, where Aeron's IPC publication cleans right behind it).
  An appender writes below pub-lmt = slowest sub-pos + the window (half a term at most), over
  memory last used three terms earlier, below slowest sub-pos - 2.5 terms: cleaning up to
  slowest sub-pos - 1 term keeps 1.5 terms of margin. The lag is what makes a short-lived log
  cheap: a session's answers that stay within its first term are never cleaned (its file is
  deleted instead), and the driver never touches (page-faults in) memory a reader is about to
  read (measured on the broker's pull path: cleaning right behind readers was ~0.1 us per pulled
  100 B message, about half of it page faults of the driver's own mapping of each fresh log);
- on the timer: samples the producer position into pub-pos, unblocks a log whose writer died
  mid-claim (the consumers stuck on a frame left unpublished past the unblock timeout), and
  drives untethered subscribers and the end of life.

Life cycle (``state``): ACTIVE while any publication link holds it (concurrent publications on
one stream share it by reference count). When the last is released: end-of-stream position =
producer position, pub-lmt lowered to it, DRAINING until every subscriber has read up to it
(unblocking meanwhile); then LINGER, when the conductor tells subscribers the image is gone;
after the linger timeout the conductor frees the counters and deletes the file (DONE).

Untethered subscribers (``tether=false``): one that falls behind by more than three quarters of
the window for ``untethered_window_limit_timeout_ns`` is told its image is unavailable and
ignored for flow control (LINGER, then RESTING); after ``untethered_resting_timeout_ns`` it
rejoins at the consumer position with a fresh ON_AVAILABLE_IMAGE, as Aeron does.
"""

from __future__ import annotations

from enum import IntEnum

from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.concurrent.position import Position
from aeromq.transport.driver.log_factory import delete_log
from aeromq.transport.driver.log_unblocker import is_possibly_blocked, unblock_log
from aeromq.transport.driver.subscriber_position import (
    ImageListener,
    SubscriberPosition,
    TetherState,
    check_untethered_subscribers,
)
from aeromq.transport.driver.term_cleaner import clean_term
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    producer_position,
    set_end_of_stream_position,
    set_is_connected,
    set_is_publication_revoked,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers

__all__ = ["IpcPublication", "PublicationState"]

_MAX_POSITION = 2**63 - 1


class PublicationState(IntEnum):
    """The life cycle of an :class:`IpcPublication` (see the module)."""

    ACTIVE = 0
    DRAINING = 1
    LINGER = 2
    DONE = 3


class IpcPublication:
    """The driver's state for one IPC log (see module). Only the conductor thread uses it."""

    def __init__(
        self,
        *,
        log: LogBuffers,
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
        term_window_length: int,
        unblock_timeout_ns: int,
        linger_timeout_ns: int,
        untethered_window_limit_timeout_ns: int,
        untethered_resting_timeout_ns: int,
        unblocked_publications: AtomicCounter,
        listener: ImageListener[IpcPublication],
        now_ns: int,
    ) -> None:
        self.log = log
        self.log_file_name = str(log.path)
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
        self.term_length = log.term_length
        self.position_bits_to_shift = log.term_length.bit_length() - 1
        self.term_window_length = term_window_length
        self.trip_gain = term_window_length // 8
        self.unblock_timeout_ns = unblock_timeout_ns
        self.linger_timeout_ns = linger_timeout_ns
        self.untethered_window_limit_timeout_ns = untethered_window_limit_timeout_ns
        self.untethered_resting_timeout_ns = untethered_resting_timeout_ns
        self._unblocked_publications = unblocked_publications
        self._listener = listener
        self.state = PublicationState.ACTIVE
        self.ref_count = 1
        self.subscribers: list[SubscriberPosition] = []
        self.trip_limit = 0
        self.consumer_position = self.producer_position()
        self.last_consumer_position = self.consumer_position
        self.clean_position = self.consumer_position
        self.time_of_last_consumer_position_change_ns = now_ns
        self.time_of_last_state_change_ns = now_ns
        self.has_reached_end_of_life = False

    # ----------------------------------------------------------------------------------------
    # Positions

    def producer_position(self) -> int:
        """Where the next frame will be appended (from the active term's raw tail)."""
        return producer_position(
            self.log.meta_data_buffer,
            self.term_length,
            self.position_bits_to_shift,
            self.initial_term_id,
        )

    def join_position(self) -> int:
        """Where a new subscriber starts: the consumer position, or the slowest subscriber."""
        position = self.consumer_position
        for subscriber in self.subscribers:
            sub_pos = subscriber.position.get_volatile()
            if sub_pos < position:
                position = sub_pos
        return position

    def is_drained(self) -> bool:
        """Whether every subscriber has read up to the producer position."""
        producer_position = self.producer_position()
        return all(s.position.get_volatile() >= producer_position for s in self.subscribers)

    def is_active(self) -> bool:
        """Whether a concurrent ADD_PUBLICATION may join it (the publication factory asks)."""
        return self.state is PublicationState.ACTIVE

    def may_take_storage(self) -> bool:
        """Whether a writer may still back more of the log: while ACTIVE (its links hold it;
        ``transport/driver/log_storage.py``)."""
        return self.state is PublicationState.ACTIVE

    def holds_session_id(self) -> bool:
        """Whether its session id is taken for the stream: until it lingers."""
        return self.state is PublicationState.ACTIVE or self.state is PublicationState.DRAINING

    def is_accepting_subscriptions(self) -> bool:
        """Whether a new subscription may join: ACTIVE, or DRAINING with data left to read."""
        return self.state is PublicationState.ACTIVE or (
            self.state is PublicationState.DRAINING and not self.is_drained()
        )

    # ----------------------------------------------------------------------------------------
    # Subscribers

    def add_subscriber(self, subscriber: SubscriberPosition) -> None:
        """Track a subscriber's sub-pos for the limit; the log is marked connected."""
        self.subscribers.append(subscriber)
        set_is_connected(self.log.meta_data_buffer, True)

    def remove_subscriber(self, counter_id: int) -> SubscriberPosition | None:
        """Stop tracking the sub-pos ``counter_id``; the caller frees the counter."""
        for index, subscriber in enumerate(self.subscribers):
            if subscriber.counter_id == counter_id:
                self.update_publisher_limit()
                if len(self.subscribers) == 1:
                    set_is_connected(self.log.meta_data_buffer, False)
                del self.subscribers[index]
                return subscriber
        return None

    # ----------------------------------------------------------------------------------------
    # Duty cycle

    def update_publisher_limit(self) -> int:
        """Move pub-lmt with the slowest subscriber and clean behind it; the work done (0/1)."""
        if self.state is not PublicationState.ACTIVE:
            return 0
        subscribers = self.subscribers
        if subscribers:
            min_sub_pos = _MAX_POSITION
            max_sub_pos = self.consumer_position
            for subscriber in subscribers:
                if subscriber.state is not TetherState.RESTING:
                    position = subscriber.position.get_volatile()
                    if position < min_sub_pos:
                        min_sub_pos = position
                    if position > max_sub_pos:
                        max_sub_pos = position
            self.consumer_position = max_sub_pos
            if min_sub_pos == _MAX_POSITION:
                return 0
            proposed_limit = min_sub_pos + self.term_window_length
            if proposed_limit > self.trip_limit:
                self.clean_buffer(min_sub_pos - self.term_length)
                self.pub_lmt.set_ordered(proposed_limit)
                self.trip_limit = proposed_limit + self.trip_gain
                return 1
        elif self.pub_lmt.get() > self.consumer_position:
            self.pub_lmt.set_ordered(self.consumer_position)
            self.trip_limit = self.consumer_position
            self.clean_buffer(self.consumer_position - self.term_length)
        return 0

    def clean_buffer(self, position: int) -> None:
        """Zero from the clean position towards ``position``, up to the end of that term (see
        the module doc: callers pass a term behind the slowest subscriber)."""
        self.clean_position = clean_term(
            self.log.term_buffers,
            self.clean_position,
            position,
            self.term_length,
            self.position_bits_to_shift,
        )

    def on_time_event(self, now_ns: int) -> None:
        """The timer's work: sample pub-pos, unblock, untethered subscribers, end of life."""
        state = self.state
        if state is PublicationState.ACTIVE:
            producer_position = self.producer_position()
            self.pub_pos.set_ordered(producer_position)
            if not self.is_exclusive:
                self._check_for_blocked_publisher(producer_position, now_ns)
            self._check_untethered_subscribers(now_ns)
        elif state is PublicationState.DRAINING:
            self.pub_pos.set_ordered(self.producer_position())
            if self.is_drained():
                self.state = PublicationState.LINGER
                self.time_of_last_state_change_ns = now_ns
                for subscriber in self.subscribers:
                    self._listener.on_image_unavailable(
                        self, subscriber.subscription_registration_id
                    )
            elif self._unblock(self.consumer_position):
                self._unblocked_publications.increment_ordered()
        elif (
            state is PublicationState.LINGER
            and now_ns - self.time_of_last_state_change_ns > self.linger_timeout_ns
        ):
            self.state = PublicationState.DONE
            self.has_reached_end_of_life = True

    def _unblock(self, blocked_position: int) -> bool:
        log = self.log
        return unblock_log(
            log.term_buffers, log.meta_data_buffer, blocked_position, log.term_length
        )

    def _check_for_blocked_publisher(self, producer_position: int, now_ns: int) -> None:
        consumer_position = self.consumer_position
        if consumer_position == self.last_consumer_position and is_possibly_blocked(
            self.log.meta_data_buffer,
            self.position_bits_to_shift,
            producer_position,
            consumer_position,
        ):
            deadline_ns = self.time_of_last_consumer_position_change_ns + self.unblock_timeout_ns
            if now_ns > deadline_ns and self._unblock(consumer_position):
                self._unblocked_publications.increment_ordered()
        else:
            self.time_of_last_consumer_position_change_ns = now_ns
            self.last_consumer_position = consumer_position

    def _check_untethered_subscribers(self, now_ns: int) -> None:
        window = self.term_window_length
        check_untethered_subscribers(
            self,
            self._listener,
            self.subscribers,
            now_ns,
            window_limit=self.consumer_position - window + window // 4,
            window_limit_timeout_ns=self.untethered_window_limit_timeout_ns,
            resting_timeout_ns=self.untethered_resting_timeout_ns,
            rejoin_position=lambda: self.consumer_position,
        )

    # ----------------------------------------------------------------------------------------
    # References and end of life

    def incref(self) -> None:
        """One more publication link holds it (a concurrent ADD_PUBLICATION joined)."""
        self.ref_count += 1

    def decref(self) -> None:
        """Release one publication link; the last one starts the end of the stream."""
        self.ref_count -= 1
        if self.ref_count == 0:
            producer_position = self.producer_position()
            if self.pub_lmt.get() > producer_position:
                self.pub_lmt.set_ordered(producer_position)
            set_end_of_stream_position(self.log.meta_data_buffer, producer_position)
            self.state = PublicationState.DRAINING

    def revoke(self) -> None:
        """Mark the log revoked, so clients stop using it (Aeron 1.48's revoke flag)."""
        set_is_publication_revoked(self.log.meta_data_buffer, True)

    def close(self, manager: CountersManager) -> bool:
        """Free pub-lmt, pub-pos and every sub-pos, unmap and delete the log file.

        Returns False when the file could not be deleted (counted as a free failure).
        """
        for counter in (self.pub_lmt, self.pub_pos):
            if not counter.is_closed:
                counter.close()
        for subscriber in self.subscribers:
            manager.free(subscriber.counter_id)
        self.subscribers.clear()
        self.log.close()
        return delete_log(self.log_file_name)

    def __repr__(self) -> str:
        return (
            f"IpcPublication(registration_id={self.registration_id}, session_id="
            f"{self.session_id}, stream_id={self.stream_id}, state={self.state.name})"
        )
