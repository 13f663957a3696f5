#!/usr/bin/env bash
# zookeeper-server-start.sh zookeeper.properties: runs ZooKeeper (the Debian package, through
# scripts/zookeeper.sh, which installs it when it is missing) with the file's dataDir and clientPort, and stays
# in the foreground showing its log until SIGINT or SIGTERM, which stop it, as the textbook's chapter 3 types it.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "USAGE: $0 zookeeper.properties" >&2; exit 1; }
HOME_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZK=$HOME_DIR/libexec/zookeeper.sh # in the folder make dist lays out
[[ -f $ZK ]] || ZK=$HOME_DIR/../scripts/zookeeper.sh
prop() { sed -n "s/^[[:space:]]*$1[[:space:]]*[=:][[:space:]]*//p" "$2" | tail -n 1; }
dir=$(prop dataDir "$1")
port=$(prop clientPort "$1")
[[ -n $dir && -n $port ]] || { echo "$0: $1 sets no dataDir or no clientPort" >&2; exit 1; }
bash "$ZK" start "$dir" "$port"
trap 'bash "$ZK" stop "$dir"' EXIT
trap 'exit 0' INT TERM
tail -n +1 -f --pid="$(cat "$dir/zookeeper.pid")" "$dir/zookeeper.log" &
wait $!
