#!/bin/bash
# Free page reporting and the rate of writes into the page cache: a hold as reproduce sets it,
# a 6000 MB write and delete, then eight 500 MB files written one after another (4,000 MB, what
# figure 4's two tests of ours leave in the page cache), each timed, with reported_kib beside.
P=/sys/module/page_reporting/parameters
old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
trap 'echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib' EXIT
echo "before: min_free_ms=$old_ms max_waiting_mib=$old_mib reported_kib=$(cat $P/reported_kib)"
echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
t0=$(date +%s.%N); dd if=/dev/zero of=/tmp/fp-pre.bin bs=1M count=6000 status=none; rm /tmp/fp-pre.bin
echo "pre-write 6000 MB: $(echo "$(date +%s.%N) - $t0" | bc) s, reported_kib=$(cat $P/reported_kib)"
for i in 1 2 3 4 5 6 7 8; do
  t0=$(date +%s.%N); dd if=/dev/zero of=/tmp/fp-$i.bin bs=1M count=500 status=none
  echo "file $i 500 MB: $(echo "$(date +%s.%N) - $t0" | bc) s, reported_kib=$(cat $P/reported_kib), free $(free -m | awk '/Mem/{print $4}') MB"
done
rm -f /tmp/fp-*.bin
