#!/bin/bash
out=$1; pairs=$2
for i in $(seq 1 $pairs); do for t in base new; do
  tree=/tmp/r/$t-tree
  (cd $tree && PYTHONPATH=$tree:$tree/bench/results/2026-12-02/raw timeout 300 python $tree/bench/results/2026-12-02/raw/sendonly.py 1 5 2>/dev/null | sed "s/^{/{\"tree\": \"$t\", /") >> $out
done; done
