#!/bin/bash
P=/sys/module/page_reporting/parameters
old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
trap 'echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib' EXIT
echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
dd if=/dev/zero of=/tmp/warmfile bs=1M count=4200 status=none; rm /tmp/warmfile; sleep 3
for i in 1 2; do
  r0=$(cat $P/reported_kib)
  perf record -q -e cpu-clock -a -F 1000 -g -o /tmp/ab/probe$i.data -- /tmp/xprobe producer-batch50 10000000 > /tmp/ab/probe$i.txt 2>&1
  echo "probe $i: $(cat /tmp/ab/probe$i.txt) reported $(( ($(cat $P/reported_kib)-r0)/1024 )) MiB"
  sleep 2; r0=$(cat $P/reported_kib)
  perf record -q -e cpu-clock -a -F 1000 -g -o /tmp/ab/ours$i.data -- /tmp/perfbin -phases b50 -messages 10000000 -kafka-bin /work/main/bin/kafka > /tmp/ab/ours$i.txt 2>&1
  echo "ours $i: $(grep -o 'msg_per_s=[0-9]*' /tmp/ab/ours$i.txt | head -1) reported $(( ($(cat $P/reported_kib)-r0)/1024 )) MiB"
  sleep 2
done
