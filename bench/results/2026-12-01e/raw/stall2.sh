#!/bin/bash
# stall2.sh TREE SECS ENV... : one run at 5,000 msgs/s; 10 ms windows whose slowest message is over 1 ms
RAW=/work/main/bench/results/2026-11-30i/raw
export PATH=/tmp/venv-fresh/bin:$PATH
T=$1; SECS=$2; shift 2
DUMP=$(mktemp -d)
trap 'rm -rf "$DUMP"' EXIT
cd "$T" && env "$@" LAT_DUMP_DIR="$DUMP" PYTHONPATH="$RAW/site_lat:$T" \
    python "$RAW/lat_ab.py" 5000 $SECS 2>&1 | tail -1 | cut -c1-110
DUMP="$DUMP" python - <<'Q'
import collections, glob, json, os
with open(glob.glob(os.path.join(os.environ["DUMP"], "*.json"))[0]) as f:
    d = json.load(f)
b = collections.defaultdict(float)
for s, l in zip(d["seq"], d["lat"]):
    b[s // 50] = max(b[s // 50], l / 1e6)
ks = sorted(b)
slow = [(k*10, round(b[k],1)) for k in ks if b[k] > 1.0]
print("windows of 10 ms over 1 ms:", len(slow), "of", len(ks), "; over 0.5 ms:", sum(b[k]>0.5 for k in ks))
print(" ".join(f"{t}:{v}" for t, v in slow))
Q
