"""Put on ``PYTHONPATH`` by ``stall_t.sh``: with ``LAT_DUMP_DIR`` set, the latency suite's
consumer role writes each message's sequence and latency (ns) to ``LAT_DUMP_DIR/<pid>.json``
as its run ends, for the 100 ms windows ``stall_t.sh`` prints."""

from __future__ import annotations

import json
import os

_DUMP_DIR = os.environ.get("LAT_DUMP_DIR")


def _install(directory: str) -> None:
    from bench import _latency_roles as roles

    end = roles.ConsumerRun.end

    def dumping_end(run: roles.ConsumerRun) -> None:
        receipts = run.receipts
        path = os.path.join(directory, f"{os.getpid()}.json")
        with open(path, "w") as file:
            json.dump({"seq": list(receipts.sequences), "lat": list(receipts.latencies_ns)}, file)
        end(run)

    setattr(roles.ConsumerRun, "end", dumping_end)  # noqa: B010  (mypy: no method assignment)


if _DUMP_DIR:
    _install(_DUMP_DIR)
