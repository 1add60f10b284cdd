#!/bin/bash
# latab.sh PREFIX TREE...: `bench latency --quick --json` on each /tmp/r/TREE-tree in the order
# given, into /tmp/r/res/PREFIX-TREE-N.jsonl (N counts that tree's runs), with start and end
# times and load averages in /tmp/r/res/PREFIX-times.txt. This round: `latab.sh lat new base new`
# (after a first base run, lat-base-1), then `latab.sh lat2 y2 base y2 base`.
prefix=$1; shift
for t in "$@"; do
  n=$(ls /tmp/r/res/$prefix-$t-*.jsonl 2>/dev/null | wc -l); n=$((n+1))
  tree=/tmp/r/$t-tree
  echo "$t$n start $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/res/$prefix-times.txt
  (cd $tree && PYTHONPATH=$tree timeout 900 python -m bench latency --quick --json > /tmp/r/res/$prefix-$t-$n.jsonl 2>/tmp/r/res/$prefix-$t-$n.err)
  echo "$t$n end $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/res/$prefix-times.txt
done
