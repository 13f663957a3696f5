#!/bin/bash
# After a warm like reproduce's (hold, 6,000 MB written and deleted), when does the guest report freed memory?
P=/sys/module/page_reporting/parameters
old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
trap 'echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib' EXIT
echo 300000 > $P/min_free_ms; echo ${MIB:-16384} > $P/max_waiting_mib; echo "set: $(cat $P/min_free_ms) ms, $(cat $P/max_waiting_mib) MiB"
dd if=/dev/zero of=/tmp/warmfile bs=1M count=${MB:-6000} status=none
r0=$(cat $P/reported_kib); t0=$(date +%s.%N)
rm /tmp/warmfile
prev=0
for i in $(seq 1 ${SECS:-60}0); do
  sleep 0.1
  r=$(( ($(cat $P/reported_kib)-r0)/1024 ))
  if [ $r != $prev ]; then echo "$(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) s after rm: $r MiB reported (passes $(cat $P/passes))"; prev=$r; fi
done
echo "total after ${SECS:-60} s: $prev MiB"
