"""Arrow arrays of a ``MessageBatch``'s columns: over the buffers of Arrow's binary layout
(:mod:`common.record_batch.spans`) without a copy, and the dictionary-encoded columns of values
that repeat in runs (a chunk's topic, its broker).

Caller: :class:`~consumer.MessageBatch` (``body_array``, ``tag_array``, ``property_array``,
``to_arrow``). ``pyarrow`` is imported on first use (the ``spark`` extra).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from aeromq.common.record_batch import ArrowLayout

if TYPE_CHECKING:
    import pyarrow

__all__ = ["arrow_array", "dictionary_runs"]


def arrow_array(kind: pyarrow.DataType, count: int, layout: ArrowLayout) -> pyarrow.Array:
    """An Arrow binary or string array of ``count`` values over ``layout``'s buffers (no
    copy)."""
    import pyarrow as pa

    offsets, data, validity, missing = layout
    return pa.Array.from_buffers(
        kind,
        count,
        [
            None if validity is None else pa.py_buffer(validity),
            pa.py_buffer(offsets),
            pa.py_buffer(data),
        ],
        null_count=missing,
    )


def dictionary_runs(runs: list[tuple[str, int]]) -> pyarrow.Array:
    """A dictionary-encoded string column of ``runs`` of equal values."""
    import pyarrow as pa

    values = sorted({value for value, _ in runs})
    if len(values) == 1:
        codes = np.zeros(sum(n for _, n in runs), dtype=np.int32)
    else:
        codes = np.repeat(
            np.array([values.index(value) for value, _ in runs], dtype=np.int32),
            [n for _, n in runs],
        )
    return pa.DictionaryArray.from_arrays(  # codes index ``values`` by construction
        pa.array(codes), _dictionary(tuple(values)), safe=False
    )


@lru_cache(maxsize=64)
def _dictionary(values: tuple[str, ...]) -> pyarrow.Array:
    """The Arrow string array of ``values`` (made once: a poll's few topics and brokers)."""
    import pyarrow as pa

    return pa.array(values, pa.string())
