#!/bin/bash
# abtree2.sh OUT PAIRS RATES SECONDS A B: alternate /tmp/r/A-tree and /tmp/r/B-tree (ab.py D),
# A first in odd pairs, B first in even ones
out=$1; pairs=$2; rates=$3; secs=$4; a=$5; b=$6
for i in $(seq 1 $pairs); do
  if [ $((i % 2)) = 1 ]; then order="$a $b"; else order="$b $a"; fi
  for t in $order; do
    tree=/tmp/r/$t-tree
    echo "# $t $i $(date +%T) $(cat /proc/loadavg)" >> $out
    (cd $tree && PYTHONPATH=$tree:$tree/bench/results/2026-12-02/raw timeout 600 python $tree/bench/results/2026-12-02/raw/ab.py D $rates $secs 2>/dev/null | sed "s/^{/{\"tree\": \"$t\", /") >> $out
  done
done
