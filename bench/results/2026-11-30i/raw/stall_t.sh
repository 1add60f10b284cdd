#!/bin/bash
# stall_t.sh TREE ENV... : one 6 s run at 5,000 msgs/s on TREE (lat_ab.py beside this script),
# its JSON line, then the 100 ms windows of the schedule: how many held a message over 5 ms, the
# slowest, and the first 30 windows' slowest (ms).
HERE=$(cd "$(dirname "$0")" && pwd)
T=$1; shift
DUMP=$(mktemp -d)
trap 'rm -rf "$DUMP"' EXIT
cd "$T" && env "$@" LAT_DUMP_DIR="$DUMP" PYTHONPATH="$HERE/site_lat:$T" \
    python "$HERE/lat_ab.py" 5000 6 2>&1 | tail -1 | cut -c1-130
DUMP="$DUMP" python - <<'Q'
import collections, glob, json, os
with open(glob.glob(os.path.join(os.environ["DUMP"], "*.json"))[0]) as f:
    d = json.load(f)
b = collections.defaultdict(float)
for s, l in zip(d["seq"], d["lat"]):
    b[s // 500] = max(b[s // 500], l / 1e6)
v = [round(b[k], 1) for k in sorted(b)]
print("buckets>5ms:", sum(x > 5 for x in v), "max", max(v), v[:30])
Q
