"""Replication of a broker group's commit log (leader -> followers), its building blocks first.

- :mod:`~aeromq.broker.replication.frame_descriptor`: the layout of the APPEND, HEARTBEAT, FETCH
  and ACK frames (bit diagrams, offsets, lengths);
- :mod:`~aeromq.broker.replication.frame_codec`: pure encoders and decoders of those frames
  (:func:`check_frame` returns a code and :func:`decode_or_none` None on the hot path,
  :func:`decode_frame` raises);
- :mod:`~aeromq.broker.replication.epoch_file`: the ``epochs`` file of ``<epoch> <start_offset>``
  lines, rewritten atomically and durably, its lookups for the truncation handshake, and the
  ``truncate.intent`` marker;
- :mod:`~aeromq.broker.replication.group_state`: the group's keys in etcd and its ``state``
  (leader, epoch, ISR, min_isr), changed by compare-and-swap on its revision only;
- :mod:`~aeromq.broker.replication.membership`: a member's lease, key and election position;
- :mod:`~aeromq.broker.replication.election`: the election as a state machine with no I/O;
- :mod:`~aeromq.broker.replication.controller`: the member's link to etcd (watch, elections,
  ISR writes) that tells the agent its role;
- :mod:`~aeromq.broker.replication.fencing`: a leader's self-fencing on its lease;
- :mod:`~aeromq.broker.replication.isr`: the ack rule's high watermark and the ISR's changes;
- :mod:`~aeromq.broker.replication.handshake`: the truncation handshake (KIP-101/279);
- :mod:`~aeromq.broker.replication.replicator` (leader) and
  :mod:`~aeromq.broker.replication.fetcher` (follower): the data path over Aeron UDP, run by
  :mod:`~aeromq.broker.replication.agent` on its own thread, with the member's fsyncs on
  :mod:`~aeromq.broker.replication.log_flusher`'s;
- :mod:`~aeromq.broker.replication.group_member`: all of it assembled for the broker;
- the errors, rooted at :class:`ReplicationError` under the broker's ``BrokerError``.

The protocol, the ack rule, the keys and the timings are described in ``docs/replication.md``.
"""

from aeromq.broker.replication._errors import (
    CorruptEpochFileError,
    EpochFileError,
    MalformedFrameError,
    ReplicationError,
)
from aeromq.broker.replication.agent import ReplicationAgent, Role
from aeromq.broker.replication.controller import GroupController, GroupSnapshot
from aeromq.broker.replication.epoch_file import (
    EPOCH_FILE_NAME,
    TRUNCATE_INTENT_FILE_NAME,
    EpochEntry,
    EpochFile,
    clear_truncate_intent,
    read_truncate_intent,
    write_truncate_intent,
)
from aeromq.broker.replication.fencing import SelfFence
from aeromq.broker.replication.frame_codec import (
    CHECK_CODE_NAMES,
    EPOCH_ABOVE_LEADER_EPOCH,
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
    decode_or_none,
    encode_ack,
    encode_append,
    encode_fetch,
    encode_heartbeat,
    write_append_header,
)
from aeromq.broker.replication.group_member import GroupMember, GroupSettings
from aeromq.broker.replication.group_state import GroupKeys, GroupState, GroupStateStore
from aeromq.broker.replication.membership import MemberInfo, Membership, Position

__all__ = [
    "CHECK_CODE_NAMES",
    "EPOCH_ABOVE_LEADER_EPOCH",
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
    "GroupController",
    "GroupKeys",
    "GroupMember",
    "GroupSettings",
    "GroupSnapshot",
    "GroupState",
    "GroupStateStore",
    "HeartbeatFrame",
    "MalformedFrameError",
    "MemberInfo",
    "Membership",
    "Position",
    "ReplicationAgent",
    "ReplicationError",
    "Role",
    "SelfFence",
    "check_frame",
    "clear_truncate_intent",
    "decode_frame",
    "decode_or_none",
    "encode_ack",
    "encode_append",
    "encode_fetch",
    "encode_heartbeat",
    "read_truncate_intent",
    "write_append_header",
    "write_truncate_intent",
]
