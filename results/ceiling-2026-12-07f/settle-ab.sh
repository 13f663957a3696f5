#!/bin/bash
# Figure 4 alone after reproduce's warm (hold, 6,000 MB written and deleted), started at once (now) or once the
# guest has reported nothing to its host for 5 s (settle, at most 30 s), in turns.
P=/sys/module/page_reporting/parameters
old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
trap 'echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib' EXIT
echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
cd /work/main
for i in 1 2; do for mode in now settle; do
  dd if=/dev/zero of=/tmp/warmfile bs=1M count=6000 status=none; rm /tmp/warmfile
  r0=$(cat $P/reported_kib); t0=$(date +%s)
  if [ $mode = settle ]; then
    last=$r0; quiet=0; n=0
    while [ $quiet -lt 20 ] && [ $n -lt 120 ]; do sleep 0.25; n=$((n+1)); r=$(cat $P/reported_kib); if [ $r = $last ]; then quiet=$((quiet+1)); else quiet=0; last=$r; fi; done
    echo "$mode $i: waited $(( $(date +%s)-t0 )) s, $(( (last-r0)/1024 )) MiB reported meanwhile"
  fi
  r1=$(cat $P/reported_kib)
  ./bin/reproduce --systems kafka --services local --messages 10000000 --replication-messages 0 --compression-messages 0 --latency-seconds 0 --protocols-messages 0 --ceiling=false --out /tmp/settle-$mode-$i > /tmp/settle-$mode-$i.log 2>&1
  echo "$mode $i: $(grep -h 'kafka producer (batch' /tmp/settle-$mode-$i.log | grep msg/s | sed 's/.*= //' | tr '\n' ' ') reported during the run $(( ($(cat $P/reported_kib)-r1)/1024 )) MiB"
done; done
