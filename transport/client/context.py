"""``AeronContext``: the typed, validated configuration of an Aeron client.

Defaults are Aeron's (``Aeron.Context``), and the directory is found as Aeron finds it: the
``AERON_DIR`` environment variable, else ``/dev/shm/aeron-<user>`` where ``/dev/shm`` exists,
else ``<tempdir>/aeron-<user>``. A bad value raises :class:`~transport.ConfigurationError`
naming the field, the value and the rule. Contexts are immutable; derive one with
``dataclasses.replace(ctx, field=value)``.

=============================  ==========  ==================================================
field                          default     meaning
=============================  ==========  ==================================================
aeron_dir                      see above   where the driver's cnc.dat is
driver_timeout_ms              10 000      driver silent this long: ``DriverTimeoutError``
keep_alive_interval_ns         500 ms      how often the client heartbeat counter is stamped
resource_linger_duration_ns    3 s         released log buffers stay mapped this long
close_linger_duration_ns       0           extra wait in ``close`` before unmapping logs
inter_service_timeout_ns       0           conductor not run this long: the client closes
                                           (0: the driver's client liveness timeout)
idle_sleep_duration_ns         16 ms       the conductor thread's sleep when idle
use_conductor_agent_invoker    False       run the conductor on the caller's thread
=============================  ==========  ==================================================
"""

from __future__ import annotations

import getpass
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent.clock import (
    EpochClock,
    NanoClock,
    SystemEpochClock,
    SystemNanoClock,
)
from aeromq.transport.concurrent.idle_strategy import IdleStrategy

if TYPE_CHECKING:
    from aeromq.transport.client.image import Image

__all__ = [
    "AERON_DIR_ENV",
    "AeronContext",
    "ClientErrorHandler",
    "ImageHandler",
    "default_aeron_dir",
    "log_error",
]

AERON_DIR_ENV = "AERON_DIR"

ClientErrorHandler: TypeAlias = Callable[[BaseException], object]
"""Receives errors the client meets off the caller's thread (driver timeout, client timeout,
a handler that raised, an asynchronous command the driver refused, ...)."""

ImageHandler: TypeAlias = "Callable[[Image], object]"
"""Called on the conductor's thread when an image becomes available or unavailable."""

_MS = 1_000_000
_LOGGER = logging.getLogger(__name__)


def default_aeron_dir() -> str:
    """``$AERON_DIR``, else ``/dev/shm/aeron-<user>`` (or under the temp dir without /dev/shm)."""
    from_env = os.environ.get(AERON_DIR_ENV)
    if from_env:
        return from_env
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "default"
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(base, f"aeron-{user}")


def log_error(error: BaseException) -> None:
    """The default error handler: log the error with its traceback."""
    _LOGGER.error("aeron client error: %s", error, exc_info=error)


@dataclass(frozen=True, kw_only=True)
class AeronContext:
    """Configuration of one :class:`~transport.client.Aeron` client (see module)."""

    aeron_dir: str = field(default_factory=default_aeron_dir)
    driver_timeout_ms: int = 10_000
    keep_alive_interval_ns: int = 500 * _MS
    resource_linger_duration_ns: int = 3_000 * _MS
    close_linger_duration_ns: int = 0
    inter_service_timeout_ns: int = 0
    idle_sleep_duration_ns: int = 16 * _MS
    error_handler: ClientErrorHandler = log_error
    available_image_handler: ImageHandler | None = None
    unavailable_image_handler: ImageHandler | None = None
    use_conductor_agent_invoker: bool = False
    idle_strategy: IdleStrategy | None = None
    """The conductor thread's idle strategy; default: sleep ``idle_sleep_duration_ns``."""
    epoch_clock: EpochClock = field(default_factory=SystemEpochClock)
    nano_clock: NanoClock = field(default_factory=SystemNanoClock)

    def __post_init__(self) -> None:
        if not isinstance(self.aeron_dir, str) or not self.aeron_dir:
            _reject("aeron_dir", self.aeron_dir, "a non-empty path")
        _positive("driver_timeout_ms", self.driver_timeout_ms)
        _positive("keep_alive_interval_ns", self.keep_alive_interval_ns)
        _positive("idle_sleep_duration_ns", self.idle_sleep_duration_ns)
        _not_negative("resource_linger_duration_ns", self.resource_linger_duration_ns)
        _not_negative("close_linger_duration_ns", self.close_linger_duration_ns)
        _not_negative("inter_service_timeout_ns", self.inter_service_timeout_ns)
        if 0 < self.inter_service_timeout_ns <= self.keep_alive_interval_ns:
            _reject(
                "inter_service_timeout_ns",
                self.inter_service_timeout_ns,
                "0, or more than keep_alive_interval_ns",
            )
        for name in ("error_handler", "epoch_clock", "nano_clock"):
            if getattr(self, name) is None:
                _reject(name, None, "not None")
        for name in ("available_image_handler", "unavailable_image_handler", "error_handler"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                _reject(name, value, "callable")

    @property
    def driver_timeout_ns(self) -> int:
        """``driver_timeout_ms`` in nanoseconds."""
        return self.driver_timeout_ms * _MS


def _reject(name: str, value: object, rule: str) -> None:
    raise ConfigurationError("bad Aeron client setting", field=name, value=value, rule=rule)


def _positive(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        _reject(name, value, "a positive integer")


def _not_negative(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        _reject(name, value, "an integer >= 0")
