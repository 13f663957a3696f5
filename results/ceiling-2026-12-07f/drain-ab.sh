#!/bin/bash
# A/B of make perf's batch 50: base worktree vs /work/main, in turns, under one hold.
P=/sys/module/page_reporting/parameters
old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
trap 'echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib' EXIT
echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
dd if=/dev/zero of=/tmp/warmfile bs=1M count=4200 status=none; rm /tmp/warmfile; sleep 3
N=${N:-4}
for i in $(seq 1 $N); do
  for who in base new; do
    if [ $who = base ]; then d=/tmp/wt-base; else d=/work/main; fi
    r0=$(cat $P/reported_kib)
    (cd $d && /tmp/perfbin -phases ${PH:-b50} -messages 10000000 -kafka-bin $d/bin/kafka > /tmp/ab/$who-$i.txt 2>&1)
    echo "$who $i: $(grep -o 'tool=producer-perf.*msg_per_s=[0-9]*' /tmp/ab/$who-$i.txt | head -1 | grep -o 'msg_per_s=[0-9]*') $(grep 'broker during producer50' /tmp/ab/$who-$i.txt | sed 's/.*producer50: //') reported $(( ($(cat $P/reported_kib)-r0)/1024 )) MiB"
    sleep 1
  done
done
