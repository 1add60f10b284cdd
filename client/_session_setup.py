"""Opening a client session: its channels, its doorbell, the CONNECT it sends and what the
broker's answer grants it.

``ClientSession.connect`` (``client/session.py``) runs the steps in order:

1. :meth:`SessionChannels.open`: the response subscription and the ingress publication (UDP
   channels get a term length, :func:`with_term_length`; a UDP response channel on port 0 a
   free port, :func:`resolve_response_channel`; response stream id 0 one unique among the
   driver's clients, :func:`unique_stream_id`), the session's own doorbell (a counter of the
   driver: over IPC the broker's, which rings it after each answer; over UDP the client's own
   when it runs in this process, whose receiver rings it as answers land, named by the response
   subscription's ``doorbell`` parameter: ``locally_rung``; a driver of another process, which
   may be of another kind, is not asked), then the wait until a broker's image of the ingress is
   connected;
2. the readers start on the subscription; :func:`connect_request` is sent as the first request
   (with the doorbell's counter id, credentials, the local reads wish);
3. :meth:`SessionGrant.of` reads the answer: the broker's name and limits, the session timeout
   and the keepalive interval derived from it, whether the broker rings the session's doorbell
   after each answer, and the broker agent's doorbell to ring after each request.

Failures are :class:`~client.BrokerUnavailableError` (no channels, no broker on the ingress, no
answer to the CONNECT in time); the session then releases what was opened
(:meth:`SessionChannels.close`).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

from aeromq.client._session_config import SessionConfig
from aeromq.client._session_state import SESSION_LOG
from aeromq.common import SESSION_PROTOCOL_VERSION, BrokerUnavailableError, with_ipc_mtu
from aeromq.proto import session_pb2
from aeromq.transport import TransportError
from aeromq.transport.channel_uri import ChannelUri
from aeromq.transport.client import Aeron, Counter, ExclusivePublication, Subscription
from aeromq.transport.concurrent import CountersReader
from aeromq.transport.concurrent.doorbell import DOORBELL_TYPE_ID, HAS_FUTEX, Doorbell
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy
from aeromq.transport.driver import MediaDriver, with_doorbell

__all__ = [
    "SessionChannels",
    "SessionGrant",
    "connect_request",
    "is_ipc",
    "resolve_response_channel",
    "unique_stream_id",
    "with_term_length",
]


class SessionChannels:
    """A session's transport resources: the response ``subscription``, the ingress
    ``publication`` and, where futexes work, its own ``doorbell`` (a counter,
    ``doorbell_counter``; over UDP its driver rings it: ``locally_rung``); with the response
    channel and stream id it names in the CONNECT.

    Caller: ``ClientSession``. Affects: the media driver (adds the publication, subscription
    and counter; :meth:`close` removes them)."""

    __slots__ = (
        "_aeron",
        "doorbell",
        "doorbell_counter",
        "ipc",
        "locally_rung",
        "publication",
        "response_channel",
        "response_stream_id",
        "subscription",
    )

    def __init__(self, aeron: Aeron) -> None:
        self._aeron = aeron
        self.publication: ExclusivePublication | None = None
        self.subscription: Subscription | None = None
        self.doorbell_counter: Counter | None = None
        self.doorbell: Doorbell | None = None
        self.response_channel = ""
        self.response_stream_id = 0
        self.ipc = False
        self.locally_rung = False
        """Over UDP: the session's media driver rings :attr:`doorbell` when answers land."""

    def open(self, config: SessionConfig, deadline_ns: int) -> ExclusivePublication:
        """Open the doorbell and the channels, then wait until a broker is connected
        to the ingress, until ``deadline_ns`` (monotonic); returns the publication. Raises
        :class:`~client.BrokerUnavailableError`; what was opened stays, for :meth:`close`."""
        aeron = self._aeron
        term_length = config.udp_term_length
        channel = with_term_length(resolve_response_channel(config.response_channel), term_length)
        stream_id = config.response_stream_id or unique_stream_id(aeron)
        self.response_channel, self.response_stream_id = channel, stream_id
        self.ipc = is_ipc(config.ingress_channel)
        # over UDP, a driver of this process (so of this package) rings the doorbell its
        # subscription names; another kind of driver would ignore the name, and nobody rang
        rung_here = channel.startswith("aeron:udp") and (
            MediaDriver.in_process(aeron.context.aeron_dir) is not None
        )
        if self.ipc or rung_here:
            self._open_doorbell(stream_id)
        if not self.ipc and rung_here and self.doorbell is not None:
            self.locally_rung = True  # the driver's receiver rings it as answers land
            channel = with_doorbell(channel, self.doorbell.counter_id)
        try:
            self.subscription = aeron.add_subscription(channel, stream_id)
            self.publication = aeron.add_exclusive_publication(
                with_ipc_mtu(with_term_length(config.ingress_channel, term_length)),
                config.ingress_stream_id,
            )
        except TransportError as exc:
            raise BrokerUnavailableError(
                "cannot open the session's channels",
                ingress_channel=config.ingress_channel,
                response_channel=channel,
                cause=str(exc),
            ) from exc
        publication = self.publication
        idle = BackoffIdleStrategy(max_park_period_ns=1_000_000)
        while not publication.is_connected:
            if time.monotonic_ns() > deadline_ns:
                raise BrokerUnavailableError(
                    "no broker on the ingress",
                    ingress_channel=config.ingress_channel,
                    ingress_stream_id=config.ingress_stream_id,
                    connect_timeout_ms=config.connect_timeout_ms,
                )
            idle.idle(0)
        return publication

    def _open_doorbell(self, stream_id: int) -> None:
        """Allocate this session's doorbell, a counter of the (shared) driver."""
        if not HAS_FUTEX:
            return
        try:
            counter = self.doorbell_counter = self._aeron.add_counter(
                DOORBELL_TYPE_ID, label=f"doorbell: session {stream_id}"
            )
            self.doorbell = Doorbell.for_counter(self._aeron.counters_reader, counter.id)
        except TransportError as exc:
            SESSION_LOG.debug("no doorbell for the session (its poller polls): %s", exc)

    def close(self) -> None:
        """Close the publication, the subscription and the doorbell's counter (those opened)."""
        for resource in (self.publication, self.subscription, self.doorbell_counter):
            if resource is not None:
                try:
                    resource.close()
                except TransportError as exc:  # the client is already closing
                    SESSION_LOG.debug("releasing a session channel: %s", exc)


def connect_request(config: SessionConfig, channels: SessionChannels) -> session_pb2.ConnectRequest:
    """The session's CONNECT: where to answer, who asks (``client_id``, else host@pid), its
    credentials, its doorbell and, over IPC, whether it would read locally."""
    connect = session_pb2.ConnectRequest(
        response_channel=channels.response_channel,
        response_stream_id=channels.response_stream_id,
        client_id=config.client_id or f"{socket.gethostname()}@{os.getpid()}",
        version=SESSION_PROTOCOL_VERSION,
    )
    if config.credentials is not None:
        connect.user, connect.secret = config.credentials.user, config.credentials.secret
    if channels.doorbell is not None and channels.ipc:
        connect.doorbell_counter_id = channels.doorbell.counter_id
    if channels.ipc and config.local_reads:
        connect.local_reads = True
    return connect


@dataclass(frozen=True, kw_only=True)
class SessionGrant:
    """What the broker's CONNECT answer grants a session: its limits and timings, its local
    reads (``local_read_dir`` empty: none), and the doorbells (``rung``: the broker rings the
    session's after each answer; ``broker_doorbell``: the broker agent's, to ring after each
    request)."""

    broker_name: str
    session_timeout_ms: int
    keepalive_interval_ms: int
    max_message_size: int
    local_read_dir: str
    local_read_file_bytes: int
    local_read_dir_id: tuple[int, int]
    rung: bool
    broker_doorbell: Doorbell | None

    @classmethod
    def of(
        cls,
        answer: session_pb2.ConnectResponse,
        config: SessionConfig,
        doorbell: Doorbell | None,
        counters: CountersReader,
    ) -> SessionGrant:
        """The grant of ``answer`` to a session of ``config`` with ``doorbell`` (its own, if it
        has one), whose driver's counters are ``counters``. The keepalive interval is the
        config's, else a third of the session timeout."""
        broker_doorbell = None
        counter_id = answer.doorbell_counter_id
        if (
            doorbell is not None
            and answer.HasField("doorbell_counter_id")
            and Doorbell.is_doorbell_counter(counters, counter_id)
        ):
            broker_doorbell = Doorbell.for_counter(counters, counter_id)
        return cls(
            broker_name=answer.broker_name,
            session_timeout_ms=answer.session_timeout_ms,
            keepalive_interval_ms=(
                config.keepalive_interval_ms or max(1, answer.session_timeout_ms // 3)
            ),
            max_message_size=answer.max_message_size,
            local_read_dir=answer.local_read_dir,
            local_read_file_bytes=answer.local_read_file_bytes,
            local_read_dir_id=(answer.local_read_dir_device, answer.local_read_dir_inode),
            rung=doorbell is not None and answer.rings_client_doorbell,
            broker_doorbell=broker_doorbell,
        )


# -- the channel rules ----------------------------------------------------------------------


def is_ipc(channel: str) -> bool:
    """Whether ``channel`` is an IPC channel (False for one that does not parse)."""
    try:
        return ChannelUri.parse(channel).is_ipc
    except TransportError:
        return False


def unique_stream_id(aeron: Aeron) -> int:
    """A response stream id no other client of the driver picks (from its correlation ids)."""
    return 0x4000_0000 | (aeron.next_correlation_id() & 0x3FFF_FFFF)


def with_term_length(channel: str, term_length: int) -> str:
    """A UDP channel with ``term-length`` set (unless it has one, or ``term_length`` is 0)."""
    if not term_length or not channel.startswith("aeron:udp") or "term-length=" in channel:
        return channel
    return f"{channel}{'|' if '?' in channel else '?'}term-length={term_length}"


def resolve_response_channel(channel: str) -> str:
    """A UDP response channel with port 0 gets a free local port (bound and let go)."""
    marker = "endpoint="
    if not channel.startswith("aeron:udp") or marker not in channel:
        return channel
    start = channel.index(marker) + len(marker)
    end = channel.find("|", start)
    endpoint = channel[start:] if end < 0 else channel[start:end]
    host, _, port = endpoint.rpartition(":")
    if port != "0":
        return channel
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((host, 0))
        free_port = probe.getsockname()[1]
    resolved = f"{host}:{free_port}"
    return channel[:start] + resolved + ("" if end < 0 else channel[end:])
