"""From options to offsets, on the driver: which queues the options name, where each starts and
(batch) ends, and the ``failOnDataLoss`` check against each queue's min offset."""

from __future__ import annotations

import json
import logging

from aeromq.client import MessageQueue
from aeromq.pipeline._errors import DataLossError, OptionError
from aeromq.pipeline._metadata import BrokerMetadata
from aeromq.pipeline._options import SourceOptions
from aeromq.pipeline._planning import Offsets, offsets_from_json

__all__ = ["check_data_loss", "ending_offsets", "queues_of", "start_within", "starting_offsets"]

_log = logging.getLogger(__name__)

EARLIEST = -2
LATEST = -1


def queues_of(options: SourceOptions, metadata: BrokerMetadata) -> list[MessageQueue]:
    """Every queue the options name, sorted (a fresh look: queues added since show up)."""
    if options.assign:
        out: list[MessageQueue] = []
        for topic, ids in options.assign:
            queues = metadata.queues(topic)  # every broker's queue of each id
            known = {q.queue_id for q in queues}
            missing = [i for i in ids if i not in known]
            if missing:
                raise OptionError("assign names queues the topic does not have", topic=topic,
                                  missing=missing, queues=sorted(known))  # fmt: skip
            out += [q for q in queues if q.queue_id in ids]
        return sorted(out)
    topics = metadata.topics_matching(options.pattern) if options.pattern else options.topics
    return sorted(q for topic in topics for q in metadata.queues(topic))


def _from_spec(
    spec: str, queues: list[MessageQueue], metadata: BrokerMetadata, option: str
) -> Offsets:
    if spec == "earliest":
        return metadata.min_offsets(queues)
    if spec == "latest":
        return metadata.max_offsets(queues)
    given = offsets_from_json(json.loads(spec), option=option)
    out: Offsets = {}
    for queue in queues:
        offset = given.get(queue, LATEST if option == "endingOffsets" else EARLIEST)
        if offset == EARLIEST:
            offset = metadata.min_offset(queue)
        elif offset == LATEST:
            offset = metadata.max_offset(queue)
        elif offset < 0:
            raise OptionError("offsets are >= 0, or -2 (earliest) / -1 (latest)",
                              option=option, queue=str(queue), offset=offset)  # fmt: skip
        out[queue] = offset
    unknown = sorted(str(q) for q in set(given) - set(queues))
    if unknown:
        raise OptionError("offsets name queues that are not read", option=option, unknown=unknown)
    return out


def starting_offsets(
    options: SourceOptions, queues: list[MessageQueue], metadata: BrokerMetadata
) -> Offsets:
    """Where each queue starts: ``startingOffsetsByTimestamp``, ``startingTimestamp``, then
    ``startingOffsets`` (first given wins)."""
    if options.starting_offsets_by_timestamp is not None:
        stamps = offsets_from_json(
            json.loads(options.starting_offsets_by_timestamp), option="startingOffsetsByTimestamp"
        )
        out: Offsets = {}
        for queue in queues:
            stamp = stamps.get(queue)
            out[queue] = (
                metadata.min_offset(queue)
                if stamp is None
                else metadata.offset_for_time(queue, stamp)
            )
        return out
    if options.starting_timestamp_ms is not None:
        return {q: metadata.offset_for_time(q, options.starting_timestamp_ms) for q in queues}
    return _from_spec(options.starting_offsets, queues, metadata, "startingOffsets")


def ending_offsets(
    options: SourceOptions, queues: list[MessageQueue], metadata: BrokerMetadata
) -> Offsets:
    """Where each queue ends (batch reads): ``endingOffsets``, ``latest`` by default."""
    return _from_spec(options.ending_offsets, queues, metadata, "endingOffsets")


def check_data_loss(options: SourceOptions, starts: Offsets, metadata: BrokerMetadata) -> Offsets:
    """Each start at or above its queue's min offset (:func:`start_within`)."""
    return {
        queue: start_within(queue, offset, metadata.min_offset(queue), options.fail_on_data_loss)
        for queue, offset in starts.items()
    }


def start_within(queue: MessageQueue, offset: int, min_offset: int, fail_on_data_loss: bool) -> int:
    """``offset``, unless it is below the queue's min offset (removed by retention): then the
    query fails with ``DataLossError`` (``failOnDataLoss``, the default) or reads on from the
    min offset."""
    if offset >= min_offset:
        return offset
    if fail_on_data_loss:
        raise DataLossError(
            "offset is below the queue's min offset (removed by retention); set "
            "failOnDataLoss=false to read on from the min offset",
            queue=str(queue),
            offset=offset,
            min_offset=min_offset,
        )
    _log.warning("data loss: queue=%s offset=%d min_offset=%d, reading from the min offset",
                 queue, offset, min_offset)  # fmt: skip
    return min_offset
