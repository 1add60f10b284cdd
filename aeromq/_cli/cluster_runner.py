"""A broker group on one host, run as an operator would: one etcd and ``group_size`` broker
processes (Caller: ``aeromq cluster up`` (:mod:`~aeromq._cli.cluster`) and ``aeromq quickstart
--cluster``; Affects: the processes it starts and the data directory it is given).

Layout of the data directory ``D``::

    D/cluster.json      the group's name, size and every port (kept: a restart reuses them)
    D/etcd/             etcd's data
    D/member-<i>/       member i's store (its epoch file included)
    D/logs/member-<i>.log   member i's output, appended across restarts
    D/etcd-guard        the script that starts etcd guarded (below), written at each start

Ports: each kind (gRPC, RocketMQ 5, replication UDP, ingress UDP) is a base given by the
operator (member i takes base + i) or, when 0, ports free at the first start; either way they
are written to ``cluster.json`` and reused by the next start on the same directory, so clients
keep their endpoints. Every port is distinct (two brokers on defaults would both take 8181).
Free ports are only probed free: a member that cannot bind one that another process took
meanwhile is started again on other free ports (at the first start only, up to 3 times).

:meth:`LocalCluster.start` starts etcd and every member (in sessions of their own, so Ctrl-C
reaches only this process, which stops them in order; each guarded (:mod:`.child_guard`) so that
it gets SIGTERM when this process dies, even by SIGKILL) at once, and returns once each has printed its ``broker ready:``
line (relayed to the output with ``member=`` and ``log=`` added) and the group's committed
state in etcd names a leader with ``min_isr`` members in sync, so that the group takes writes
(a send or a topic change right after would otherwise get ``NotEnoughReplicasError`` while
the followers catch up). :meth:`LocalCluster.watch`
reports a member that exits and, unless ``restart`` is off, starts it again (a crashed member
comes back as a follower and catches up, as a supervisor such as systemd would have it), with a
back-off that doubles while it keeps failing. :meth:`LocalCluster.stop` sends SIGTERM to every
follower, then to the leader (so that no election runs), SIGKILLs each still running
``stop_timeout_s`` later, then stops etcd.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final, TextIO

from aeromq._cli.child_guard import guarded, write_guard_script
from aeromq.broker import BrokerError
from aeromq.broker.etcd import EtcdClient, EtcdError, EtcdServer, etcd_binary
from aeromq.broker.ports import free_ports
from aeromq.broker.replication import GroupKeys, GroupState

__all__ = ["ClusterError", "ClusterPorts", "ClusterSpec", "LocalCluster", "Member"]

READY_PREFIX: Final = "broker ready:"
_RELAYED: Final = ("group role:", "cannot start")
_RESTART_BACKOFF_S: Final = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
_STABLE_S: Final = 30.0  # a member up this long has its back-off reset
_POLL_S: Final = 0.1
_TAIL_LINES: Final = 20
_PORT_ATTEMPTS: Final = 3
_BIND_FAILURES: Final = ("cannot bind", "already in use")
_ETCD_GUARD: Final = "etcd-guard"


class ClusterError(BrokerError):
    """The group could not start (a member exited or was not ready in time, a data directory
    of another group, ports that clash)."""


@dataclass
class ClusterPorts:
    """Every port of the group: per member (index = member id) and etcd's."""

    grpc: list[int]
    rocketmq: list[int]
    replication: list[int]
    udp: list[int]
    etcd_client: int = 0
    etcd_peer: int = 0


@dataclass(frozen=True)
class ClusterSpec:
    """What ``aeromq cluster up`` was asked for (see :mod:`~aeromq._cli.cluster`)."""

    data_dir: Path
    broker_name: str = "broker-a"
    group_size: int = 3
    min_isr: int = 2
    host: str = "127.0.0.1"
    grpc_port: int = 0
    rocketmq_port: int = 0
    replication_port: int = 0
    udp_port: int = 0
    etcd_port: int = 0
    lease_ttl: str = "2s"
    restart: bool = True
    broker_args: tuple[str, ...] = ()
    start_timeout_s: float = 60.0
    stop_timeout_s: float = 15.0


@dataclass
class Member:
    """One broker process of the group and what its last ready line said."""

    member_id: int
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    ready: dict[str, str] = field(default_factory=dict)
    ready_event: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None
    started_s: float = 0.0
    failures: int = 0
    next_start_s: float | None = None
    port_attempts: int = 0
    tail: list[str] = field(default_factory=list)
    """Its last lines of output (why it exited)."""
    leader_since_s: float | None = None
    """Monotonic time its output last said it took the lead (None: it has not, this run)."""

    @property
    def pid(self) -> int | None:
        """The running process's id, None when it is not running."""
        process = self.process
        return process.pid if process is not None and process.poll() is None else None

    @property
    def grpc(self) -> str:
        """Its gRPC address (of its ready line)."""
        return self.ready.get("grpc", "")


def _ports_of(
    base: int, count: int, kind: socket.SocketKind, host: str, taken: set[int]
) -> list[int]:
    if base:
        ports = [base + i for i in range(count)]
        taken.update(ports)
        return ports
    return free_ports(kind, host, count, taken)


def plan_ports(spec: ClusterSpec, stored: ClusterPorts | None) -> ClusterPorts:
    """The ports of this start: those given, else those of ``cluster.json``, else free ones."""
    n, host = spec.group_size, spec.host
    taken: set[int] = set()
    if stored is not None:
        taken.update(stored.grpc + stored.rocketmq + stored.replication + stored.udp)
        taken.update((stored.etcd_client, stored.etcd_peer))
    tcp, udp = socket.SOCK_STREAM, socket.SOCK_DGRAM

    def pick(base: int, old: list[int] | None, kind: socket.SocketKind) -> list[int]:
        if not base and old is not None and len(old) == n:
            return old
        return _ports_of(base, n, kind, host, taken)

    ports = ClusterPorts(
        grpc=pick(spec.grpc_port, None if stored is None else stored.grpc, tcp),
        rocketmq=pick(spec.rocketmq_port, None if stored is None else stored.rocketmq, tcp),
        replication=pick(
            spec.replication_port, None if stored is None else stored.replication, udp
        ),
        udp=pick(spec.udp_port, None if stored is None else stored.udp, udp),
    )
    if spec.etcd_port:
        ports.etcd_client = spec.etcd_port
    elif stored is not None and stored.etcd_client:
        ports.etcd_client, ports.etcd_peer = stored.etcd_client, stored.etcd_peer
    every = ports.grpc + ports.rocketmq + ports.replication + ports.udp
    if len(set(ports.grpc + ports.rocketmq)) != 2 * n or len(set(every)) > len(every):
        raise ClusterError(f"ports clash: {asdict(ports)}")
    return ports


class LocalCluster:
    """etcd and the members of ``spec`` (see module); lines for the operator go to ``out``."""

    def __init__(self, spec: ClusterSpec, out: TextIO = sys.stdout) -> None:
        self.spec = spec
        self.out = out
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        """Set by :meth:`stop`: no member is checked or restarted any more."""
        self._stopped = threading.Event()
        """Set once every member stopped: the watcher thread ends."""
        self._watch_pass = threading.Lock()
        self._watcher: threading.Thread | None = None
        root = spec.data_dir
        self.members = [
            Member(i, root / f"member-{i}", root / "logs" / f"member-{i}.log")
            for i in range(spec.group_size)
        ]
        stored = self._stored_ports()
        self._fresh_ports = stored is None and not (
            spec.grpc_port or spec.rocketmq_port or spec.replication_port or spec.udp_port
        )
        self.ports = plan_ports(spec, stored)
        self.etcd = EtcdServer(
            root / "etcd",
            client_port=self.ports.etcd_client,
            peer_port=self.ports.etcd_peer,
            new_session=True,
            binary=str(root / _ETCD_GUARD),
        )
        self.on_exit: Callable[[Member, int], None] | None = None
        """Called (on the watcher's thread) with a member that exited and its exit code."""

    # -- the description on disk -----------------------------------------------------------

    @property
    def _spec_file(self) -> Path:
        return self.spec.data_dir / "cluster.json"

    def _stored_ports(self) -> ClusterPorts | None:
        try:
            stored = json.loads(self._spec_file.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ClusterError(f"unreadable {self._spec_file}: {exc}") from exc
        if stored.get("group_size") != self.spec.group_size:
            raise ClusterError(
                f"{self.spec.data_dir} holds a group of {stored.get('group_size')} members, "
                f"not {self.spec.group_size} (a group's size cannot change)"
            )
        if stored.get("broker_name") != self.spec.broker_name:
            raise ClusterError(
                f"{self.spec.data_dir} holds group {stored.get('broker_name')!r}, "
                f"not {self.spec.broker_name!r}"
            )
        return ClusterPorts(**stored["ports"])

    def _store_ports(self) -> None:
        self.ports.etcd_client, self.ports.etcd_peer = self.etcd.client_port, self.etcd.peer_port
        description = {
            "broker_name": self.spec.broker_name,
            "group_size": self.spec.group_size,
            "ports": asdict(self.ports),
        }
        temporary = self._spec_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(description, indent=2) + "\n")
        temporary.replace(self._spec_file)

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def endpoints(self) -> str:
        """What clients are given: every member's gRPC address, comma-separated."""
        return ",".join(f"{self.spec.host}:{port}" for port in self.ports.grpc)

    def start(self, stop: threading.Event | None = None) -> None:
        """Start etcd and every member; return once each is ready (see module). Raises
        :class:`ClusterError` (everything started is stopped again) when one exits or is not
        ready within ``start_timeout_s``, or ``stop`` is set meanwhile."""
        self.spec.data_dir.mkdir(parents=True, exist_ok=True)
        (self.spec.data_dir / "logs").mkdir(exist_ok=True)
        try:
            write_guard_script(self.spec.data_dir / _ETCD_GUARD, etcd_binary())
            self.etcd.start()
            self._store_ports()
            for member in self.members:
                self._launch(member)
            deadline_s = time.monotonic() + self.spec.start_timeout_s
            for member in self.members:
                while not member.ready_event.wait(_POLL_S):
                    process = member.process
                    if process is not None and process.poll() is not None:
                        if self._port_taken(member):
                            continue  # launched again on other free ports
                        raise ClusterError(
                            f"member {member.member_id} exited before it was ready "
                            f"(exit code {process.returncode}); its output: {member.log_path}"
                        )
                    if stop is not None and stop.is_set():
                        raise ClusterError("interrupted while starting")
                    if time.monotonic() > deadline_s:
                        raise ClusterError(
                            f"member {member.member_id} not ready in "
                            f"{self.spec.start_timeout_s:.0f} s; its output: {member.log_path}"
                        )
            self._wait_writable(deadline_s, stop)
        except BaseException:
            self.stop()
            raise

    def _wait_writable(self, deadline_s: float, stop: threading.Event | None) -> None:
        """Until the group's committed state names a leader and ``min_isr`` members in sync;
        raises :class:`ClusterError` past ``deadline_s`` (with the last state seen)."""
        keys = GroupKeys(self.spec.broker_name)
        state: GroupState | None = None
        with EtcdClient(self.etcd.endpoint) as client:
            while True:
                try:
                    kv = client.get(keys.state)
                    state = None if kv is None else GroupState.from_json(kv.value)
                except EtcdError:
                    state = None  # etcd just started: asked again
                if (
                    state is not None
                    and state.leader is not None
                    and len(state.isr) >= self.spec.min_isr
                ):
                    return
                if stop is not None and stop.is_set():
                    raise ClusterError("interrupted while starting")
                if time.monotonic() > deadline_s:
                    raise ClusterError(
                        f"the group has no leader with {self.spec.min_isr} members in sync after "
                        f"{self.spec.start_timeout_s:.0f} s; its state: {state}"
                    )
                time.sleep(_POLL_S)

    def _port_taken(self, member: Member) -> bool:
        """Whether ``member`` could not bind a port that was free when chosen (another
        process took it meanwhile) and was launched again on ports free now: only for ports
        chosen free at this group's first start (not given, not kept from an earlier one:
        clients know those), at most :data:`_PORT_ATTEMPTS` times."""
        if member.reader is not None:
            member.reader.join(5)
        taken = any(m in line for line in member.tail for m in _BIND_FAILURES)
        if not (taken and self._fresh_ports and member.port_attempts < _PORT_ATTEMPTS):
            return False
        member.port_attempts += 1
        i, ports, spec = member.member_id, self.ports, self.spec
        every = set(ports.grpc + ports.rocketmq + ports.replication + ports.udp)
        tcp, udp = socket.SOCK_STREAM, socket.SOCK_DGRAM
        ports.grpc[i], ports.rocketmq[i] = free_ports(tcp, spec.host, 2, every)
        ports.replication[i], ports.udp[i] = free_ports(udp, spec.host, 2, every)
        self._store_ports()
        self.say(f"member {i}: a port was taken meanwhile; starting it on other free ports")
        self._launch(member)
        return True

    def leader(self) -> Member | None:
        """The member whose last ready line or role change said it leads."""
        for member in self.members:
            if member.pid is not None and member.ready.get("role") == "leader":
                return member
        return None

    def watch(self) -> None:
        """Report (and restart, see module) members that exit, on a thread, until :meth:`stop`."""
        self._watcher = threading.Thread(target=self._watch, name="cluster-watch", daemon=True)
        self._watcher.start()

    def kill(self, member_id: int) -> int | None:
        """SIGKILL member ``member_id`` (the crash case); returns the pid killed."""
        member = self.members[member_id]
        pid = member.pid
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        return pid

    def stop(self) -> bool:
        """Stop every member (SIGTERM, SIGKILL after ``stop_timeout_s``), then etcd. True when
        every member stopped by itself (no SIGKILL needed)."""
        self._stopping.set()
        with self._watch_pass:  # the watcher's pass under way (a restart) is over
            pass
        leader = self.leader()
        followers = [m for m in self.members if m is not leader]
        clean = self._terminate(followers)  # first: the leader shrinks its ISR, no election
        clean = self._terminate([] if leader is None else [leader]) and clean
        # the members it restarted are guarded with the watcher thread as their parent: it
        # ends only now, or they would all get SIGTERM at once, the leader among them
        self._stopped.set()
        if self._watcher is not None:
            self._watcher.join(5)
        for member in self.members:
            if member.reader is not None:
                member.reader.join(5)
        self.etcd.stop()
        return clean

    def _terminate(self, members: list[Member]) -> bool:
        """SIGTERM ``members``, SIGKILL those still running after ``stop_timeout_s``."""
        clean = True
        running = [m for m in members if m.pid is not None]
        for member in running:
            assert member.process is not None
            member.process.send_signal(signal.SIGTERM)
        deadline_s = time.monotonic() + self.spec.stop_timeout_s
        for member in running:
            assert member.process is not None
            try:
                member.process.wait(max(0.0, deadline_s - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say(f"member {member.member_id} did not stop in time: killed")
                member.process.kill()
                member.process.wait(5)
                clean = False
        return clean

    # -- the members -------------------------------------------------------------------------

    def say(self, line: str) -> None:
        """One line to the operator (whole, among the members' relayed lines)."""
        with self._lock:
            print(line, file=self.out, flush=True)

    def _arguments(self, member_id: int) -> list[str]:
        spec, ports, host = self.spec, self.ports, self.spec.host
        return [
            "broker", "--broker-name", spec.broker_name,
            "--data-dir", str(self.members[member_id].data_dir),
            "--etcd-endpoints", self.etcd.endpoint, "--member-id", str(member_id),
            "--group-size", str(spec.group_size), "--min-isr", str(spec.min_isr),
            "--lease-ttl", spec.lease_ttl, "--grpc-host", host,
            "--grpc-port", str(ports.grpc[member_id]),
            "--rocketmq-port", str(ports.rocketmq[member_id]),
            "--replication-endpoint", f"{host}:{ports.replication[member_id]}",
            "--ingress-udp-endpoint", f"{host}:{ports.udp[member_id]}",
            *spec.broker_args,
        ]  # fmt: skip

    def _launch(self, member: Member) -> None:
        member.data_dir.mkdir(parents=True, exist_ok=True)
        member.tail = []
        member.ready_event.clear()
        member.ready = {}
        member.process = subprocess.Popen(
            guarded([sys.executable, "-m", "aeromq", *self._arguments(member.member_id)]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,  # Ctrl-C reaches this process only: it stops them in order
        )
        member.started_s = time.monotonic()
        member.reader = threading.Thread(
            target=self._relay,
            args=(member, member.process),
            name=f"member-{member.member_id}-output",
            daemon=True,
        )
        member.reader.start()

    def _relay(self, member: Member, process: subprocess.Popen[bytes]) -> None:
        """Member output to its log file; its ready line and role changes to the operator."""
        assert process.stdout is not None
        tag = f"[{self.spec.broker_name}/{member.member_id}]"
        with member.log_path.open("ab", buffering=0) as log:
            for raw in process.stdout:
                log.write(raw)
                line = raw.decode("utf-8", "replace").rstrip()
                member.tail = [*member.tail[-(_TAIL_LINES - 1) :], line]
                if line.startswith(READY_PREFIX):
                    words = line[len(READY_PREFIX) :].split()
                    member.ready = dict(w.split("=", 1) for w in words if "=" in w)
                    self.say(f"{line} member={member.member_id} log={member.log_path}")
                    member.ready_event.set()
                elif any(marker in line for marker in _RELAYED):
                    for key in ("role", "epoch"):
                        value = line.partition(f" {key}=")[2].split(" ", 1)[0].rstrip(":")
                        if value:
                            member.ready[key] = value
                    if member.ready.get("role") == "leader":
                        member.leader_since_s = time.monotonic()
                    self.say(f"{tag} {line}")
        process.stdout.close()

    def _watch(self) -> None:
        while not self._stopped.wait(_POLL_S):
            with self._watch_pass:
                if self._stopping.is_set():
                    continue
                for member in self.members:
                    self._check(member)

    def _check(self, member: Member) -> None:
        process = member.process
        now_s = time.monotonic()
        if member.next_start_s is not None:
            if now_s >= member.next_start_s and not self._stopping.is_set():
                member.next_start_s = None
                self.say(f"member restarting: member={member.member_id}")
                self._launch(member)
            return
        if process is None or process.poll() is None:
            return
        code = process.returncode
        if member.reader is not None:
            member.reader.join(5)
        if now_s - member.started_s > _STABLE_S:
            member.failures = 0
        note = "not restarted (--no-restart)"
        if self.spec.restart:
            delay_s = _RESTART_BACKOFF_S[min(member.failures, len(_RESTART_BACKOFF_S) - 1)]
            member.failures += 1
            member.next_start_s = now_s + delay_s
            note = f"restarting in {delay_s:.0f} s"
        self.say(
            f"member exited: member={member.member_id} pid={process.pid} exit_code={code} {note}"
        )
        member.process = None
        if self.on_exit is not None:
            self.on_exit(member, code)
