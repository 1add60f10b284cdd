"""Types of ``broker/store/_put_one.c`` (see it for what ``check`` and ``write`` do)."""

from typing import Literal, TypeVar

from typing_extensions import Buffer

_S = TypeVar("_S", bound=tuple[int, int, int])

def check(
    batch: Buffer,
    topic: Buffer,
    max_length: int,
    fallback_attributes: int,
    producer_type: type[_S],
    /,
) -> int | _S: ...
def write(
    batch: Buffer,
    segment: Buffer,
    position: int,
    queue_offset: int,
    physical_offset: int,
    store_timestamp_ms: int,
    store_host: Buffer,
    queue_id: int,
    queue_file: Buffer,
    queue_position: int,
    /,
) -> bytes | Literal[True] | None: ...
