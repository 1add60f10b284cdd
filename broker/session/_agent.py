"""``SessionAgent``: the broker's ingress and its transport sessions, as one duty cycle.

Each ``do_work``:

1. polls every ingress subscription with ``controlled_poll`` (the fragments of a longer request
   through a fragment assembler); each whole ``TransportRequest`` goes to its session and
   processor. A send is ABORTed (left on the ingress, to come back on a later poll) while the
   store cannot take more (:meth:`~broker.processor.send.SendProcessor.can_accept`) or its
   session's answers are backed up; otherwise it is appended and the fragment COMMITted. Back
   pressure thus flows to the producer's publication as BACK_PRESSURED;
2. sends the answers the processors completed since, in the order they completed, whichever
   thread completed them (the flusher under SYNC flush, a broker group's replication, the
   long-poll hold service): they come through a queue. Only the holder of the agent's write
   lock writes to a session; the agent holds it through each duty cycle, and a thread that
   completes a send or a pull between cycles, with nothing queued before it, offers the answer
   itself (``broker.session._answers``);
3. moves sessions on: connects response publications (answering CONNECT once connected),
   retries back-pressured answers, and every 100 ms closes sessions idle for the session
   timeout, sessions whose client is gone (the response publication lost its subscriber) and
   sessions whose answers stayed stuck for the session timeout.

Requests that cannot be served are answered with an envelope-level ``error`` when there is a
route back, and always counted (:class:`~broker.session.SessionCounters`): bytes that do not
parse or carry no body (INVALID_PARAMETER, answered on the sender's session when its ids or its
ingress image tell which), a request of a closed session (SERVICE_NOT_AVAILABLE, with the
reason, on a publication opened for the answer), of an unknown session (SERVICE_NOT_AVAILABLE,
answered when the ingress image has a live session), a request on another client's session
(NO_PERMISSION, answered only on the sender's own session: the victim's session is untouched),
a CONNECT past ``max_sessions`` (SYSTEM_BUSY) or of another protocol version
(VERSION_NOT_SUPPORTED). A CONNECT whose response channel does not point back at its own source
is dropped unanswered (``routes_refused``): the broker sends to no address a client names
but the one it sends from.

Doorbells (``transport/concurrent/doorbell.py``): with ``doorbell`` the agent has one (a counter
of the broker's media driver) and its idle strategy may sleep on it. Whatever gives the agent
work rings it: an IPC client after each request it offers (the CONNECT answer names the counter
to an IPC client that named its own), and the threads that complete answers (the flusher, the
long-poll hold service) after queueing them. Requests over UDP ring it through the media driver:
the broker's UDP ingress subscription names the agent's doorbell (``doorbell=`` on its channel),
which the driver's receiver rings as requests land; with an embedded driver (whose receiver
does) a UDP session counts as one that rings, otherwise the agent finds its requests by its
polls, within its idle strategy's longest park. An IPC client's own doorbell, named in its
CONNECT, is rung once at the end of each duty cycle that offered it answers, in the order first
added (a ring that wakes a thread costs the agent a futex wake, 40-170 us measured on 2 cores
with ``python -m bench broker``, and often its core for as long as the woken thread runs, so
one per cycle rather than one per answer); a counter that is freed or reused is no longer
rung (checked every 100 ms). But for a message's consumer: in a cycle that took a send, a pull's
answer (a held pull the send's arrival released, on this thread, or a pull read after the send)
is offered at once and its client's doorbell rung at once, before the send's answer is offered
(a released hold's, before it is even made), so the consumer wakes on the other core while the
agent answers the producer (``broker.session._answers``), unless sends come faster than one
each ``SEND_FIRST_WITHIN_NS`` (0.5 ms): then the send's answer and its producer's ring go
first; a client rung so that gets another answer later in the same cycle is rung again at its
end (it may have read the first and gone back to sleep; a ring of a
client still awake is an atomic add and no wake). Answers to a UDP client ring the broker's
embedded media driver the same way (``MediaDriver.network_bell``, once per cycle): while the
driver's network thread parks the ring sends them on the ringing thread, else it ends the
driver's park (``transport/driver/network_turn.py``); they go out at once, not at its next
timed wake-up.
:meth:`SessionAgent.all_rung` tells a doorbell idle strategy when
every source of work rings (no session that does not ring, none connecting, no answer held up by
back pressure, no send left on the ingress for the store to catch up): it may then sleep until
rung, else it must also poll.

Lazy pulls: a caught-up consumer's next pull rings nothing (``client._request_sender``); it
waits on the ingress until something else wakes the agent. The next send's ring does: every
ingress subscription with an image is polled in the cycle it wakes (the fragment limit is shared
by a subscription's images, 64 by default, and a cycle whose polls reached it is followed by
another without a park), so the pull is read in the send's cycle whichever image comes first:
read after the send, it is answered from the store; read before it, it is held and the send's
arrival releases it on this thread; either way its answer goes out at once, in that cycle,
with no extra park. Such a pull answered at once counts among those whose next pulls are
awaited from the next cycle on, as one answered at the cycle's end did: the flag below is for
sends stored after a pull's answer, not for the send whose message it carries. The counts are
kept by session (``ServerSession.pulls_awaited``, ``pulls_at_once``): a pull read takes its own
session's count down, so a next pull read in the very cycle that answered its predecessor at
once (the consumer's ring can cost this thread its core long enough) is not awaited still. A message
stored by another thread (the timer, a transaction's commit, the RocketMQ endpoint) rings the
agent while transport sessions live (:meth:`SessionAgent.on_store_arrival`), since a lazy pull
may be waiting for it unread. Otherwise a lazy pull is read at the end of the
agent's idle park (at most :data:`~broker.session._idle.RUNG_PARK_NS`, 100 ms, while sessions
live), its hold's deadline counted from then. One race is closed by the doorbell's flag word
(``transport/concurrent/doorbell.py``): a send stored after a pull's answer and before that
consumer's next pull was read (the next pull may be on its way, lazy, and would wait for the
next wake-up) sets the flag, and a client that offers a lazy pull while it is set rings after
all; the flag is cleared once every pull answered since has its successor read (or at the sweep,
every 100 ms: a turnaround is far shorter). The agent polls once more after setting it (a cycle
that set it does not settle, below), so a lazy pull offered before the flag was set is read
then.

A cycle that settled: a cycle that did work tells its doorbell idle strategy
(:attr:`SessionAgent.settled`, ``transport.concurrent.doorbell.Settling``) whether it read every
ingress subscription to the end (fewer fragments than the limit in all, nothing ABORTed, no
request's handling raised, which ends a poll early), answered every completion, has no session
connecting or backed up, none that rings nothing, and did not set the flag above. Such a cycle
came after the strategy last read the doorbell's word, so it was the poll the doorbell's contract
asks for between that read and a sleep: the strategy parks right after it (or polls through its
spin window first while requests come that fast), rather than after one more cycle that would
find nothing, at 1,000 msgs/s one a message (the polls of every subscription, the strategy's
empty idle: about ten Python calls). A request published before that read was taken by the
cycle, one published since rang the doorbell, and the park ends at once.

A pull the cycle held is not counted as its work (:meth:`SessionAgent.do_work`'s count, which
the idle strategy reads): it asks nothing more of the agent until a send's arrival or its
deadline. A cycle whose only work was holding pulls is thus an empty one to the strategy: it
does not end the spin window nor count as a request that came within it. A consumer's lazy
pull, sent as soon as it has read its answer (rung in mid-cycle, above), often lands while the
agent polls through its spin window after the send's cycle; counted as work, it made the spin
predictor poll through the window after every message at 1,000 msgs/s, one at a time (3.7-5.6
duty cycles a message where 1.3-1.4 had done: ``python -m bench profile``), for a pull that the
next send's cycle would read anyway.

An ingress subscription without an image (no client on it: the UDP one of a broker whose
clients all use IPC) is not polled: a poll of it finds nothing and costs a Python call a cycle.
Every sweep (every 100 ms) keeps the subscriptions that have an image; a new image (a client
connecting) puts them all back at once, from the subscription's available-image handler, which
Aeron calls before the image is in the subscription, so the subscription it came to is kept
through the next sweep too whether or not it shows the image yet (a lock orders the handler
and the sweep).

Sessions are bound to their client: the id is random (63 bits) and every request must come on
the ingress image that carried the session's CONNECT, one identity compare per request
(``header.context is session.image``). Nothing a client sends stops the agent.

The agent's methods are arranged by role, one class per module, each calling those below it:
``SessionLifecycle`` (``_lifecycle``: CONNECT, connecting, farewells, the sweep, closing) <
``AnswerWriter`` (``_answers``: completions, answers, backlogs) < ``RequestDispatch``
(``_dispatch``: the ingress's requests to the processors, and refusals) < :class:`SessionAgent`
(here: its state and the duty cycle). They are one object: a request costs the same calls as
when they were one class.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

from aeromq.broker.processor.pull import PullProcessor
from aeromq.broker.processor.pull_hold import WakeCallback
from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.security._acl import Acl
from aeromq.broker.session._answers import Completion
from aeromq.broker.session._config import LocalReadGrant, SessionServerConfig
from aeromq.broker.session._counters import SessionCounters
from aeromq.broker.session._dispatch import SEND_FIRST_WITHIN_NS, RequestDispatch
from aeromq.broker.session._session import ServerSession
from aeromq.broker.session._table import SessionTable
from aeromq.common import DEFAULT_MAX_MESSAGE_SIZE, RINGS_WANTED_FLAG
from aeromq.transport.client import Aeron, Image, ImageHandler, Subscription
from aeromq.transport.concurrent.doorbell import Doorbell, Ringable
from aeromq.transport.concurrent.idle_strategy import tighten_timer_slack
from aeromq.transport.driver import MediaDriver
from aeromq.transport.logbuffer.controlled_fragment_assembler import ControlledFragmentAssembler

__all__ = ["SessionAgent"]

_SWEEP_INTERVAL_NS: Final = 100_000_000


class SessionAgent(RequestDispatch):
    """The session server's agent (see module); run it with an ``AgentRunner``.

    ``subscriptions`` are the ingress subscriptions (IPC, UDP), already added with ``aeron``,
    which also opens the response publications. ``clock_ns`` is monotonic. ``doorbell``, in
    ``aeron``'s counters, is the agent's own (see module); without it nothing rings the agent.
    """

    def __init__(
        self,
        aeron: Aeron,
        subscriptions: Sequence[Subscription],
        send: SendProcessor,
        pull: PullProcessor,
        broker_name: str,
        *,
        config: SessionServerConfig | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        clock_ns: Callable[[], int] = time.monotonic_ns,
        acl: Acl | None = None,
        doorbell: Doorbell | None = None,
        local_reads: LocalReadGrant | None = None,
    ) -> None:
        self.config = config or SessionServerConfig()
        self.local_reads = local_reads
        self._aeron = aeron
        self._subscriptions = tuple(subscriptions)
        self._send = send
        self._pull = pull
        self.broker_name = broker_name
        self.max_message_size = max_message_size
        self._clock_ns = clock_ns
        self._acl = acl
        self._table = SessionTable(self.config)
        self._completions: deque[Completion] = deque()
        self._connecting: set[ServerSession] = set()
        self._backlogged: set[ServerSession] = set()
        self._farewells: dict[tuple[str, int], ServerSession] = {}
        self._assembler = ControlledFragmentAssembler(self._on_fragment)
        self._ingress_open = True
        self._now_ns = clock_ns()
        self._next_sweep_ns = 0
        self._abort_backlog = self.config.max_backlog_responses // 2
        self.counters = SessionCounters()
        self.thread: threading.Thread | None = None
        self.doorbell = doorbell
        driver = MediaDriver.in_process(aeron.context.aeron_dir)
        self.network_bell = None if driver is None else driver.network_bell
        self._rings: dict[int, Ringable] = {}  # the cycle's bells by id (see module)
        self._thread_ident = 0
        self._write_lock = threading.Lock()  # held through each cycle (``_answers``)
        self._unrung_sessions = 0  # live sessions whose requests ring nothing
        self._aborted = False  # a send left on the ingress this cycle: retry without a ring
        self._polled = self._subscriptions  # those with an image, or one coming (see module)
        self._images_lock = threading.Lock()
        self._images_coming: set[int] = set()  # ids of those given an image since the sweep
        for subscription in self._subscriptions:
            subscription.available_image_handler = functools.partial(
                self._on_available_image, subscription, subscription.available_image_handler
            )
        self._pulls_awaited = 0  # pulls answered whose consumers' next pulls were not read yet
        self._at_once_sessions: list[ServerSession] = []  # those of pulls answered at once
        self._cycle_stored = False  # a send was taken this cycle (see module)
        self._sends_at_once = False  # (``_dispatch._send_first``'s)
        self._last_send_ns = -SEND_FIRST_WITHIN_NS  # the last send's cycle (see module)
        self._send_gap_ns = 0  # from the send before the last to the last (``_answers``)
        self._held_wakes: list[WakeCallback] = []  # (``_dispatch._send_first``'s)
        self._rings_wanted = False  # the doorbell's flag: lazy pulls asked to ring (see module)
        self._fragment_failed = False  # a request's handling raised: its poll stopped there
        self.settled = False
        """After a cycle that did work: whether it settled (see module; ``Settling``)."""
        self.long_spin = False
        """After a cycle that did work: whether it took sends of one message each, stored in
        the cycle (one-at-a-time sends), after which the idle strategy polls through its long
        spin window (``Settling.long_spin``): such a producer's next send comes back after its
        own wake-up and code, 100-200 us here. Not after batches (a pipelining producer, whose
        next batch comes sooner or later with the consumer's work, and whose throughput the
        long polls cost) nor after sends stored later (a group, SYNC flush)."""

    @property
    def role_name(self) -> str:
        """The agent's thread name."""
        return "broker-sessions"

    @property
    def table(self) -> SessionTable:
        """The session table: live sessions by id and by image, and tombstones of closed ones."""
        return self._table

    @property
    def idle(self) -> bool:
        """No answer waits to be sent (none completed but unsent, none backed up)."""
        return not self._completions and not self._backlogged

    def all_rung(self) -> bool:
        """Whether every source of the agent's work rings its doorbell now (see module)."""
        return (
            self.doorbell is not None
            and not self._unrung_sessions
            and not self._connecting
            and not self._backlogged
            and not self._aborted
        )

    def _want_rings(self, wanted: bool) -> None:
        """Ask clients to ring for their lazy pulls, or stop asking (see module)."""
        self._rings_wanted = wanted
        bell = self.doorbell
        if bell is not None:
            bell.set_flag(RINGS_WANTED_FLAG if wanted else 0)
            if wanted:
                self.counters.pull_rings_wanted += 1

    def on_store_arrival(self, topic: str, queue_id: int, max_offset: int) -> None:
        """The store's arrival listener (see module): a message another thread stored rings
        the agent while transport sessions live; one stored on the agent's own thread (a send
        over the transport) costs one compare."""
        if threading.get_ident() != self._thread_ident and len(self._table):
            bell = self.doorbell
            if bell is not None:
                bell.ring()

    def _on_available_image(
        self, subscription: Subscription, chained: ImageHandler | None, image: Image
    ) -> None:
        """An ingress subscription's available-image handler (the Aeron client conductor's
        thread, before the image is in the subscription): poll every subscription from now on,
        and this one at least through the next sweep (see module); then the handler it had."""
        with self._images_lock:
            self._images_coming.add(id(subscription))
            self._polled = self._subscriptions
        if chained is not None:
            chained(image)

    def _poll_those_with_images(self) -> None:
        """At the sweep: poll only the subscriptions that have an image, or were given one
        since the last sweep (see module)."""
        with self._images_lock:
            coming = self._images_coming
            self._polled = tuple(
                subscription
                for subscription in self._subscriptions
                if subscription.images or id(subscription) in coming
            )
            coming.clear()

    def stop_ingress(self) -> None:
        """Stop reading the ingress (any thread): answers still go out. For a graceful stop."""
        self._ingress_open = False

    def on_start(self) -> None:
        """On the agent's thread, before its first duty cycle."""
        self.thread = threading.current_thread()
        self._thread_ident = threading.get_ident()
        tighten_timer_slack()  # parks of this agent end when asked, not 50 us later

    # -- the duty cycle ------------------------------------------------------------------

    def do_work(self) -> int:
        """One duty cycle (see module); returns the work done (0: the idle strategy may idle)."""
        with self._write_lock:  # only its holder writes to a session (``_answers``)
            return self._cycle()

    def _cycle(self) -> int:
        now_ns = self._now_ns = self._clock_ns()
        work = 0
        settled = True  # (see module: a cycle that settled)
        self._aborted = self._cycle_stored = False
        send = self._send
        sends_before, stored_before = send.requests, send.messages_stored
        if self._ingress_open:
            handler = self._on_fragment
            limit = self.config.fragment_limit
            pull = self._pull
            held = pull.held
            for subscription in self._polled:
                work += subscription.controlled_poll(handler, limit)
            if work >= limit:  # a poll may have stopped at its limit (or all fell just short)
                settled = False
            # (see module: a pull held is not work; a gRPC pull held meanwhile, on its own
            # thread, may take one off too many: then this cycle is an empty one, polled again)
            work -= pull.held - held
            if work < 0:
                work = 0
            # (see module: lazy pulls) each pull read this cycle took its session's count down
            # (``_dispatch``); the flag asks for the pulls answered before the cycle alone: not
            # for those answered at once in it, with its sends' messages, which count from the
            # next cycle on, unless their next pulls were read in it already
            awaited = self._pulls_awaited
            at_once_sessions = self._at_once_sessions
            if at_once_sessions:
                for session in at_once_sessions:
                    at_once = session.pulls_at_once
                    if at_once:
                        session.pulls_awaited += at_once
                        session.pulls_at_once = 0
                        self._pulls_awaited += at_once
                at_once_sessions.clear()
            if awaited or self._rings_wanted:
                if not awaited:
                    if self._rings_wanted:
                        self._want_rings(False)
                elif not self._rings_wanted and send.requests != sends_before:
                    self._want_rings(True)
                    settled = False  # poll once more: a lazy pull offered before the flag
        if self._completions:
            work += self._send_completions(now_ns)
        if self._connecting:
            work += self._progress_connecting(now_ns)
        if self._backlogged:
            work += self._flush_backlogs(now_ns)
        if now_ns >= self._next_sweep_ns:
            self._next_sweep_ns = now_ns + _SWEEP_INTERVAL_NS
            if self._pulls_awaited:  # their turnaround is long past: stop counting them
                self._pulls_awaited = 0
                for session in self._table:
                    session.pulls_awaited = 0
            self._poll_those_with_images()
            self._sweep(now_ns)
        if self._rings:  # each bell the cycle's answers gave work, once, in the order added
            self._ring_bells()
        if work:  # read by the idle strategy after a cycle that did work (see module)
            if self._fragment_failed:
                self._fragment_failed = settled = False
            took = send.requests - sends_before  # one message each, stored: one at a time
            self.long_spin = took > 0 and send.messages_stored - stored_before == took
            self.settled = (
                settled
                and not self._aborted
                and not self._completions
                and not self._connecting
                and not self._backlogged
                and not self._unrung_sessions
            )
        return work

    def on_close(self) -> None:
        """Answer what completed, then close every session with a notice."""
        with self._write_lock:
            self._close_all()

    def _close_all(self) -> None:
        now_ns = self._clock_ns()
        self._send_completions(now_ns)
        for session in self._table:
            self._close(session, "the broker is shutting down", now_ns, notify=True)
        self._ring_bells()
