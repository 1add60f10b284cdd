"""Fixtures of the interop tests: the pyaeron environment, its peers, and both media drivers.

``pyaeron_python`` finds a CPython 3.12 and the cached pyaeron environment once per session
(:mod:`transport.testing.py312`; creating it takes a few seconds, once). Without a 3.12 the
tests skip with one line saying why, unless ``AEROMQ_REQUIRE_INTEROP=1``, which turns that skip
into a failure (CI sets it: there the interpreter exists and the tests must run).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.transport.driver import MediaDriver, MediaDriverContext

from ._harness import Peer, Peers, pyaeron_python_or_skip

MS = 1_000_000
TERM_LENGTH = 64 * 1024
MTU = 1408


@pytest.fixture(scope="session")
def pyaeron_python() -> Path:
    """The python of the pyaeron environment (created on first use), or a skip saying why."""
    return pyaeron_python_or_skip()


@pytest.fixture
def peers(pyaeron_python: Path, tmp_path: Path) -> Iterator[Peers]:
    running = Peers(pyaeron_python, tmp_path)
    try:
        yield running
    finally:
        running.stop_all()


def our_driver_context(aeron_dir: Path) -> MediaDriverContext:
    return MediaDriverContext(
        aeron_dir=str(aeron_dir),
        term_buffer_length=TERM_LENGTH,
        ipc_term_buffer_length=TERM_LENGTH,
        mtu_length=MTU,
        to_driver_buffer_length=256 * 1024 + 768,
        to_clients_buffer_length=256 * 1024 + 128,
        counters_values_buffer_length=64 * 1024,
        error_buffer_length=64 * 1024,
        timer_interval_ns=10 * MS,
        publication_linger_timeout_ns=200 * MS,
        conductor_idle_strategy="sleep-ms:1",
    )


@pytest.fixture
def our_driver(shm_dir: Path) -> Iterator[MediaDriver]:
    """aeromq's media driver, in this process, in a fresh directory."""
    driver = MediaDriver.launch(our_driver_context(shm_dir / "aeromq"))
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture
def real_driver(peers: Peers, shm_dir: Path) -> Iterator[Peer]:
    """The real Aeron C media driver in a peer process; its ``dir`` is ``shm_dir / "aeron"``."""
    peer = peers.start(
        "real_driver.py",
        shm_dir / "aeron",
        "--term-length",
        TERM_LENGTH,
        "--ipc-term-length",
        TERM_LENGTH,
        "--mtu",
        MTU,
        env={"AERON_PUBLICATION_LINGER_TIMEOUT": "200ms"},
    )
    peer.expect("ready")
    yield peer
    peer.send("stop")
    peer.expect("stopped")
