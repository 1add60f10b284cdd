"""Agrona's layer: shared-memory buffers, ring buffers, broadcast, counters, agents, clocks."""

from transport.concurrent import error_log_reader
from transport.concurrent.action import Action
from transport.concurrent.agent import (
    Agent,
    AgentInvoker,
    AgentRunner,
    AgentTerminationError,
    CompositeAgent,
    ErrorHandler,
)
from transport.concurrent.atomic_buffer import AtomicBuffer, MappedFile
from transport.concurrent.atomic_counter import AtomicCounter
from transport.concurrent.broadcast_receiver import BroadcastReceiver
from transport.concurrent.broadcast_transmitter import BroadcastTransmitter
from transport.concurrent.clock import (
    CachedEpochClock,
    CachedNanoClock,
    EpochClock,
    NanoClock,
    SettableClock,
    SystemEpochClock,
    SystemNanoClock,
)
from transport.concurrent.copy_broadcast_receiver import CopyBroadcastReceiver
from transport.concurrent.counters_manager import CountersManager
from transport.concurrent.counters_reader import CountersReader
from transport.concurrent.distinct_error_log import DistinctErrorLog, LoggingErrorHandler
from transport.concurrent.idle_strategy import (
    BackoffIdleStrategy,
    BusySpinIdleStrategy,
    IdleStrategy,
    NoOpIdleStrategy,
    SleepingIdleStrategy,
    YieldingIdleStrategy,
    idle_strategy_from_name,
)
from transport.concurrent.position import Position, ReadablePosition
from transport.concurrent.ring_buffer import (
    INSUFFICIENT_CAPACITY,
    ManyToOneRingBuffer,
    OneToOneRingBuffer,
)

__all__ = [
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
    "EpochClock",
    "ErrorHandler",
    "IdleStrategy",
    "LoggingErrorHandler",
    "ManyToOneRingBuffer",
    "MappedFile",
    "NanoClock",
    "NoOpIdleStrategy",
    "OneToOneRingBuffer",
    "Position",
    "ReadablePosition",
    "SettableClock",
    "SleepingIdleStrategy",
    "SystemEpochClock",
    "SystemNanoClock",
    "YieldingIdleStrategy",
    "error_log_reader",
    "idle_strategy_from_name",
]
