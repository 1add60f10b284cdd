#!/bin/bash
# latab2.sh: quick latency runs alternating base (9fb56f3) and y2 (eb90fe9), two each
for t in y2 base y2 base; do
  n=$(ls /tmp/r/res/lat2-$t-*.jsonl 2>/dev/null | wc -l); n=$((n+1))
  tree=/tmp/r/$t-tree
  echo "$t$n start $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/res/lat2-times.txt
  (cd $tree && PYTHONPATH=$tree timeout 900 python -m bench latency --quick --json > /tmp/r/res/lat2-$t-$n.jsonl 2>/tmp/r/res/lat2-$t-$n.err)
  echo "$t$n end $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/res/lat2-times.txt
done
