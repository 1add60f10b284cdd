"""On one broker, run the given cases in order: ipcRATE, udpRATE, so (send-only 3 s); print rows."""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from aeromq.client.grpc_client import GrpcClient
from bench._latency_run import measure, role
from bench._latency_systems import aeromq_consumer, aeromq_producer
from bench._schedule import Plan
from bench.suites.latency import _start_broker


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        broker = _start_broker(Path(tmp))
        admin = GrpcClient(broker.grpc_address)
        try:
            for n, case in enumerate(sys.argv[1:]):
                topic = f"O{n}"
                admin.create_topic(topic)
                t0 = time.monotonic()
                if case.startswith("idle"):

                    def snap() -> dict[tuple[str, str], int]:
                        out = {}
                        for t in os.listdir(f"/proc/{broker.pid}/task"):
                            f = Path(f"/proc/{broker.pid}/task/{t}/stat").read_text()
                            name = f[f.index("(") + 1 : f.rindex(")")]
                            parts = f[f.rindex(")") + 2 :].split()
                            out[(t, name)] = int(parts[11]) + int(parts[12])
                        return out

                    a = snap()
                    time.sleep(float(case[4:]))
                    b = snap()
                    th = sorted(((b[k] - a.get(k, 0), k[1]) for k in b), reverse=True)
                    tot = sum(d for d, _ in th)
                    print(
                        json.dumps(
                            {
                                "case": case,
                                "broker_pct": round(tot / float(case[4:]), 2),
                                "threads_ticks": th[:5],
                            }
                        ),
                        flush=True,
                    )
                    continue
                if case.startswith("sleep"):
                    time.sleep(float(case[5:]))
                    continue
                if case == "so":
                    r = measure(
                        case,
                        Plan(None, 10**8, 0.0, 3.0),
                        {"broker": broker.pid},
                        None,
                        role("producer", aeromq_producer, broker.grpc_address, topic, "auto"),
                    )
                else:
                    transport = "auto" if case.startswith("ipc") else "udp"
                    rate = int(case[3:])
                    r = measure(
                        case,
                        Plan(rate, rate * 3, 2.0, 11.0),
                        {"broker": broker.pid},
                        role("consumer", aeromq_consumer, broker.grpc_address, topic, transport),
                        role("producer", aeromq_producer, broker.grpc_address, topic, transport),
                    )
                print(
                    json.dumps(
                        {
                            "case": case,
                            "load": round(os.getloadavg()[0], 2),
                            "s": round(time.monotonic() - t0, 1),
                            "msgs_per_s": round(r.msgs_per_s or 0),
                            "p50": r.p50_us,
                            "send_p50_us": r.extra.get("send_p50_us"),
                            "cpu": r.extra.get("cpu_total_us_per_msg"),
                            "behind": r.extra.get("fell_behind"),
                        }
                    ),
                    flush=True,
                )
        finally:
            admin.close()
            broker.stop()


if __name__ == "__main__":
    main()
