"""A/B of broker settings through the environment: python ab2.py VARIANTS RATES SECONDS, where
VARIANTS is a comma list of names from VARIANT_ENV; one broker a variant run, rates in order."""

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

VARIANT_ENV = {
    "D": {},
    "L0": {
        "AEROMQ_BROKER_SESSION_IDLE_STRATEGY": "doorbell:0,0,1000,1000000,25000000,1000000000,100000,0"
    },
    "W0": {
        "AEROMQ_BROKER_SESSION_IDLE_STRATEGY": "doorbell:0,0,1000,1000000,25000000,1000000000,0,0"
    },
}
KEYS = {k for env in VARIANT_ENV.values() for k in env}


def main() -> None:
    variants = sys.argv[1].split(",")
    rates = [int(r) for r in sys.argv[2].split(",")]
    seconds = float(sys.argv[3])
    for n, v in enumerate(variants):
        for k in KEYS:
            os.environ.pop(k, None)
        os.environ.update(VARIANT_ENV[v])
        with tempfile.TemporaryDirectory() as tmp:
            broker = _start_broker(Path(tmp))
            admin = GrpcClient(broker.grpc_address)
            try:
                for rate in rates:
                    topic = f"V{n}r{rate}"
                    admin.create_topic(topic)
                    plan = Plan(rate, round(rate * seconds), 2.0, 2 * seconds + 5)
                    r = measure(
                        f"{v}:{rate}",
                        plan,
                        {"broker": broker.pid},
                        role("consumer", aeromq_consumer, broker.grpc_address, topic, "auto"),
                        role("producer", aeromq_producer, broker.grpc_address, topic, "auto"),
                    )
                    print(
                        json.dumps(
                            {
                                "variant": v,
                                "rate": rate,
                                "load": round(os.getloadavg()[0], 2),
                                "msgs_per_s": r.msgs_per_s,
                                "p50_us": r.p50_us,
                                "p99_us": r.p99_us,
                                **(r.extra or {}),
                            }
                        ),
                        flush=True,
                    )
            finally:
                admin.close()
                broker.stop()


if __name__ == "__main__":
    main()
