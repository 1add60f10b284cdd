"""The latency suite's aeromq IPC cases only, on one broker: ``python lat_ab.py RATES [SECONDS]``
(``RATES`` comma-separated msgs/s, 0 for send-only) prints one JSON line a case, with each
process's CPU. Run from a tree's root with it on ``PYTHONPATH`` (the runs of ``round.md``)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from aeromq.client.grpc_client import GrpcClient
from bench._latency_run import measure, role
from bench._latency_systems import aeromq_consumer, aeromq_producer
from bench.suites.latency import Settings, _start_broker


def main() -> None:
    rates = [int(r) for r in sys.argv[1].split(",")]
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    settings = Settings(tuple(rates), dict.fromkeys(rates, secs), 0.5, secs, 2.0, 5.0)
    root = Path(tempfile.mkdtemp(prefix="latab-"))
    broker = _start_broker(root)
    try:
        admin = GrpcClient(broker.grpc_address)
        grpc = broker.grpc_address
        for rate in rates:
            topic = f"T{rate}"
            admin.create_topic(topic)
            producer = role("producer", aeromq_producer, grpc, topic, "udp")
            if rate == 0:
                name, plan, consumer = "aeromq:send-only:0", settings.send_only(), None
            else:
                name, plan = f"aeromq:ipc:{rate}", settings.plan(rate)
                consumer = role("consumer", aeromq_consumer, grpc, topic, "udp")
            r = measure(name, plan, {"broker": broker.pid}, consumer, producer)
            e = r.extra or {}
            line = {
                "name": r.name,
                "rate": r.msgs_per_s,
                "p50": r.p50_us,
                "p99": r.p99_us,
                "cpu": e.get("cpu_total_us_per_msg"),
                "send_p50": e.get("send_p50_us"),
                "extra": {k: v for k, v in e.items() if "cpu" in k},
            }
            print(json.dumps(line), flush=True)
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
