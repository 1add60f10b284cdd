"""The child guard of ``cluster up`` (``aeromq/_cli/child_guard.py``): a guarded program runs
as itself, with its arguments and environment; one whose parent is already gone does not run;
the etcd script passes its own arguments on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aeromq._cli.child_guard import guarded, write_guard_script

PRINT = "import os, sys; print(os.getpid(), sys.argv[1:], os.environ['GUARD_TEST'])"


def test_should_become_the_program_with_its_arguments_and_environment() -> None:
    command = guarded([sys.executable, "-c", PRINT, "a", "b c"])
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env={**os.environ, "GUARD_TEST": "kept"}
    )
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert out.split(maxsplit=1) == [str(process.pid), "['a', 'b c'] kept\n"]


def test_should_not_run_a_program_whose_parent_is_gone() -> None:
    command = guarded([sys.executable, "-c", PRINT])
    command[command.index(str(os.getpid()))] = "1"  # not its parent: it died first
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert done.returncode == 70 and done.stdout == ""


def test_should_write_a_script_that_runs_a_program_guarded(tmp_path: Path) -> None:
    program = tmp_path / "program"
    program.write_text(f"#!{sys.executable}\n{PRINT}\n")
    program.chmod(0o755)
    script = write_guard_script(tmp_path / "guard", str(program))
    done = subprocess.run(
        [str(script), "x"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "GUARD_TEST": "kept"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(maxsplit=1)[1] == "['x'] kept\n"
