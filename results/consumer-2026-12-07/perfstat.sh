#!/bin/bash
# Where the consumer's time goes beside the consumer probe's, on one machine.
# Needs: a broker from bin/kafka on 127.0.0.1:19092 holding topic perf50 (10 M
# messages of 200 bytes, written by producer-perf --batch-size 50), the probe
# reader built from probe-reader.patch (/tmp/cons/tmpcons) and its 1 M-message
# file (/tmp/cons/tmpcons 0 /tmp/cons/set.file), perf(1) with tracepoints.
set -u
K=${K:-/work/main/bin/kafka}
T=/tmp/cons/tmpcons
BP=$(pgrep -f "server-start /tmp/kb")
EV='task-clock,context-switches,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_sendfile64,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep'
sender() { KAFKAREPRO_CEILING_SENDER="addr=127.0.0.1:19999,file=/tmp/cons/set.file,messages=10000000,size=200,batch=0,filemsgs=1000000" $T 0; }
sum() { grep -E 'task-clock|context|sys_enter' "$1" | awk '{printf "%s=%s ", $2, $1}'; }
for round in 1 2 3; do
  for fs in 307200 1048576; do
    perf stat -e "$EV" -p "$BP" -o /tmp/cons/b.st & SP=$!; sleep 0.1
    r=$(perf stat -e "$EV" -o /tmp/cons/c.st $K consumer-perf --broker-list 127.0.0.1:19092 --topic perf50 --messages 10000000 --fetch-size $fs 2>&1 | grep result | sed 's/.*msg_per_s=\([0-9]*\).*fetches=\([0-9]*\).*/msg_per_s=\1 fetches=\2/')
    kill -INT $SP; wait $SP 2>/dev/null
    echo "round $round ours fetch_size=$fs $r"
    echo "  consumer-perf: $(sum /tmp/cons/c.st)"
    echo "  broker (from 0.1 s before): $(sum /tmp/cons/b.st)"
  done
  perf stat -e "$EV" -o /tmp/cons/p.st $T 10000000 > /tmp/cons/p.out 2>&1 & RP=$!; sleep 0.3
  perf stat -e "$EV" -o /tmp/cons/s.st bash -c "KAFKAREPRO_CEILING_SENDER='addr=127.0.0.1:19999,file=/tmp/cons/set.file,messages=10000000,size=200,batch=0,filemsgs=1000000' $T 0"
  wait $RP
  echo "round $round probe $(cat /tmp/cons/p.out)"
  echo "  probe reader (from 0.3 s before its sender): $(sum /tmp/cons/p.st)"
  echo "  probe sender: $(sum /tmp/cons/s.st)"
done
