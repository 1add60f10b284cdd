"""A/B: the broker's sched_yield after ringing a woken consumer (AEROMQ_EXP_YIELD=1) against
none; aeromq over IPC at 100 and 1,000 msgs/s, one broker a variant, alternating."""

import json
import os
import sys
import tempfile
from pathlib import Path

from aeromq.client.grpc_client import GrpcClient
from bench._latency_run import measure, role
from bench._latency_systems import aeromq_consumer, aeromq_producer
from bench._schedule import Plan
from bench.suites.latency import _start_broker


def main() -> None:
    variants = sys.argv[1].split(",")  # e.g. A,B,A,B
    duration = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
    for n, v in enumerate(variants):
        os.environ["AEROMQ_EXP_YIELD"] = "1" if v == "B" else "0"
        with tempfile.TemporaryDirectory() as tmp:
            broker = _start_broker(Path(tmp))
            admin = GrpcClient(broker.grpc_address)
            try:
                for rate in (100, 1000):
                    topic = f"Y{n}r{rate}"
                    admin.create_topic(topic)
                    plan = Plan(rate, round(rate * duration), 2.0, 2 * duration + 5)
                    r = measure(
                        f"{v}:{rate}",
                        plan,
                        {"broker": broker.pid},
                        role("consumer", aeromq_consumer, broker.grpc_address, topic, "auto"),
                        role("producer", aeromq_producer, broker.grpc_address, topic, "auto"),
                    )
                    row = {
                        "variant": v,
                        "rate": rate,
                        "load": os.getloadavg()[0],
                        "msgs_per_s": r.msgs_per_s,
                        "p50_us": r.p50_us,
                        "p99_us": r.p99_us,
                        **(r.extra or {}),
                    }
                    print(json.dumps(row), flush=True)
            finally:
                admin.close()
                broker.stop()


if __name__ == "__main__":
    main()
