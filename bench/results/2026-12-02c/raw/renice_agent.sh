#!/bin/bash
# renice_agent.sh NICE: for 60 s, renice the session agent thread of every new aeromq broker
seen=""
end=$((SECONDS+60))
while [ $SECONDS -lt $end ]; do
  for pid in $(pgrep -f "aeromq broker"); do
    for t in /proc/$pid/task/*; do
      tid=${t##*/}
      if [ "$(cat $t/comm 2>/dev/null)" = "broker-sessions" ] && ! echo "$seen" | grep -qw $tid; then
        renice -n $1 -p $tid > /dev/null && seen="$seen $tid" && echo "reniced $tid"
      fi
    done
  done
  sleep 0.2
done
