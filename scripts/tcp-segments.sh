#!/usr/bin/env bash
# Bytes per TCP segment of a batch-1 producer: runs make perf's batch-1 producer (experiments/cmd/perf
# --phases b1) and, SAMPLE_AT seconds into it, reads the producer's connection to the broker with `ss -ti`
# (bytes_sent, data_segs_out, cwnd), then prints the run's rate beside bytes_sent / data_segs_out. A
# sender whose every write(2) leaves as a segment of its own pays the transmit path and, on loopback, the
# receiver's TCP path in that write; one whose writes queue (behind a full congestion window, or behind
# Nagle's algorithm) pays them once per segment. docs/PERFORMANCE.md, "The producer, batch 1".
#   scripts/tcp-segments.sh [producer-props]    for instance socket.nagle.disable=true
# MESSAGES (default 4000000) and SAMPLE_AT (default 2.5) set the run.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ss >/dev/null || { echo "tcp-segments: ss (iproute2) is not installed" >&2; exit 1; }
props=${1:-}
MESSAGES=${MESSAGES:-4000000}
SAMPLE_AT=${SAMPLE_AT:-2.5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/perf" ./experiments/cmd/perf
"$work/perf" --messages "$MESSAGES" --phases b1 --producer-props "$props" >"$work/out" 2>&1 &
run=$!
for _ in $(seq 1 600); do
  pid=$(pgrep -f "kafka producer-perf .*--topic perf1" | head -1 || true)
  [ -n "$pid" ] && break
  sleep 0.1
done
[ -n "$pid" ] || { wait $run || true; cat "$work/out" >&2; echo "tcp-segments: the producer never started" >&2; exit 1; }
sleep "$SAMPLE_AT"
# The producer's connections: a bootstrap one (OFFSETS) and the one it produces on, the one that sent most.
line=$(ss -tinp | awk -v p="pid=$pid," '$0 ~ p {getline info; print info}' |
  awk '{for (i=1;i<=NF;i++) if ($i ~ /^bytes_sent:/) {split($i,a,":"); print a[2], $0}}' | sort -n | tail -1)
wait $run || { cat "$work/out" >&2; exit 1; }
rate=$(grep -oE "^result: tool=producer-perf .*msg_per_s=[0-9]+" "$work/out" | grep -oE "msg_per_s=[0-9]+$" | tail -1)
sent=$(grep -oE "bytes_sent:[0-9]+" <<<"$line" | cut -d: -f2)
segs=$(grep -oE "data_segs_out:[0-9]+" <<<"$line" | cut -d: -f2)
cwnd=$(grep -oE " cwnd:[0-9]+" <<<"$line" | cut -d: -f2)
[ -n "$sent" ] && [ -n "$segs" ] && [ "$segs" -gt 0 ] || { echo "tcp-segments: no producer socket seen: $line" >&2; exit 1; }
echo "tcp-segments: producer-props='${props}' ${rate} bytes_sent=${sent} data_segs_out=${segs} bytes_per_segment=$((sent / segs)) cwnd=${cwnd} (at ${SAMPLE_AT}s of ${MESSAGES} messages)"
