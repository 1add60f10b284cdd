"""aeromq send-only (no consumer) N times on one broker each: msgs/s, send p50/p99, CPU."""

import json
import os
import sys
import tempfile
from pathlib import Path

from aeromq.client.grpc_client import GrpcClient
from bench._latency_run import measure, role
from bench._latency_systems import aeromq_producer
from bench._schedule import Plan
from bench.suites.latency import _start_broker


def main() -> None:
    n = int(sys.argv[1])
    seconds = float(sys.argv[2])
    for i in range(n):
        with tempfile.TemporaryDirectory() as tmp:
            broker = _start_broker(Path(tmp))
            admin = GrpcClient(broker.grpc_address)
            try:
                admin.create_topic(f"S{i}")
                r = measure(
                    f"so{i}",
                    Plan(None, 10**8, 0.0, seconds),
                    {"broker": broker.pid},
                    None,
                    role("producer", aeromq_producer, broker.grpc_address, f"S{i}", "auto"),
                )
                print(
                    json.dumps(
                        {
                            "i": i,
                            "load": os.getloadavg()[0],
                            "msgs_per_s": r.msgs_per_s,
                            "send_p50_us": r.extra.get("send_p50_us"),
                            "send_p99_us": r.extra.get("send_p99_us"),
                            "cpu": r.extra.get("cpu"),
                        }
                    ),
                    flush=True,
                )
            finally:
                admin.close()
                broker.stop()


if __name__ == "__main__":
    main()
