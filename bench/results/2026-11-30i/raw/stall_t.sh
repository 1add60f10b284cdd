#!/bin/bash
# stall_t.sh TREE ENV... : one 6 s run at 5000/s on TREE, the max latency per 100 ms
T=$1; shift
rm -f /tmp/r/ld/*
cd $T && env "$@" LAT_DUMP_DIR=/tmp/r/ld PYTHONPATH=/tmp/pp/site_lat:$T python "$(dirname "$0")/lat_ab.py" 5000 6 2>&1 | tail -1 | cut -c1-130
python - <<'Q'
import json,glob,collections
f=glob.glob('/tmp/r/ld/*.json')[0]; d=json.load(open(f))
seq=d['seq']; lat=[x/1e3 for x in d['lat']]
b=collections.defaultdict(float)
for s,l in zip(seq,lat): b[int(s/500)]=max(b[int(s/500)],l)
v=[round(b[k]/1000,1) for k in sorted(b)]
print("buckets>5ms:", sum(x>5 for x in v), "max", max(v), v[:30])
Q
