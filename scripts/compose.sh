#!/usr/bin/env bash
# compose.sh: Docker Compose on the repository's docker-compose.yml, with
# whichever Compose the machine has: the `docker compose` plugin (Compose v2)
# when `docker compose version` answers, else the standalone `docker-compose`
# (Compose v1; on a machine with only that one, `docker compose` says
# "unknown command"). It runs from the repository root, so Compose finds
# docker-compose.yml and .env (the image names) whatever the working folder.
# The compose test (compare/containers) runs Compose through this script too.
#
# Usage:
#   scripts/compose.sh up -d          # ZooKeeper, three brokers, ActiveMQ, RabbitMQ
#   scripts/compose.sh down -v        # and remove their volumes and network
#   scripts/compose.sh ARGS...        # any other Compose command
#   scripts/compose.sh --which        # print the Compose command it would run, or fail
set -euo pipefail
here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
cd "$here/.."

# compose_cmd prints the Compose command of this machine, or fails saying neither is installed.
compose_cmd() {
	if docker compose version >/dev/null 2>&1; then
		echo "docker compose"
	elif command -v docker-compose >/dev/null 2>&1; then
		echo "docker-compose"
	else
		echo "compose.sh: neither \`docker compose\` (the Compose v2 plugin) nor docker-compose (v1) is installed" >&2
		return 1
	fi
}

cmd=$(compose_cmd)
if [[ ${1:-} == --which ]]; then
	echo "$cmd"
	exit 0
fi
# shellcheck disable=SC2086 # $cmd is one or two words
exec $cmd "$@"
