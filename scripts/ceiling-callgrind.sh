#!/usr/bin/env bash
# Instructions per message of the machine's ceiling probes (experiments/ceiling), counted as make perf-check
# counts ours: valgrind --tool=callgrind, user space only, each probe run at two message counts and the
# difference divided by the messages between them, so that start-up and set-up drop out. The sender runs in a
# goroutine of the reader's process for the count (experiments/ceiling/count_test.go: callgrind does not survive
# a traced Go program's child exiting), so one figure holds both sides' work, as ours is the sum of
# producer/send-* and broker/produce-* in make perf-check.
#   scripts/ceiling-callgrind.sh [probe...]     default: producer-batch50 producer-batch1
# N1 and N2 (default 100000 and 200000) are the two message counts.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "ceiling-callgrind: valgrind is not installed (make deps)" >&2; exit 1; }
N1=${N1:-100000}
N2=${N2:-200000}
probes=("$@")
[ ${#probes[@]} -gt 0 ] || probes=(producer-batch50 producer-batch1)
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT; echo "work: $work" >&2
go test -c -o "$work/ceiling.test" ./experiments/ceiling

# totals FILE: the instructions a callgrind output file counted.
totals() { awk '/^totals:/ {print $2; exit}' "$1"; }

printf '%-18s %12s\n' probe "instr/msg"
for probe in "${probes[@]}"; do
	declare -A total=()
	for n in "$N1" "$N2"; do
		dir="$work/$probe.$n"
		mkdir -p "$dir"
		GODEBUG=asyncpreemptoff=1 GOGC=off CEILING_CALLGRIND_PROBE="$probe" CEILING_CALLGRIND_MESSAGES="$n" \
			valgrind --tool=callgrind --callgrind-out-file="$dir/cg" \
			"$work/ceiling.test" -test.run '^TestCallgrindProbe$' -test.v >"$dir/out" 2>"$dir/err" ||
			{ echo "ceiling-callgrind: $probe with $n messages failed:" >&2; tail -n 20 "$dir/out" >&2; tail -n 20 "$dir/err" >&2; exit 1; }
		grep -q "ceiling-callgrind: probe=$probe" "$dir/out" || { echo "ceiling-callgrind: $probe did not run:" >&2; cat "$dir/out" >&2; exit 1; }
		total[$n]=$(totals "$dir/cg")
	done
	awk -v p="$probe" -v t1="${total[$N1]}" -v t2="${total[$N2]}" -v d="$((N2 - N1))" \
		'BEGIN { printf "%-18s %12.1f\n", p, (t2 - t1) / d }'
	unset total
done
