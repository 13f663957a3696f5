#!/usr/bin/env bash
# zookeeper-server-stop.sh: stops the ZooKeeper that zookeeper-server-start.sh started with
# config/zookeeper.properties (its dataDir holds the pid file).
set -euo pipefail
HOME_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZK=$HOME_DIR/libexec/zookeeper.sh # in the folder make dist lays out
[[ -f $ZK ]] || ZK=$HOME_DIR/../scripts/zookeeper.sh
dir=$(sed -n 's/^[[:space:]]*dataDir[[:space:]]*[=:][[:space:]]*//p' "$HOME_DIR/config/zookeeper.properties" | tail -n 1)
exec bash "$ZK" stop "$dir"
