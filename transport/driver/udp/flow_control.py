"""Sender flow control: how far a network publication may send, from its receivers' windows.

Aeron's ``aeron_flow_control.c`` / ``aeron_min_flow_control.c``. A receiver's status message
says where it has consumed to and how much more it can take (its window); the strategy turns
those into the sender limit (snd-lmt) the sender may not pass:

- :class:`UnicastFlowControl` (every unicast channel) and :class:`MaxMulticastFlowControl` (the
  multicast default, ``fc=max``): the furthest window edge any receiver reported; the limit
  never moves back. A slow multicast receiver recovers by NAK, or not at all.
- :class:`MinMulticastFlowControl` (``fc=min``, options ``t:<timeout>`` and ``g:/<min group
  size>``): the nearest window edge of the receivers heard from within the timeout (5 s by
  default), so the slowest receiver paces the sender; a receiver that falls silent is dropped
  from the group on the next idle check. With ``g:/N`` the publication counts as connected only
  once N receivers are known.

``max_retransmission_length`` bounds one NAK's resend to a multiple of the receiver window (16
for unicast and min, 4 for max), as Aeron does.
"""

from __future__ import annotations

from typing import Protocol

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.driver._values import parse_duration_ns
from aeromq.transport.driver.udp.udp_channel import UdpChannel
from aeromq.transport.driver.udp.udp_settings import UdpSettings

__all__ = [
    "FlowControl",
    "MaxMulticastFlowControl",
    "MinMulticastFlowControl",
    "UnicastFlowControl",
    "create_flow_control",
]

UNICAST_RETRANSMIT_WINDOW_MULTIPLE = 16
MAX_RETRANSMIT_WINDOW_MULTIPLE = 4
MIN_RETRANSMIT_WINDOW_MULTIPLE = 16


class FlowControl(Protocol):
    """A sender flow control strategy; only the sender thread calls it."""

    def on_status_message(
        self, receiver_id: int, position: int, receiver_window: int, snd_lmt: int, now_ns: int
    ) -> int:
        """A status message for ``position`` with ``receiver_window``; return the new limit."""
        ...

    def on_idle(self, now_ns: int, snd_lmt: int, snd_pos: int, is_end_of_stream: bool) -> int:
        """The sender had nothing to send; return the (possibly changed) limit."""
        ...

    def has_required_receivers(self) -> bool: ...

    def max_retransmission_length(self, resend_length: int) -> int: ...


class UnicastFlowControl:
    """The furthest window edge reported (see module)."""

    __slots__ = ("_max_retransmit_length",)

    retransmit_window_multiple = UNICAST_RETRANSMIT_WINDOW_MULTIPLE

    def __init__(self, receiver_window_length: int) -> None:
        self._max_retransmit_length = self.retransmit_window_multiple * receiver_window_length

    def on_status_message(
        self, receiver_id: int, position: int, receiver_window: int, snd_lmt: int, now_ns: int
    ) -> int:
        window_edge = position + receiver_window
        return window_edge if window_edge > snd_lmt else snd_lmt

    def on_idle(self, now_ns: int, snd_lmt: int, snd_pos: int, is_end_of_stream: bool) -> int:
        return snd_lmt

    def has_required_receivers(self) -> bool:
        return True

    def max_retransmission_length(self, resend_length: int) -> int:
        return min(self._max_retransmit_length, resend_length)


class MaxMulticastFlowControl(UnicastFlowControl):
    """Multicast, paced by the fastest receiver (``fc=max``, the multicast default)."""

    __slots__ = ()

    retransmit_window_multiple = MAX_RETRANSMIT_WINDOW_MULTIPLE


class _Receiver:
    __slots__ = ("last_position", "last_position_plus_window", "receiver_id", "time_of_last_sm_ns")

    def __init__(self, receiver_id: int, position: int, window: int, now_ns: int) -> None:
        self.receiver_id = receiver_id
        self.last_position = position
        self.last_position_plus_window = position + window
        self.time_of_last_sm_ns = now_ns


class MinMulticastFlowControl:
    """Multicast, paced by the slowest receiver heard from within the timeout (``fc=min``)."""

    __slots__ = ("_max_retransmit_length", "group_min_size", "receiver_timeout_ns", "receivers")

    def __init__(
        self, receiver_window_length: int, receiver_timeout_ns: int, group_min_size: int = 0
    ) -> None:
        self._max_retransmit_length = MIN_RETRANSMIT_WINDOW_MULTIPLE * receiver_window_length
        self.receiver_timeout_ns = receiver_timeout_ns
        self.group_min_size = group_min_size
        self.receivers: list[_Receiver] = []

    def on_status_message(
        self, receiver_id: int, position: int, receiver_window: int, snd_lmt: int, now_ns: int
    ) -> int:
        known = False
        min_position = 2**63 - 1
        for receiver in self.receivers:
            if receiver.receiver_id == receiver_id:
                receiver.last_position = max(receiver.last_position, position)
                receiver.last_position_plus_window = position + receiver_window
                receiver.time_of_last_sm_ns = now_ns
                known = True
            min_position = min(min_position, receiver.last_position_plus_window)
        if not known:
            self.receivers.append(_Receiver(receiver_id, position, receiver_window, now_ns))
            min_position = min(min_position, position + receiver_window)
        return max(snd_lmt, min_position)

    def on_idle(self, now_ns: int, snd_lmt: int, snd_pos: int, is_end_of_stream: bool) -> int:
        timeout_ns = self.receiver_timeout_ns
        self.receivers = [r for r in self.receivers if now_ns - r.time_of_last_sm_ns <= timeout_ns]
        if not self.receivers:
            return snd_lmt
        return min(r.last_position_plus_window for r in self.receivers)

    def has_required_receivers(self) -> bool:
        return len(self.receivers) >= self.group_min_size

    def max_retransmission_length(self, resend_length: int) -> int:
        return min(self._max_retransmit_length, resend_length)


def create_flow_control(
    channel: UdpChannel, settings: UdpSettings, term_length: int
) -> FlowControl:
    """The strategy a publication on ``channel`` uses (see module); bad ``fc`` options raise."""
    window = settings.receiver_window_length(term_length)
    options = channel.flow_control
    if not channel.is_multicast:
        return UnicastFlowControl(window)
    if options is None:
        return MaxMulticastFlowControl(window)
    name, *rest = [part.strip() for part in options.split(",")]
    if name == "max" and not rest:
        return MaxMulticastFlowControl(window)
    if name != "min":
        raise ConfigurationError(
            "unsupported flow control strategy (max or min)", uri=str(channel), fc=options
        )
    timeout_ns = settings.min_flow_control_receiver_timeout_ns
    group_min_size = 0
    for option in rest:
        if option.startswith("t:"):
            timeout_ns = parse_duration_ns("fc", option[2:])
        elif option.startswith("g:") and "/" in option:
            size_text = option.split("/", 1)[1]
            if not size_text.isdigit():
                raise ConfigurationError("bad group size in fc", uri=str(channel), fc=options)
            group_min_size = int(size_text)
        else:
            raise ConfigurationError("unknown fc option", uri=str(channel), fc=options)
    return MinMulticastFlowControl(window, timeout_ns, group_min_size)
