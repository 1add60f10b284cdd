#!/bin/bash
# abtree.sh OUT PAIRS RATES SECONDS: alternate base (/tmp/r/base-tree) and new (/work/main)
out=$1; pairs=$2; rates=$3; secs=$4
for i in $(seq 1 $pairs); do
  for t in base new; do
    if [ $t = base ]; then tree=/tmp/r/base-tree; else tree=/tmp/r/new-tree; fi
    echo "# $t $i $(cat /proc/loadavg)" >> $out
    (cd $tree && PYTHONPATH=$tree:$tree/bench/results/2026-12-02/raw timeout 600 python $tree/bench/results/2026-12-02/raw/ab.py D $rates $secs 2>/dev/null | sed "s/^{/{\"tree\": \"$t\", /") >> $out
  done
done
