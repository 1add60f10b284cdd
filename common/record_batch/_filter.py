"""The subscription's filter over a read answer's records, as the broker filtered its batches.

The broker filtered on tag hash codes and sent whole batches, which hold other records too;
the readers (:mod:`.reader`, :mod:`.numpy_reader`, :mod:`._small_answer`) match the hash
column again and then, as RocketMQ's client does, compare the tag strings of the records whose
hash matched (so a hash collision never delivers a foreign tag), and select with a SQL92
expression again among the records of the batches the broker sent. No I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from aeromq.common._sql92 import Sql92Filter, compile_sql92
from aeromq.common._tags import ExpressionType, SubscriptionData
from aeromq.common.record_batch.properties import join_tag

__all__ = ["matching", "sql92_matches"]


def matching(
    data: bytes,
    subscription: SubscriptionData,
    which: npt.NDArray[np.int64],
    tag_start: npt.NDArray[np.int64],
    tag_length: npt.NDArray[np.int32],
    properties_start: npt.NDArray[np.int64],
    properties_length: npt.NDArray[np.int32],
) -> npt.NDArray[np.int64]:
    """Of the records ``which`` (indexes into the columns, already matched on the tag hash
    codes), those whose tag string is one of the subscription's and that match its SQL92
    expression, in order: what both readers keep after the hash match."""
    if subscription.tags and len(which):
        wanted = frozenset(tag.encode() for tag in subscription.tags)
        starts = tag_start[which].tolist()
        ends = (tag_start[which] + tag_length[which]).tolist()
        matches = [data[a:b] in wanted for a, b in zip(starts, ends, strict=True)]
        which = which[np.array(matches, dtype=bool)]
    if subscription.expression_type is ExpressionType.SQL92:
        selected = sql92_matches(
            data,
            subscription,
            properties_start[which].tolist(),
            (properties_start[which] + properties_length[which]).tolist(),
            tag_start[which].tolist(),
            (tag_start[which] + tag_length[which]).tolist(),
        )
        which = which[np.array(selected, dtype=bool)]
    return which


def sql92_matches(
    data: bytes,
    subscription: SubscriptionData,
    property_starts: Sequence[int],
    property_ends: Sequence[int],
    tag_starts: Sequence[int],
    tag_ends: Sequence[int],
) -> list[bool]:
    """Which records (their properties and tag at these spans of ``data``) the subscription's
    SQL92 expression selects, as the broker selected their batches: one property parse per
    record, the price of a SQL92 subscription."""
    matches = _compiled(subscription.sub_string).matches
    out: list[bool] = []
    for a, b, c, d in zip(property_starts, property_ends, tag_starts, tag_ends, strict=True):
        out.append(matches(join_tag(data[a:b], data[c:d].decode())))
    return out


@lru_cache(maxsize=256)
def _compiled(expression: str) -> Sql92Filter:
    return compile_sql92(expression)
