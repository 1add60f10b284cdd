"""Children that die with the process that started them: ``aeromq cluster up``'s etcd and
brokers run in sessions of their own (so that Ctrl-C reaches only ``cluster up``, which stops
them in order), and would outlive a ``cluster up`` killed with SIGKILL.

A guarded child is started through this file run as a script, before the program itself::

    python -I -S child_guard.py PARENT_PID PROGRAM [ARG...]

It asks the kernel for SIGTERM when its parent dies (``prctl(PR_SET_PDEATHSIG, SIGTERM)``, which
an ``execve`` keeps), exits at once when its parent is already gone (``getppid()`` is not
``PARENT_PID``: it died before the request), and becomes ``PROGRAM`` (``execv``: same pid, same
environment). No ``preexec_fn`` (unsafe in a process with threads) and nothing of aeromq is
imported: the script costs one bare interpreter start (``-I -S``). On a system without
``prctl`` the program runs unguarded.

The parent is the *thread* that started the child (the kernel's rule): start guarded children
from a thread that lives as long as they should (``cluster up``'s main thread, its watcher).

- :func:`guarded`: the command line that starts ``command`` guarded;
- :func:`write_guard_script`: an executable file that runs one program guarded, for a caller
  that takes a program's path only (``EtcdServer(binary=...)``).

Caller: ``cluster_runner.LocalCluster`` (its members and its etcd).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["guarded", "write_guard_script"]

_PR_SET_PDEATHSIG = 1
"""``<linux/prctl.h>``: the signal a process gets when its parent dies."""
_GUARD_EXIT = 70
"""The exit code when the parent died before the guard asked for its signal."""


def guarded(command: Sequence[str]) -> list[str]:
    """``command`` (a program and its arguments) started through the guard, this process its
    parent: it gets SIGTERM when this process (the calling thread) dies."""
    return [sys.executable, "-I", "-S", __file__, str(os.getpid()), *command]


def write_guard_script(path: Path, program: str) -> Path:
    """Write an executable script at ``path`` that runs ``program`` with its own arguments,
    guarded, this process its parent (written again by each process that starts it)."""
    path.write_text(
        f"#!{sys.executable} -IS\n"
        "import runpy, sys\n"
        f"sys.argv[1:1] = [{str(os.getpid())!r}, {program!r}]\n"
        f"runpy.run_path({__file__!r}, run_name='__main__')\n"
    )
    path.chmod(0o755)
    return path


def _guard(argv: Sequence[str]) -> None:
    """The script: ``PARENT_PID PROGRAM [ARG...]`` (see module)."""
    parent, program = int(argv[0]), argv[1]
    if sys.platform == "linux":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        sys.exit(_GUARD_EXIT)  # the parent died first: no one would stop the program
    os.execv(program, [program, *argv[2:]])


if __name__ == "__main__":
    _guard(sys.argv[1:])
