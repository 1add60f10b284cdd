"""Routes, assignments and heartbeats of the RocketMQ 5 endpoint: this broker alone serves
every queue of a topic, at the endpoint's own address. No I/O here.

A route lists ``max(read, write)`` queues of the topic, each with the permission the topic
config gives it (a queue id below both counts is READ_WRITE), on broker id 0 (the master, the
only one clients send to and receive from) and accepting NORMAL, FIFO, DELAY and TRANSACTION
messages.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from aeromq.broker.store import TopicConfig
from aeromq.common import PERM_READ, PERM_WRITE
from aeromq.proto.apache.rocketmq.v2 import definition_pb2

__all__ = ["MASTER_BROKER_ID", "assignments", "endpoints_of", "message_queues"]

MASTER_BROKER_ID: Final = 0
_ACCEPTED_TYPES: Final = (
    definition_pb2.NORMAL,
    definition_pb2.FIFO,
    definition_pb2.DELAY,
    definition_pb2.TRANSACTION,
)


def endpoints_of(host: str, port: int) -> definition_pb2.Endpoints:
    """The endpoint's address as a route names it (IPv4, IPv6 or a domain name)."""
    try:
        version = ipaddress.ip_address(host).version
        scheme = definition_pb2.IPv4 if version == 4 else definition_pb2.IPv6
    except ValueError:
        scheme = definition_pb2.DOMAIN_NAME
    endpoints = definition_pb2.Endpoints(scheme=scheme)
    endpoints.addresses.add(host=host, port=port)
    return endpoints


def _permission(config: TopicConfig, queue_id: int) -> definition_pb2.Permission.ValueType:
    readable = bool(config.perm & PERM_READ) and queue_id < config.read_queue_nums
    writable = bool(config.perm & PERM_WRITE) and queue_id < config.write_queue_nums
    if readable and writable:
        return definition_pb2.READ_WRITE
    if readable:
        return definition_pb2.READ
    return definition_pb2.WRITE if writable else definition_pb2.NONE


def message_queues(
    config: TopicConfig, namespace: str, broker_name: str, endpoints: definition_pb2.Endpoints
) -> list[definition_pb2.MessageQueue]:
    """The topic's queues as a ``QueryRouteResponse`` lists them."""
    broker = definition_pb2.Broker(name=broker_name, id=MASTER_BROKER_ID, endpoints=endpoints)
    queues = []
    for queue_id in range(max(config.read_queue_nums, config.write_queue_nums)):
        queue = definition_pb2.MessageQueue(
            id=queue_id,
            permission=_permission(config, queue_id),
            broker=broker,
            accept_message_types=_ACCEPTED_TYPES,
        )
        queue.topic.name = config.topic_name
        queue.topic.resource_namespace = namespace
        queues.append(queue)
    return queues


def assignments(
    config: TopicConfig, namespace: str, broker_name: str, endpoints: definition_pb2.Endpoints
) -> list[definition_pb2.Assignment]:
    """``QueryAssignment``'s answer: one assignment naming a readable queue of the topic.

    Receives read every queue of the topic (see ``_pop``), so one queue per broker is all a
    push consumer needs to know where to receive from, as RocketMQ's proxy answers."""
    readable = [
        q
        for q in message_queues(config, namespace, broker_name, endpoints)
        if q.permission in (definition_pb2.READ, definition_pb2.READ_WRITE)
    ]
    return [definition_pb2.Assignment(message_queue=q) for q in readable[:1]]
