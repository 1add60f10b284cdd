#!/bin/bash
for i in 1 2; do for t in base new; do
  tree=/tmp/r/$t-tree
  echo "$t$i start $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/lat-ab.log
  (cd $tree && PYTHONPATH=$tree timeout 900 python -m bench latency --quick --json > /tmp/r/lat-$t$i.jsonl 2>/tmp/r/lat-$t$i.err)
  echo "$t$i end $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/lat-ab.log
done; done
