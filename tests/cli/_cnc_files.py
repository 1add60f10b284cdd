"""A cnc.dat as a driver leaves it, built with ``aeromq.transport.cnc`` and ``CountersManager``, and a
runner of ``python -m aeromq stat`` in a subprocess, for the tests of ``aeromq stat``.

The counters, by id (labels and keys as the driver's own helpers write them)::

     0: system  Bytes sent                                         1,234,567
     1: system  Errors: version=1.53.2 commit=aeromq-0.1.0         2
     2: pub-pos (concurrent): 5 1149896852 1001 aeron:ipc              4,096
     3: pub-lmt: 5 1149896852 1001 aeron:ipc                        36,864
     4: sub-pos: 6 1149896852 1001 aeron:ipc @0                     4,096
     5: (freed: not shown)
     6: pub-pos (concurrent): 8 -559038737 2002 aeron:udp?endpoint=localhost:40123    -1
     7: snd-channel: aeron:udp?endpoint=localhost:40123 127.0.0.1:40123             1
     8: client-heartbeat: id=7                                         the heartbeat (ms)

The error log holds one error seen twice, at ERROR_FIRST_MS and ERROR_LAST_MS.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aeromq.transport.cnc import CncFile
from aeromq.transport.concurrent import CountersManager, DistinctErrorLog, SettableClock
from aeromq.transport.concurrent import ring_buffer_descriptor as rbd
from aeromq.transport.driver import stream_counters
from aeromq.transport.driver.udp import network_counters

PID = 4242
ERROR_TEXT = "TransportStateError: unknown publication: registration_id=99"
ERROR_FIRST_MS = 1_700_000_000_123
ERROR_LAST_MS = 1_700_000_005_456
HEARTBEAT_LAG_MS = 1_500
SESSION = 1149896852
UDP_SESSION = -559038737
UDP_CHANNEL = "aeron:udp?endpoint=localhost:40123"
STAT_TIMEOUT_S = 30.0

EXPECTED_LINES = [
    "  0:            1,234,567 - Bytes sent",
    "  1:                    2 - Errors: version=1.53.2 commit=aeromq-0.1.0",
    f"  2:                4,096 - pub-pos (concurrent): 5 {SESSION} 1001 aeron:ipc",
    f"  3:               36,864 - pub-lmt: 5 {SESSION} 1001 aeron:ipc",
    f"  4:                4,096 - sub-pos: 6 {SESSION} 1001 aeron:ipc @0",
    f"  6:                   -1 - pub-pos (concurrent): 8 {UDP_SESSION} 2002 {UDP_CHANNEL}",
    f"  7:                    1 - snd-channel: {UDP_CHANNEL} 127.0.0.1:40123",
]
"""The lines of every counter but the heartbeat, whose value is the time the file was made."""


@dataclass(frozen=True)
class StatFiles:
    aeron_dir: Path
    heartbeat_ms: int
    client_heartbeat_ms: int

    @property
    def heartbeat_line(self) -> str:
        return f"  8: {self.client_heartbeat_ms:>20,} - client-heartbeat: id=7"


def write_cnc(aeron_dir: Path, pid: int = PID) -> StatFiles:
    """Write the cnc.dat described in the module docstring into ``aeron_dir``."""
    now_ms = time.time_ns() // 1_000_000
    cnc = CncFile.create(
        aeron_dir,
        to_driver_buffer_length=64 * 1024 + rbd.TRAILER_LENGTH,
        to_clients_buffer_length=64 * 1024 + 128,
        counters_values_buffer_length=64 * 1024,
        error_log_buffer_length=64 * 1024,
        start_timestamp_ms=now_ms - 60_000,
        pid=pid,
    )
    try:
        heartbeat_ms = now_ms - HEARTBEAT_LAG_MS
        trailer = cnc.to_driver_buffer.capacity - rbd.TRAILER_LENGTH
        cnc.to_driver_buffer.put_int64_ordered(
            trailer + rbd.CONSUMER_HEARTBEAT_OFFSET, heartbeat_ms
        )
        manager = CountersManager(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
        for system_id, label, value in (
            (0, "Bytes sent", 1_234_567),
            (1, "Errors: version=1.53.2 commit=aeromq-0.1.0", 2),
        ):
            counter_id = manager.allocate(
                label, 0, system_id.to_bytes(4, "little"), registration_id=system_id, owner_id=-1
            )
            manager.set_counter_value(counter_id, value)
        pub_pos = stream_counters.allocate_publisher_position(
            manager, 5, SESSION, 1001, "aeron:ipc", owner_id=7
        )
        pub_lmt = stream_counters.allocate_publisher_limit(
            manager, 5, SESSION, 1001, "aeron:ipc", owner_id=7
        )
        sub_pos = stream_counters.allocate_subscriber_position(
            manager, 6, SESSION, 1001, "aeron:ipc", join_position=0, owner_id=7
        )
        freed = manager.allocate("a freed counter", 1001)
        udp_pos = stream_counters.allocate_publisher_position(
            manager, 8, UDP_SESSION, 2002, UDP_CHANNEL, owner_id=7
        )
        status = network_counters.allocate_channel_status(
            manager, network_counters.SEND_CHANNEL_STATUS_TYPE_ID, 9, UDP_CHANNEL, "127.0.0.1:40123"
        )
        heartbeat = stream_counters.allocate_client_heartbeat(manager, 7)
        manager.free(freed)
        for counter_id, value in (
            (pub_pos, 4096),
            (pub_lmt, 36_864),
            (sub_pos, 4096),
            (udp_pos, -1),
            (status, 1),
            (heartbeat, now_ms),
        ):
            manager.set_counter_value(counter_id, value)
        assert (pub_pos, freed, heartbeat) == (2, 5, 8)
        clock = SettableClock()
        log = DistinctErrorLog(cnc.error_log_buffer, clock)
        clock.set_time_ms(ERROR_FIRST_MS)
        assert log.record(ERROR_TEXT)
        clock.set_time_ms(ERROR_LAST_MS)
        assert log.record(ERROR_TEXT)
    finally:
        cnc.close()
    return StatFiles(aeron_dir, heartbeat_ms, now_ms)


def stat_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "AERON_DIR"}
    env["TZ"] = "UTC"
    env.update(extra)
    return env


def run_stat(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m aeromq stat ARGS`` to completion, in UTC, without $AERON_DIR."""
    return subprocess.run(
        [sys.executable, "-m", "aeromq", "stat", *args],
        capture_output=True,
        text=True,
        env=stat_env() if env is None else env,
        timeout=STAT_TIMEOUT_S,
        check=False,
    )


def _signal_lines(status_path: str) -> str:
    try:
        with open(status_path) as status:
            return " ".join(
                line.strip() for line in status if line.startswith(("State", "Sig", "Shd"))
            )
    except OSError as exc:
        return f"({status_path}: {exc})"


def _stacks(pid: int) -> str:
    """Every thread's native stack of ``pid`` from gdb (bounded), or why there is none."""
    try:
        result = subprocess.run(
            ["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt 30"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(no stacks: {exc})"
    return "\n".join(
        line for line in result.stdout.splitlines() if line.startswith(("#", "Thread"))
    )


def interrupt(process: subprocess.Popen[Any], timeout_s: float = STAT_TIMEOUT_S) -> str:
    """SIGINT to a refreshing stat, as Ctrl-C; its stderr once it has exited.

    A stat still running ``timeout_s`` later is killed and the test fails with what explains it:
    the signal masks of stat and of this process, stat's thread states and native stacks.
    """
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pid = process.pid
        tasks = sorted(os.listdir(f"/proc/{pid}/task")) if os.path.isdir(f"/proc/{pid}") else []
        what = [
            f"stat pid={pid} did not exit {timeout_s} s after SIGINT",
            f"stat: {_signal_lines(f'/proc/{pid}/status')}",
            *(
                f"stat thread {tid}: {_signal_lines(f'/proc/{pid}/task/{tid}/status')}"
                for tid in tasks
            ),
            f"this process: {_signal_lines('/proc/self/status')}",
            f"this thread: {_signal_lines(f'/proc/self/task/{threading.get_native_id()}/status')}",
            _stacks(pid),
        ]
        process.kill()
        process.communicate(timeout=timeout_s)
        raise AssertionError("\n".join(what)) from None
    return stderr if isinstance(stderr, str) else (stderr or b"").decode()
