"""A/B of the quiet yield: ``PYTHONPATH=TREE python qab.py VARIANTS RATE:SECONDS,...``.

VARIANTS a comma list of D (the default), Q (``AEROMQ_EXP_QUIET_YIELD_MS=5``) and G
(``AEROMQ_EXP_GIL_YIELD=1``), one broker each in that order; each runs every RATE (msgs/s) for
SECONDS after a 2 s warm-up, over IPC, and prints a JSON line a run. For Q, TREE is e8145e6d with
``quiet-yield-experiment.diff`` applied (the yield behind that variable): ``D,Q,Q,D,D,Q
10:30,100:10,1000:5`` (``quiet-yield-ab-1.jsonl``), then ``Q,D,D,Q,Q,D 10:40,100:15``
(``quiet-yield-ab-2.jsonl``). For G, TREE is 87baf8af (the yield landed) with
``quiet-yield-gil-experiment.diff`` (the yield through ``ctypes.PyDLL``, the interpreter kept):
``D,G,G,D,D,G 10:30,100:10`` (``quiet-yield-gil-ab.jsonl``). It uses the 2026-12-02 round's
``_run.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "2026-12-02" / "raw"))
from _run import rates_seconds, run_variants  # (the path above)

VARIANT_ENV = {
    "D": {},
    "Q": {"AEROMQ_EXP_QUIET_YIELD_MS": "5"},
    "G": {"AEROMQ_EXP_GIL_YIELD": "1"},
}


def main() -> None:
    plans = rates_seconds(sys.argv[2])
    run_variants(sys.argv[1].split(","), VARIANT_ENV, plans)


if __name__ == "__main__":
    main()
