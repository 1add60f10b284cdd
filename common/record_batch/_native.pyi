"""Types of ``aeromq.common.record_batch._native`` (see ``_native.c`` and the file of each
function for what it does)."""

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer

_A = TypeVar("_A", bound=tuple[object, ...])
_Column = tuple[int, Buffer, Buffer | None, Buffer | None, int, int, int]
"""(kind, data, offsets, validity, first, width, length): ``column_encoder.Column``."""
_M = TypeVar("_M")
_P = TypeVar("_P", bound=Buffer)
_Parts = list[tuple[Buffer, npt.NDArray[np.int64], npt.NDArray[np.int32]]]

def check(
    data: Buffer,
    topic: Buffer | None,
    max_body_length: int,
    max_body_total: int,
    max_records: int,
    check_crc: bool,
    check_content: bool,
    /,
) -> int: ...
def encode(
    topic: Buffer,
    bodies: Sequence[Buffer],
    tags: Sequence[str | None] | None,
    properties: Sequence[Buffer] | Buffer | None,
    property_lengths: Sequence[int] | None,
    flags: Sequence[int] | None,
    born_timestamp_ms: int,
    born_deltas_ms: Sequence[int] | None,
    born_host: Buffer,
    reconsume_times: int,
    attributes: int,
    producer_id: int | None = None,
    base_sequence: int = 0,
    producer_epoch: int = 0,
    /,
) -> bytearray: ...
def encode_columns(
    topic: Buffer,
    bodies: _Column,
    tags: _Column | None,
    keys: _Column | None,
    properties: tuple[tuple[bytes, _Column], ...],
    property_map: tuple[int, Buffer, Buffer | None, int, _Column, _Column] | None,
    rows: npt.NDArray[np.int64] | None,
    position: int,
    stop: int,
    limits: tuple[int, int, int, int],
    born_timestamp_ms: int,
    born_host: Buffer,
    unique_head: Buffer | None,
    unique_counter: int,
    producer_id: int | None,
    base_sequence: int,
    producer_epoch: int,
    /,
) -> tuple[bytes | None, int, int]: ...
def hash_column(column: _Column, first_key: bool, /) -> tuple[bytes, int, int]: ...
def merge(batches: Sequence[Buffer], /) -> bytes | None: ...
def read(
    data: Buffer,
    queue_id: int,
    topic: bytes,
    offset: int,
    next_offset: int,
    ranges: Buffer | None = None,
) -> tuple[int, int, bytes, bytes] | None: ...
def read_messages(
    data: Buffer,
    queue_id: int,
    topic: bytes,
    offset: int,
    next_offset: int,
    limit: int,
    message_type: type[_M],
    topic_name: str,
    broker_name: str,
    /,
) -> list[_M] | None: ...
def gather(
    parts: _Parts, count: int, null_empty: bool
) -> tuple[bytes, bytes, bytes | None, int]: ...
def find_property(
    needle: bytes, parts: _Parts, count: int
) -> tuple[bytes, bytes, bytes | None, int]: ...
def send_request(
    correlation_id: int,
    session_id: int,
    group: str,
    topic: str,
    queue_id: int,
    batch: Buffer,
    producer_id: int | None,
    base_sequence: int,
    producer_epoch: int,
    /,
) -> bytes: ...
def send_answer(cls: type[_A], data: Buffer, /) -> _A | None: ...
def pull_request(cls: type[_A], data: Buffer, /) -> _A | None: ...
def pull_answer(
    correlation_id: int,
    session_id: int,
    pull_status: int,
    next_begin_offset: int,
    min_offset: int,
    max_offset: int,
    pieces: Sequence[_P],
    /,
) -> tuple[list[bytes | _P] | bytes, int]: ...
def pull_request_encode(
    correlation_id: int,
    session_id: int,
    body: tuple[str, str, int, int, int, int, str, int, int, int, bool],
    /,
) -> bytes: ...
def pulled_answer(cls: type[_A], buffer: Buffer, offset: int, length: int, /) -> _A | None: ...
def send_fields(cls: type[_A], data: Buffer, /) -> _A | None: ...
def stored_send(
    correlation_id: int, session_id: int, answer: tuple[int, int, int, int, str, str], /
) -> bytes: ...
def crc32(data: Buffer) -> int: ...
def use_clmul(on: bool, /) -> bool: ...
