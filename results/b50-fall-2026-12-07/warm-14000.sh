#!/bin/bash
# Batch 1 then batch 50 with make perf after a larger write and delete under the hold:
# the hold set by hand, 14,000 MB written and deleted, then PHASES="b1 b50" make perf twice
# (each run sets the same hold and writes its own 4,180 MB first), then the hold undone.
P=/sys/module/page_reporting/parameters
old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
trap 'echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib' EXIT
echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
t0=$(date +%s.%N); dd if=/dev/zero of=/tmp/fp-pre.bin bs=1M count=14000 status=none; rm /tmp/fp-pre.bin
echo "pre-write 14000 MB: $(echo "$(date +%s.%N) - $t0" | bc) s, reported_kib=$(cat $P/reported_kib)"
cd /work/main
for i in 1 2; do
  PHASES="b1 b50" bash scripts/perf.sh > /tmp/fpbig-perf-$i.txt 2>&1
  echo "perf $i: $(grep 'wrote and deleted' /tmp/fpbig-perf-$i.txt | sed 's/free page reporting: //')"
  echo "perf $i broker MB per cpu s by tenth of producer50: $(sed -n '/^broker per tenth of producer50/,/^rate per tenth/p' /tmp/fpbig-perf-$i.txt | awk '$1~/^[0-9]+$/ {printf "%d:%.0f ", $1, $5/($3+1e-9)}')"
  echo "perf $i: $(grep -E '^producer(1|50) result' /tmp/fpbig-perf-$i.txt | grep -oE '^producer[0-9]+|  *msg_per_s=[0-9]+| msg_per_s=[0-9]+' | tr '\n' ' ')"
done
echo "reported_kib=$(cat $P/reported_kib)"
