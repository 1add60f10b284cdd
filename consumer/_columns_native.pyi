"""Types of ``consumer/_columns_native.c`` (see it for what each function does)."""

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer

_Parts = list[tuple[Buffer, npt.NDArray[np.int64], npt.NDArray[np.int32]]]

def read(
    data: Buffer,
    queue_id: int,
    topic: bytes,
    offset: int,
    next_offset: int,
    ranges: Buffer | None = None,
) -> tuple[int, int, bytes, bytes] | None: ...
def gather(
    parts: _Parts, count: int, null_empty: bool
) -> tuple[bytes, bytes, bytes | None, int]: ...
def find_property(
    needle: bytes, parts: _Parts, count: int
) -> tuple[bytes, bytes, bytes | None, int]: ...
def crc32(data: Buffer) -> int: ...
def use_clmul(on: bool) -> bool: ...
