"""The re-puts a crash kept out of the timer checkpoint: found in the commit log after it.

The timer service marks an entry delivered once its re-put is stored, and checkpoints the marks
now and then; a broker killed in between has re-put entries its checkpoint still calls
pending. Each re-put carries ``TIMER_OUT_MS`` (its due time, a name only the timer service sets)
beside the producer's unique id (``UNIQ_KEY``), so the log after the checkpoint's
``log_offset`` says which: :func:`delivered_after` reads it batch by batch (only a batch holding
``TIMER_OUT_MS`` is decoded) and returns the keys ``(topic, unique id, due ms)`` of the re-puts,
which the service skips when it loads the pending entries again. An entry without a unique id
cannot be told apart: it is delivered again (at least once, for that window only).

Caller: the timer service's thread, when it starts leading.
"""

from __future__ import annotations

import logging
import struct
from typing import Final

from aeromq.broker._errors import BrokerError
from aeromq.broker.store import MessageStore
from aeromq.broker.timer._delays import PROPERTY_TIMER_OUT_MS, TIMER_TOPIC
from aeromq.common import PROPERTY_UNIQ_KEY, RecordBatch, stored_properties
from aeromq.common.record_batch import BATCH_MAGIC

__all__ = ["DeliveredKey", "delivered_after"]

_log = logging.getLogger(__name__)

DeliveredKey = tuple[str, str, str]
"""``(real topic, unique id, due ms as text)`` of one re-put."""

_PREFIX: Final = struct.Struct("<iI")  # a unit's length and magic
_MARKER: Final = (PROPERTY_TIMER_OUT_MS + "\x01").encode()
_READ_BYTES: Final = 4 << 20


def delivered_after(store: MessageStore, log_offset: int) -> set[DeliveredKey]:
    """The keys of the re-puts in ``store``'s log from ``log_offset`` to its end (see
    module); from the log's start when ``log_offset`` is gone to retention, none (and a
    warning) when the log cannot be read there."""
    found: set[DeliveredKey] = set()
    offset = max(log_offset, store.min_physical_offset)
    try:
        while True:
            view = store.read_log(offset, _READ_BYTES)
            if not len(view):
                return found
            try:
                _keys_in(view, found)
                offset += len(view)
            finally:
                view.release()
    except BrokerError as exc:
        _log.warning("timer: cannot read the log for re-puts, some may come twice: %s", exc)
        return found


def _keys_in(view: memoryview, found: set[DeliveredKey]) -> None:
    position = 0
    end = len(view)
    while position + _PREFIX.size <= end:
        size, magic = _PREFIX.unpack_from(view, position)
        if size <= 0:
            return
        if magic == BATCH_MAGIC:
            unit = view[position : position + size]
            if bytes(unit).find(_MARKER) >= 0:
                batch = RecordBatch(unit)
                if batch.topic != TIMER_TOPIC:
                    for index in range(batch.count):
                        properties = stored_properties(batch, index)
                        unique = properties.get(PROPERTY_UNIQ_KEY)
                        due = properties.get(PROPERTY_TIMER_OUT_MS)
                        if unique and due:
                            found.add((batch.topic, unique, due))
        position += size
