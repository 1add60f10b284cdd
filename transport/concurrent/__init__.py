"""Agrona's layer: shared-memory buffers, ring buffers, broadcast, counters, agents, clocks."""

from aeromq.transport.concurrent import error_log_reader
from aeromq.transport.concurrent.action import Action
from aeromq.transport.concurrent.agent import (
    Agent,
    AgentInvoker,
    AgentRunner,
    AgentTerminationError,
    CompositeAgent,
    ErrorHandler,
)
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer, MappedFile
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.broadcast_receiver import BroadcastReceiver
from aeromq.transport.concurrent.broadcast_transmitter import BroadcastTransmitter
from aeromq.transport.concurrent.clock import (
    CachedEpochClock,
    CachedNanoClock,
    EpochClock,
    NanoClock,
    SettableClock,
    SystemEpochClock,
    SystemNanoClock,
)
from aeromq.transport.concurrent.copy_broadcast_receiver import CopyBroadcastReceiver
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.concurrent.counters_reader import CountersReader
from aeromq.transport.concurrent.distinct_error_log import DistinctErrorLog, LoggingErrorHandler
from aeromq.transport.concurrent.doorbell import DOORBELL_TYPE_ID, Doorbell
from aeromq.transport.concurrent.doorbell_idle_strategy import (
    DoorbellIdleStrategy,
    idle_strategy_with_doorbell,
)
from aeromq.transport.concurrent.dynamic_composite_agent import DynamicCompositeAgent, HostedAgent
from aeromq.transport.concurrent.file_modes import DEFAULT_FILE_MODE, directory_mode, make_dirs
from aeromq.transport.concurrent.idle_strategy import (
    BackoffIdleStrategy,
    BusySpinIdleStrategy,
    IdleStrategy,
    NoOpIdleStrategy,
    SleepingIdleStrategy,
    YieldingIdleStrategy,
    idle_strategy_from_name,
    tighten_timer_slack,
)
from aeromq.transport.concurrent.many_to_one_ring_buffer import ManyToOneRingBuffer
from aeromq.transport.concurrent.one_to_one_ring_buffer import OneToOneRingBuffer
from aeromq.transport.concurrent.position import Position, ReadablePosition
from aeromq.transport.concurrent.ring_buffer import INSUFFICIENT_CAPACITY, RingBuffer

__all__ = [
    "DEFAULT_FILE_MODE",
    "DOORBELL_TYPE_ID",
    "INSUFFICIENT_CAPACITY",
    "Action",
    "Agent",
    "AgentInvoker",
    "AgentRunner",
    "AgentTerminationError",
    "AtomicBuffer",
    "AtomicCounter",
    "BackoffIdleStrategy",
    "BroadcastReceiver",
    "BroadcastTransmitter",
    "BusySpinIdleStrategy",
    "CachedEpochClock",
    "CachedNanoClock",
    "CompositeAgent",
    "CopyBroadcastReceiver",
    "CountersManager",
    "CountersReader",
    "DistinctErrorLog",
    "Doorbell",
    "DoorbellIdleStrategy",
    "DynamicCompositeAgent",
    "EpochClock",
    "ErrorHandler",
    "HostedAgent",
    "IdleStrategy",
    "LoggingErrorHandler",
    "ManyToOneRingBuffer",
    "MappedFile",
    "NanoClock",
    "NoOpIdleStrategy",
    "OneToOneRingBuffer",
    "Position",
    "ReadablePosition",
    "RingBuffer",
    "SettableClock",
    "SleepingIdleStrategy",
    "SystemEpochClock",
    "SystemNanoClock",
    "YieldingIdleStrategy",
    "directory_mode",
    "error_log_reader",
    "idle_strategy_from_name",
    "idle_strategy_with_doorbell",
    "make_dirs",
    "tighten_timer_slack",
]
