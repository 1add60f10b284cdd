"""Fixtures of the system tests: a driver process, spawned workers, and bounded waits.

Every test runs the media driver as its own process (``python -m aeromq driver``, see
:mod:`tests.system._driver`) and its publishers and subscribers as worker processes (or in the
test's own process, which is then just another client). Workers are forked by a fork server, a
fresh interpreter that imported the workers' modules once (a spawned worker spent most of its
start importing them again); each runs in the environment of the test that started it, as a
spawned one would. Workers report on one queue;
:meth:`Workers.expect` takes the next report of a kind, failing the test after a timeout or
when a worker died without reporting. Teardown kills whatever is still running.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Generator, Iterator
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.etcd import EtcdServer
from aeromq.transport.client import Aeron
from aeromq.transport.concurrent.counters_reader import CountersReader
from tests.system._driver import DriverProcess, start_driver
from tests.system._group import BrokerGroup
from tests.system._workers import connect

_FORK_SERVER = multiprocessing.get_context("forkserver")
_FORK_SERVER.set_forkserver_preload(
    ["tests.system.conftest", "tests.system._workers", "tests.system._crowd",
     "tests.broker.data._system"]
)  # fmt: skip

ADMIN_TIMEOUT_S = 30.0
"""The gRPC timeout of the system tests' admin clients. The client's 3 s default failed a
CreateTopic (which fsyncs the topic file and its directory) on a freshly started broker process
of a loaded machine; a dead broker is still caught, by the test's own timeout at the latest."""


def _in_environment(environment: dict[str, str], target: Callable[..., None], *args: Any) -> None:
    """``target(*args)`` in ``environment`` (a forked worker has the fork server's)."""
    os.environ.clear()
    os.environ.update(environment)
    target(*args)


class Workers:
    """Worker processes of one test, their result queue and their events."""

    def __init__(self) -> None:
        self.results: Any = _FORK_SERVER.Queue()
        self.processes: list[BaseProcess] = []
        self._stash: list[tuple[Any, ...]] = []

    def start(self, target: Callable[..., None], *args: Any) -> BaseProcess:
        """Start ``target(*args, results)`` in a new process."""
        process = _FORK_SERVER.Process(
            target=_in_environment,
            args=(dict(os.environ), target, *args, self.results),
            daemon=True,
        )
        process.start()
        self.processes.append(process)
        return process

    @staticmethod
    def event() -> Event:
        return _FORK_SERVER.Event()

    def expect(self, kind: str, timeout_s: float = 30.0) -> tuple[Any, ...]:
        """The next report whose first item is ``kind`` (others are kept for later)."""
        for index, report in enumerate(self._stash):
            if report[0] == kind:
                return self._stash.pop(index)
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"no {kind!r} report within {timeout_s}s (got {self._stash})")
            try:
                report = self.results.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                if self.processes and all(not p.is_alive() for p in self.processes):
                    codes = [p.exitcode for p in self.processes]
                    pytest.fail(
                        f"no {kind!r} report: every worker exited ({codes}, got {self._stash})"
                    )
                continue
            if report[0] == kind:
                return tuple(report)
            self._stash.append(tuple(report))

    def join(self, timeout_s: float = 20.0) -> None:
        """Wait for every worker to exit; kill those that do not."""
        deadline = time.monotonic() + timeout_s
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
        self.kill()

    def kill(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.kill()
                process.join(5)


@pytest.fixture
def driver(shm_dir: Path) -> Iterator[DriverProcess]:
    process = start_driver(shm_dir / "aeron")
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def workers() -> Iterator[Workers]:
    spawned = Workers()
    try:
        yield spawned
    finally:
        spawned.kill()
        spawned.results.close()
        spawned.results.join_thread()


@pytest.fixture
def observer(driver: DriverProcess) -> Iterator[Aeron]:
    """A client of the test's own process: subscribes, publishes or reads counters."""
    with connect(driver.aeron_dir) as aeron:
        yield aeron


def wait_for(condition: Callable[[], object], timeout_s: float = 10.0, what: str = "") -> float:
    """Poll ``condition`` every millisecond until true; return the seconds it took, or fail."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout_s:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what or condition}")
        time.sleep(0.001)
    return time.monotonic() - start


def counter_value(reader: CountersReader, type_id: int, registration_id: int) -> int | None:
    """The value of the counter of ``type_id`` for ``registration_id``; None if there is none."""
    counter_id = reader.find_by_type_id_and_registration_id(type_id, registration_id)
    return None if counter_id < 0 else reader.get_counter_value(counter_id)


_CALL_FAILED = pytest.StashKey[bool]()
_LOG_TAIL_LINES = 40


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Note on the item whether its call failed (the ``group`` fixture's teardown reads it)."""
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


@pytest.fixture
def group(
    request: pytest.FixtureRequest, shm_dir: Path, etcd_server: EtcdServer
) -> Iterator[BrokerGroup]:
    """A broker group (``tests.system._group``) on the etcd of the test's module (a module of
    group tests names its ``etcd_server`` fixture), closed after the test. When the test
    failed, the last lines of etcd's output and of each member's are printed (pytest shows them
    under the failure's captured output): a group that stopped answering says why there."""
    members = BrokerGroup(shm_dir, etcd_server)
    try:
        yield members
    finally:
        if request.node.stash.get(_CALL_FAILED, False):
            _print_tails(members, etcd_server)
        members.close()


def _print_tails(members: BrokerGroup, etcd_server: EtcdServer) -> None:
    print(f"--- etcd {etcd_server.endpoint} (starts={etcd_server.starts}), last lines ---")
    print("\n".join(list(etcd_server.output)[-_LOG_TAIL_LINES:]))
    for member_id, process in sorted(members.members.items()):
        print(f"--- member {member_id}, last lines ---")
        print("\n".join(process.log[-_LOG_TAIL_LINES:]))
