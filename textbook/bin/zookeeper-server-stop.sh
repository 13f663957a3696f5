#!/usr/bin/env bash
# zookeeper-server-stop.sh: stops the ZooKeeper that zookeeper-server-start.sh started with
# config/zookeeper.properties (its dataDir holds the pid file).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(sed -n 's/^[[:space:]]*dataDir[[:space:]]*[=:][[:space:]]*//p' "$ROOT/textbook/config/zookeeper.properties" | tail -n 1)
exec bash "$ROOT/scripts/zookeeper.sh" stop "$dir"
