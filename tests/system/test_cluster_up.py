"""``aeromq cluster up`` as an operator runs it: a subprocess that starts etcd and a group of
three brokers, prints one ``broker ready:`` line per member and ``cluster ready:
endpoints=...``; a producer and a lite pull consumer given those endpoints work; ``aeromq admin
replication`` shows the leader, the epoch and the ISR; SIGINT stops every process it started;
started again on the same directory, the group has the same endpoints and its messages."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker import BROKER_STACKS_FILE
from aeromq.client import Message
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer
from tests._pids import pid_alive
from tests.cli.conftest import run_aeromq

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 45.0
TOPIC = "cluster-up"
MESSAGES = 50
BROKER_ARGS = (
    "--metrics-port", "none", "--index-enabled", "false", "--commit-log-segment-bytes", "16MiB",
)  # fmt: skip


class ClusterUp:
    """The ``aeromq cluster up`` process and the lines it printed."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        command = [sys.executable, "-m", "aeromq", "cluster", "up", "--data-dir", str(data_dir),
                   "--", *BROKER_ARGS]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines: list[str] = []
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip())
            self._queue.put(line.rstrip())
        self.process.stdout.close()
        self._queue.put(None)

    def wait_line(self, prefix: str, timeout_s: float) -> dict[str, str]:
        """The fields of the next line that starts with ``prefix``."""
        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                break
            if line is None:
                break
            if line.startswith(prefix):
                words = line[len(prefix) :].split()
                return dict(w.split("=", 1) for w in words if "=" in w)
        raise AssertionError(f"no {prefix!r} line; output:\n" + "\n".join(self.lines[-40:]))


def _what(pid: int) -> str:
    """A process left running: its command line, each thread's state and kernel wait, and, a
    broker, its Python stacks (SIGQUIT writes them to ``stacks.txt`` in its data directory)."""
    proc = Path(f"/proc/{pid}")
    try:
        argv = proc.joinpath("cmdline").read_bytes().decode().split("\0")
        threads = [
            f"{task.joinpath('comm').read_text().strip()}:"
            f"{task.joinpath('stat').read_text().rpartition(')')[2].split()[0]}:"
            f"{task.joinpath('wchan').read_text().strip()}"
            for task in sorted(proc.joinpath("task").iterdir())
        ]
    except OSError as error:
        return f"gone while looked at ({error})"
    stacks = ""
    if "--data-dir" in argv[:-1]:
        path = Path(argv[argv.index("--data-dir") + 1]) / BROKER_STACKS_FILE
        with contextlib.suppress(OSError):  # gone meanwhile: no stacks
            os.kill(pid, signal.SIGQUIT)
            time.sleep(1.0)  # written from the signal handler: at once
            stacks = path.read_text()[-6000:]
    return f"{' '.join(argv)[:300]} threads={threads} stacks:\n{stacks}"


SENT = {f"m{i}".encode() for i in range(MESSAGES)}


def _consumed(endpoints: str, group: str) -> set[bytes]:
    """Every body of :data:`TOPIC` a new consumer group reads from the first offset."""
    config = LitePullConsumerConfig(
        consumer_group=group,
        endpoints=tuple(endpoints.split(",")),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=200,
    )
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(TOPIC, "*")
    consumer.start()
    got: set[bytes] = set()
    try:
        deadline = time.monotonic() + 30
        while len(got) < MESSAGES and time.monotonic() < deadline:
            got.update(m.body for m in consumer.poll())
    finally:
        consumer.shutdown()
    return got


@pytest.fixture
def cluster(shm_dir: Path) -> Iterator[ClusterUp]:
    running = ClusterUp(shm_dir / "cluster")
    try:
        yield running
    finally:
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait(10)


@pytest.mark.slow
def test_should_run_a_group_that_clients_use_stop_it_at_sigint_and_take_it_up_again(
    cluster: ClusterUp,
) -> None:
    members = [cluster.wait_line("broker ready:", START_TIMEOUT_S) for _ in range(3)]
    ready = cluster.wait_line("cluster ready:", START_TIMEOUT_S)

    for member in members:
        assert {"pid", "group", "role", "epoch", "grpc", "rocketmq"} <= member.keys()
        assert member["group"] == "broker-a"
    assert sorted(m["role"] for m in members) == ["follower", "follower", "leader"]
    endpoints = ready["endpoints"]
    assert sorted(endpoints.split(",")) == sorted(m["grpc"] for m in members)
    ports = [m["grpc"] for m in members] + [m["rocketmq"] for m in members]
    assert len(set(ports)) == 6  # no port given twice (two brokers on defaults clash on 8181)

    # ready means writable: a leader with min_isr members in sync is committed in etcd already
    at_ready = run_aeromq("admin", "replication", endpoints=endpoints)
    assert at_ready.returncode == 0, at_ready.stderr
    state = dict(w.split("=", 1) for w in at_ready.stdout.splitlines()[0].split() if "=" in w)
    assert len(state["isr"].split(",")) >= int(state["min_isr"]) == 2, at_ready.stdout

    created = run_aeromq("admin", "topic", "create", TOPIC, "--queues", "2", endpoints=endpoints)
    assert created.returncode == 0, created.stderr  # a follower's NOT_LEADER: run on the leader
    with Producer("cluster-up-producers", endpoints) as producer:
        for i in range(MESSAGES):
            producer.send(Message(TOPIC, f"m{i}".encode()))
    assert _consumed(endpoints, "cluster-up-readers") == SENT

    shown = run_aeromq("admin", "replication", endpoints=endpoints)
    assert shown.returncode == 0, shown.stderr
    fields = dict(w.split("=", 1) for w in shown.stdout.splitlines()[0].split() if "=" in w)
    assert fields["group"] == "broker-a" and fields["min_isr"] == "2", shown.stdout
    # the leader and its epoch as etcd holds them now (a loaded machine may have re-elected)
    assert fields["leader"] in {m["member"] for m in members}, shown.stdout
    assert int(fields["epoch"]) >= int(ready["epoch"]) >= 1, shown.stdout
    assert fields["leader"] in fields["isr"].split(","), shown.stdout
    table = shown.stdout.splitlines()[1:]
    assert table[0].split()[:4] == ["MEMBER", "ROLE", "LIVE", "IN_ISR"], shown.stdout
    assert sorted(row.split()[0] for row in table[1:]) == ["0", "1", "2"], shown.stdout

    pids = [int(m["pid"]) for m in members] + [int(ready["etcd_pid"])]
    cluster.process.send_signal(signal.SIGINT)
    assert cluster.process.wait(STOP_TIMEOUT_S) == 0, "\n".join(cluster.lines[-30:])
    assert "cluster stopped" in cluster.lines[-1] or cluster.wait_line("cluster stopped", 5) == {}
    assert [pid for pid in pids if pid_alive(pid)] == []

    again = ClusterUp(cluster.data_dir)  # the same directory: its ports, data and etcd state
    try:
        for _ in range(3):
            again.wait_line("broker ready:", START_TIMEOUT_S)
        assert again.wait_line("cluster ready:", START_TIMEOUT_S)["endpoints"] == endpoints
        assert _consumed(endpoints, "cluster-up-after-restart") == SENT
        again.process.send_signal(signal.SIGINT)
        assert again.process.wait(STOP_TIMEOUT_S) == 0, "\n".join(again.lines[-30:])
    finally:
        if again.process.poll() is None:
            again.process.kill()
            again.process.wait(10)


def test_should_take_its_etcd_and_brokers_down_when_it_is_killed(cluster: ClusterUp) -> None:
    members = [cluster.wait_line("broker ready:", START_TIMEOUT_S) for _ in range(3)]
    ready = cluster.wait_line("cluster ready:", START_TIMEOUT_S)
    pids = [int(m["pid"]) for m in members] + [int(ready["etcd_pid"])]
    assert all(pid_alive(pid) for pid in pids)

    cluster.process.kill()  # SIGKILL: no handler runs, nothing is stopped in order
    cluster.process.wait(10)
    # each child was asked for SIGTERM at its parent's death: gone within a broker's stop
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while (left := [pid for pid in pids if pid_alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    stuck = {pid: _what(pid) for pid in left}  # seen once in a loaded full run: which, and where
    for pid in left:  # leave nothing behind, whatever the outcome
        os.kill(pid, signal.SIGKILL)
    assert stuck == {}
