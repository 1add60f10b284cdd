"""``MediaDriverContext``: the media driver's typed, validated configuration.

Aeron's ``MediaDriver.Context`` / ``aeron_driver_context_t`` for what this driver does. Every
field has Aeron's default and unit in its name. Construction validates every field and raises
:class:`~transport.ConfigurationError` naming the field, the value and the rule; the context is
frozen afterwards (derive a changed one with :func:`dataclasses.replace`).

:meth:`MediaDriverContext.from_env` reads Aeron's environment variables (``AERON_DIR``,
``AERON_TERM_BUFFER_LENGTH``, ``AERON_CLIENT_LIVENESS_TIMEOUT``, ...; see ``ENV_VARS``) with
Aeron's value syntax (sizes ``64k``, durations ``10s`` / ``500ms`` / bare ns, booleans), then
applies explicit overrides on top. The plain constructor ignores the environment except for the
default ``aeron_dir``, which honours ``AERON_DIR`` as Aeron's does.

Threading modes (Aeron's), for the conductor and the UDP sender and receiver agents:
``DEDICATED`` gives each its own thread, ``SHARED_NETWORK`` runs the sender and receiver on one
thread beside the conductor's, ``SHARED`` runs all three composed on one thread, and
``INVOKER`` runs no thread and gives the caller an invoker of all three. The UDP settings (socket
buffers, windows, NAK and retransmit timing, the network agents' idle strategies) are the
nested :class:`~transport.driver.udp.udp_settings.UdpSettings` in ``udp``, read from Aeron's
environment variables too.

``file_mode`` (not Aeron's: ``0o600`` by default) is the permission bits of ``cnc.dat`` and every
log buffer; the driver's directories get an execute bit beside each read bit (``0o700``).
"""

from __future__ import annotations

import enum
import getpass
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent.clock import (
    EpochClock,
    NanoClock,
    SystemEpochClock,
    SystemNanoClock,
)
from aeromq.transport.concurrent.counters_descriptor import COUNTER_LENGTH
from aeromq.transport.concurrent.idle_strategy import IdleStrategy, idle_strategy_from_name
from aeromq.transport.driver._values import parse_bool, parse_duration_ns, parse_int32, parse_size
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HDR_LENGTH
from aeromq.transport.logbuffer.log_buffer_descriptor import check_page_size, check_term_length

__all__ = [
    "ENV_VARS",
    "MAX_UDP_PAYLOAD_LENGTH",
    "MediaDriverContext",
    "TerminationValidator",
    "ThreadingMode",
    "allow_termination",
    "check_mtu_length",
    "default_aeron_dir",
    "deny_termination",
]

_V = TypeVar("_V")

MAX_UDP_PAYLOAD_LENGTH = 65504
"""The largest MTU Aeron accepts (a UDP payload over IPv4 minus headers, frame aligned)."""

_MIB = 1024 * 1024
_BROADCAST_TRAILER_LENGTH = 128
_RING_TRAILER_LENGTH = 768
_SYSTEM_COUNTER_COUNT = 46

TerminationValidator = Callable[[bytes], bool]
"""Decides whether a TERMINATE_DRIVER command with this token may stop the driver."""


def deny_termination(token: bytes) -> bool:
    """Aeron's default validator: no client may terminate the driver."""
    return False


def allow_termination(token: bytes) -> bool:
    """Any client may terminate the driver (for tests and tooling, as Aeron's ``allow``)."""
    return True


class ThreadingMode(enum.Enum):
    """How the driver's agents map onto threads (Aeron's names)."""

    DEDICATED = "DEDICATED"
    SHARED_NETWORK = "SHARED_NETWORK"
    SHARED = "SHARED"
    INVOKER = "INVOKER"


def default_aeron_dir() -> str:
    """``$AERON_DIR``, else ``/dev/shm/aeron-<user>`` where /dev/shm exists, else the temp dir."""
    from_env = os.environ.get("AERON_DIR")
    if from_env:
        return from_env
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "default"
    root = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(root, f"aeron-{user}")


@dataclass(frozen=True, kw_only=True)
class MediaDriverContext:
    """The media driver's configuration (see module). All times carry their unit."""

    aeron_dir: str = field(default_factory=default_aeron_dir)
    dir_delete_on_start: bool = False
    dir_delete_on_shutdown: bool = False
    term_buffer_length: int = 16 * _MIB
    ipc_term_buffer_length: int = 64 * _MIB
    mtu_length: int = 1408
    ipc_mtu_length: int = 1408
    file_page_size: int = 4096
    term_buffer_sparse_file: bool = False
    perform_storage_checks: bool = True
    file_mode: int = 0o600
    """Permission bits of cnc.dat and the log buffers; directories get x beside each r."""
    publication_term_window_length: int = 0
    """0: half the term length. Otherwise the smaller of this and half the term."""
    ipc_publication_term_window_length: int = 0
    client_liveness_timeout_ns: int = 10_000_000_000
    publication_unblock_timeout_ns: int = 15_000_000_000
    publication_linger_timeout_ns: int = 5_000_000_000
    untethered_window_limit_timeout_ns: int = 5_000_000_000
    untethered_resting_timeout_ns: int = 10_000_000_000
    tether_subscriptions: bool = True
    timer_interval_ns: int = 1_000_000_000
    counter_free_to_reuse_timeout_ns: int = 1_000_000_000
    driver_timeout_ms: int = 10_000
    conductor_cycle_threshold_ns: int = 100_000_000
    to_driver_buffer_length: int = _MIB + _RING_TRAILER_LENGTH
    to_clients_buffer_length: int = _MIB + _BROADCAST_TRAILER_LENGTH
    counters_values_buffer_length: int = _MIB
    error_buffer_length: int = _MIB
    publication_reserved_session_id_low: int = -1
    publication_reserved_session_id_high: int = 1000
    threading_mode: ThreadingMode = ThreadingMode.DEDICATED
    conductor_idle_strategy: str = "backoff"
    shared_idle_strategy: str = "backoff"
    park_when_settled: bool = False
    """Not Aeron's: a network thread whose idle strategy is a backoff parks its longest at once
    while its sender and receiver owe nothing soon (:meth:`MediaDriver.launch`'s module): for a
    driver whose publishers all wake it (an embedded one), never for one that serves other
    processes' publications, whose offers end no park."""
    park_until_due: bool = False
    """Not Aeron's: in ``SHARED`` threading mode, a driver that streams nothing (no publication,
    no image) parks until its conductor's next timer (up to ``timer_interval_ns``) once its
    backoff reaches its longest park, rather than waking at that park's period: clients of this
    package wake it for their commands (a datagram to its wake socket,
    :mod:`~transport.concurrent.wake_socket`); other clients' commands wait for the timer. For
    an embedded driver whose clients are this package's (a broker's), never for one that serves
    Aeron's own clients."""
    udp: UdpSettings = field(default_factory=UdpSettings)
    termination_validator: TerminationValidator = deny_termination
    termination_hook: Callable[[], object] | None = None
    epoch_clock: EpochClock = field(default_factory=SystemEpochClock, compare=False)
    nano_clock: NanoClock = field(default_factory=SystemNanoClock, compare=False)

    def __post_init__(self) -> None:
        self._validate()

    # ----------------------------------------------------------------------------------------
    # Derived values

    @property
    def counters_metadata_buffer_length(self) -> int:
        """Four metadata bytes per value byte (512-byte records for 128-byte values)."""
        return self.counters_values_buffer_length * 4

    @property
    def counter_free_to_reuse_timeout_ms(self) -> int:
        """As Aeron rounds it: 0 stays 0, anything positive is at least 1 ms."""
        if self.counter_free_to_reuse_timeout_ns <= 0:
            return 0
        return max(1, self.counter_free_to_reuse_timeout_ns // 1_000_000)

    def cnc_file_path(self) -> str:
        """``<aeron_dir>/cnc.dat``: the file the driver creates and clients map."""
        return os.path.join(self.aeron_dir, "cnc.dat")

    def publications_dir(self) -> str:
        """``<aeron_dir>/publications``: the log files of IPC and UDP publications."""
        return os.path.join(self.aeron_dir, "publications")

    def images_dir(self) -> str:
        """``<aeron_dir>/images``: the log files of images rebuilt from UDP."""
        return os.path.join(self.aeron_dir, "images")

    def new_conductor_idle_strategy(self) -> IdleStrategy:
        """A fresh idle strategy for the conductor's thread.

        ``shared_idle_strategy`` in SHARED mode (one thread for all agents), else
        ``conductor_idle_strategy``.
        """
        name = (
            self.shared_idle_strategy
            if self.threading_mode is ThreadingMode.SHARED
            else self.conductor_idle_strategy
        )
        return idle_strategy_from_name(name)

    def new_sender_idle_strategy(self) -> IdleStrategy:
        """A fresh idle strategy for the sender's thread (DEDICATED mode)."""
        return idle_strategy_from_name(self.udp.sender_idle_strategy)

    def new_receiver_idle_strategy(self) -> IdleStrategy:
        """A fresh idle strategy for the receiver's thread (DEDICATED mode)."""
        return idle_strategy_from_name(self.udp.receiver_idle_strategy)

    def new_shared_network_idle_strategy(self) -> IdleStrategy:
        """A fresh idle strategy for the sender and receiver's one thread (SHARED_NETWORK)."""
        return idle_strategy_from_name(self.udp.shared_network_idle_strategy)

    # ----------------------------------------------------------------------------------------
    # Environment

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> MediaDriverContext:
        """Defaults, then Aeron's environment variables, then ``overrides``."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, (field_name, parse) in ENV_VARS.items():
            text = env.get(name)
            if text is not None and text != "":
                values[field_name] = parse(name, text)
        values["udp"] = UdpSettings.from_env(env)
        values.update(overrides)
        return cls(**values)

    # ----------------------------------------------------------------------------------------
    # Validation

    def _validate(self) -> None:
        if not self.aeron_dir:
            _fail("aeron_dir", self.aeron_dir, "must not be empty")
        for name in ("term_buffer_length", "ipc_term_buffer_length"):
            _check(name, getattr(self, name), check_term_length)
        _check("file_page_size", self.file_page_size, check_page_size)
        if not isinstance(self.file_mode, int) or not 0o600 <= self.file_mode <= 0o777:
            _fail("file_mode", self.file_mode, "must be 0o600..0o777 (the owner reads and writes)")
        elif self.file_mode & 0o600 != 0o600:
            _fail("file_mode", self.file_mode, "the owner must read and write")
        for name in ("mtu_length", "ipc_mtu_length"):
            check_mtu_length(name, getattr(self, name))
        for name in ("publication_term_window_length", "ipc_publication_term_window_length"):
            if getattr(self, name) < 0:
                _fail(name, getattr(self, name), "must not be negative")
        for name in (
            "client_liveness_timeout_ns",
            "publication_unblock_timeout_ns",
            "timer_interval_ns",
            "driver_timeout_ms",
            "conductor_cycle_threshold_ns",
            "untethered_window_limit_timeout_ns",
            "untethered_resting_timeout_ns",
        ):
            if getattr(self, name) <= 0:
                _fail(name, getattr(self, name), "must be positive")
        for name in ("publication_linger_timeout_ns", "counter_free_to_reuse_timeout_ns"):
            if getattr(self, name) < 0:
                _fail(name, getattr(self, name), "must not be negative")
        if self.publication_unblock_timeout_ns <= self.client_liveness_timeout_ns:
            raise ConfigurationError(
                "publication_unblock_timeout_ns must be greater than client_liveness_timeout_ns",
                publication_unblock_timeout_ns=self.publication_unblock_timeout_ns,
                client_liveness_timeout_ns=self.client_liveness_timeout_ns,
            )
        _check_trailed_power_of_two(
            "to_driver_buffer_length", self.to_driver_buffer_length, _RING_TRAILER_LENGTH
        )
        _check_trailed_power_of_two(
            "to_clients_buffer_length", self.to_clients_buffer_length, _BROADCAST_TRAILER_LENGTH
        )
        values_length = self.counters_values_buffer_length
        if values_length % COUNTER_LENGTH or values_length < _SYSTEM_COUNTER_COUNT * COUNTER_LENGTH:
            _fail(
                "counters_values_buffer_length",
                values_length,
                f"must be a multiple of {COUNTER_LENGTH} holding at least "
                f"{_SYSTEM_COUNTER_COUNT} counters",
            )
        if self.error_buffer_length < 1024 or self.error_buffer_length % 8:
            _fail(
                "error_buffer_length", self.error_buffer_length, "must be >= 1024, a multiple of 8"
            )
        if self.publication_reserved_session_id_low > self.publication_reserved_session_id_high:
            raise ConfigurationError(
                "reserved session id range is empty",
                publication_reserved_session_id_low=self.publication_reserved_session_id_low,
                publication_reserved_session_id_high=self.publication_reserved_session_id_high,
            )
        if not isinstance(self.threading_mode, ThreadingMode):
            _fail("threading_mode", self.threading_mode, "must be a ThreadingMode")
        for name in ("conductor_idle_strategy", "shared_idle_strategy"):
            _check(name, getattr(self, name), idle_strategy_from_name)
        if not isinstance(self.udp, UdpSettings):
            _fail("udp", self.udp, "must be a UdpSettings")
        if not callable(self.termination_validator):
            _fail("termination_validator", self.termination_validator, "must be callable")


def _fail(name: str, value: object, rule: str) -> None:
    raise ConfigurationError(f"{name} {rule}", field=name, value=value)


def _check(name: str, value: _V, checker: Callable[[_V], object]) -> None:
    try:
        checker(value)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{name} is invalid ({exc})", field=name, value=value) from exc


def check_mtu_length(name: str, value: int) -> None:
    """Raise unless ``value`` is a valid MTU: > 32, <= 65504 and a multiple of 32."""
    if value <= HDR_LENGTH or value > MAX_UDP_PAYLOAD_LENGTH:
        _fail(name, value, f"must be > {HDR_LENGTH} and <= {MAX_UDP_PAYLOAD_LENGTH}")
    if value % FRAME_ALIGNMENT:
        _fail(name, value, f"must be a multiple of {FRAME_ALIGNMENT}")


def _check_trailed_power_of_two(name: str, value: int, trailer: int) -> None:
    capacity = value - trailer
    if capacity < 1024 or capacity & (capacity - 1):
        _fail(name, value, f"minus its {trailer}-byte trailer must be a power of two >= 1024")


def _threading_mode(name: str, text: str) -> ThreadingMode:
    try:
        return ThreadingMode(text.strip().upper())
    except ValueError:
        raise ConfigurationError(
            "unknown threading mode",
            field=name,
            value=text,
            allowed=[m.value for m in ThreadingMode],
        ) from None


def _termination_validator(name: str, text: str) -> TerminationValidator:
    value = text.strip().lower()
    if value == "allow":
        return allow_termination
    if value == "deny":
        return deny_termination
    raise ConfigurationError("termination validator must be allow or deny", field=name, value=text)


def _text(name: str, text: str) -> str:
    return text


def _duration_ms(name: str, text: str) -> int:
    """Milliseconds: a bare number is ms (as Aeron reads ``AERON_DRIVER_TIMEOUT``), else a duration."""
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    return parse_duration_ns(name, text) // 1_000_000


ENV_VARS: dict[str, tuple[str, Callable[[str, str], object]]] = {
    "AERON_DIR": ("aeron_dir", _text),
    "AERON_DIR_DELETE_ON_START": ("dir_delete_on_start", parse_bool),
    "AERON_DIR_DELETE_ON_SHUTDOWN": ("dir_delete_on_shutdown", parse_bool),
    "AERON_TERM_BUFFER_LENGTH": ("term_buffer_length", parse_size),
    "AERON_IPC_TERM_BUFFER_LENGTH": ("ipc_term_buffer_length", parse_size),
    "AERON_MTU_LENGTH": ("mtu_length", parse_size),
    "AERON_IPC_MTU_LENGTH": ("ipc_mtu_length", parse_size),
    "AERON_FILE_PAGE_SIZE": ("file_page_size", parse_size),
    "AERON_TERM_BUFFER_SPARSE_FILE": ("term_buffer_sparse_file", parse_bool),
    "AERON_PERFORM_STORAGE_CHECKS": ("perform_storage_checks", parse_bool),
    "AERON_PUBLICATION_TERM_WINDOW_LENGTH": ("publication_term_window_length", parse_size),
    "AERON_IPC_PUBLICATION_TERM_WINDOW_LENGTH": ("ipc_publication_term_window_length", parse_size),
    "AERON_CLIENT_LIVENESS_TIMEOUT": ("client_liveness_timeout_ns", parse_duration_ns),
    "AERON_PUBLICATION_UNBLOCK_TIMEOUT": ("publication_unblock_timeout_ns", parse_duration_ns),
    "AERON_PUBLICATION_LINGER_TIMEOUT": ("publication_linger_timeout_ns", parse_duration_ns),
    "AERON_UNTETHERED_WINDOW_LIMIT_TIMEOUT": (
        "untethered_window_limit_timeout_ns",
        parse_duration_ns,
    ),
    "AERON_UNTETHERED_RESTING_TIMEOUT": ("untethered_resting_timeout_ns", parse_duration_ns),
    "AERON_TETHER_SUBSCRIPTIONS": ("tether_subscriptions", parse_bool),
    "AERON_TIMER_INTERVAL": ("timer_interval_ns", parse_duration_ns),
    "AERON_COUNTERS_FREE_TO_REUSE_TIMEOUT": ("counter_free_to_reuse_timeout_ns", parse_duration_ns),
    "AERON_DRIVER_TIMEOUT": ("driver_timeout_ms", _duration_ms),
    "AERON_CONDUCTOR_CYCLE_THRESHOLD": ("conductor_cycle_threshold_ns", parse_duration_ns),
    "AERON_CONDUCTOR_BUFFER_LENGTH": ("to_driver_buffer_length", parse_size),
    "AERON_CLIENTS_BUFFER_LENGTH": ("to_clients_buffer_length", parse_size),
    "AERON_COUNTERS_BUFFER_LENGTH": ("counters_values_buffer_length", parse_size),
    "AERON_ERROR_BUFFER_LENGTH": ("error_buffer_length", parse_size),
    "AERON_PUBLICATION_RESERVED_SESSION_ID_LOW": (
        "publication_reserved_session_id_low",
        parse_int32,
    ),
    "AERON_PUBLICATION_RESERVED_SESSION_ID_HIGH": (
        "publication_reserved_session_id_high",
        parse_int32,
    ),
    "AERON_THREADING_MODE": ("threading_mode", _threading_mode),
    "AERON_CONDUCTOR_IDLE_STRATEGY": ("conductor_idle_strategy", _text),
    "AERON_SHARED_IDLE_STRATEGY": ("shared_idle_strategy", _text),
    "AERON_DRIVER_TERMINATION_VALIDATOR": ("termination_validator", _termination_validator),
}
"""Aeron's environment variable -> (field, parser). ``AERON_DRIVER_TIMEOUT`` is in ms."""
