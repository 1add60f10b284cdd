"""Errors of the RocketMQ 5 endpoint and their ``apache.rocketmq.v2.Code`` values.

::

    BrokerError
    └── ProtocolStatusError     a call refused with a v2 ``Code`` (``v2_code``); the servicer
                                answers it as the response's ``Status``, gRPC status OK, as a
                                RocketMQ proxy does, so the client raises its own exception for
                                the code (BadRequestException, NotFoundException, ...)

:func:`put_status_code` maps the store's put outcomes to codes, in one table.
"""

from __future__ import annotations

from typing import Final

from aeromq.broker._errors import BrokerError
from aeromq.broker.store import PutMessageStatus
from aeromq.proto.apache.rocketmq.v2 import definition_pb2

__all__ = ["ProtocolStatusError", "put_status_code", "status"]

Code = definition_pb2.Code

_PUT_CODES: Final[dict[PutMessageStatus, Code.ValueType]] = {
    PutMessageStatus.PUT_OK: Code.OK,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: Code.MASTER_PERSISTENCE_TIMEOUT,
    PutMessageStatus.SERVICE_NOT_AVAILABLE: Code.HA_NOT_AVAILABLE,
    PutMessageStatus.CREATE_MAPPED_FILE_FAILED: Code.INTERNAL_SERVER_ERROR,
    PutMessageStatus.MESSAGE_ILLEGAL: Code.BAD_REQUEST,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: Code.MESSAGE_PROPERTIES_TOO_LARGE,
    PutMessageStatus.DISK_FULL: Code.TOO_MANY_REQUESTS,  # retriable: sends are taken again later
    PutMessageStatus.NOT_LEADER: Code.HA_NOT_AVAILABLE,
    PutMessageStatus.REPLICATION_TIMEOUT: Code.SLAVE_PERSISTENCE_TIMEOUT,
    PutMessageStatus.OUT_OF_ORDER_SEQUENCE: Code.BAD_REQUEST,
}
assert set(_PUT_CODES) == set(PutMessageStatus), "every put status has a v2 code"


class ProtocolStatusError(BrokerError):
    """A RocketMQ 5 call refused with ``v2_code`` (an ``apache.rocketmq.v2.Code``)."""

    def __init__(self, v2_code: Code.ValueType, message: str, **values: object) -> None:
        super().__init__(message, **values)
        self.v2_code = v2_code
        self.retriable = v2_code in (Code.TOO_MANY_REQUESTS, Code.MASTER_PERSISTENCE_TIMEOUT)


def put_status_code(put_status: PutMessageStatus) -> Code.ValueType:
    """The v2 code of a store put's outcome."""
    return _PUT_CODES[put_status]


def status(code: Code.ValueType = Code.OK, message: str = "OK") -> definition_pb2.Status:
    """A response's ``Status``."""
    return definition_pb2.Status(code=code, message=message)
