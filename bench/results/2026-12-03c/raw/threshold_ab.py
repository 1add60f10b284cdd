"""A/B of the quiet yield's threshold: ``PYTHONPATH=TREE python threshold_ab.py VARIANTS
RATE:SECONDS,...``.

VARIANTS a comma list of thresholds in ms (``AEROMQ_EXP_QUIET_YIELD_MS``), one broker each in
that order; each runs every RATE (msgs/s) for SECONDS after a 2 s warm-up, over IPC, and prints
a JSON line a run. TREE is c5fcad39 with ``quiet-yield-threshold-experiment.diff`` applied (the
threshold read from that variable; 5 is the code's). It uses the 2026-12-02 round's ``_run.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "2026-12-02" / "raw"))
from _run import rates_seconds, run_variants  # (the path above)


def main() -> None:
    variants = sys.argv[1].split(",")
    plans = rates_seconds(sys.argv[2])
    run_variants(variants, {v: {"AEROMQ_EXP_QUIET_YIELD_MS": v} for v in variants}, plans)


if __name__ == "__main__":
    main()
