"""``ResponseCode``: the status codes a broker answers with, numbered as RocketMQ numbers them.

The values are those of RocketMQ's remoting ``ResponseCode`` (and ``RemotingSysResponseCode``
for 0-4), so a response can be mapped one to one onto a RocketMQ-speaking peer. The client
turns a non-success code into the matching error class with
:func:`common.error_for_code`; this module only names the numbers.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ResponseCode"]


class ResponseCode(IntEnum):
    """Status of a broker response. ``SUCCESS`` is 0; every other value is a failure."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    INVALID_PARAMETER = 29
    CONSUMER_NOT_ONLINE = 206
    BROKER_NOT_EXIST = 211
    FLOW_CONTROL = 215
    ILLEGAL_OPERATION = 604
    DISK_FULL = 1800  # aeromq's own: RocketMQ answers SERVICE_NOT_AVAILABLE with a remark
    # aeromq's own, broker groups (a leader and its followers; docs/replication.md):
    NOT_LEADER = 1810  # this member does not lead its group now; the status names the leader
    NOT_ENOUGH_REPLICAS = 1811  # fewer members in sync than min_isr: nothing was stored
    REPLICATION_TIMEOUT = 1812  # stored on the leader, not acknowledged in time: outcome unknown
    OUT_OF_ORDER_SEQUENCE = 1813  # an idempotent producer's sequence skipped ahead in a queue
    RPC_TIME_OUT = -1006
    # RocketMQ 5's gRPC ``Code`` values for access control (remoting has only NO_PERMISSION).
    UNAUTHORIZED = 40100
    FORBIDDEN = 40300
