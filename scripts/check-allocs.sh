#!/usr/bin/env bash
# Performance-regression check on allocations: the hot paths of §3.1
# (message iteration, CRC validation, building a set, log append, a
# loopback produce and fetch through the broker, the clients' send and
# iterate) must
# allocate nothing per message. Each benchmark below moves many messages per
# op, so anything above 0 allocs/op is a per-message (or per-batch) allocation.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
checks=(
  "./kafka/message|^(BenchmarkIterate|BenchmarkAppendV0|BenchmarkValidate)$"
  "./kafka/log|^BenchmarkAppend"
  "./kafka/broker|^(BenchmarkFetchLoopback|BenchmarkProduceLoopback)$"
  "./kafka/producer|^(BenchmarkSendBatch1|BenchmarkSendBatch50)$"
  "./kafka/consumer|^(BenchmarkIterator|BenchmarkStreamNext)$"
)
fail=0
for c in "${checks[@]}"; do
  pkg=${c%%|*}; re=${c#*|}
  out=$($GO test "$pkg" -run '^$' -bench "$re" -benchmem -benchtime 2000x 2>&1) || { echo "$out"; exit 1; }
  echo "$out" | grep -E '^Benchmark' || { echo "check-allocs: no benchmark matched $re in $pkg"; exit 1; }
  while read -r name allocs; do
    if [ "$allocs" != "0" ]; then
      echo "check-allocs: FAIL $pkg $name allocates $allocs times per op (want 0)"
      fail=1
    fi
  done < <(echo "$out" | awk '/^Benchmark/ { for (i = 1; i <= NF; i++) if ($i == "allocs/op") print $1, $(i-1) }')
done
[ $fail -eq 0 ] && echo "check-allocs: hot paths allocate nothing per message"
exit $fail
