#!/usr/bin/env bash
# kafka-server-stop.sh: asks every broker this folder's binary runs on this machine to shut down cleanly
# (SIGTERM), as 0.8.1.1's script does to every kafka.Kafka process.
set -uo pipefail
HOME_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -x $HOME_DIR/libs/kafka ]]; then
	pkill -TERM -f "^$HOME_DIR/libs/kafka server-start" || true
else
	pkill -TERM -f "^$(cd "$HOME_DIR/.." && pwd)/bin/kafka server-start" || true
fi
