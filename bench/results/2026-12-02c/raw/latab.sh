#!/bin/bash
# latab.sh: quick latency runs alternating new, base, new (the first base run was taken before)
for t in new base new; do
  n=$(ls /tmp/r/res/lat-$t-*.jsonl 2>/dev/null | wc -l); n=$((n+1))
  tree=/tmp/r/$t-tree
  echo "$t$n start $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/res/lat-times.txt
  (cd $tree && PYTHONPATH=$tree timeout 900 python -m bench latency --quick --json > /tmp/r/res/lat-$t-$n.jsonl 2>/tmp/r/res/lat-$t-$n.err)
  echo "$t$n end $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/res/lat-times.txt
done
