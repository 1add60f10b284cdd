"""The run file a running broker keeps in its data directory: ``broker.json``; and the name of
its stack file there, ``stacks.txt`` (:data:`BROKER_STACKS_FILE`).

One line of JSON with sorted keys: ``aeron_dir`` (its media driver's directory), ``broker_name``,
``grpc`` (the control plane's ``host:port``) and ``pid``. ``aeromq broker`` writes it once the
broker is ready (:func:`write_run_file`, with the store's file mode, through a temporary file
and a rename) and removes it at a graceful stop; tools read it to find a running broker's media
driver (:func:`broker_aeron_dir`: ``aeromq stat --broker DATA_DIR``).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from aeromq.broker._errors import BrokerError

if TYPE_CHECKING:
    from aeromq.broker.config import BrokerConfig

__all__ = ["BROKER_RUN_FILE", "BROKER_STACKS_FILE", "broker_aeron_dir", "write_run_file"]

BROKER_RUN_FILE: Final = "broker.json"
"""The run file's name in the data directory."""
BROKER_STACKS_FILE: Final = "stacks.txt"
"""The file in the data directory that ``aeromq broker`` appends every thread's stack to at
SIGQUIT; :meth:`~broker.testing.ServerProcess.stop` reads it from a broker that would not stop."""

_LOG = logging.getLogger(__name__)


def write_run_file(config: BrokerConfig, grpc_address: str, aeron_dir: str) -> Path | None:
    """Write ``broker.json`` into ``config.data_dir`` for this process; its path. None when it
    cannot be written (a full disk): the broker serves all the same, with one warning."""
    path = Path(config.data_dir) / BROKER_RUN_FILE
    run = {
        "pid": os.getpid(),
        "broker_name": config.broker_name,
        "grpc": grpc_address,
        "aeron_dir": aeron_dir,
    }
    temporary = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, config.file_mode)
        with open(fd, "w", encoding="utf-8") as out:
            os.fchmod(fd, config.file_mode)
            out.write(json.dumps(run, sort_keys=True) + "\n")
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        _LOG.warning("cannot write the run file, tools will not find this broker: %s", exc)
        return None
    return path


def broker_aeron_dir(data_dir: str) -> str:
    """The aeron directory of the broker running with ``data_dir`` (``~`` expanded), from its
    ``broker.json``. Raises :class:`~broker.BrokerError` naming the file when there is none or
    it is bad."""
    path = os.path.join(os.path.expanduser(data_dir), BROKER_RUN_FILE)
    try:
        with open(path, encoding="utf-8") as file:
            run = json.load(file)
        aeron_dir = run["aeron_dir"]
    except OSError as exc:
        raise BrokerError(
            "no running broker found (is one running with this data dir?)",
            path=path,
            reason=exc.strerror or str(exc),
        ) from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise BrokerError("unreadable broker run file", path=path, reason=str(exc)) from exc
    if not isinstance(aeron_dir, str) or not aeron_dir:
        raise BrokerError("broker run file names no aeron_dir", path=path)
    return aeron_dir
