"""Types of ``broker/store/_index_put.c`` (see it for what ``put_entries`` does)."""

from collections.abc import Sequence

from typing_extensions import Buffer

def put_entries(
    mm: Buffer,
    slot_count: int,
    entry_count: int,
    items: Sequence[tuple[str, Sequence[str] | bytes, int, int]],
    /,
) -> int: ...
