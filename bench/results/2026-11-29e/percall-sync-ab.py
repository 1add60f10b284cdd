"""One broker, one producer process: N sync sends (after 300 warm-up), rate and CPU of both."""
import multiprocessing, os, sys, time, tempfile, shutil, json
from pathlib import Path

def produce(grpc, topic, n, q):
    from aeromq.client import Message
    from aeromq.producer import Producer
    with Producer("ab-sync", grpc) as p:
        for _ in range(300):
            p.send(Message(topic, b"w" * 100))
        cpu = time.process_time(); t0 = time.monotonic_ns()
        for i in range(n):
            p.send(Message(topic, b"m" * 100))
        el = time.monotonic_ns() - t0; cpu = time.process_time() - cpu
    q.put((el, cpu))

def main():
    n = int(sys.argv[1])
    from bench._traced_run import traced_broker
    root = Path(tempfile.mkdtemp(prefix="percall-ab-"))
    try:
        with traced_broker(root / "b", "AB") as broker:
            def bcpu():
                with open(f"/proc/{broker.pid}/stat") as f:
                    parts = f.read().rsplit(")", 1)[1].split()
                return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
            ctx = multiprocessing.get_context("spawn"); q = ctx.Queue()
            pr = ctx.Process(target=produce, args=(broker.grpc_address, "AB", n, q), daemon=True)
            b0 = None
            pr.start()
            time.sleep(2.5)
            b0 = bcpu()
            el, cpu = q.get(timeout=300)
            b1 = bcpu()
            pr.join(30)
            print(json.dumps({"rate": round(n / (el / 1e9)), "producer_cpu_us": round(cpu * 1e6 / n, 1), "broker_cpu_us_approx": round((b1 - b0) * 1e6 / n, 1)}))
    finally:
        shutil.rmtree(root, ignore_errors=True)

if __name__ == "__main__":
    main()
