#!/bin/bash
# Twice: the hold set by hand, 4,180 MB written and deleted, a wait for the reporting it sets off,
# the same write and delete again (faulting back in what was reported), then PHASES="b1 b50"
# make perf (which finds the hold taken and writes nothing first); the hold undone after each.
P=/sys/module/page_reporting/parameters
cd /work/main
for i in 1 2; do
  old_ms=$(cat $P/min_free_ms); old_mib=$(cat $P/max_waiting_mib)
  echo 300000 > $P/min_free_ms; echo 16384 > $P/max_waiting_mib
  for pass in 1 2; do
    r0=$(cat $P/reported_kib); t0=$(date +%s.%N)
    dd if=/dev/zero of=/tmp/fp-pre.bin bs=1M count=4180 status=none; rm /tmp/fp-pre.bin
    t1=$(date +%s.%N); sleep 2
    echo "run $i pass $pass: 4180 MB in $(echo "$t1 - $t0" | bc) s, reported in it and 2 s after: $(( ($(cat $P/reported_kib) - r0) / 1024 )) MiB"
  done
  PHASES="b1 b50" bash scripts/perf.sh > /tmp/fptw-perf-$i.txt 2>&1
  echo "run $i broker MB per cpu s by tenth of producer50: $(sed -n '/^broker per tenth of producer50/,/^rate per tenth/p' /tmp/fptw-perf-$i.txt | awk '$1~/^[0-9]+$/ {printf "%d:%.0f ", $1, $5/($3+1e-9)}')"
  echo "run $i: $(grep -E '^producer(1|50) result' /tmp/fptw-perf-$i.txt | grep -oE '^producer[0-9]+| msg_per_s=[0-9]+' | tr '\n' ' ')"
  echo $old_ms > $P/min_free_ms; echo $old_mib > $P/max_waiting_mib
  sleep 5
done
