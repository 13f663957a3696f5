#!/usr/bin/env bash
# perf.sh: the speed checks of docs/PERFORMANCE.md in one command (paper §5,
# figures 4 and 5, on one machine over loopback).
#
# It builds bin/kafka, starts a broker in its own process with the default
# kafka/config/server.properties (so the default flush policy) on a free port
# and a temporary log.dir, then runs
#   1. producer-perf, batch 50, to topic perf50   (MESSAGES messages)
#   2. producer-perf, batch 1,  to topic perf1    (PERF_B1_MESSAGES messages)
#   3. consumer-perf over perf50, 307200 bytes per fetch, every CRC checked
# prints each tool's "result:" line, stops the broker with SIGTERM, checks it
# shut down cleanly and removes the temporary directory. A producer's time
# runs until the broker holds (has flushed) every message.
#
# Environment:
#   MESSAGES=10000000       messages per producer run and for the consumer
#   PERF_B1_MESSAGES=...    messages of the batch-1 run (default MESSAGES)
#   MESSAGE_SIZE=200        payload bytes
#   FETCH_SIZE=307200       consumer bytes per fetch
#   STRACE=1                also run a 100,000-message batch-1 producer under
#                           `strace -f -c` (write system calls per request)
#   PROFILE_DIR=dir         write CPU profiles of the broker and of every
#                           client run there (broker.prof, producer50.prof, ...)
#   OUT_DIR=dir             keep every tool's full output there
#   PHASES="b50 b1 consumer"  which runs to do, in this order (consumer reads
#                           perf50, so it needs b50 before it)
set -euo pipefail
cd "$(dirname "$0")/.."

MESSAGES=${MESSAGES:-10000000}
PERF_B1_MESSAGES=${PERF_B1_MESSAGES:-$MESSAGES}
MESSAGE_SIZE=${MESSAGE_SIZE:-200}
FETCH_SIZE=${FETCH_SIZE:-307200}
STRACE=${STRACE:-0}
PROFILE_DIR=${PROFILE_DIR:-}
PHASES=${PHASES:-b50 b1 consumer}
GO=${GO:-go}

# say prints a step with the load average (other work on the machine skews
# every figure) and the page cache size (see docs/PERFORMANCE.md).
say() {
	printf '== %s (%s, page cache %s MB)\n' "$*" "$(uptime | sed 's/.*load average/load average/')" \
		"$(awk '/^Cached:/ { print int($2 / 1024) }' /proc/meminfo 2>/dev/null)"
}

say "building bin/kafka"
mkdir -p bin
$GO build -o bin/kafka ./kafka/cmd/kafka

tmp=$(mktemp -d /tmp/kafka-perf.XXXXXX)
out=${OUT_DIR:-$tmp/out}
mkdir -p "$out"
[ -n "$PROFILE_DIR" ] && mkdir -p "$PROFILE_DIR"
broker_pid=
cleanup() {
	if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
		kill -TERM "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# A free TCP port: bind port 0 and let the kernel choose.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + RANDOM % 30000))
}
port=$(free_port)
prof() { [ -n "$PROFILE_DIR" ] && echo "--cpuprofile=$PROFILE_DIR/$1.prof" || true; }

say "starting the broker on 127.0.0.1:$port, log.dir $tmp/logs"
# shellcheck disable=SC2046
bin/kafka server-start kafka/config/server.properties \
	--override port="$port" --override hostname=127.0.0.1 --override log.dir="$tmp/logs" \
	$(prof broker) 2>"$out/broker.log" &
broker_pid=$!
for _ in $(seq 100); do
	grep -q "broker serving" "$out/broker.log" 2>/dev/null && break
	kill -0 "$broker_pid" 2>/dev/null || { cat "$out/broker.log"; echo "perf.sh: the broker exited" >&2; exit 1; }
	sleep 0.1
done
grep -q "broker serving" "$out/broker.log" || { cat "$out/broker.log"; echo "perf.sh: the broker did not start" >&2; exit 1; }

# sched PID: the process's CPU seconds and seconds runnable but waiting for a
# CPU, summed over its threads (Linux schedstat).
sched() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ r += $1; w += $2 } END { printf "%.3f %.3f", r / 1e9, w / 1e9 }'
}

# run NAME ARGS...: run one tool, keep its output, show its result line.
run() {
	local name=$1
	shift
	say "$name: bin/kafka $*"
	local before after
	before=$(sched "$broker_pid")
	# shellcheck disable=SC2046
	if ! bin/kafka "$@" $(prof "$name") >"$out/$name.out" 2>&1; then
		cat "$out/$name.out"
		echo "perf.sh: $name failed" >&2
		exit 1
	fi
	after=$(sched "$broker_pid")
	echo "$before $after" | awk '{ printf "broker during %s: %.3f s of CPU, %.3f s runnable but waiting for a CPU\n", n, $3 - $1, $4 - $2 }' n="$name"
	sed -n '/^rate per tenth/,$p' "$out/$name.out" | grep -v '^result:' || true
	grep '^result:' "$out/$name.out" | sed "s/^/$name /"
}

ran=()
for phase in $PHASES; do
	case $phase in
	b50)
		run producer50 producer-perf --broker-list "127.0.0.1:$port" --topic perf50 \
			--messages "$MESSAGES" --message-size "$MESSAGE_SIZE" --batch-size 50 --magic 0
		ran+=("$out/producer50.out") ;;
	b1)
		run producer1 producer-perf --broker-list "127.0.0.1:$port" --topic perf1 \
			--messages "$PERF_B1_MESSAGES" --message-size "$MESSAGE_SIZE" --batch-size 1 --magic 0
		ran+=("$out/producer1.out") ;;
	consumer)
		run consumer consumer-perf --broker "127.0.0.1:$port" --topic perf50 \
			--messages "$MESSAGES" --fetch-size "$FETCH_SIZE" --idle-timeout 5s
		ran+=("$out/consumer.out") ;;
	*)
		echo "perf.sh: unknown phase $phase in PHASES (want b50, b1, consumer)" >&2
		exit 2 ;;
	esac
done

if [ "$STRACE" = 1 ]; then
	command -v strace >/dev/null || { echo "perf.sh: STRACE=1 needs strace (apt-get install -y strace)" >&2; exit 1; }
	say "strace: batch-1 producer, 100000 messages"
	strace -f -c -e trace=write,sendto,sendmsg,writev -o "$out/strace.txt" \
		bin/kafka producer-perf --broker-list "127.0.0.1:$port" --topic perfstrace \
		--messages 100000 --message-size "$MESSAGE_SIZE" --batch-size 1 >"$out/strace-producer.out" 2>&1
	cat "$out/strace.txt"
	grep '^result:' "$out/strace-producer.out" | sed 's/^/strace-producer1 /'
fi

say "stopping the broker (SIGTERM)"
kill -TERM "$broker_pid"
status=0
wait "$broker_pid" || status=$?
broker_pid=
if [ "$status" -ne 0 ] || ! grep -q "broker stopped cleanly" "$out/broker.log" || [ ! -e "$tmp/logs/.kafka_cleanshutdown" ]; then
	tail -20 "$out/broker.log"
	echo "perf.sh: the broker did not shut down cleanly (exit $status)" >&2
	exit 1
fi
echo "broker: clean shutdown (exit 0, $tmp/logs/.kafka_cleanshutdown written)"
echo
echo "summary:"
[ ${#ran[@]} -gt 0 ] && grep -h '^result:' "${ran[@]}"
