"""AeronStat's pieces: reading a media driver's counters from its ``cnc.dat``, as a library.

What a counter's key says (:mod:`~transport.tools.counter_keys`), a snapshot of the counters
(:mod:`~transport.tools.counter_snapshot`), filters (:mod:`~transport.tools.counter_filter`) and
the text and JSON formats (:mod:`~transport.tools.stat_format`). Users: the ``aeromq stat``
command and the broker's metrics and web console.
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
