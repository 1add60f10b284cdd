#!/bin/bash
# (run from anywhere; each TREE on PYTHONPATH in turn, lat_ab.py from bench/results/2026-11-30i/raw)
# abc.sh RATES SECS ROUNDS TREE... : alternating runs of lat_ab.py on each tree
S=/work/main/bench/results/2026-11-30i/raw/lat_ab.py
R=$1; SEC=$2; N=$3; shift 3
for i in $(seq 1 $N); do for t in "$@"; do
  echo "== $t $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd $t && PYTHONPATH=$t timeout 600 python $S $R $SEC 2>&1 | grep '"name"' | python -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); c=d['extra']['cpu']
    print(d['name'], round(d['rate']), d['p50'], d['p99'], d['cpu'], 'send_p50', d['send_p50'], {k:v['us_per_msg'] for k,v in c.items()})
")
done; done
