"""The transport's client: ``Aeron``, publications, subscriptions, images and counters.

A client connects to a media driver through its ``cnc.dat`` (:meth:`Aeron.connect`), asks it
for publications and subscriptions, and then moves messages through shared-memory log buffers
without the driver on the path: :meth:`ConcurrentPublication.offer` appends, and
:meth:`Subscription.poll` reads. Offer results are the codes exported here (``NOT_CONNECTED``,
``BACK_PRESSURED``, ``ADMIN_ACTION``, ``CLOSED``, ``MAX_POSITION_EXCEEDED``).
"""

from transport.client.aeron import Aeron
from transport.client.client_conductor import ClientConductor
from transport.client.concurrent_publication import ConcurrentPublication
from transport.client.context import AeronContext, ClientErrorHandler, ImageHandler
from transport.client.counter import Counter
from transport.client.exclusive_publication import ExclusivePublication
from transport.client.heartbeat_timestamp import HEARTBEAT_TYPE_ID
from transport.client.image import BlockHandler, Image
from transport.client.publication import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    Publication,
)
from transport.client.subscription import Subscription

__all__ = [
    "ADMIN_ACTION",
    "BACK_PRESSURED",
    "CLOSED",
    "HEARTBEAT_TYPE_ID",
    "MAX_POSITION_EXCEEDED",
    "NOT_CONNECTED",
    "Aeron",
    "AeronContext",
    "BlockHandler",
    "ClientConductor",
    "ClientErrorHandler",
    "ConcurrentPublication",
    "Counter",
    "ExclusivePublication",
    "Image",
    "ImageHandler",
    "Publication",
    "Subscription",
]
