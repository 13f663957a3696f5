#!/usr/bin/env bash
# perf.sh: the speed checks of docs/PERFORMANCE.md in one command (paper §5,
# figures 4 and 5, on one machine over loopback). `make perf` runs it.
#
# A thin wrapper over the Go command experiments/cmd/perf (its package doc
# says what it runs; `bin/perf -h` lists the flags): it builds bin/kafka,
# starts a broker in its own process through internal/kafkaproc, the launcher
# the §5 experiments use, with the same settings (broker.Shipped, named
# kafka-0.7-shipped and printed before the runs and on every result line),
# runs producer-perf batch 50 and batch 1 and consumer-perf against it,
# prints each one's tenths and result line with the load average and the
# page cache, stops the broker with SIGTERM and checks the clean shutdown.
#
# Environment (each sets the flag of the same meaning):
#   MESSAGES=10000000       --messages     messages per producer run and for the consumer
#   PERF_B1_MESSAGES=...    --b1-messages  messages of the batch-1 run (default MESSAGES)
#   MESSAGE_SIZE=200        --message-size payload bytes
#   FETCH_SIZE=307200       --fetch-size   consumer bytes per fetch
#   STRACE=1                --strace       also a 100,000-message batch-1 producer under
#                                          `strace -f -c` (write system calls per request)
#   PROFILE_DIR=dir         --profile-dir  CPU profiles of the broker and every tool run
#   OUT_DIR=dir             --out-dir      keep every tool's full output there
#   PHASES="b50 consumer b1" --phases      which runs, in this order (consumer reads
#                                          perf50, so it needs b50 before it)
# Further arguments go to the command as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export GO

args=(--messages "${MESSAGES:-10000000}" --message-size "${MESSAGE_SIZE:-200}"
	--fetch-size "${FETCH_SIZE:-307200}" --phases "${PHASES:-b50 consumer b1}")
[[ -n ${PERF_B1_MESSAGES:-} ]] && args+=(--b1-messages "$PERF_B1_MESSAGES")
[[ ${STRACE:-0} == 1 ]] && args+=(--strace)
[[ -n ${PROFILE_DIR:-} ]] && args+=(--profile-dir "$PROFILE_DIR")
[[ -n ${OUT_DIR:-} ]] && args+=(--out-dir "$OUT_DIR")

mkdir -p bin
$GO build -o bin/perf ./experiments/cmd/perf
exec bin/perf "${args[@]}" "$@"
