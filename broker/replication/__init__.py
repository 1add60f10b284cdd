"""Replication of a broker group's commit log (leader -> followers), its building blocks first.

- :mod:`~aeromq.broker.replication.frame_descriptor`: the layout of the APPEND, HEARTBEAT, FETCH
  and ACK frames (bit diagrams, offsets, lengths);
- :mod:`~aeromq.broker.replication.frame_codec`: pure encoders and decoders of those frames
  (:func:`check_frame` returns a code on the hot path, :func:`decode_frame` raises);
- :mod:`~aeromq.broker.replication.epoch_file`: the ``epochs`` file of ``<epoch> <start_offset>``
  lines, rewritten atomically and durably, its lookups for the truncation handshake, and the
  ``truncate.intent`` marker;
- the errors, rooted at :class:`ReplicationError` under the broker's ``BrokerError``.
"""

from aeromq.broker.replication._errors import (
    CorruptEpochFileError,
    EpochFileError,
    MalformedFrameError,
    ReplicationError,
)
from aeromq.broker.replication.epoch_file import (
    EPOCH_FILE_NAME,
    TRUNCATE_INTENT_FILE_NAME,
    EpochEntry,
    EpochFile,
    clear_truncate_intent,
    read_truncate_intent,
    write_truncate_intent,
)
from aeromq.broker.replication.frame_codec import (
    CHECK_CODE_NAMES,
    LENGTH_MISMATCH,
    NEGATIVE_FIELD,
    OFFSET_BEFORE_EPOCH_START,
    SHORT_FRAME,
    UNKNOWN_TYPE,
    UNSUPPORTED_VERSION,
    AckFrame,
    AppendFrame,
    FetchFrame,
    Frame,
    HeartbeatFrame,
    check_frame,
    decode_frame,
    encode_ack,
    encode_append,
    encode_fetch,
    encode_heartbeat,
    write_append_header,
)

__all__ = [
    "CHECK_CODE_NAMES",
    "EPOCH_FILE_NAME",
    "LENGTH_MISMATCH",
    "NEGATIVE_FIELD",
    "OFFSET_BEFORE_EPOCH_START",
    "SHORT_FRAME",
    "TRUNCATE_INTENT_FILE_NAME",
    "UNKNOWN_TYPE",
    "UNSUPPORTED_VERSION",
    "AckFrame",
    "AppendFrame",
    "CorruptEpochFileError",
    "EpochEntry",
    "EpochFile",
    "EpochFileError",
    "FetchFrame",
    "Frame",
    "HeartbeatFrame",
    "MalformedFrameError",
    "ReplicationError",
    "check_frame",
    "clear_truncate_intent",
    "decode_frame",
    "encode_ack",
    "encode_append",
    "encode_fetch",
    "encode_heartbeat",
    "read_truncate_intent",
    "write_append_header",
    "write_truncate_intent",
]
