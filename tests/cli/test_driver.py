"""The standalone driver (``aeromq driver``) in its own process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq._cli.driver import main
from aeromq.transport import ActiveDriverError
from aeromq.transport.command import ON_AVAILABLE_IMAGE, ON_PUBLICATION_READY
from aeromq.transport.driver import MediaDriver, MediaDriverContext
from aeromq.transport.testing.driver_client import DriverClient
from tests.transport.driver.support import wait_until

_ARGS = [
    "--ipc-term-length",
    "64k",
    "--timer-interval",
    "10ms",
    "--idle-strategy",
    "sleep-ms:1",
]


def _start(aeron_dir: Path, *extra: str) -> subprocess.Popen[str]:
    """Start a driver process and wait for its ready line (killing it if it does not come)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "aeromq", "driver", "--dir", str(aeron_dir), *_ARGS, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith(f"media driver ready: aeron_dir={aeron_dir} pid={process.pid}"):
        _stop(process)
        pytest.fail(f"driver did not start: {line!r}")
    return process


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(10)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


@pytest.fixture
def driver_process(shm_dir: Path) -> Iterator[subprocess.Popen[str]]:
    process = _start(shm_dir / "aeron", "--dir-delete-on-shutdown", "--allow-termination")
    try:
        yield process
    finally:
        _stop(process)


def test_should_serve_clients_of_another_process(
    shm_dir: Path, driver_process: subprocess.Popen[str]
) -> None:
    with DriverClient(str(shm_dir / "aeron")) as client:
        publication = client.await_correlated(client.add_publication("aeron:ipc", 10))
        assert publication.type_id == ON_PUBLICATION_READY
        subscription_id = client.add_subscription("aeron:ipc", 10)
        image = client.await_response(ON_AVAILABLE_IMAGE).message
        assert image.subscriber_registration_id == subscription_id
        assert client.cnc.pid == driver_process.pid


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_should_stop_cleanly_on_a_signal(
    shm_dir: Path, driver_process: subprocess.Popen[str], signum: int
) -> None:
    aeron_dir = shm_dir / "aeron"
    with DriverClient(str(aeron_dir)) as client:
        client.await_correlated(client.add_publication("aeron:ipc", 10))
    driver_process.send_signal(signum)
    assert driver_process.wait(10) == 0
    assert driver_process.stdout is not None
    assert "stopped by a signal" in driver_process.stdout.read()
    assert not aeron_dir.exists()


def test_should_stop_on_an_accepted_terminate_driver(
    shm_dir: Path, driver_process: subprocess.Popen[str]
) -> None:
    with DriverClient(str(shm_dir / "aeron")) as client:
        client.terminate_driver()
        assert driver_process.wait(10) == 0
    assert driver_process.stdout is not None
    assert "terminated by a client" in driver_process.stdout.read()


def test_should_refuse_to_start_over_a_live_driver_process(
    shm_dir: Path, driver_process: subprocess.Popen[str]
) -> None:
    second = subprocess.run(
        [sys.executable, "-m", "aeromq", "driver", "--dir", str(shm_dir / "aeron"), *_ARGS],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 1
    assert "active media driver found" in second.stderr
    assert "heartbeat_age_ms=" in second.stderr
    with pytest.raises(ActiveDriverError):
        MediaDriver.launch(MediaDriverContext(aeron_dir=str(shm_dir / "aeron")))


def test_should_refuse_a_bad_option_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["--term-length", "lots"])
    assert raised.value.code == 2
    assert "term-length" in capsys.readouterr().err


def test_should_refuse_an_invalid_context_with_exit_code_2(
    shm_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--dir", str(shm_dir / "x"), "--term-length", "1000"]) == 2
    assert "term_buffer_length" in capsys.readouterr().err


def test_should_run_in_process_until_terminated(shm_dir: Path) -> None:
    import threading

    aeron_dir = shm_dir / "inproc"
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(_run_main(aeron_dir)))
    thread.start()
    try:
        wait_until(lambda: (aeron_dir / "cnc.dat").exists(), what="the driver to start")
        with DriverClient(str(aeron_dir)) as client:
            client.terminate_driver()
    finally:
        thread.join(10)
    assert codes == [0]
    wait_until(lambda: not aeron_dir.exists(), what="the dir to be deleted")


def _run_main(aeron_dir: Path) -> int:
    original = signal.signal
    try:
        signal.signal = lambda signum, handler: signal.SIG_DFL  # type: ignore[assignment]
        return main(
            ["--dir", str(aeron_dir), *_ARGS, "--dir-delete-on-shutdown", "--allow-termination"]
        )
    finally:
        signal.signal = original
