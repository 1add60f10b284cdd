#!/bin/bash
# Alternating `bench latency --quick` runs (aeromq, Redis Streams, the floor) with every system's
# processes pinned by role (bench/_affinity.py) and unpinned.
set -euo pipefail
OUT=${OUT:-/tmp/r}
cd "$(dirname "$0")/../../../.."
for i in 1 2; do
  for which in pin none; do
    if [ "$which" = pin ]; then export AEROMQ_BENCH_CPU_AFFINITY='server=1 producer=1 consumer=0'
    else unset AEROMQ_BENCH_CPU_AFFINITY; fi
    echo "$which $i start $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/pin-times.txt"
    timeout 600 python -m bench latency --quick --json --baselines redis-streams,floor \
      > "$OUT/lat-pin-$which-$i.jsonl" 2> "$OUT/lat-pin-$which-$i.err"
  done
done
echo "end $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/pin-times.txt"
