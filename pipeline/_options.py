"""The data source's options, parsed once into typed, validated, picklable objects.

Spark hands options over as a case-insensitive mapping of strings; :func:`source_options` and
:func:`sink_options` turn it into :class:`SourceOptions` / :class:`SinkOptions` and raise
:class:`~pipeline.OptionError` naming the option, its value and the rule. The names follow
Spark's Kafka source where one exists (``docs/spark-connector.md`` lists them all).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from aeromq.client import parse_endpoints
from aeromq.pipeline._errors import OptionError

__all__ = ["SinkOptions", "SourceOptions", "sink_options", "source_options"]

DEFAULT_READ_TIMEOUT_MS: Final = 60_000
"""A queue range that brings nothing new for this long fails its read (``ReadTimeoutError``)."""
MAX_PULL_BATCH_SIZE: Final = 8192
"""The most messages a reader's pull asks for (the broker's cap, ``MAX_PULL_MESSAGES``), and
the default: a bulk read spreads each pull's fixed cost, on both ends, over as many rows as the
broker's 1 MiB per answer allows."""


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """What the reader is told. Exactly one of ``topics``, ``pattern`` or ``assign`` is set."""

    endpoints: tuple[str, ...]
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[tuple[str, tuple[int, ...]], ...] = ()
    sub_expression: str = "*"
    starting_offsets: str = "earliest"
    ending_offsets: str = "latest"
    starting_timestamp_ms: int | None = None
    starting_offsets_by_timestamp: str | None = None
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    group: str | None = None
    include_properties: bool = False
    read_timeout_ms: int = DEFAULT_READ_TIMEOUT_MS
    pull_batch_size: int = MAX_PULL_BATCH_SIZE
    local_reads: bool = True


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """What the writer is told: where to send and the default topic (a ``topic`` column wins)."""

    endpoints: tuple[str, ...]
    topic: str | None = None
    producer_group: str = "aeromq-spark-sink"
    send_batch_size: int = 64


_SOURCE_KEYS: Final = frozenset(
    {
        "endpoints", "nameserver", "topic", "subscribe", "subscribepattern", "assign",
        "subexpression", "startingoffsets", "endingoffsets", "startingtimestamp",
        "startingoffsetsbytimestamp", "maxoffsetspertrigger", "minpartitions",
        "failondataloss", "group", "includeproperties", "readtimeoutms", "pullbatchsize",
        "localreads",
    }
)  # fmt: skip
_SINK_KEYS: Final = frozenset(
    {"endpoints", "nameserver", "topic", "producergroup", "sendbatchsize"}
)
_SPARK_KEYS: Final = frozenset({"path", "checkpointlocation", "queryname"})
"""Options Spark itself passes to every data source."""


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(key).lower(): str(value) for key, value in options.items()}


def _check_known(given: dict[str, str], known: frozenset[str], role: str) -> None:
    unknown = sorted(set(given) - known - _SPARK_KEYS)
    if unknown:
        raise OptionError(f"unknown {role} options", unknown=unknown, known=sorted(known))


def _endpoints(given: dict[str, str]) -> tuple[str, ...]:
    found = parse_endpoints(given.get("endpoints") or given.get("nameserver") or "")
    if not found:
        raise OptionError("option endpoints (or nameServer) is required: host:port of gRPC")
    return found


def _int(given: dict[str, str], name: str, low: int) -> int | None:
    raw = given.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise OptionError("option must be an integer", option=name, value=raw) from None
    if value < low:
        raise OptionError(f"option must be >= {low}", option=name, value=value)
    return value


def _bool(given: dict[str, str], name: str, default: bool) -> bool:
    raw = given.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise OptionError("option must be true or false", option=name, value=raw)


def _json_object(raw: str, name: str) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError("option is not valid JSON", option=name, value=raw) from exc
    if not isinstance(value, dict):
        raise OptionError("option must be a JSON object", option=name, value=raw)
    return value


def _assign(raw: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    parsed = _json_object(raw, "assign")
    out = []
    for topic, ids in sorted(parsed.items()):
        if not isinstance(ids, list) or not all(type(i) is int and i >= 0 for i in ids):
            raise OptionError(
                'assign maps each topic to a list of queue ids: {"topic":[0,1]}', value=raw
            )
        out.append((topic, tuple(sorted(set(ids)))))
    if not out:
        raise OptionError("option assign names no topic", value=raw)
    return tuple(out)


def _offsets_spec(given: dict[str, str], name: str, default: str, words: tuple[str, ...]) -> str:
    raw = given.get(name.lower(), default).strip()
    if raw.lower() in words:
        return raw.lower()
    if raw.startswith("{"):
        _json_object(raw, name)  # shape checked where the queues are known
        return raw
    allowed = " / ".join(words)
    raise OptionError(f"option must be {allowed} or a JSON object", option=name, value=raw)


def source_options(options: Mapping[str, str]) -> SourceOptions:
    """Parse the reader's options (batch or stream)."""
    given = _lower(options)
    _check_known(given, _SOURCE_KEYS, "source")
    chosen = [key for key in ("topic", "subscribe", "subscribepattern", "assign") if key in given]
    if len(chosen) != 1:
        raise OptionError(
            "give exactly one of topic, subscribe, subscribePattern or assign", given=chosen
        )
    topics: tuple[str, ...] = ()
    pattern = None
    assign: tuple[tuple[str, tuple[int, ...]], ...] = ()
    if chosen[0] in ("topic", "subscribe"):
        topics = tuple(t.strip() for t in given[chosen[0]].split(",") if t.strip())
        if not topics:
            raise OptionError("option names no topic", option=chosen[0], value=given[chosen[0]])
    elif chosen[0] == "subscribepattern":
        pattern = given["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError("subscribePattern is not a regex", value=pattern) from exc
    else:
        assign = _assign(given["assign"])
    by_time = given.get("startingoffsetsbytimestamp")
    if by_time is not None:
        _json_object(by_time, "startingOffsetsByTimestamp")
    sub_expression = given.get("subexpression", "*").strip() or "*"
    return SourceOptions(
        endpoints=_endpoints(given),
        topics=topics,
        pattern=pattern,
        assign=assign,
        sub_expression=sub_expression,
        starting_offsets=_offsets_spec(
            given, "startingOffsets", "earliest", ("earliest", "latest")
        ),
        ending_offsets=_offsets_spec(given, "endingOffsets", "latest", ("latest",)),
        starting_timestamp_ms=_int(given, "startingTimestamp", 0),
        starting_offsets_by_timestamp=by_time,
        max_offsets_per_trigger=_int(given, "maxOffsetsPerTrigger", 1),
        min_partitions=_int(given, "minPartitions", 1),
        fail_on_data_loss=_bool(given, "failOnDataLoss", True),
        group=given.get("group") or None,
        include_properties=_bool(given, "includeProperties", False),
        read_timeout_ms=_int(given, "readTimeoutMs", 1) or DEFAULT_READ_TIMEOUT_MS,
        pull_batch_size=min(
            MAX_PULL_BATCH_SIZE, _int(given, "pullBatchSize", 1) or MAX_PULL_BATCH_SIZE
        ),
        local_reads=_bool(given, "localReads", True),
    )


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Parse the writer's options (batch or stream)."""
    given = _lower(options)
    _check_known(given, _SINK_KEYS, "sink")
    return SinkOptions(
        endpoints=_endpoints(given),
        topic=given.get("topic") or None,
        producer_group=given.get("producergroup") or "aeromq-spark-sink",
        send_batch_size=_int(given, "sendBatchSize", 1) or 64,
    )
