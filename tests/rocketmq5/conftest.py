"""A broker process with its RocketMQ 5 endpoint, and the official client run beside it.

The official ``rocketmq-python-client`` carries its own copy of the ``apache.rocketmq.v2``
schema, which protobuf will not register twice in one process, so it runs in a process of its
own (``bench/peers/rocketmq5_official.py``) and never in the test process, which may import
aeromq's copy (``aeromq.proto.apache.rocketmq.v2``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.proto.apache.rocketmq.v2 import definition_pb2, service_pb2, service_pb2_grpc

REPO_ROOT = Path(__file__).resolve().parents[2]
OFFICIAL = REPO_ROOT / "bench" / "peers" / "rocketmq5_official.py"
CLIENT_TIMEOUT_S = 90.0
MAX_ATTEMPTS = 2
BROKER_ARGS = (
    "--ingress-udp-endpoint", "none", "--auto-create-topic", "true",
    "--default-queue-count", "4", "--rocketmq-max-delivery-attempts", str(MAX_ATTEMPTS),
    "--commit-log-segment-bytes", "16MiB", "--index-slots", "1000", "--index-entries", "4000",
)  # fmt: skip


def start_broker(data_dir: Path) -> ServerProcess:
    return start_broker_process(data_dir, extra_args=BROKER_ARGS)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One broker for a module's tests (each test uses topics and groups of its own)."""
    process = start_broker(tmp_path_factory.mktemp("rocketmq5") / "data")
    yield process
    assert process.stop() == 0


def endpoint(broker: ServerProcess) -> str:
    return broker.ready["rocketmq"]


def official(*args: str | int) -> dict[str, Any]:
    """Run the official client (see the module) with ``args``; its JSON answer."""
    if importlib.util.find_spec("rocketmq") is None:  # looked up, not imported (see module)
        pytest.skip("the official client is not installed: pip install '.[test]'")
    command: Sequence[str] = [sys.executable, str(OFFICIAL), *(str(a) for a in args)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only the client
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, env=env, check=False
    )
    assert done.returncode == 0, f"{command}: {done.stdout[-3000:]} {done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def resource(name: str) -> definition_pb2.Resource:
    """A v2 resource (a topic or group) named ``name``, in no namespace."""
    return definition_pb2.Resource(name=name)


def receive(
    stub: service_pb2_grpc.MessagingServiceStub, topic: str, group: str, invisible_s: int = 30
) -> list[service_pb2.ReceiveMessageResponse]:
    """One raw-gRPC receive of up to 16 messages of ``topic`` for ``group`` (a second of long
    polling), every answer of its stream."""
    request = service_pb2.ReceiveMessageRequest(
        group=resource(group),
        message_queue=definition_pb2.MessageQueue(topic=resource(topic)),
        filter_expression=definition_pb2.FilterExpression(type=definition_pb2.TAG, expression="*"),
        batch_size=16,
    )
    request.invisible_duration.seconds = invisible_s
    request.long_polling_timeout.seconds = 1
    return list(stub.ReceiveMessage(request, timeout=30.0))
