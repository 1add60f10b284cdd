#!/bin/bash
# latab.sh PREFIX TREE...: `bench latency --quick --json` on each /tmp/r/TREE-tree in the order
# given, into /tmp/r/res/PREFIX-TREE-N.jsonl (N counts that tree's runs), start and end times
# and load averages in /tmp/r/res/PREFIX-times.txt. The trees: git worktrees of e8145e6d, their
# native modules built in place (`python setup.py build_ext --inplace`); cy-tree then
# `python cy_build.py /tmp/r/cy-tree`; ht-tree with aeromq/__init__.py importing
# hugetext/hugetext.py (built beside it: `gcc -O2 -shared -fPIC $(python3-config --includes)
# _hugetext.c -o _hugetext$(python3-config --extension-suffix)`). This round:
# `latab.sh lat base cy base cy`, then `latab.sh htab ht base ht base`.
prefix=$1; shift
mkdir -p /tmp/r/res
for t in "$@"; do
  n=$(ls /tmp/r/res/$prefix-$t-*.jsonl 2>/dev/null | wc -l); n=$((n+1))
  tree=/tmp/r/$t-tree
  echo "$t$n start $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/res/$prefix-times.txt
  (cd $tree && PYTHONPATH=$tree timeout 900 python -m bench latency --quick --json \
    > /tmp/r/res/$prefix-$t-$n.jsonl 2>/tmp/r/res/$prefix-$t-$n.err)
  echo "$t$n end $(date +%T) $(cat /proc/loadavg)" >> /tmp/r/res/$prefix-times.txt
done
