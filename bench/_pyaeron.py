"""pyaeron as a named baseline of the ``ipc`` and ``udp`` suites: the real Aeron C driver and client.

``pyaeron`` (Aeron 1.53's C client and C media driver) runs in the CPython 3.12 environment that
:mod:`transport.testing.py312` finds or creates (the interop tests share it). Its workers are the
scripts ``bench/peers/pyaeron_*.py``, each a process of its own, in the same layout as the aeromq
cases they stand beside:

- IPC: one driver process, a publisher and a subscriber (``pyaeron_driver``, ``_publisher``,
  ``_subscriber``); exclusive publications; ``offer / poll(1)``, ``offer / poll(256)`` and
  ``try_claim / poll(256)`` (pyaeron has no ``offer_batch``); a 64-byte ping-pong over two streams.
- UDP: a sending and a receiving driver process, the publisher a client of the first, the
  subscriber of the second, over 127.0.0.1; ``offer / poll(256)``; the ping-pong crosses both.

Publisher and subscriber report ``ready``, the parent sends both ``go`` (the start, as the aeromq
cases' barrier), and the rate is messages / time from ``go`` to the subscriber's last message;
every message carries its sequence number and the subscriber checks it. Each baseline row is
named ``baseline:pyaeron ...`` and carries, in the JSON, ``aeromq_over_pyaeron``: the aeromq rate
of the same case divided by pyaeron's (for latencies, pyaeron's p50 divided by aeromq's, so
above 1 is always aeromq ahead). Without a CPython 3.12 the suites report one row
``baseline:pyaeron unavailable`` with the reason instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path

from aeromq.transport import ConfigurationError
from aeromq.transport.testing.py312 import ensure_pyaeron_venv, find_python312, peer_environment
from bench._harness import JsonRecord, Result, latency_summary

__all__ = [
    "PyaeronBench",
    "ipc_baselines",
    "latency_row",
    "pyaeron_python",
    "rate_row",
    "udp_baselines",
    "udp_channel",
    "unavailable",
]

PEERS_DIR = Path(__file__).parent / "peers"
FRAGMENT_LIMIT = 256
_TIMEOUT_S = 300.0
_STOP_TIMEOUT_S = 10.0


def pyaeron_python() -> tuple[Path | None, str]:
    """The pyaeron environment's python (created on first use, a few seconds), or why not."""
    lookup = find_python312()
    if lookup.interpreter is None:
        return None, lookup.reason
    try:
        return ensure_pyaeron_venv(lookup.interpreter), lookup.reason
    except ConfigurationError as exc:
        return None, str(exc)


def unavailable(reason: str) -> Result:
    """The row a suite reports instead of its pyaeron baselines."""
    return Result("baseline:pyaeron unavailable", extra={"reason": reason})


class _Worker:
    """One pyaeron worker process: JSON lines out (read on a thread, waited for in bounded
    time), commands in."""

    def __init__(self, python: Path, script: str, *args: object) -> None:
        self.name = script
        self.process = subprocess.Popen(
            [str(python), str(PEERS_DIR / script), *(str(arg) for arg in args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=peer_environment(),
            cwd=PEERS_DIR,
            text=True,
            bufsize=1,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self._stderr_tail: deque[str] = deque(maxlen=5)
        threading.Thread(target=self._read, name=f"pyaeron-{script}", daemon=True).start()
        threading.Thread(target=self._read_stderr, name=f"{script}-err", daemon=True).start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for line in stdout:
            self._lines.put(line)
        self._lines.put("")

    def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        for line in stderr:
            self._stderr_tail.append(line.rstrip())

    def expect(self, event: str) -> JsonRecord:
        """The next line's object, which must be ``event`` (workers emit nothing else)."""
        try:
            line = self._lines.get(timeout=_TIMEOUT_S)
        except queue.Empty:
            line = ""
        item: JsonRecord = json.loads(line) if line else {"event": "exit or timeout"}
        if item.get("event") != event:
            tail = list(self._stderr_tail)
            raise RuntimeError(f"pyaeron worker {self.name}: {item} instead of {event}: {tail}")
        return item

    def send(self, command: str) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps({"command": command}) + "\n")
        stdin.flush()

    def close(self) -> None:
        stdin = self.process.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                stdin.close()
        try:
            self.process.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(_STOP_TIMEOUT_S)


class PyaeronBench:
    """Real C drivers (one per directory name) and the cases run on them; close when done."""

    def __init__(self, python: Path, term_length: int, driver_names: tuple[str, ...]) -> None:
        self._python = python
        root = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self._root = tempfile.mkdtemp(prefix="aeromq-bench-pyaeron-", dir=root)
        self._drivers: dict[str, _Worker] = {}
        self._stream_id = 2000
        try:
            for name in driver_names:
                driver = _Worker(python, "pyaeron_driver.py", self.dir(name), term_length)
                self._drivers[name] = driver
                driver.expect("ready")
        except BaseException:
            self.close()
            raise

    def dir(self, name: str) -> str:
        return os.path.join(self._root, name)

    def _next_stream_id(self) -> int:
        self._stream_id += 2
        return self._stream_id

    def throughput(
        self,
        publisher_dir: str,
        subscriber_dir: str,
        channel: str,
        size: int,
        shape: str,
        fragment_limit: int,
        count: int,
    ) -> float:
        """Messages per second of one case (``shape``: ``offer`` or ``try_claim``)."""
        stream_id = self._next_stream_id()
        subscriber = _Worker(
            self._python,
            "pyaeron_subscriber.py",
            self.dir(subscriber_dir),
            channel,
            stream_id,
            fragment_limit,
            count,
        )
        publisher: _Worker | None = None
        try:
            subscriber.expect("ready")
            publisher = _Worker(
                self._python,
                "pyaeron_publisher.py",
                self.dir(publisher_dir),
                channel,
                stream_id,
                size,
                shape,
                count,
            )
            publisher.expect("ready")
            subscriber.send("go")
            publisher.send("go")
            elapsed_ns = subscriber.expect("done")["elapsed_ns"]
            publisher.expect("sent")
            publisher.send("stop")
            return float(count / (elapsed_ns / 1e9))
        finally:
            for worker in (publisher, subscriber):
                if worker is not None:
                    worker.close()

    def ping_pong(
        self,
        ping_dir: str,
        pong_dir: str,
        ping_channel: str,
        pong_channel: str,
        samples: int,
        idle: str,
    ) -> dict[str, float]:
        """p50 / p99 / p99.9 round trips in microseconds (``idle``: ``spin`` or ``yield``)."""
        stream_id = self._next_stream_id()
        ponger = _Worker(
            self._python,
            "pyaeron_pong.py",
            self.dir(pong_dir),
            ping_channel,
            pong_channel,
            stream_id,
            idle,
        )
        pinger: _Worker | None = None
        try:
            pinger = _Worker(
                self._python,
                "pyaeron_ping.py",
                self.dir(ping_dir),
                ping_channel,
                pong_channel,
                stream_id,
                samples,
                idle,
            )
            ponger.expect("ready")
            pinger.expect("ready")
            ponger.send("go")
            pinger.send("go")
            rtts: list[int] = pinger.expect("done")["rtts_ns"]
            ponger.expect("done")
            return latency_summary(rtts)
        finally:
            for worker in (pinger, ponger):
                if worker is not None:
                    worker.close()

    def close(self) -> None:
        for driver in self._drivers.values():
            driver.close()
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> PyaeronBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def udp_channel() -> str:
    """``aeron:udp?endpoint=127.0.0.1:<a port that was free a moment ago>``."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return f"aeron:udp?endpoint=127.0.0.1:{probe.getsockname()[1]}"


def rate_row(name: str, size: int, runs: list[float], aeromq_rate: float | None) -> Result:
    """A ``baseline:pyaeron`` throughput row: the best run, every run, and aeromq / pyaeron."""
    rate = max(runs)
    extra: JsonRecord = {"runs_msgs_per_s": [round(run) for run in runs]}
    if aeromq_rate is not None:
        extra["aeromq_over_pyaeron"] = round(aeromq_rate / rate, 3)
    return Result(
        f"baseline:pyaeron {name}", msgs_per_s=rate, MB_per_s=rate * size / 1e6, extra=extra
    )


def latency_row(
    name: str, summary: Mapping[str, float], samples: int, aeromq_p50_us: float | None
) -> Result:
    """A ``baseline:pyaeron`` ping-pong row; the ratio is pyaeron p50 / aeromq p50."""
    extra: JsonRecord = {"samples": samples}
    if aeromq_p50_us:
        extra["aeromq_over_pyaeron"] = round(summary["p50_us"] / aeromq_p50_us, 3)
    return Result(
        f"baseline:pyaeron {name}",
        p50_us=summary["p50_us"],
        p99_us=summary["p99_us"],
        p999_us=summary["p999_us"],
        extra=extra,
    )


def ipc_baselines(
    aeromq_rates: Mapping[tuple[str, int], float],
    aeromq_rtt_p50_us: float | None,
    *,
    term_length: int,
    count_64: int,
    samples: int,
    repeats: int,
) -> Iterator[Result]:
    """The ``ipc`` suite's pyaeron rows. ``aeromq_rates`` maps (shape, size) to msgs/s with the
    shapes ``offer/poll1``, ``offer/poll`` and ``try_claim/poll`` of that suite."""
    python, reason = pyaeron_python()
    if python is None:
        yield unavailable(reason)
        return
    cases = (
        ("offer/poll1", "offer", 1, "offer / poll(1)"),
        ("offer/poll", "offer", FRAGMENT_LIMIT, f"offer / poll({FRAGMENT_LIMIT})"),
        ("try_claim/poll", "try_claim", FRAGMENT_LIMIT, f"try_claim / poll({FRAGMENT_LIMIT})"),
    )
    with PyaeronBench(python, term_length, ("ipc",)) as bench:
        for size in (64, 1024):
            count = count_64 // (4 if size > 64 else 1)
            runs: dict[str, list[float]] = {key: [] for key, *_ in cases}
            for _ in range(repeats):
                for key, shape, limit, _name in cases:
                    runs[key].append(
                        bench.throughput("ipc", "ipc", "aeron:ipc", size, shape, limit, count)
                    )
            for key, _shape, _limit, name in cases:
                yield rate_row(
                    f"ipc {size}B {name}", size, runs[key], aeromq_rates.get((key, size))
                )
        summary = bench.ping_pong("ipc", "ipc", "aeron:ipc", "aeron:ipc", samples, "spin")
        yield latency_row("ipc ping-pong 64B RTT", summary, samples, aeromq_rtt_p50_us)


def udp_baselines(
    aeromq_rates: Mapping[int, float],
    aeromq_rtt_p50_us: float | None,
    *,
    term_length: int,
    counts: Mapping[int, int],
    samples: int,
    repeats: int,
) -> Iterator[Result]:
    """The ``udp`` suite's pyaeron rows: ``offer / poll(256)`` per size in ``counts`` (aeromq's
    rates of that shape in ``aeromq_rates``, by size) and a ping-pong across both drivers."""
    python, reason = pyaeron_python()
    if python is None:
        yield unavailable(reason)
        return
    name = f"offer / poll({FRAGMENT_LIMIT})"
    with PyaeronBench(python, term_length, ("tx", "rx")) as bench:
        for size, count in counts.items():
            runs = [
                bench.throughput("tx", "rx", udp_channel(), size, "offer", FRAGMENT_LIMIT, count)
                for _ in range(repeats)
            ]
            yield rate_row(f"udp {size}B {name}", size, runs, aeromq_rates.get(size))
        summary = bench.ping_pong("tx", "rx", udp_channel(), udp_channel(), samples, "yield")
        yield latency_row("udp ping-pong 64B RTT", summary, samples, aeromq_rtt_p50_us)
