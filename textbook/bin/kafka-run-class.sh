#!/usr/bin/env bash
# kafka-run-class.sh COMMAND [ARGS]: runs one command of this repository's `kafka` binary, the way Kafka
# 0.8.1.1's script of this name runs one of its classes; every other script of this folder goes through it.
# In the folder `make dist` lays out, the binary is libs/kafka; in the repository's textbook/ folder it is
# built first into the repository's bin/kafka (go build; a second build takes a second), or used as it is
# when Go is not on PATH.
set -euo pipefail
HOME_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -x $HOME_DIR/libs/kafka ]]; then
	KAFKA=$HOME_DIR/libs/kafka
else
	ROOT=$(cd "$HOME_DIR/.." && pwd)
	KAFKA=$ROOT/bin/kafka
	export PATH=$PATH:/usr/local/go/bin
	if command -v go >/dev/null; then
		(cd "$ROOT" && go build -o "$KAFKA" ./kafka/cmd/kafka)
	elif [[ ! -x $KAFKA ]]; then
		echo "kafka-run-class.sh: no Go on PATH to build $KAFKA (make build does it)" >&2
		exit 1
	fi
fi
[[ $# -ge 1 ]] || { echo "usage: kafka-run-class.sh COMMAND [ARGS]" >&2; exit 2; }
exec "$KAFKA" "$@"
