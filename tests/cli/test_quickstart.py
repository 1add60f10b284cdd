from __future__ import annotations

import subprocess
import sys


def test_should_run_the_main_job_end_to_end_and_report_ok() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aeromq", "quickstart", "--messages", "2000"],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "consumed:  2,000 distinct messages" in done.stdout
    assert "0 corrupt" in done.stdout
    assert "result:    OK" in done.stdout


def test_should_reject_bad_arguments_with_usage() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aeromq", "quickstart", "--messages", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "need --messages > 0" in done.stderr


def test_should_name_an_unknown_subcommand() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aeromq", "nope"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown subcommand 'nope'" in done.stderr
