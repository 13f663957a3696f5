#!/bin/bash
# make perf's batch 50 with the broker's coalescing on (shipped) and off (produce.coalesce.max.us=0), in turns.
P=/sys/module/page_reporting/parameters
old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
trap 'echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib' EXIT
echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
dd if=/dev/zero of=/tmp/warmfile bs=1M count=4200 status=none; rm /tmp/warmfile; sleep 3
cd /work/main
for i in $(seq 1 ${N:-5}); do for mode in on off; do
  set=""; [ $mode = off ] && set="-set produce.coalesce.max.us=0"
  /tmp/perfbin -phases b50 -messages 10000000 -kafka-bin /work/main/bin/kafka $set > /tmp/ab/coal-$mode-$i.txt 2>&1
  echo "$mode $i: $(grep -o 'tool=producer-perf.*' /tmp/ab/coal-$mode-$i.txt | head -1 | grep -o 'msg_per_s=[0-9]*' | head -1) $(grep -o 'coalesced_sleeps=[0-9]* ended_by_bound=[0-9]*' /tmp/ab/coal-$mode-$i.txt) reads $(awk '/broker per tenth/{on=1; next} on && /^ +[0-9]+ /{s+=$7} /rate per tenth/{on=0} END{print s}' /tmp/ab/coal-$mode-$i.txt)"
done; done
