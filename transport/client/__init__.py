"""The transport's client: ``Aeron``, publications, subscriptions, images and counters.

A client connects to a media driver through its ``cnc.dat`` (:meth:`Aeron.connect`), asks it
for publications and subscriptions, and then moves messages through shared-memory log buffers
without the driver on the path: :meth:`ConcurrentPublication.offer` appends, and
:meth:`Subscription.poll` reads. Offer results are the codes exported here (``NOT_CONNECTED``,
``BACK_PRESSURED``, ``ADMIN_ACTION``, ``CLOSED``, ``MAX_POSITION_EXCEEDED``).
"""

from aeromq.transport.client.aeron import Aeron
from aeromq.transport.client.client_conductor import ClientConductor
from aeromq.transport.client.concurrent_publication import ConcurrentPublication
from aeromq.transport.client.context import AeronContext, ClientErrorHandler, ImageHandler
from aeromq.transport.client.counter import Counter
from aeromq.transport.client.exclusive_publication import ExclusivePublication
from aeromq.transport.client.heartbeat_timestamp import HEARTBEAT_TYPE_ID
from aeromq.transport.client.image import BlockHandler, Image
from aeromq.transport.client.publication import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    Publication,
)
from aeromq.transport.client.subscription import Subscription

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
