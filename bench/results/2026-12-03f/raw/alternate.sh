#!/bin/bash
# alternate.sh ROUNDS STEPS OUT: one run of sequence.py (bench/results/2026-12-03d/raw) a side a round,
# A = a worktree at 7f902c3a (/work/ab-head), B = /work/main at c7a5b8d0 (the word with a back-off)
N=${1:-4}; STEPS=${2:-ipc:5000,so,so}; OUT=${3:-/tmp/r/w-ab.txt}
for i in $(seq 1 $N); do
  for side in A B; do
    case $side in A) tree=/work/ab-head;; B) tree=/work/main;; esac
    echo "# $side $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT
    (cd $tree && PYTHONPATH=$tree timeout 300 python $tree/bench/results/2026-12-03d/raw/sequence.py $STEPS >> $OUT 2>>/tmp/r/ab-err.txt)
  done
done
echo done >> $OUT
