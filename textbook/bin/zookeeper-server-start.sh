#!/usr/bin/env bash
# zookeeper-server-start.sh zookeeper.properties: runs ZooKeeper (the Debian package, through
# scripts/zookeeper.sh) with the file's dataDir and clientPort, and stays in the foreground showing its log
# until SIGINT or SIGTERM, which stop it, as the textbook's chapter 3 types it.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "USAGE: $0 zookeeper.properties" >&2; exit 1; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
prop() { sed -n "s/^[[:space:]]*$1[[:space:]]*[=:][[:space:]]*//p" "$2" | tail -n 1; }
dir=$(prop dataDir "$1")
port=$(prop clientPort "$1")
[[ -n $dir && -n $port ]] || { echo "$0: $1 sets no dataDir or no clientPort" >&2; exit 1; }
bash "$ROOT/scripts/zookeeper.sh" start "$dir" "$port"
trap 'bash "$ROOT/scripts/zookeeper.sh" stop "$dir"' EXIT
trap 'exit 0' INT TERM
tail -n +1 -f --pid="$(cat "$dir/zookeeper.pid")" "$dir/zookeeper.log" &
wait $!
