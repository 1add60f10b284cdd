#!/bin/bash
# Alternating runs of sequence.py (bench/results/2026-12-03d/raw) on three trees, one broker per
# run, one run at a time: alternate.sh ROUNDS STEPS OUT.
#   A: /tmp/wa, f74a5be8 (before the flag)
#   B: f5b1a4ce (the flag; the agent polls through the long window's most, 500 us)
#   C: /tmp/wb2, f5b1a4ce with the poll through the long window now (what was committed after)
# b2b-ab*.txt ran A and B (B from /work/main at f5b1a4ce), b2b-ab3.txt A, B and C,
# b2b-ac*.txt A and C (the same script with the B side left out).
N=${1:-4}; STEPS=${2:-ipc:5000,so,ipc:1000,ipc:2000,so}; OUT=${3:-/tmp/r/b2b-ab3.txt}
for i in $(seq 1 $N); do
  for side in A B C; do
    case $side in A) tree=/tmp/wa;; B) tree=/work/main;; C) tree=/tmp/wb2;; esac
    echo "# $side $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT
    (cd $tree && PYTHONPATH=$tree timeout 300 python $tree/bench/results/2026-12-03d/raw/sequence.py $STEPS >> $OUT 2>>/tmp/r/ab-err.txt)
  done
done
echo done >> $OUT
