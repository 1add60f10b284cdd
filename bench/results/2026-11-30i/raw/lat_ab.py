"""Run aeromq IPC latency cases only: python lat_ab.py RATES [SECONDS] -> one JSON line per case."""
import json, sys, tempfile, shutil
from pathlib import Path
import bench.suites.latency as L
from aeromq.client.grpc_client import GrpcClient
def main():
    rates = [int(r) for r in sys.argv[1].split(",")]
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    settings = L.Settings(tuple(rates), dict.fromkeys(rates, secs), 0.5, secs, 2.0, 5.0)
    root = Path(tempfile.mkdtemp(prefix="latab-"))
    broker = L._start_broker(root)
    try:
        admin = GrpcClient(broker.grpc_address)
        grpc = broker.grpc_address
        for rate in rates:
            topic = f"T{rate}"
            admin.create_topic(topic)
            if rate == 0:
                plan = settings.send_only()
                r = L.measure("aeromq:send-only:0", plan, {"broker": broker.pid}, None,
                              L.role("producer", L.aeromq_producer, grpc, topic, "auto"))
            else:
                plan = settings.plan(rate)
                r = L.measure(f"aeromq:ipc:{rate}", plan, {"broker": broker.pid},
                          L.role("consumer", L.aeromq_consumer, grpc, topic, "auto"),
                          L.role("producer", L.aeromq_producer, grpc, topic, "auto"))
            e = r.extra or {}
            print(json.dumps({"name": r.name, "rate": r.msgs_per_s, "p50": r.p50_us, "p99": r.p99_us,
                              "cpu": e.get("cpu_total_us_per_msg"), "send_p50": e.get("send_p50_us"), "extra": {k: v for k, v in e.items() if "cpu" in k}}), flush=True)
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)

if __name__ == '__main__':
    main()
