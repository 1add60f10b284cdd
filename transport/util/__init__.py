"""General utilities below every layer (Agrona's ``SystemUtil`` role): no transport, broker or
client knowledge, standard library only.

- :mod:`~transport.util.units`: durations and sizes written as text, parsed and formatted
  (``5s``, ``1GiB``); used by the broker's and the name server's configuration and the command
  line;
- :mod:`~transport.util.log_format`: :class:`JsonLogFormatter`, one JSON object per log record
  (``--log-format json`` of every command, or a library user's own handler);
- :mod:`~transport.util.process_cpu`: :func:`process_cpu_s`, the CPU time of another process
  (the quick start's and the benchmarks' CPU per message);
- :mod:`~transport.util.thread_name`: :func:`name_os_thread`, a thread's role as the kernel's
  name of it (``top -H``, ``perf``), as agent runners start; :func:`name_os_threads`, the
  same for every thread of the process that has none yet (a broker's services).
"""

from aeromq.transport.util.log_format import TEXT_LOG_FORMAT, JsonLogFormatter
from aeromq.transport.util.process_cpu import process_cpu_s
from aeromq.transport.util.thread_name import name_os_thread, name_os_threads
from aeromq.transport.util.units import format_duration_ms, format_size, parse_duration_ms

__all__ = [
    "TEXT_LOG_FORMAT",
    "JsonLogFormatter",
    "format_duration_ms",
    "format_size",
    "name_os_thread",
    "name_os_threads",
    "parse_duration_ms",
    "process_cpu_s",
]
