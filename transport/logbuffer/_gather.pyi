from collections.abc import Sequence

from typing_extensions import Buffer

def vectors_length(vectors: Sequence[tuple[Buffer, int, int]], /) -> int: ...
def copy_vectors(
    destination: Buffer,
    offset: int,
    vectors: Sequence[tuple[Buffer, int, int]],
    index: int,
    inner: int,
    count: int,
    /,
) -> tuple[int, int]: ...
def prefault(destination: Buffer, offset: int, length: int, /) -> int: ...
