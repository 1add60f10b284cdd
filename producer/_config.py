"""``ProducerConfig``: a producer's settings, typed and validated (RocketMQ's defaults)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from aeromq.client import ClientTls, Credentials, IllegalArgumentError
from aeromq.client.session import DEFAULT_BACK_TO_BACK_SPIN_US
from aeromq.common import DEFAULT_MAX_MESSAGE_SIZE, check_group
from aeromq.common.record_batch import DEFAULT_COMPRESS_OVER_BYTES, CompressionType

__all__ = ["ProducerConfig", "Transport"]

Transport = str
"""``"auto"`` (IPC for a broker on this host, else UDP), ``"ipc"`` or ``"udp"``."""

_TRANSPORTS = ("auto", "ipc", "udp")


@dataclass(frozen=True, kw_only=True)
class ProducerConfig:
    """Settings of one :class:`~producer.Producer`; validated on construction.

    ==================================  ==========  ===========================================
    field                               default     meaning
    ==================================  ==========  ===========================================
    send_timeout_ms                     3 000       a send's whole budget, retries included
    request_timeout_ms                  1 000       an idempotent producer's attempt waits
                                                    this long for its answer at most, then
                                                    is abandoned (outcome unknown) and tried
                                                    again within ``send_timeout_ms``, at the
                                                    broker group's leader of the moment
    retry_times_when_send_failed        2           extra attempts of a sync send (another
                                                    queue, another broker when there is one)
    retry_times_when_send_async_failed  2           the same for async sends
    max_message_size                    4 MiB       largest body (a batch: all bodies)
    transport                           "auto"      IPC on the broker's host, else UDP
    aeron_dir                           None        the local media driver for UDP (None:
                                                    an embedded one, started on demand)
    udp_response_host                   "127.0.0.1" the address brokers answer UDP sessions on
    offer_timeout_ms                    1 000       how long a back-pressured ingress is retried
    route_refresh_interval_ms           30 000      how long a topic's route is cached
    credentials                         None        an ACL user (``Credentials``) for a
                                                    secured broker: gRPC calls and sessions
    tls                                 None        ``ClientTls``: gRPC over TLS (mutual with
                                                    a client certificate)
    async_requests_in_flight            1           async sends to no queue in particular past
                                                    this many requests of their topic in flight
                                                    (per broker of its route) wait, and go as
                                                    one request when one is answered, or,
                                                    when its answer woke a thread blocked on
                                                    a send, when that thread waits again
                                                    (``producer/_coalesce.py``); 0: each async
                                                    send is a request at once
    enable_idempotence                  True        each batch carries the producer's id and
                                                    its queue's sequence numbers, so a retry
                                                    the broker stored already is answered,
                                                    not stored twice (``producer/_sequences.py``)
    compression                         None        ``"zstd"``, ``"lz4"`` or ``"zlib"``: each
                                                    request's batch (after its sends were
                                                    merged) with its bodies as one block;
                                                    stored so, inflated by consumers
    compression_level                   None        the codec's level (None: zstd 3, zlib 6;
                                                    lz4 has one)
    compress_over_bytes                 4 096       a batch is compressed only when its bodies
                                                    are this many bytes or more in all
    back_to_back_spin_us                100         a sync send made back to back (its
                                                    thread ran, not slept, since the last
                                                    one's answer) polls this long for its
                                                    answer before it sleeps; 0: it always
                                                    sleeps
    ==================================  ==========  ===========================================

    ``enable_idempotence`` is on by default, as Kafka's producer has it since 3.0: aeromq
    retries sends by default (``retry_times_when_send_failed``, and across a broker group's
    failover), and a retry after an unknown outcome (a timeout, a leader that died before it
    answered, ``REPLICATION_TIMEOUT``) would otherwise store the message twice. Its price is
    16 bytes in each request's batch and one copy of it when it is first sent; its one change
    of behaviour is that a send that may have been stored is retried on the same queue only.

    ``compression`` is Kafka's ``compression.type`` on RocketMQ's threshold
    (``compressMsgBodyOverHowmuch``): a batch of many small JSON-like bodies shrinks several
    times on the wire and on the broker's disk, which stores it as it came; consumers, the Spark
    reader and the broker's own reads inflate it (``common/record_batch/compression.py``).

    ``request_timeout_ms`` is Kafka's ``request.timeout.ms`` within ``delivery.timeout.ms``
    (here ``send_timeout_ms``): a leader paused or cut off under a send costs the send this
    long, not its whole budget, before the send goes to the group's next leader. It applies to
    an idempotent producer's sync sends, whose retry is safe; without idempotence an attempt
    waits the send's whole remaining time, as before.

    ``back_to_back_spin_us``: a thread calling ``send()`` in a loop spends half of each round
    trip being woken for its answer on a virtual machine; polling for it instead doubles its
    rate there (``client/_back_to_back.py``, ``docs/latency.md``). It costs that thread a core
    while it sends so, and nothing to a producer that waits between its sends.
    """

    send_timeout_ms: int = 3_000
    request_timeout_ms: int = 1_000
    retry_times_when_send_failed: int = 2
    retry_times_when_send_async_failed: int = 2
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    transport: Transport = "auto"
    aeron_dir: str | None = None
    udp_response_host: str = "127.0.0.1"
    offer_timeout_ms: int = 1_000
    route_refresh_interval_ms: int = 30_000
    credentials: Credentials | None = None
    tls: ClientTls | None = None
    async_requests_in_flight: int = 1
    enable_idempotence: bool = True
    compression: str | None = None
    compression_level: int | None = None
    compress_over_bytes: int = DEFAULT_COMPRESS_OVER_BYTES
    back_to_back_spin_us: int = DEFAULT_BACK_TO_BACK_SPIN_US

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int" and (not isinstance(value, int) or isinstance(value, bool)):
                raise IllegalArgumentError(
                    "producer setting must be an int", field=f.name, value=value
                )
        for name in (
            "send_timeout_ms",
            "request_timeout_ms",
            "max_message_size",
            "offer_timeout_ms",
        ):
            if getattr(self, name) <= 0:
                raise IllegalArgumentError(
                    "producer setting must be > 0", field=name, value=getattr(self, name)
                )
        for name in (
            "retry_times_when_send_failed",
            "retry_times_when_send_async_failed",
            "async_requests_in_flight",
            "compress_over_bytes",
            "back_to_back_spin_us",
        ):
            if getattr(self, name) < 0:
                raise IllegalArgumentError(
                    "producer setting must be >= 0", field=name, value=getattr(self, name)
                )
        if not isinstance(self.enable_idempotence, bool):
            raise IllegalArgumentError(
                "producer setting must be a bool",
                field="enable_idempotence",
                value=self.enable_idempotence,
            )
        if self.compression is not None:
            CompressionType.parse(self.compression)  # names the choices
        level = self.compression_level
        if level is not None and (not isinstance(level, int) or isinstance(level, bool)):
            raise IllegalArgumentError(
                "producer setting must be an int or None", field="compression_level", value=level
            )
        if self.transport not in _TRANSPORTS:
            raise IllegalArgumentError(
                "transport must be one of auto, ipc, udp", field="transport", value=self.transport
            )


def check_producer_group(group: str) -> None:
    """RocketMQ's group rules (``aeromq.common.check_group``)."""
    check_group(group)
