"""The driver's system counters: Aeron's 46, allocated first and in order so ids match Aeron.

``aeron_system_counters.c`` / ``SystemCounterDescriptor``: each counter has type id 0
(``SYSTEM_COUNTER_TYPE_ID``), a 4-byte key holding its id, registration id = its id and owner id
-1 (``NULL_VALUE``). Tools and clients find them by id (``Errors`` is always counter 15). The
conductor appends Aeron's runtime suffixes to a few labels (the threading mode, the cycle time
threshold). Two labels name the build: this driver writes the Aeron version whose protocol it
speaks and ``commit=aeromq-<version>``.

Ids 44 and 45 (Aeron 1.51+) are allocated too, so a 1.48-1.53 tool sees the same table; the
label of 45 is taken from a third-party port of 1.53 and may differ in wording.
"""

from __future__ import annotations

from enum import IntEnum

from aeromq.transport._errors import TransportStateError
from aeromq.transport.cnc import semantic_version_compose
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver._values import format_duration_ns

__all__ = [
    "AERON_VERSION_TEXT",
    "CONTROL_PROTOCOL_VERSION",
    "NULL_VALUE",
    "SYSTEM_COUNTER_TYPE_ID",
    "SystemCounter",
    "SystemCounters",
    "system_counter_label",
]

SYSTEM_COUNTER_TYPE_ID = 0
NULL_VALUE = -1
AERON_VERSION_TEXT = "1.53.2"
"""The Aeron release whose client-driver protocol and file formats this driver implements."""
AERON_VERSION = semantic_version_compose(1, 53, 2)
CONTROL_PROTOCOL_VERSION = semantic_version_compose(1, 0, 0)
_BUILD = "aeromq-0.1.0"
_NAME_RESOLVER_THRESHOLD_NS = 5_000_000_000
"""Aeron's default name resolver threshold (``aeron.name.resolver.threshold``)."""


class SystemCounter(IntEnum):
    """Aeron's system counter ids (``AeronCounters.SYSTEM_COUNTER_ID_*``)."""

    BYTES_SENT = 0
    BYTES_RECEIVED = 1
    RECEIVER_PROXY_FAILS = 2
    SENDER_PROXY_FAILS = 3
    CONDUCTOR_PROXY_FAILS = 4
    NAK_MESSAGES_SENT = 5
    NAK_MESSAGES_RECEIVED = 6
    STATUS_MESSAGES_SENT = 7
    STATUS_MESSAGES_RECEIVED = 8
    HEARTBEATS_SENT = 9
    HEARTBEATS_RECEIVED = 10
    RETRANSMITS_SENT = 11
    FLOW_CONTROL_UNDER_RUNS = 12
    FLOW_CONTROL_OVER_RUNS = 13
    INVALID_PACKETS = 14
    ERRORS = 15
    SHORT_SENDS = 16
    FREE_FAILS = 17
    SENDER_FLOW_CONTROL_LIMITS = 18
    UNBLOCKED_PUBLICATIONS = 19
    UNBLOCKED_COMMANDS = 20
    POSSIBLE_TTL_ASYMMETRY = 21
    CONTROLLABLE_IDLE_STRATEGY = 22
    LOSS_GAP_FILLS = 23
    CLIENT_TIMEOUTS = 24
    RESOLUTION_CHANGES = 25
    CONDUCTOR_MAX_CYCLE_TIME = 26
    CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED = 27
    SENDER_MAX_CYCLE_TIME = 28
    SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED = 29
    RECEIVER_MAX_CYCLE_TIME = 30
    RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED = 31
    NAME_RESOLVER_MAX_TIME = 32
    NAME_RESOLVER_TIME_THRESHOLD_EXCEEDED = 33
    AERON_VERSION = 34
    BYTES_CURRENTLY_MAPPED = 35
    RETRANSMITTED_BYTES = 36
    RETRANSMIT_OVERFLOW = 37
    ERROR_FRAMES_RECEIVED = 38
    ERROR_FRAMES_SENT = 39
    PUBLICATIONS_REVOKED = 40
    PUBLICATION_IMAGES_REVOKED = 41
    IMAGES_REJECTED = 42
    CONTROL_PROTOCOL_VERSION = 43
    STATUS_MESSAGES_REJECTED = 44
    ASYNC_EXECUTOR_PROXY_FAILS = 45


_LABELS = (
    "Bytes sent",
    "Bytes received",
    "Failed offers to ReceiverProxy",
    "Failed offers to SenderProxy",
    "Failed offers to DriverConductorProxy",
    "NAKs sent",
    "NAKs received",
    "Status Messages sent",
    "Status Messages received",
    "Heartbeats sent",
    "Heartbeats received",
    "Retransmits sent",
    "Flow control under runs",
    "Flow control over runs",
    "Invalid packets",
    f"Errors: version={AERON_VERSION_TEXT} commit={_BUILD}",
    "Short sends",
    "Failed attempts to free log buffers",
    "Sender flow control limits, i.e. back-pressure events",
    "Unblocked Publications",
    "Unblocked Control Commands",
    "Possible TTL Asymmetry",
    "ControllableIdleStrategy status",
    "Loss gap fills",
    "Client liveness timeouts",
    "Resolution changes",
    "Conductor max cycle time doing its work in ns",
    "Conductor work cycle exceeded threshold count",
    "Sender max cycle time doing its work in ns",
    "Sender work cycle exceeded threshold count",
    "Receiver max cycle time doing its work in ns",
    "Receiver work cycle exceeded threshold count",
    "NameResolver max time in ns",
    "NameResolver exceeded threshold count",
    f"Aeron software: version={AERON_VERSION_TEXT} commit={_BUILD}",
    "Bytes currently mapped",
    "Retransmitted bytes",
    "Retransmit Pool Overflow count",
    "Error Frames received",
    "Error Frames sent",
    "Publications Revoked",
    "Publication Images Revoked",
    "Images rejected",
    "Control protocol version",
    "Status Messages rejected",
    "Failed offers to NativeResourceAgentProxy",
)


def system_counter_label(counter: SystemCounter) -> str:
    """The base label of a system counter (before the runtime suffixes)."""
    return _LABELS[counter]


class SystemCounters:
    """Allocates every system counter in ``manager`` (which must be empty) and holds them.

    ``threading_mode`` and ``cycle_threshold_ns`` go into the labels as Aeron appends them.
    Raises :class:`~transport.TransportStateError` if the manager hands out any other id than the
    descriptor's (something was allocated before).
    """

    __slots__ = ("_counters", "_manager")

    def __init__(
        self, manager: CountersManager, threading_mode: str, cycle_threshold_ns: int
    ) -> None:
        self._manager = manager
        counters: list[AtomicCounter] = []
        for counter in SystemCounter:
            counter_id = manager.allocate(
                _LABELS[counter],
                SYSTEM_COUNTER_TYPE_ID,
                int(counter).to_bytes(4, "little"),
                registration_id=int(counter),
                owner_id=NULL_VALUE,
            )
            if counter_id != counter:
                raise TransportStateError(
                    "system counter allocated out of order",
                    counter=counter.name,
                    expected_id=int(counter),
                    counter_id=counter_id,
                )
            counters.append(AtomicCounter(manager.values_buffer, counter_id, manager))
        self._counters = tuple(counters)
        threshold = format_duration_ns(cycle_threshold_ns)
        # As Aeron 1.53's C driver appends them (compared in tests/interop/); no name resolver
        # runs here, so its name is empty and its threshold Aeron's default.
        suffixes = {
            SystemCounter.RESOLUTION_CHANGES: ": driverName=",
            SystemCounter.CONDUCTOR_MAX_CYCLE_TIME: f": {threading_mode}",
            SystemCounter.SENDER_MAX_CYCLE_TIME: f": {threading_mode}",
            SystemCounter.RECEIVER_MAX_CYCLE_TIME: f": {threading_mode}",
            SystemCounter.CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED: (
                f": threshold={threshold} {threading_mode}"
            ),
            SystemCounter.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED: (
                f": threshold={threshold} {threading_mode}"
            ),
            SystemCounter.RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED: (
                f": threshold={threshold} {threading_mode}"
            ),
            SystemCounter.NAME_RESOLVER_TIME_THRESHOLD_EXCEEDED: (
                f": threshold={format_duration_ns(_NAME_RESOLVER_THRESHOLD_NS)}"
            ),
        }
        for counter, suffix in suffixes.items():
            manager.append_to_label(counter, suffix)
        self.get(SystemCounter.AERON_VERSION).set_ordered(AERON_VERSION)
        self.get(SystemCounter.CONTROL_PROTOCOL_VERSION).set_ordered(CONTROL_PROTOCOL_VERSION)

    def get(self, counter: SystemCounter) -> AtomicCounter:
        return self._counters[counter]

    def close(self) -> None:
        """Free every system counter (the driver is shutting down)."""
        for counter in self._counters:
            counter.close()
