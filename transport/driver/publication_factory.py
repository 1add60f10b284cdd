"""``PublicationFactory``: a publication's set-up, one rule for IPC and UDP.

What Aeron's ``aeron_driver_conductor_get_or_add_ipc_publication`` and
``aeron_driver_conductor_get_or_add_network_publication`` have in common, for
``transport/driver/ipc/ipc_streams.py`` and ``transport/driver/udp/udp_publications.py``:

- :meth:`PublicationFactory.find_shared`: among the media's candidates (IPC: the publications of
  the stream; UDP: those of the stream on the same send endpoint), ADD_PUBLICATION joins the
  active concurrent one if there is one: its reference count goes up, and the channel's explicit
  ``session-id``, ``mtu``, ``term-length`` and position must agree with it
  (:func:`confirm_publication_match`). ADD_EXCLUSIVE_PUBLICATION never joins. Pinning a
  ``session-id`` that a live publication of the stream holds is an error unless joining that
  concurrent publication. What "active" and "holds its session id" mean is each publication's
  own life cycle (``is_active()``, ``holds_session_id()``).
- :meth:`PublicationFactory.create`: the storage check (counting every live log of the driver,
  :mod:`~transport.driver.log_storage`), a session id (allocated, or pinned by
  ``session-id``), an initial term id (random, or ``init-term-id`` with the tail set from
  ``term-id`` / ``term-offset``), the pub-pos and pub-lmt counters and then the media's own (UDP:
  snd-pos, snd-lmt, snd-bpe, snd-naks-received), pub-pos and pub-lmt at the starting position
  (the media sets its own position counters), the log file
  ``<aeron_dir>/publications/<registration id>.logbuffer`` and its metadata. A failure frees
  whatever was allocated; counters that cannot be allocated are a GENERIC_ERROR for the command.

The media builds its publication from the :class:`NewPublication` it gets back
(``IpcPublication(**new.args, ...)``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypedDict, TypeVar

from aeromq.transport._errors import TransportStateError
from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.concurrent.position import Position
from aeromq.transport.driver.command_error import command_error
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.log_factory import (
    create_log,
    initialise_log_metadata,
    producer_window_length,
)
from aeromq.transport.driver.log_storage import LogStorage
from aeromq.transport.driver.session_ids import SessionIdAllocator, wrap_int32
from aeromq.transport.driver.stream_counters import (
    allocate_publisher_limit,
    allocate_publisher_position,
)
from aeromq.transport.driver.uri_params import PublicationParams
from aeromq.transport.logbuffer.log_buffer_descriptor import compute_log_length, compute_position
from aeromq.transport.logbuffer.log_buffers import LogBuffers

__all__ = [
    "ExistingPublication",
    "NewPublication",
    "PublicationArgs",
    "PublicationFactory",
    "SharedPublication",
    "StreamCounterAllocator",
    "confirm_publication_match",
]

StreamCounterAllocator = Callable[[int, int, int, str, int], int]
"""Allocates one stream counter in the driver's counters manager (bound, e.g. with
``functools.partial``): (registration id, session id, stream id, channel, owner id) -> id."""


class _LogMetadata(Protocol):
    @property
    def mtu_length(self) -> int: ...
    @property
    def term_length(self) -> int: ...


class _Log(Protocol):
    @property
    def metadata(self) -> _LogMetadata: ...


class ExistingPublication(Protocol):
    """What :func:`confirm_publication_match` reads of an IPC or network publication."""

    @property
    def session_id(self) -> int: ...
    @property
    def initial_term_id(self) -> int: ...
    @property
    def starting_term_id(self) -> int: ...
    @property
    def starting_term_offset(self) -> int: ...
    @property
    def log(self) -> _Log: ...


class SharedPublication(ExistingPublication, Protocol):
    """What :meth:`PublicationFactory.find_shared` asks of a candidate publication."""

    @property
    def is_exclusive(self) -> bool: ...

    def is_active(self) -> bool:
        """Whether a concurrent publication may still be joined."""
        ...

    def holds_session_id(self) -> bool:
        """Whether its session id is still taken for its stream."""
        ...

    def incref(self) -> None: ...


P = TypeVar("P", bound=SharedPublication)


class PublicationArgs(TypedDict):
    """The constructor keywords every publication (IPC, network) takes from its set-up."""

    log: LogBuffers
    registration_id: int
    session_id: int
    stream_id: int
    channel: str
    initial_term_id: int
    starting_term_id: int
    starting_term_offset: int
    is_exclusive: bool
    pub_pos: Position
    pub_lmt: Position
    term_window_length: int


@dataclass(frozen=True, slots=True)
class NewPublication:
    """A publication's log and counters, ready (see module); ``media_counter_ids`` are the ids
    of the media's own counters, in the order asked (still zero: a media sets its position
    counters to ``position``, where the stream starts)."""

    args: PublicationArgs
    media_counter_ids: tuple[int, ...]
    position: int


def confirm_publication_match(
    publication: ExistingPublication, params: PublicationParams, channel: str
) -> None:
    """A channel joining an existing concurrent publication must not ask for anything else."""
    metadata = publication.log.metadata
    checks: list[tuple[str, int, int | None]] = [
        ("session-id", publication.session_id, params.session_id),
        ("mtu", metadata.mtu_length, params.mtu_length if params.has_mtu_length else None),
        (
            "term-length",
            metadata.term_length,
            params.term_length if params.has_term_length else None,
        ),
    ]
    if params.has_position:
        checks += [
            ("init-term-id", publication.initial_term_id, params.initial_term_id),
            ("term-id", publication.starting_term_id, params.term_id),
            ("term-offset", publication.starting_term_offset, params.term_offset),
        ]
    for key, existing, requested in checks:
        if requested is not None and requested != existing:
            raise command_error(
                ErrorCode.GENERIC_ERROR,
                f"existing publication has different '{key}'",
                channel=channel,
                existing=existing,
                requested=requested,
            )


class PublicationFactory:
    """Finds shared publications and sets up new ones (see module). Conductor thread only."""

    __slots__ = ("_context", "_counters", "_session_ids", "storage")

    def __init__(
        self,
        context: MediaDriverContext,
        counters: CountersManager,
        session_ids: SessionIdAllocator,
        storage: LogStorage | None = None,
    ) -> None:
        self._context = context
        self._counters = counters
        self._session_ids = session_ids
        self.storage = storage if storage is not None else LogStorage()
        """The driver's live logs: checked before a log is made; the media tracks each new
        publication in it (:meth:`~transport.driver.log_storage.LogStorage.track`)."""

    def find_shared(
        self,
        candidates: Iterable[P],
        stream_id: int,
        channel: str,
        params: PublicationParams,
        is_exclusive: bool,
    ) -> tuple[P | None, set[int]]:
        """The concurrent publication to join (its reference count raised) or None, and the
        session ids the candidates hold (for :meth:`create`)."""
        shared: P | None = None
        session_ids_in_use: set[int] = set()
        for publication in candidates:
            if (
                shared is None
                and not is_exclusive
                and not publication.is_exclusive
                and publication.is_active()
            ):
                shared = publication
            if publication.holds_session_id():
                session_ids_in_use.add(publication.session_id)
        pinned = params.session_id
        if (
            pinned is not None
            and pinned in session_ids_in_use
            and (shared is None or shared.session_id != pinned)
        ):
            raise command_error(
                ErrorCode.GENERIC_ERROR,
                "specified session-id is already in exclusive use",
                channel=channel,
                stream_id=stream_id,
                session_id=pinned,
            )
        if shared is not None:
            confirm_publication_match(shared, params, channel)
            shared.incref()
        return shared, session_ids_in_use

    def create(
        self,
        owner_id: int,
        registration_id: int,
        stream_id: int,
        channel: str,
        params: PublicationParams,
        is_exclusive: bool,
        session_ids_in_use: set[int],
        *,
        window_length: int,
        spies_simulate_connection: bool,
        media_counters: Sequence[StreamCounterAllocator] = (),
    ) -> NewPublication:
        """Set up a new publication's log and counters (see module).

        ``window_length`` is the context's window for the media (0: half a term);
        ``media_counters`` allocate the media's own stream counters after pub-pos and pub-lmt.
        """
        context = self._context
        term_length = params.term_length
        if context.perform_storage_checks:
            self.storage.check(
                context.publications_dir(), compute_log_length(term_length, context.file_page_size)
            )
        if params.session_id is not None:
            session_id = params.session_id
        else:
            session_id = self._session_ids.allocate(session_ids_in_use)
        if params.initial_term_id is not None:
            initial_term_id = params.initial_term_id
            term_id: int | None = params.term_id
            position = compute_position(
                params.term_id, params.term_offset, term_length.bit_length() - 1, initial_term_id
            )
        else:
            initial_term_id = wrap_int32(secrets.randbits(32))
            term_id = None
            position = 0

        counters = self._counters
        counter_ids = self._allocate_counters(
            (
                partial(allocate_publisher_position, counters, is_exclusive=is_exclusive),
                partial(allocate_publisher_limit, counters),
                *media_counters,
            ),
            registration_id,
            session_id,
            stream_id,
            channel,
            owner_id,
        )
        pub_pos = Position(counters.values_buffer, counter_ids[0], counters)
        pub_lmt = Position(counters.values_buffer, counter_ids[1], counters)
        pub_pos.set_ordered(position)
        pub_lmt.set_ordered(position)

        path = os.path.join(context.publications_dir(), f"{registration_id}.logbuffer")
        try:
            log = create_log(
                path, term_length, context.file_page_size, params.is_sparse, context.file_mode
            )
        except BaseException:
            for counter_id in counter_ids:
                counters.free(counter_id)
            raise
        window = producer_window_length(window_length, term_length)
        initialise_log_metadata(
            log,
            registration_id=registration_id,
            session_id=session_id,
            stream_id=stream_id,
            initial_term_id=initial_term_id,
            term_id=term_id,
            term_offset=params.term_offset,
            mtu_length=params.mtu_length,
            term_window_length=window,
            linger_timeout_ns=params.linger_timeout_ns,
            untethered_window_limit_timeout_ns=context.untethered_window_limit_timeout_ns,
            untethered_resting_timeout_ns=context.untethered_resting_timeout_ns,
            is_exclusive=is_exclusive,
            is_sparse=params.is_sparse,
            signal_eos=params.signal_eos,
            tether=context.tether_subscriptions,
            spies_simulate_connection=spies_simulate_connection,
            entity_tag=params.entity_tag if params.entity_tag is not None else -1,
            response_correlation_id=params.response_correlation_id,
        )
        args = PublicationArgs(
            log=log,
            registration_id=registration_id,
            session_id=session_id,
            stream_id=stream_id,
            channel=channel,
            initial_term_id=initial_term_id,
            starting_term_id=term_id if term_id is not None else initial_term_id,
            starting_term_offset=params.term_offset,
            is_exclusive=is_exclusive,
            pub_pos=pub_pos,
            pub_lmt=pub_lmt,
            term_window_length=window,
        )
        return NewPublication(args, tuple(counter_ids[2:]), position)

    def _allocate_counters(
        self,
        allocators: Iterable[StreamCounterAllocator],
        registration_id: int,
        session_id: int,
        stream_id: int,
        channel: str,
        owner_id: int,
    ) -> list[int]:
        counters = self._counters
        allocated: list[int] = []
        try:
            for allocate in allocators:
                allocated.append(
                    allocate(registration_id, session_id, stream_id, channel, owner_id)
                )
        except TransportStateError as exc:
            for counter_id in allocated:
                counters.free(counter_id)
            raise command_error(
                ErrorCode.GENERIC_ERROR, f"cannot add publication ({exc})", channel=channel
            ) from exc
        return allocated
