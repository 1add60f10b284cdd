"""What the round's scripts share: a broker on the latency suite's settings in a temporary
directory, one aeromq run on it (a paced producer and a consumer, or a send-only producer), and
a row printed as a JSON line. Run the scripts from the repository root with ``PYTHONPATH=.``."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import patch

from aeromq.broker.testing import ServerProcess
from aeromq.client.grpc_client import GrpcClient
from bench._harness import Result
from bench._latency_run import measure, role
from bench._latency_systems import aeromq_consumer, aeromq_producer
from bench._schedule import Plan
from bench.suites.latency import _start_broker


@contextmanager
def broker_with(env: dict[str, str]) -> Iterator[tuple[ServerProcess, GrpcClient]]:
    """A broker started with ``env`` added to this process's environment (and taken out again
    after), and an admin client of it; both stopped at the end."""
    with patch.dict(os.environ, env), tempfile.TemporaryDirectory() as tmp:
        broker = _start_broker(Path(tmp))
        admin = GrpcClient(broker.grpc_address)
        try:
            yield broker, admin
        finally:
            admin.close()
            broker.stop()


def run(
    broker: ServerProcess, admin: GrpcClient, topic: str, plan: Plan, transport: str = "auto"
) -> Result:
    """One run on ``broker``: a consumer and a producer on ``plan`` (``plan.rate`` None: the
    producer alone, back to back), over ``transport`` ("auto": IPC; "udp")."""
    admin.create_topic(topic)
    grpc = broker.grpc_address
    consumer = None
    if plan.rate is not None:
        consumer = role("consumer", aeromq_consumer, grpc, topic, transport)
    producer = role("producer", aeromq_producer, grpc, topic, transport)
    return measure(topic, plan, {"broker": broker.pid}, consumer, producer)


def paced(rate: int, seconds: float) -> Plan:
    """``seconds`` at ``rate`` after a 2 s warm-up, as the latency suite plans a rate."""
    return Plan(rate, round(rate * seconds), 2.0, 2 * seconds + 5)


def print_row(**fields: object) -> None:
    """One JSON line, with the load average at its end."""
    print(json.dumps({**fields, "load": round(os.getloadavg()[0], 2)}), flush=True)


def run_variants(
    variants: Sequence[str],
    env: Mapping[str, Mapping[str, str]],
    rates_seconds: Sequence[tuple[int, float]],
) -> None:
    """An A/B: one broker a variant, in the order given, started with ``env[variant]`` added to
    the environment, each running every ``(rate, seconds)`` in turn (:func:`paced`, over IPC),
    and a row printed a run: the variant, the rate, the rate reached, p50, p99 and the rest of
    the run's figures (the plan's own rate among them: the same)."""
    for n, variant in enumerate(variants):
        with broker_with(dict(env[variant])) as (broker, admin):
            for rate, seconds in rates_seconds:
                result = run(broker, admin, f"V{n}r{rate}", paced(rate, seconds))
                row = {
                    "variant": variant,
                    "rate": rate,
                    "msgs_per_s": result.msgs_per_s,
                    "p50_us": result.p50_us,
                    "p99_us": result.p99_us,
                    **result.extra,
                }
                print_row(**row)


def rates_seconds(text: str) -> list[tuple[int, float]]:
    """``RATE:SECONDS,...`` (msgs/s, seconds each) as :func:`run_variants` takes them."""
    pairs = (part.partition(":") for part in text.split(","))
    return [(int(rate), float(seconds)) for rate, _, seconds in pairs]
