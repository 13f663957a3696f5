#!/bin/bash
# Entrypoint of the rabbitmq stand-in, with the official image's behaviour:
# own the data directory, write the Erlang cookie if one is given, and run
# the server as user rabbitmq in the foreground with logs on the console.
set -e
if [[ "$1" == rabbitmq-server && "$(id -u)" == 0 ]]; then
	chown -R rabbitmq:rabbitmq "$RABBITMQ_DATA_DIR" /var/log/rabbitmq
	exec setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups "$0" "$@"
fi
if [[ -n "${RABBITMQ_ERLANG_COOKIE:-}" ]]; then
	umask 077
	printf '%s' "$RABBITMQ_ERLANG_COOKIE" >"$HOME/.erlang.cookie"
fi
exec "$@"
