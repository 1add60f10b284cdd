"""A broker's id: made at its store's first start, kept in the store, reported in routes.

Clients tell brokers apart by more than their name (a name is unique only within one cluster,
and every deployment's first broker is ``broker-a``): a route's ``BrokerEndpoints.broker_id``
says which store answers there. A restarted broker keeps its id (the same store, the same
offsets); a broker started afresh at the same address (a new store) has another, so a client's
caches of the old one (a session, mappings of its commit log files) are not taken for it.

The id is 32 hex digits (128 random bits) in the file :data:`BROKER_ID_FILE` of the data
directory, written once with the store's file mode (``write_atomically``: a temporary file
fsynced and renamed into place, then the directory fsynced).

Caller: ``Broker.start`` (``broker/broker.py``), after the store started.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Final

from aeromq.broker._errors import StoreError
from aeromq.broker.store import write_atomically

__all__ = ["BROKER_ID_FILE", "load_or_create_broker_id"]

BROKER_ID_FILE: Final = "broker_id"
_ID_LENGTH: Final = 32


def load_or_create_broker_id(data_dir: Path, file_mode: int) -> str:
    """The id kept in ``data_dir``, made and kept there first (a file of ``file_mode``) if
    there is none. Raises :class:`~broker.StoreError` when the file holds something else than
    an id."""
    path = Path(data_dir) / BROKER_ID_FILE
    try:
        found = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        made = secrets.token_hex(_ID_LENGTH // 2)
        write_atomically(path, f"{made}\n".encode("ascii"), mode=file_mode)
        return made
    if len(found) != _ID_LENGTH or any(c not in "0123456789abcdef" for c in found):
        raise StoreError("the broker id file holds no id", path=str(path), found=found[:64])
    return found
