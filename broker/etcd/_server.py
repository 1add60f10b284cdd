"""A real etcd process (Debian's ``etcd-server``, ``/usr/bin/etcd``) of one member on loopback,
for tests and for ``aeromq cluster up``.

It listens on 127.0.0.1 on a client port and a peer port that were free at the first start and
are kept for restarts, with its data in a directory of the caller's. :meth:`EtcdServer.start`
returns once a linearizable read answers (the member has elected itself leader and serves);
:meth:`EtcdServer.stop` sends SIGTERM, then SIGKILL if it has not exited in time;
:meth:`EtcdServer.kill` is the crash case. Either can be followed by :meth:`EtcdServer.start`
on the same data directory and ports: keys, revisions and leases survive (etcd gives every
lease a fresh TTL when it comes back).

Timing, tuned for one member on loopback: ``heartbeat_interval_ms`` 50 and
``election_timeout_ms`` 500. etcd's lease TTL has a floor derived from them: a lease is granted
at least ``ceil(1.5 * election timeout)`` seconds (``(3 * election ticks / 2) * heartbeat``, in
etcd's ``server.go``), so that a lease survives a leader election. etcd's default 1000 ms election
timeout gives a 2 s floor, which would turn a 1 s TTL into 2 s; 500 ms gives a 1 s floor, so
TTLs of 1 and 2 s are kept as asked. A member alone has no peer to hear from, so a short
election timeout costs nothing; it also makes it elect itself sooner at start. etcd requires the
election timeout to be at least 5 heartbeats (250 ms here).
"""

from __future__ import annotations

import collections
import math
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Final

from aeromq.broker.etcd._client import EtcdClient
from aeromq.broker.etcd._errors import (
    EtcdError,
    EtcdNotInstalledError,
    EtcdServerError,
)

__all__ = ["EtcdServer", "etcd_binary", "min_lease_ttl_s"]

_DEFAULT_BINARY: Final = "/usr/bin/etcd"
_HOST: Final = "127.0.0.1"
_OUTPUT_LINES: Final = 400  # the last lines of etcd's output kept for error messages
_PROBE_KEY: Final = "/aeromq/etcd-server/probe"
_PROBE_INTERVAL_S: Final = 0.05
_PORT_ATTEMPTS: Final = 3
_ADDRESS_IN_USE: Final = "address already in use"


def etcd_binary(path: str | None = None) -> str:
    """The ``etcd`` to run: ``path`` if given, else ``$AEROMQ_ETCD`` if set, else ``etcd`` on
    PATH, else Debian's ``/usr/bin/etcd``. Raises :class:`EtcdNotInstalledError` when that is
    not an executable file."""
    found = path or os.environ.get("AEROMQ_ETCD") or shutil.which("etcd") or _DEFAULT_BINARY
    if not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise EtcdNotInstalledError(
            "no etcd binary (install Debian's etcd-server: bash scripts/install-system-packages)",
            path=found,
        )
    return found


def min_lease_ttl_s(election_timeout_ms: int) -> int:
    """The shortest lease TTL etcd grants with this election timeout (etcd raises shorter ones
    to it): ``ceil(1.5 * election timeout)`` in seconds."""
    return math.ceil(1.5 * election_timeout_ms / 1000)


class EtcdServer:
    """One etcd member on 127.0.0.1 with its data in ``data_dir``.

    ``client_port`` and ``peer_port`` 0 take ports free at the first :meth:`start`; they are kept
    for later starts, so clients reconnect to the same :attr:`endpoint` after a restart.
    ``new_session``: etcd runs in a session of its own, so a terminal's Ctrl-C reaches only its
    parent, which stops it when it chooses (``aeromq cluster up`` stops its brokers first).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        name: str = "aeromq-etcd",
        client_port: int = 0,
        peer_port: int = 0,
        heartbeat_interval_ms: int = 50,
        election_timeout_ms: int = 500,
        binary: str | None = None,
        new_session: bool = False,
    ) -> None:
        if election_timeout_ms < 5 * heartbeat_interval_ms:
            raise EtcdServerError(
                "etcd needs an election timeout of at least 5 heartbeats",
                heartbeat_interval_ms=heartbeat_interval_ms,
                election_timeout_ms=election_timeout_ms,
            )
        self.data_dir = data_dir
        self.name = name
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.election_timeout_ms = election_timeout_ms
        self._binary = binary
        self._new_session = new_session
        self._client_port = client_port
        self._peer_port = peer_port
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._serving = threading.Event()  # this process logged that it serves its client port
        self.output: collections.deque[str] = collections.deque(maxlen=_OUTPUT_LINES)
        """The last lines etcd wrote (stdout and stderr), across restarts."""
        self.starts = 0
        """How many times this server was started (restarts included)."""

    @property
    def endpoint(self) -> str:
        """``127.0.0.1:<client port>``, the address :class:`EtcdClient` takes."""
        return f"{_HOST}:{self._client_port}"

    @property
    def client_port(self) -> int:
        """The client port (0 until the first :meth:`start` when chosen free)."""
        return self._client_port

    @property
    def peer_port(self) -> int:
        """The peer port (0 until the first :meth:`start` when chosen free)."""
        return self._peer_port

    @property
    def client_url(self) -> str:
        """The client URL (``http://127.0.0.1:<client port>``), as ``etcdctl --endpoints``."""
        return f"http://{self.endpoint}"

    @property
    def pid(self) -> int | None:
        """The running process's id (None when not started or exited)."""
        running = self._process is not None and self._process.poll() is None
        return self._process.pid if running and self._process is not None else None

    @property
    def min_lease_ttl_s(self) -> int:
        """The shortest lease TTL this server grants (see the module docstring)."""
        return min_lease_ttl_s(self.election_timeout_ms)

    def start(self, timeout_s: float = 30.0) -> None:
        """Start etcd and return once it serves linearizable reads; raises
        :class:`EtcdServerError` with its last output if it exits or does not answer in
        ``timeout_s``. Ports taken at this start that another process grabbed first (they were
        only probed free) are taken anew, up to 3 times."""
        if self.pid is not None:
            raise EtcdServerError("etcd already running", pid=self.pid, endpoint=self.endpoint)
        binary = etcd_binary(self._binary)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        choose_client, choose_peer = self._client_port == 0, self._peer_port == 0
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            if choose_client:
                self._client_port = _free_tcp_port()
            if choose_peer:
                self._peer_port = _free_tcp_port()
            try:
                self._launch(binary, timeout_s)
                return
            except EtcdServerError as exc:
                clash = any(_ADDRESS_IN_USE in line for line in exc.output)
                if not (clash and (choose_client or choose_peer) and attempt < _PORT_ATTEMPTS):
                    raise

    def _launch(self, binary: str, timeout_s: float) -> None:
        self._process = subprocess.Popen(
            [binary, *self._arguments()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=self._new_session,
        )
        self.starts += 1
        self._serving.clear()
        self._reader = threading.Thread(
            target=self._drain, args=(self._process,), name=f"{self.name}-output", daemon=True
        )
        self._reader.start()
        self._wait_serving(timeout_s)

    def stop(self, timeout_s: float = 10.0) -> int | None:
        """SIGTERM, wait up to ``timeout_s``, then SIGKILL; returns the exit code (None if it
        was not started)."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.send_signal(signal.SIGCONT)  # a paused etcd handles SIGTERM once resumed
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        self._release()
        return process.returncode

    def kill(self) -> None:
        """SIGKILL: the crash case (etcd's write-ahead log makes what it acknowledged durable)."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait(5)
        self._release()

    def pause(self, timeout_s: float = 5.0) -> None:
        """SIGSTOP: etcd stops answering but keeps its connections (a hung server). Returns
        once every thread of it is stopped (a signal reaches the threads running on other
        cores a little later), or after ``timeout_s``."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGSTOP)
            deadline_s = time.monotonic() + timeout_s
            while not _all_threads_stopped(self._process.pid) and time.monotonic() < deadline_s:
                time.sleep(0.005)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGCONT)

    def __enter__(self) -> EtcdServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _arguments(self) -> list[str]:
        peer_url = f"http://{_HOST}:{self._peer_port}"
        return [
            "--name", self.name,
            "--data-dir", str(self.data_dir),
            "--listen-client-urls", self.client_url,
            "--advertise-client-urls", self.client_url,
            "--listen-peer-urls", peer_url,
            "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"{self.name}={peer_url}",
            "--initial-cluster-state", "new",
            "--heartbeat-interval", str(self.heartbeat_interval_ms),
            "--election-timeout", str(self.election_timeout_ms),
            "--logger", "zap",
            "--log-outputs", "stderr",
        ]  # fmt: skip

    def _wait_serving(self, timeout_s: float) -> None:
        """Wait until this process says it serves clients on its port (so a read answered by
        another process on that port does not count) and a linearizable read answers (it
        has a leader)."""
        deadline_s = time.monotonic() + timeout_s
        last: EtcdError | None = None
        with EtcdClient(self.endpoint, timeout_ms=500) as client:
            while (remaining_s := deadline_s - time.monotonic()) > 0:
                if self._process is None or self._process.poll() is not None:
                    break
                if not self._serving.wait(min(remaining_s, _PROBE_INTERVAL_S)):
                    continue
                try:
                    client.get(_PROBE_KEY)
                    return
                except EtcdError as exc:
                    last = exc
                    time.sleep(_PROBE_INTERVAL_S)
        if self._process is not None and self._process.poll() is None:
            self.kill()
        else:
            self._release()  # the output is whole once its reader has ended
        exit_code = self._process.returncode if self._process is not None else None
        raise EtcdServerError(
            "etcd did not start",
            endpoint=self.endpoint,
            data_dir=str(self.data_dir),
            exit_code=exit_code,
            last_error=str(last),
            output=list(self.output)[-20:],
        )

    def _drain(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        serving = '"msg":"serving client traffic'
        address = f'"address":"{self.endpoint}"'
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            self.output.append(line)
            if serving in line and address in line:
                self._serving.set()

    def _release(self) -> None:
        if self._reader is not None:
            self._reader.join(5)
            self._reader = None
        if self._process is not None and self._process.stdout is not None:
            self._process.stdout.close()


def _free_tcp_port() -> int:
    """A TCP port of 127.0.0.1 free now (bound and let go: another process may take it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((_HOST, 0))
        return int(probe.getsockname()[1])


def _all_threads_stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is in state T (stopped), by ``/proc/<pid>/task``; True
    where there is no ``/proc``."""
    tasks = Path(f"/proc/{pid}/task")
    try:
        stats = [(task / "stat").read_text() for task in tasks.iterdir()]
    except OSError:
        return not tasks.parent.exists()
    # the state follows the command name, which is in parentheses and may hold spaces
    return all(stat.rpartition(")")[2].split()[0] == "T" for stat in stats)
