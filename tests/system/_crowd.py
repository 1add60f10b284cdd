"""A crowd of consumers in one process for the many-consumers test: ``count`` membership
streams over one gRPC channel, each a client of its own in one of ``groups`` groups."""

from __future__ import annotations

from typing import Any

from aeromq.client.grpc_client import GrpcClient
from aeromq.proto import consumer_group_pb2


def crowd(
    address: str, name: str, count: int, groups: int, topic: str, stop: Any, results: Any
) -> None:
    """Open ``count`` streams, report ("subscribed", name, count) once each has its first
    answer, keep them open until ``stop`` is set, then close them and report ("left", name)."""
    with GrpcClient(address, timeout_s=30.0) as client:
        streams = []
        for index in range(count):
            stream = client.open_heartbeat_stream()
            stream.send(
                consumer_group_pb2.HeartbeatRequest(
                    client_id=f"{name}-{index}",
                    consumers=[
                        consumer_group_pb2.ConsumerData(
                            consumer_group=f"crowd-{index % groups}",
                            consume_type=consumer_group_pb2.CONSUME_ACTIVELY,
                            subscriptions=[consumer_group_pb2.SubscriptionData(topic=topic)],
                        )
                    ],
                )
            )
            streams.append(stream)
        for stream in streams:
            if stream.poll(60.0) is None:
                results.put(("failed", name))
                return
        results.put(("subscribed", name, count))
        stop.wait(120.0)
        for stream in streams:
            stream.close(timeout_s=5.0)
        results.put(("left", name))
