"""The media driver's counters (cnc.dat) as Prometheus metric families, read at scrape time.

Caller: :class:`~broker.observability.BrokerCollector`, on the scraping HTTP thread, over the
broker's own Aeron client's counters reader (the driver's cnc.dat, mapped once). Nothing is
copied or counted on the transport's hot path: the driver keeps these counters anyway.

- a chosen set of system counters, each one metric (``aeromq_transport_naks_sent_total``, ...);
- every publication's ``pub-pos`` and every subscription's ``sub-pos`` (bytes into the stream),
  labelled by channel, stream id, session id and registration id.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from aeromq.transport.concurrent.counters_reader import CountersReader
from aeromq.transport.driver.stream_counters import (
    PUBLISHER_POSITION_TYPE_ID,
    STREAM_KEY_CHANNEL_LENGTH_OFFSET,
    STREAM_KEY_CHANNEL_OFFSET,
    STREAM_KEY_SESSION_ID_OFFSET,
    STREAM_KEY_STREAM_ID_OFFSET,
    SUBSCRIBER_POSITION_TYPE_ID,
)
from aeromq.transport.driver.system_counters import SYSTEM_COUNTER_TYPE_ID, SystemCounter
from aeromq.transport.tools.counter_snapshot import CounterSnapshot, read_counters

__all__ = ["SYSTEM_COUNTER_METRICS", "transport_metrics"]

SYSTEM_COUNTER_METRICS: Final[dict[SystemCounter, tuple[str, str]]] = {
    SystemCounter.BYTES_SENT: ("bytes_sent", "bytes the driver sent on UDP channels"),
    SystemCounter.BYTES_RECEIVED: ("bytes_received", "bytes the driver received on UDP"),
    SystemCounter.NAK_MESSAGES_SENT: ("naks_sent", "NAKs sent: gaps the receiver asked for"),
    SystemCounter.NAK_MESSAGES_RECEIVED: ("naks_received", "NAKs received from receivers"),
    SystemCounter.RETRANSMITS_SENT: ("retransmits_sent", "retransmissions sent for NAKs"),
    SystemCounter.SENDER_FLOW_CONTROL_LIMITS: (
        "back_pressure_events",
        "times a sender was held by flow control (back pressure)",
    ),
    SystemCounter.ERRORS: ("errors", "errors the driver logged in its error log"),
    SystemCounter.SHORT_SENDS: ("short_sends", "UDP sends that wrote fewer bytes than asked"),
    SystemCounter.INVALID_PACKETS: ("invalid_packets", "malformed packets received"),
    SystemCounter.LOSS_GAP_FILLS: ("loss_gap_fills", "gaps filled after loss was declared"),
    SystemCounter.CLIENT_TIMEOUTS: ("client_timeouts", "clients timed out by the driver"),
    SystemCounter.HEARTBEATS_SENT: ("heartbeats_sent", "data heartbeats sent"),
    SystemCounter.STATUS_MESSAGES_SENT: ("status_messages_sent", "status messages sent"),
    SystemCounter.IMAGES_REJECTED: (
        "images_rejected",
        "SETUPs that got no image: a term over the cap, or a source address holding its most",
    ),
}
"""System counter -> (metric name after ``aeromq_transport_``, without ``_total``; help)."""

_STREAM_LABELS: Final = ("channel", "stream_id", "session_id", "registration_id")


def _stream_labels(counter: CounterSnapshot) -> list[str]:
    key = counter.key
    session_id = int.from_bytes(
        key[STREAM_KEY_SESSION_ID_OFFSET:STREAM_KEY_STREAM_ID_OFFSET], "little", signed=True
    )
    stream_id = int.from_bytes(
        key[STREAM_KEY_STREAM_ID_OFFSET:STREAM_KEY_CHANNEL_LENGTH_OFFSET], "little", signed=True
    )
    length = int.from_bytes(
        key[STREAM_KEY_CHANNEL_LENGTH_OFFSET:STREAM_KEY_CHANNEL_OFFSET], "little"
    )
    channel = key[STREAM_KEY_CHANNEL_OFFSET : STREAM_KEY_CHANNEL_OFFSET + length]
    return [
        channel.decode("ascii", "replace"),
        str(stream_id),
        str(session_id),
        str(counter.registration_id),
    ]


def transport_metrics(reader: CountersReader) -> Iterator[Metric]:
    """The metric families of the counters ``reader`` shows now (see module)."""
    counters = read_counters(reader)
    system = {c.counter_id: c.value for c in counters if c.type_id == SYSTEM_COUNTER_TYPE_ID}
    for counter, (name, text) in SYSTEM_COUNTER_METRICS.items():
        if counter.value in system:
            yield CounterMetricFamily(f"aeromq_transport_{name}", text, value=system[counter.value])
    publishers = GaugeMetricFamily(
        "aeromq_transport_publisher_position_bytes",
        "pub-pos: how far a publication has written into its stream",
        labels=_STREAM_LABELS,
    )
    subscribers = GaugeMetricFamily(
        "aeromq_transport_subscriber_position_bytes",
        "sub-pos: how far a subscription has read its stream",
        labels=_STREAM_LABELS,
    )
    for snapshot in counters:
        if snapshot.type_id == PUBLISHER_POSITION_TYPE_ID:
            publishers.add_metric(_stream_labels(snapshot), snapshot.value)
        elif snapshot.type_id == SUBSCRIBER_POSITION_TYPE_ID:
            subscribers.add_metric(_stream_labels(snapshot), snapshot.value)
    yield publishers
    yield subscribers
