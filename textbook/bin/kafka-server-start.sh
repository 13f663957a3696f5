#!/usr/bin/env bash
# kafka-server-start.sh server.properties: runs a broker in the foreground until SIGINT or SIGTERM, as the
# textbook's chapter 3 types it (the file may use Kafka 0.8's names: kafka/broker/config08.go).
set -euo pipefail
[[ $# -ge 1 ]] || { echo "USAGE: $0 server.properties" >&2; exit 1; }
exec "$(dirname "${BASH_SOURCE[0]}")/kafka-run-class.sh" server-start "$@"
