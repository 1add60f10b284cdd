"""``SessionConfig``: how a client session reaches a broker and how long it waits; the defaults of
its idle strategy and channels.

:class:`~client.session.ClientSession` takes a :class:`SessionConfig`;
:class:`~client.broker_sessions.BrokerSessions` and the producer make theirs with
:func:`default_idle_strategy` (the producer's sessions with
:data:`PRODUCER_SESSION_IDLE_STRATEGY`). Everything here is re-exported by ``client/session.py``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Final

from aeromq.client._security import Credentials
from aeromq.common import DEFAULT_INGRESS_STREAM_ID, IllegalArgumentError
from aeromq.transport import TransportError
from aeromq.transport.concurrent.doorbell_idle_strategy import idle_strategy_with_doorbell

__all__ = [
    "DEFAULT_BACK_TO_BACK_SPIN_US",
    "DEFAULT_SESSION_IDLE_STRATEGY",
    "DEFAULT_UDP_TERM_LENGTH",
    "DRIVER_SILENT_MS",
    "IDLE_STRATEGY_ENV",
    "PRODUCER_SESSION_IDLE_STRATEGY",
    "SessionConfig",
    "default_idle_strategy",
]

DEFAULT_UDP_TERM_LENGTH: Final = 64 * 1024 * 1024
"""UDP session channels get this term length unless theirs names one: a term takes messages of
an eighth of it, and a 4 MiB message plus its envelope needs more than the 16 MiB default's."""

DEFAULT_BACK_TO_BACK_SPIN_US: Final = 100
"""How long a caller sending back to back polls for its answer before it sleeps
(``SessionConfig.back_to_back_spin_us``, ``client/_back_to_back.py``): on the machine of
``docs/latency.md`` a polled-for answer came 22-29 us (p50-p90) after its request while the
broker's session agent spins, and a send's over UDP about 450 us (the polls then stop)."""

DEFAULT_SESSION_IDLE_STRATEGY: Final = "doorbell:0,0,1000,1000000,0,1000000000,100000"
"""How a session's poller thread waits: over IPC, where the broker rings the session's doorbell
after each answer, the threads that wait read the answers themselves (a caller of ``send()``,
a consumer's ``poll()``), asleep on the doorbell between polls, and the poller keeps out of
their way: it reads only answers nobody waits for, asleep on the doorbell until rung or its
housekeeping is due (``client/_answer_readers.py``); an idle session costs ten wake-ups a
second. Over UDP the session's own media driver rings the doorbell as answers land, the same
way; without a rung doorbell (no futexes) it backs off from 1 us to 1 ms as
``backoff:0,0,1000,1000000``. Another strategy (``backoff:10,5,1000,1000000``, the consumer's
default before) makes the poller poll with it; ``AEROMQ_CLIENT_SESSION_IDLE_STRATEGY``
overrides it, to compare strategies."""
PRODUCER_SESSION_IDLE_STRATEGY: Final = DEFAULT_SESSION_IDLE_STRATEGY
"""The producer's sessions' (``producer.Producer``): the default, asleep on the doorbell.
End to end with a consumer (alternating runs, 2 cores) the doorbell measured 202k against 193k
msgs/s for the backoff: the backoff's yields and short sleeps took the cores from the consumer
and the broker (consumer CPU 2.59 against 2.83 us a message); the producer's own CPU was the
same or lower (``python -m bench broker``, produce: 2.8-3.0 against 3.3-3.4 us a message)."""
IDLE_STRATEGY_ENV: Final = "AEROMQ_CLIENT_SESSION_IDLE_STRATEGY"
"""The environment variable that overrides every session's idle strategy name."""


def default_idle_strategy(role_default: str = DEFAULT_SESSION_IDLE_STRATEGY) -> str:
    """``role_default``, unless ``AEROMQ_CLIENT_SESSION_IDLE_STRATEGY`` names another."""
    return os.environ.get(IDLE_STRATEGY_ENV) or role_default


DRIVER_SILENT_MS: Final = 1_000
"""A driver stamps its heartbeat on every duty cycle (at least every few ms); silent for 1 s it
is dead or hung. Over IPC it is the broker's own driver: the session fails at once, so the
client refreshes the broker's route (a restarted broker has a new driver directory) instead of
waiting for its cached route to expire or the driver timeout (10 s)."""


@dataclass(frozen=True, kw_only=True)
class SessionConfig:
    """How a :class:`~client.session.ClientSession` reaches a broker and how long it waits.

    ``response_stream_id`` 0 takes a stream id unique among the driver's clients; a UDP
    ``response_channel`` with port 0 takes a free local port. ``keepalive_interval_ms`` 0 is a
    third of the session timeout the broker announces. UDP channels without a ``term-length``
    get ``udp_term_length`` (0: the driver's default), both ways. ``credentials`` go in the
    CONNECT, for a broker with access control (refused: ``AuthenticationError``).
    ``idle_strategy`` is the poller thread's (see ``client/session.py``; an idle strategy name,
    ``doorbell`` or one of ``transport.concurrent.idle_strategy_from_name``'s).

    ``back_to_back_spin_us``: a caller of :meth:`~client.session.ClientSession.request` that
    sends back to back (its thread ran, rather than slept, between an answer and its next
    request, mostly) polls for its answer this long before it sleeps on the doorbell, while the
    answers mostly come that fast (``client/_back_to_back.py``); 0: it always sleeps. A paced
    caller is not affected.

    ``caller_reads`` True: the threads that wait for answers
    (:meth:`~client.session.ClientSession.wait`, :meth:`~client.session.ClientSession.request`)
    read them, sleeping on the doorbell between polls (IPC) or parking briefly (UDP); the poller
    thread keeps the session (deadlines, keepalives, failure checks) every 10 ms and reads only
    answers nobody waited for in the last 100 ms. For a caller that pipelines large answers and
    waits for each in turn (the Spark reader, ``pipeline/_reader_sessions.py``): no thread
    spins, no answer is handed between threads, and its copy out of the transport is allocated
    and freed on the same thread (large buffers allocated on one thread and freed on another
    fault their pages in anew, measured here).

    ``local_reads`` True (IPC only): the CONNECT asks the broker for local reads; when granted,
    :attr:`~client.session.ClientSession.local_read_dir` names its commit log's directory (with
    its length of a file and the directory's device and inode), and pulls that set
    ``local_read`` are answered with where their batches are in it (``local_ranges``) instead
    of the batches (the Spark reader, ``pipeline/_local_reads.py``).
    """

    ingress_channel: str = "aeron:ipc"
    ingress_stream_id: int = DEFAULT_INGRESS_STREAM_ID
    response_channel: str = "aeron:ipc"
    response_stream_id: int = 0
    client_id: str = ""
    connect_timeout_ms: int = 5_000
    request_timeout_ms: int = 3_000
    offer_timeout_ms: int = 1_000
    keepalive_interval_ms: int = 0
    udp_term_length: int = DEFAULT_UDP_TERM_LENGTH
    credentials: Credentials | None = None
    idle_strategy: str = field(default_factory=default_idle_strategy)
    caller_reads: bool = False
    local_reads: bool = False
    back_to_back_spin_us: int = DEFAULT_BACK_TO_BACK_SPIN_US

    def __post_init__(self) -> None:
        for name in ("connect_timeout_ms", "request_timeout_ms", "offer_timeout_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise IllegalArgumentError(f"{name} must be a positive int", value=value)
        spin_us = self.back_to_back_spin_us
        if not isinstance(spin_us, int) or isinstance(spin_us, bool) or spin_us < 0:
            raise IllegalArgumentError("back_to_back_spin_us must be an int >= 0", value=spin_us)
        if self.keepalive_interval_ms < 0:
            raise IllegalArgumentError(
                "keepalive_interval_ms must be >= 0", value=self.keepalive_interval_ms
            )
        for name in ("ingress_channel", "response_channel"):
            if not getattr(self, name).startswith("aeron:"):
                raise IllegalArgumentError(
                    f"{name} must be an aeron channel URI", value=getattr(self, name)
                )
        try:
            idle_strategy_with_doorbell(self.idle_strategy, None)
        except TransportError as exc:
            raise IllegalArgumentError(
                "idle_strategy is not an idle strategy name", value=self.idle_strategy
            ) from exc
