#!/bin/bash
# Batch 1's figure pass inside reproduce (figure 4 alone, no ceiling) against producer-perf
# batch 1 (make perf's command), in turns, 10,000,000 messages each.
cd /work/main
for i in 1 2 3 4; do
  ./bin/reproduce --systems kafka --services local --messages 10000000 --replication-messages 0 --compression-messages 0 --latency-seconds 0 --protocols-messages 0 --ceiling=false --out /tmp/f4ab-$i > /tmp/f4ab-$i.log 2>&1
  echo "round $i reproduce: $(tr '\r' '\n' < /tmp/f4ab-$i.log | grep -E '^kafka producer \(batch (1|50)\): [0-9]+ messages' | sed 's/.*= //' | tr '\n' ' ')"
  PHASES="b1 b50" bash scripts/perf.sh > /tmp/f4ab-perf-$i.txt 2>&1
  echo "round $i make perf: $(grep -E '^producer(1|50) result' /tmp/f4ab-perf-$i.txt | grep -o ' msg_per_s=[0-9]*' | tr '\n' ' ')"
done
