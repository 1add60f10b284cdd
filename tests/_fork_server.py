"""Children for crash tests without an interpreter's start-up each: a server process imports the
modules once, then forks one child per request, which runs a module as ``python -m`` would.

A crash test that starts ``python -m tests...._child`` once per kill paid a new interpreter and
its imports of the broker (over a second of CPU, several on a loaded machine) for every child;
what it checks starts after them. The server is single-threaded, so its forks are safe; each
child runs the module's ``__main__`` code with its ``argv`` and its stdout on a file of the
test's, and is reaped by the server, which reports how it ended::

    with ForkServer("tests.broker.store._crash_child") as server:
        child = server.start("tests.broker.store._crash_child", [data_dir, "1"], out_path)
        child.kill()
        assert child.wait() == -signal.SIGKILL

Run as ``python -m tests._fork_server MODULE...``: one request a line on stdin (JSON: module,
argv, stdout path), answered ``P <pid>`` once forked and ``X <returncode>`` once reaped (minus
the signal's number when a signal ended it, as ``subprocess`` says).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType

__all__ = ["ForkServer", "ForkedChild"]

_REPO_ROOT = Path(__file__).resolve().parents[1]
_PR_SET_PDEATHSIG = 1


class ForkedChild:
    """One child of a :class:`ForkServer`: its pid, killed by the test, reaped by the server."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self._server = server
        self.pid = pid
        self.returncode: int | None = None

    def kill(self) -> None:
        """SIGKILL it (nothing when it has been reaped)."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # a zombie takes it: never raised
                os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        """Its return code once it has ended (minus the signal's number for a signal)."""
        if self.returncode is None:
            self.returncode = self._server._reaped()
        return self.returncode


class ForkServer:
    """The server process, with ``modules`` imported; one child at a time."""

    def __init__(self, *modules: str) -> None:
        paths = [str(_REPO_ROOT), os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in paths if path))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests._fork_server", *modules],
            cwd=_REPO_ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def start(self, module: str, argv: list[str], stdout: Path | None = None) -> ForkedChild:
        """Fork a child that runs ``module`` as ``python -m module *argv`` would, its stdout on
        ``stdout`` (else /dev/null)."""
        request = {
            "module": module,
            "argv": argv,
            "stdout": None if stdout is None else str(stdout),
        }
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        return ForkedChild(self, int(self._answer("P")))

    def _answer(self, kind: str) -> str:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        assert line.startswith(kind + " "), f"the fork server answered {line!r}, not {kind}"
        return line[2:].strip()

    def _reaped(self) -> int:
        return int(self._answer("X"))

    def close(self) -> None:
        """End the server (its stdin closed) and wait for it."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(30)
        finally:
            if self._process.stdout is not None:
                self._process.stdout.close()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _run_child(module: str, argv: list[str], stdout: str | None) -> None:
    """In the forked child: stdout on its file, then the module as ``__main__``; never
    returns."""
    code = 0
    try:
        _die_with_parent()
        target = os.open(stdout or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(target, 1)
        os.close(target)
        sys.argv = [module, *argv]
        sys.modules.pop(module, None)  # imported by the server: run afresh, as python -m does
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # a failing child says so on stderr, as python -m does
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _die_with_parent() -> None:
    """SIGKILL this process when its parent ends (Linux): a test that dies leaves neither the
    server nor a child of it running (an epoch child appends until killed)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _serve(modules: list[str]) -> None:
    _die_with_parent()
    for module in modules:
        importlib.import_module(module)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_child(request["module"], request["argv"], request["stdout"])
        print(f"P {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"X {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    _serve(sys.argv[1:])
