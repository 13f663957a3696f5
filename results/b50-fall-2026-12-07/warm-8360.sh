#!/bin/bash
# The hold set by hand, 8,360 MB (twice what make perf writes first) written and deleted, then
# PHASES="b1 b50" make perf twice; perf finds the hold taken and writes nothing more first.
P=/sys/module/page_reporting/parameters
old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
trap 'echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib' EXIT
echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
t0=$(date +%s.%N); dd if=/dev/zero of=/tmp/fp-pre.bin bs=1M count=8360 status=none; rm /tmp/fp-pre.bin
echo "pre-write 8360 MB: $(echo "$(date +%s.%N) - $t0" | bc) s, reported_kib=$(cat $P/reported_kib)"
cd /work/main
for i in 1 2; do
  PHASES="b1 b50" bash scripts/perf.sh > /tmp/fp2x-perf-$i.txt 2>&1
  echo "perf $i: $(grep 'free page' /tmp/fp2x-perf-$i.txt | cut -c1-150 | tr '\n' ' ')"
  echo "perf $i broker MB per cpu s by tenth of producer50: $(sed -n '/^broker per tenth of producer50/,/^rate per tenth/p' /tmp/fp2x-perf-$i.txt | awk '$1~/^[0-9]+$/ {printf "%d:%.0f ", $1, $5/($3+1e-9)}')"
  echo "perf $i: $(grep -E '^producer(1|50) result' /tmp/fp2x-perf-$i.txt | grep -oE '^producer[0-9]+| msg_per_s=[0-9]+' | tr '\n' ' ') reported_kib=$(cat $P/reported_kib)"
done
