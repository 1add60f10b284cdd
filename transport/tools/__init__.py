"""Tools that read a media driver's files: ``stat`` (AeronStat's job) and its parts.

``python -m aeromq.transport.tools.stat`` (``aeromq stat``) prints a driver's counters and error log
from its ``cnc.dat``. The pieces are importable for other tools and tests: what a counter's key
says (:mod:`~transport.tools.counter_keys`), a snapshot of the counters
(:mod:`~transport.tools.counter_snapshot`), filters (:mod:`~transport.tools.counter_filter`) and
the text and JSON formats (:mod:`~transport.tools.stat_format`). This package does not import
``stat`` itself, so running it with ``-m`` loads it once.
"""

from aeromq.transport.tools.counter_filter import CounterFilter, parse_id_list
from aeromq.transport.tools.counter_keys import (
    StreamKey,
    counter_channel,
    counter_identity,
    read_stream_key,
    stream_key,
)
from aeromq.transport.tools.counter_snapshot import CounterSnapshot, read_counters

__all__ = [
    "CounterFilter",
    "CounterSnapshot",
    "StreamKey",
    "counter_channel",
    "counter_identity",
    "parse_id_list",
    "read_counters",
    "read_stream_key",
    "stream_key",
]
