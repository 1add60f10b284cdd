#!/bin/bash
# the round's final measurements: base (a397f22) against main's final code, alternating
O=/work/main/bench/results/2026-12-01c/raw/final
B=/work/wt/base; M=/work/main
echo "start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" > $O/log.txt
bash /work/main/bench/results/2026-12-01b/raw/abc.sh 0 4 4 $B $M > $O/lat_ab-send-only.txt 2>&1
for i in 1 2 3; do for t in $B $M; do n=$(basename $t); echo "broker-quick $n $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log.txt; (cd $t && PYTHONPATH=$t timeout 300 python -m bench broker --quick --json > $O/broker-quick-$n-$i.jsonl 2>/dev/null); done; done
for i in 1 2; do for t in $B $M; do n=$(basename $t); echo "latency-quick $n $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log.txt; (cd $t && PYTHONPATH=$t timeout 900 python -m bench latency --quick --json > $O/lat-quick-$n-$i.jsonl 2>/dev/null); done; done
for i in 1 2; do for t in $B $M; do n=$(basename $t); echo "threads $n $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log.txt; (cd $t && AEROMQ_BENCH_THREADS_CASES=send-only,1000,5000 PYTHONPATH=$t timeout 600 python -m bench threads --json > $O/threads-$n-$i.jsonl 2>/dev/null); done; done
for t in $B $M; do n=$(basename $t); echo "hops $n $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log.txt; (cd $t && PYTHONPATH=$t timeout 300 python /work/main/bench/results/2026-12-01c/raw/rt_hops.py 20000 > $O/hops-$n.txt 2>&1); done
echo "end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log.txt
