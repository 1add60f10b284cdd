#!/bin/bash
# alternate pinned (P) and unpinned (U) quick latency runs; uptime before/after each
cd /work/main; export PATH=/tmp/venv-fresh/bin:$PATH
for tag in "$@"; do
  if [[ $tag == P* ]]; then export AEROMQ_BENCH_CPU_AFFINITY="server=1 relay=1 producer=1 consumer=0"; else unset AEROMQ_BENCH_CPU_AFFINITY; fi
  echo "$tag before: $(uptime)" >> /tmp/r/aff/uptime.txt
  timeout 600 python -m bench latency --quick --json > /tmp/r/aff/$tag.jsonl 2> /tmp/r/aff/$tag.err
  echo "$tag after: $(uptime)" >> /tmp/r/aff/uptime.txt
done
