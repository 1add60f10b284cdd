"""Flow control: unicast and max take the furthest window edge, min the slowest receiver's."""

from __future__ import annotations

import pytest

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.driver.udp.flow_control import (
    MaxMulticastFlowControl,
    MinMulticastFlowControl,
    UnicastFlowControl,
    create_flow_control,
)
from aeromq.transport.driver.udp.udp_channel import UdpChannel
from aeromq.transport.driver.udp.udp_settings import UdpSettings

WINDOW = 32 * 1024
TERM = 64 * 1024


def test_should_move_the_unicast_limit_to_the_furthest_window_edge_only() -> None:
    strategy = UnicastFlowControl(WINDOW)
    assert strategy.on_status_message(1, 1000, WINDOW, 0, 0) == 1000 + WINDOW
    assert strategy.on_status_message(1, 500, WINDOW, 1000 + WINDOW, 0) == 1000 + WINDOW
    assert strategy.on_idle(0, 1000 + WINDOW, 0, False) == 1000 + WINDOW
    assert strategy.has_required_receivers()
    assert strategy.max_retransmission_length(10**9) == 16 * WINDOW
    assert strategy.max_retransmission_length(100) == 100


def test_should_let_max_pace_by_the_fastest_receiver() -> None:
    strategy = MaxMulticastFlowControl(WINDOW)
    limit = strategy.on_status_message(1, 100, WINDOW, 0, 0)
    limit = strategy.on_status_message(2, 5000, WINDOW, limit, 0)
    assert limit == 5000 + WINDOW
    assert strategy.max_retransmission_length(10**9) == 4 * WINDOW


def test_should_let_min_pace_by_the_slowest_receiver_until_it_times_out() -> None:
    strategy = MinMulticastFlowControl(WINDOW, receiver_timeout_ns=1_000)
    limit = strategy.on_status_message(1, 100, WINDOW, 0, now_ns=0)
    limit = strategy.on_status_message(2, 5000, WINDOW, limit, now_ns=0)
    assert limit == 100 + WINDOW
    assert strategy.on_idle(500, limit, 0, False) == 100 + WINDOW
    limit = strategy.on_status_message(2, 6000, WINDOW, limit, now_ns=900)
    assert strategy.on_idle(1_500, limit, 0, False) == 6000 + WINDOW  # receiver 1 timed out
    assert [r.receiver_id for r in strategy.receivers] == [2]
    assert strategy.on_idle(10_000, 1234, 0, False) == 1234  # nobody left: limit unchanged


def test_should_require_the_min_group_size_before_connecting() -> None:
    strategy = MinMulticastFlowControl(WINDOW, receiver_timeout_ns=10**9, group_min_size=2)
    strategy.on_status_message(1, 0, WINDOW, 0, 0)
    assert not strategy.has_required_receivers()
    strategy.on_status_message(2, 0, WINDOW, 0, 0)
    assert strategy.has_required_receivers()


def test_should_pick_the_strategy_from_the_channel() -> None:
    settings = UdpSettings(min_flow_control_receiver_timeout_ns=77)
    unicast = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:1|fc=min")
    assert type(create_flow_control(unicast, settings, TERM)) is UnicastFlowControl
    group = "aeron:udp?endpoint=224.0.1.1:40456"
    assert isinstance(
        create_flow_control(UdpChannel.parse(group), settings, TERM), MaxMulticastFlowControl
    )
    assert isinstance(
        create_flow_control(UdpChannel.parse(group + "|fc=max"), settings, TERM),
        MaxMulticastFlowControl,
    )
    default_min = create_flow_control(UdpChannel.parse(group + "|fc=min"), settings, TERM)
    assert isinstance(default_min, MinMulticastFlowControl)
    assert default_min.receiver_timeout_ns == 77
    tuned = create_flow_control(UdpChannel.parse(group + "|fc=min,t:2s,g:/3"), settings, TERM)
    assert isinstance(tuned, MinMulticastFlowControl)
    assert tuned.receiver_timeout_ns == 2_000_000_000 and tuned.group_min_size == 3


@pytest.mark.parametrize("fc", ["tagged", "min,x:1", "min,g:/x", "max,t:1s"])
def test_should_refuse_unknown_flow_control_options(fc: str) -> None:
    channel = UdpChannel.parse(f"aeron:udp?endpoint=224.0.1.1:40456|fc={fc}")
    with pytest.raises(ConfigurationError):
        create_flow_control(channel, UdpSettings(), TERM)
