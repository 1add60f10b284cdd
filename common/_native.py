"""Which of aeromq's native helpers are built.

``pip install`` compiles eight small C extensions (see ``setup.py``). Each has a Python version
beside it, the reference its tests hold it to, which runs when the module is not built (a source
checkout used without ``pip install``): everything works, several times slower on the data
path. :func:`missing_native_modules` says which are missing, so that a broker (its startup
warning) and the benchmarks (a line before their results) do not run on the fallbacks
unnoticed.
"""

from __future__ import annotations

import importlib
from typing import Final

__all__ = ["NATIVE_MODULES", "missing_native_modules"]

NATIVE_MODULES: Final = (
    "aeromq.transport.concurrent._atomic",
    "aeromq.transport.logbuffer._gather",
    "aeromq.transport.logbuffer._term_io",
    "aeromq.common.record_batch._native",
    "aeromq.broker.store._batch_take",
    "aeromq.broker.store._put_one",
    "aeromq.broker.store._index_put",
    "aeromq.transport.driver.udp._datagram",
)
"""The native helpers, by module name (their sources: the same path with ``.c``; the record
batch's has one file per role beside it)."""


def missing_native_modules() -> list[str]:
    """The names of :data:`NATIVE_MODULES` that cannot be imported (not built)."""
    missing = []
    for name in NATIVE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing
