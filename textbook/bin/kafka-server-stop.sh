#!/usr/bin/env bash
# kafka-server-stop.sh: asks every broker this repository's binary runs on this machine to shut down
# cleanly (SIGTERM), as 0.8.1.1's script does to every kafka.Kafka process.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pkill -TERM -f "^$ROOT/bin/kafka server-start" || true
