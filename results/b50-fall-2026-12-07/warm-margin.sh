#!/bin/bash
# Twice: the hold set by hand, 4,180 MB + 2,048 MiB written and deleted (a margin for what a
# deletion gets reported), 2 s, then PHASES="b1 b50" make perf (which finds the hold taken and
# writes nothing first); reported_kib before and after each step; the hold undone after each.
P=/sys/module/page_reporting/parameters
cd /work/main
for i in 1 2; do
  old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
  echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
  r0=$(cat $P/reported_kib); t0=$(date +%s.%N)
  dd if=/dev/zero of=/tmp/fp-pre.bin bs=1M count=6328 status=none; rm /tmp/fp-pre.bin
  t1=$(date +%s.%N); sleep 2; r1=$(cat $P/reported_kib)
  echo "run $i: 6,328 MB in $(echo "$t1 - $t0" | bc) s, reported in it and 2 s after: $(( (r1 - r0) / 1024 )) MiB"
  PHASES="b1 b50" bash scripts/perf.sh > /tmp/fpm-perf-$i.txt 2>&1
  echo "run $i: reported during make perf: $(( ($(cat $P/reported_kib) - r1) / 1024 )) MiB"
  echo "run $i broker MB per cpu s by tenth of producer50: $(sed -n '/^broker per tenth of producer50/,/^rate per tenth/p' /tmp/fpm-perf-$i.txt | awk '$1~/^[0-9]+$/ {printf "%d:%.0f ", $1, $5/($3+1e-9)}')"
  echo "run $i: $(grep -E '^producer(1|50) result' /tmp/fpm-perf-$i.txt | grep -oE '^producer[0-9]+| msg_per_s=[0-9]+' | tr '\n' ' ')"
  echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib
  sleep 5
done
