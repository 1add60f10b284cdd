"""The text and JSON that ``stat`` prints: pure functions, no I/O.

Counters, as AeronStat prints them (``%3d: %20s - %s``, the value with thousands separators)::

    06:21:05 - Aeron Stat (CnC v0.2.0), pid 4242, heartbeat age 12ms
    ======================================================================
     15:                    1 - Errors: version=1.53.2 commit=aeromq-0.1.0
     47:               65,536 - pub-lmt: 3 1149896852 1001 aeron:ipc
    --

The heartbeat age is ``now - the driver's heartbeat``; a file without one (the driver closed
it, or has not started) says ``no driver heartbeat`` instead. The error log, as Aeron's
``ErrorStat`` prints it::

    ***
    3 observations from 2026-11-22 06:21:05.123+0000 to 2026-11-22 06:21:09.456+0000 for:
     <the error's text>

    1 distinct errors observed.

``--json`` prints one object per line instead, without the header: a counter's ``counter_id``,
``type_id``, ``value``, ``label``, ``registration_id``, ``owner_id``, ``reference_id``,
``session_id``, ``stream_id`` and ``channel`` (null where the key has none) and the
``timestamp_ms`` of the snapshot; an error's ``observation_count``, ``first_observation_ms``,
``last_observation_ms`` and ``text``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from datetime import datetime, tzinfo

from aeromq.transport.cnc import semantic_version_to_string
from aeromq.transport.tools.counter_keys import counter_channel, stream_key
from aeromq.transport.tools.counter_snapshot import CounterSnapshot

__all__ = [
    "CLEAR_SCREEN",
    "RULE",
    "counter_json",
    "error_json",
    "format_counter",
    "format_counters",
    "format_error",
    "format_errors",
    "format_header",
    "format_timestamp_ms",
]

CLEAR_SCREEN = "\x1b[2J\x1b[H"
"""ANSI: erase the screen, cursor home (AeronStat's ANSI_CLS + ANSI_HOME)."""
RULE = "=" * 70


def format_header(cnc_version: int, pid: int, heartbeat_ms: int, now_ms: int) -> str:
    """``HH:MM:SS - Aeron Stat (CnC v<version>), pid <pid>, heartbeat age <age>ms`` (local time).

    The age is never negative: ``now_ms`` is read before the driver's heartbeat, which the live
    driver may stamp in between (a heartbeat a tick ahead of ``now_ms`` is age 0).
    """
    clock = time.strftime("%H:%M:%S", time.localtime(now_ms // 1000))
    heartbeat = (
        f"heartbeat age {max(0, now_ms - heartbeat_ms)}ms"
        if heartbeat_ms > 0
        else "no driver heartbeat"
    )
    return (
        f"{clock} - Aeron Stat (CnC v{semantic_version_to_string(cnc_version)}), "
        f"pid {pid}, {heartbeat}"
    )


def format_counter(counter: CounterSnapshot) -> str:
    """``%3d: %20s - %s``: id, value with thousands separators, label."""
    return f"{counter.counter_id:3d}: {counter.value:>20,} - {counter.label}"


def format_counters(header: str, counters: Iterable[CounterSnapshot]) -> str:
    """A whole snapshot: the header, the rule, a line per counter, ``--``; newline-terminated."""
    lines = [header, RULE]
    lines.extend(format_counter(counter) for counter in counters)
    lines.append("--")
    return "\n".join(lines) + "\n"


def counter_json(counter: CounterSnapshot, timestamp_ms: int) -> str:
    """One counter as a JSON object on one line (fields in the module docstring)."""
    stream = stream_key(counter.type_id, counter.key)
    return json.dumps(
        {
            "counter_id": counter.counter_id,
            "type_id": counter.type_id,
            "value": counter.value,
            "label": counter.label,
            "registration_id": counter.registration_id,
            "owner_id": counter.owner_id,
            "reference_id": counter.reference_id,
            "session_id": stream.session_id if stream is not None else None,
            "stream_id": stream.stream_id if stream is not None else None,
            "channel": counter_channel(counter.type_id, counter.key),
            "timestamp_ms": timestamp_ms,
        }
    )


def format_timestamp_ms(timestamp_ms: int, tz: tzinfo | None = None) -> str:
    """``yyyy-MM-dd HH:mm:ss.SSSZ`` as ErrorStat writes it, in ``tz`` (default: local time)."""
    seconds, millis = divmod(timestamp_ms, 1000)
    if tz is None:
        moment = datetime.fromtimestamp(seconds).astimezone()
    else:
        moment = datetime.fromtimestamp(seconds, tz)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{millis:03d}{moment:%z}"


def format_error(
    observation_count: int,
    first_observation_ms: int,
    last_observation_ms: int,
    text: str,
    tz: tzinfo | None = None,
) -> str:
    """One distinct error as ErrorStat prints it (three lines, newline-terminated)."""
    return (
        f"***\n{observation_count} observations from "
        f"{format_timestamp_ms(first_observation_ms, tz)} to "
        f"{format_timestamp_ms(last_observation_ms, tz)} for:\n {text}\n"
    )


def format_errors(entries: Iterable[tuple[int, int, int, str]], tz: tzinfo | None = None) -> str:
    """Every entry, then ``<n> distinct errors observed.``"""
    parts = [format_error(*entry, tz=tz) for entry in entries]
    parts.append(f"\n{len(parts)} distinct errors observed.\n")
    return "".join(parts)


def error_json(
    observation_count: int, first_observation_ms: int, last_observation_ms: int, text: str
) -> str:
    """One distinct error as a JSON object on one line."""
    return json.dumps(
        {
            "observation_count": observation_count,
            "first_observation_ms": first_observation_ms,
            "last_observation_ms": last_observation_ms,
            "text": text,
        }
    )
