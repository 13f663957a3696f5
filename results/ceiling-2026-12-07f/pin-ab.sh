#!/bin/bash
# Batch 50, the probe and make perf's, unpinned and pinned (the reader or broker on CPU 0, the sender or
# producer-perf on CPU 1, every thread, set as soon as each process appears), in turns, under one hold.
P=/sys/module/page_reporting/parameters
old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
trap 'echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib' EXIT
echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
dd if=/dev/zero of=/tmp/warmfile bs=1M count=4200 status=none; rm /tmp/warmfile; sleep 3
pinall() { for t in /proc/$1/task/*; do taskset -p -c $2 ${t##*/} > /dev/null 2>&1; done; }
watch_ours() { # broker -> 0, producer-perf -> 1
  local b="" p=""
  while [ -z "$p" ]; do
    [ -z "$b" ] && b=$(pgrep -f 'kafka server-start' | head -1) && [ -n "$b" ] && pinall $b 0
    p=$(pgrep -f 'kafka producer-perf' | head -1); sleep 0.002
  done
  pinall $p 1; pinall $b 0
}
watch_probe() { # reader (xprobe) -> 0, its sender child -> 1
  local r="" s=""
  while [ -z "$s" ]; do r=$(pgrep -x xprobe | head -1); [ -n "$r" ] && s=$(pgrep -P $r | head -1); sleep 0.002; done
  pinall $r 0; pinall $s 1
}
N=${N:-3}
cd /work/main
for i in $(seq 1 $N); do
  for mode in free pinned; do
    [ $mode = pinned ] && { watch_probe & w=$!; }
    /tmp/xprobe producer-batch50 10000000 > /tmp/ab/pin-probe-$mode-$i.txt 2>&1
    [ $mode = pinned ] && wait $w
    echo "probe $mode $i: $(cut -c1-40 /tmp/ab/pin-probe-$mode-$i.txt | tr -s ' ')"
    sleep 1
    [ $mode = pinned ] && { watch_ours & w=$!; }
    /tmp/perfbin -phases b50 -messages 10000000 -kafka-bin /work/main/bin/kafka > /tmp/ab/pin-ours-$mode-$i.txt 2>&1
    [ $mode = pinned ] && wait $w
    echo "ours  $mode $i: $(grep -o 'tool=producer-perf.*' /tmp/ab/pin-ours-$mode-$i.txt | head -1 | grep -o 'msg_per_s=[0-9]*' | head -1) $(grep 'broker during producer50' /tmp/ab/pin-ours-$mode-$i.txt | sed 's/.*producer50: //')"
    sleep 1
  done
done
