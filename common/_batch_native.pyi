from collections.abc import Sequence
from typing import Any

import numpy.typing as npt
from typing_extensions import Buffer

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
    /,
) -> bytearray: ...
def merge(batches: Sequence[Buffer], /) -> bytes | None: ...
def use_clmul(on: bool, /) -> bool: ...
def take(
    entries: npt.NDArray[Any] | Buffer,
    view: memoryview,
    view_length: int,
    file_start: int,
    topic: Buffer,
    queue_id: int,
    first_offset: int,
    max_bytes: int,
    /,
) -> tuple[int, int, int, bool, list[memoryview]] | None: ...
