"""Running the pyaeron peers: subprocesses of the 3.12 environment, JSON lines both ways.

:func:`pyaeron_python_or_skip` gives the environment's python, or skips (fails, with
``AEROMQ_REQUIRE_INTEROP=1``) saying why in one line. A :class:`Peer` is one script of ``tests/interop/peers/`` run by the environment's python. Its
stdout is read on a thread into a queue, so every wait for an event is bounded; its stderr goes
to a file and is quoted when a wait fails. :meth:`Peer.expect` returns the next event of a kind
and fails the test on a peer ``error`` event, an early exit or a timeout. :meth:`Peer.send`
writes a command line to its stdin. :class:`Peers` starts peers for one test and stops them all
afterwards (close stdin, then terminate, then kill, each step bounded). Our client's side of an
exchange: :class:`OurReceiver` (reassemble and check) and :func:`publish_plan`.
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.client import ConcurrentPublication, ExclusivePublication, Subscription
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.buffer_claim import BufferClaim
from aeromq.transport.logbuffer.fragment_assembler import FragmentAssembler
from aeromq.transport.logbuffer.header import Header
from aeromq.transport.testing.py312 import (
    REQUIRE_INTEROP_ENV,
    ensure_pyaeron_venv,
    find_python312,
    interop_required,
    peer_environment,
)

from .peers._peer import Plan, Verifier


def pyaeron_python_or_skip() -> Path:
    """The pyaeron environment's python (created on first use); without a CPython 3.12, a skip
    with one line saying why, or a failure if ``AEROMQ_REQUIRE_INTEROP=1``."""
    lookup = find_python312()
    if lookup.interpreter is None:
        message = f"interop with real Aeron (pyaeron) not run: {lookup.reason}"
        if interop_required():
            pytest.fail(f"{message} ({REQUIRE_INTEROP_ENV}=1)", pytrace=False)
        pytest.skip(message)
    try:
        return ensure_pyaeron_venv(lookup.interpreter)
    except ConfigurationError as exc:
        pytest.fail(f"interop with real Aeron (pyaeron): {exc}", pytrace=False)


PEERS_DIR = Path(__file__).parent / "peers"
DEFAULT_TIMEOUT_S = 15.0
_STOP_TIMEOUT_S = 5.0


class Peer:
    """One running peer script (see module)."""

    def __init__(
        self,
        python: Path,
        script: str,
        args: list[str],
        log_dir: Path,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = f"{script} {' '.join(args)}"
        self.stderr_path = log_dir / f"{script}-{time.monotonic_ns()}.stderr"
        environment = peer_environment()
        environment.update(env or {})
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [str(python), str(PEERS_DIR / script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=environment,
            cwd=PEERS_DIR,
            text=True,
            bufsize=1,
        )
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, name=f"peer-{script}", daemon=True).start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for line in stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                self.events.put({"event": "noise", "line": line.rstrip()})
        self.events.put(None)

    def expect(self, event: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
        """The next ``event`` from the peer (other events are kept in ``seen``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._fail(f"no {event!r} within {timeout_s}s")
            try:
                item = self.events.get(timeout=remaining)
            except queue.Empty:
                continue
            if item is None:
                self.process.wait(_STOP_TIMEOUT_S)
                self._fail(f"exited with {self.process.returncode} before {event!r}")
            assert item is not None
            self.seen.append(item)
            if item["event"] == "error":
                self._fail(f"reported an error: {item.get('message')}")
            if item["event"] == event:
                return item

    def send(self, command: str, **values: Any) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps({"command": command, **values}) + "\n")
        stdin.flush()

    def wait(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> int:
        """Close stdin (the peer reads ``exit``) and wait for its exit status."""
        self._close_stdin()
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._fail(f"did not exit within {timeout_s}s")
            raise

    def stop(self) -> None:
        """End the peer whatever its state: stdin closed, then SIGTERM, then SIGKILL."""
        self._close_stdin()
        for signal_peer in (None, self.process.terminate, self.process.kill):
            if signal_peer is not None:
                signal_peer()
            try:
                self.process.wait(_STOP_TIMEOUT_S)
                break
            except subprocess.TimeoutExpired:
                continue
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()

    def stderr_tail(self, lines: int = 20) -> str:
        self._stderr.flush()
        text = self.stderr_path.read_text(errors="replace").strip().splitlines()
        return "\n".join(text[-lines:])

    def _close_stdin(self) -> None:
        stdin = self.process.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                stdin.close()

    def _fail(self, problem: str) -> None:
        pytest.fail(
            f"peer {self.name}: {problem}\nevents: {self.seen[-5:]}\nstderr:\n{self.stderr_tail()}",
            pytrace=False,
        )


class Peers:
    """Starts peers for one test; :meth:`stop_all` ends those still running."""

    def __init__(self, python: Path, log_dir: Path) -> None:
        self.python = python
        self.log_dir = log_dir
        self._started: list[Peer] = []

    def start(self, script: str, *args: object, env: dict[str, str] | None = None) -> Peer:
        peer = Peer(self.python, script, [str(arg) for arg in args], self.log_dir, env)
        self._started.append(peer)
        return peer

    def stop_all(self) -> None:
        for peer in reversed(self._started):
            peer.stop()


def wait_until(
    condition: Callable[[], object], what: str, timeout_s: float = DEFAULT_TIMEOUT_S
) -> None:
    """Poll ``condition`` (1 ms apart) until it is true; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}", pytrace=False)
        time.sleep(0.001)


def free_udp_port() -> int:
    """A UDP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# ---------------------------------------------------------------------------------------------
# Our client's side of an exchange


class OurReceiver:
    """A fragment handler for our subscriptions: reassembles messages and checks them."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier
        self.assembler = FragmentAssembler(self._on_message)

    def _on_message(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        self.verifier.on_message(buffer.get_bytes(offset, length))

    def drain(self, subscription: Subscription, what: str, timeout_s: float = 20.0) -> None:
        """Poll until the verifier has every planned message; fail the test on a timeout."""
        wait_until(
            lambda: subscription.poll(self.assembler, 20) >= 0 and self.verifier.done,
            f"{what}: {self.verifier.summary()}",
            timeout_s,
        )
        assert self.verifier.errors == [], self.verifier.errors


def publish_plan(
    publication: ConcurrentPublication | ExclusivePublication,
    plan: Plan,
    tag: int,
    *,
    claim_every: int = 0,
    between: Callable[[], object] | None = None,
) -> int:
    """Send every message of ``plan`` (every ``claim_every``-th with ``try_claim`` when it fits
    one frame), retrying each while back pressured for at most 10 s; returns the claims made.
    ``between`` runs after every refused offer (to poll a subscription in the same thread)."""
    claim = BufferClaim()
    claims = 0
    for index, message in enumerate(plan.messages(tag)):
        use_claim = (
            claim_every > 0
            and index % claim_every == 0
            and len(message) <= publication.max_payload_length
        )
        deadline = time.monotonic() + 10
        while True:
            if use_claim:
                result = publication.try_claim(len(message), claim)
                if result > 0:
                    claim.put_bytes(message)
                    claim.commit()
                    claims += 1
                    break
            else:
                result = publication.offer(message)
                if result > 0:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"message {index} of tag {tag} refused for 10 s: {result}")
            if between is not None:
                between()
            else:
                time.sleep(0.0001)
    return claims
