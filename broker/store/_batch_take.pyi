"""Types of ``broker/store/_batch_take.c`` (see it for what ``take`` does)."""

from typing import Any

import numpy.typing as npt
from typing_extensions import Buffer

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
