#!/bin/bash
# Entrypoint of kafka-repro/broker. `server-start FILE [--override k=v]...`
# runs the broker; anything else runs that kafka subcommand (console tools).
#
# The broker both listens on and registers in ZooKeeper its `hostname`
# (docs/PROTOCOL.md §5: /brokers/ids/<id> = creator:host:port). Inside a container the
# default (the container's host name) means nothing to clients outside it, so
# unless hostname is overridden, use the container's own IP address: other
# containers and, on Linux, the host reach it directly, and a published port
# still forwards to it. KAFKA_HOSTNAME sets it explicitly.
set -e
if [[ "$1" == server-start && "$*" != *"hostname="* ]]; then
	host=${KAFKA_HOSTNAME:-$(hostname -i 2>/dev/null | awk '{print $1}')}
	if [[ -n "$host" ]]; then
		set -- "$@" --override "hostname=$host"
	fi
fi
exec kafka "$@"
