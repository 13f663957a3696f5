#!/usr/bin/env bash
# Start and stop a real RabbitMQ (the Debian package rabbitmq-server) without systemd, for the paper's §5
# comparison (package compare/rabbitmq speaks AMQP 0-9-1 to it through github.com/rabbitmq/amqp091-go).
#
#   scripts/rabbitmq.sh start DIR PORT   one node with AMQP on LISTEN_ADDR:PORT (default 127.0.0.1)
#   scripts/rabbitmq.sh stop DIR         stop the node started in DIR (pid file) and its epmd, and wait
#   scripts/rabbitmq.sh version          print the installed RabbitMQ version (e.g. 3.10.8)
#
# Everything derives from DIR and PORT so that two instances, or a leftover epmd, do not clash:
#   node name        rabbit-PORT@localhost
#   distribution     RABBITMQ_DIST_PORT, default PORT+20000 (wrapped into 1024..65535)
#   epmd             ERL_EPMD_PORT, default PORT+10000 (wrapped); our own epmd, killed by `stop`
#   HOME             DIR/home (the Erlang cookie)
#   config           DIR/conf/{rabbitmq.conf,enabled_plugins,rabbitmq-env.conf}, copied from
#                    compare/config/rabbitmq (no plugins: the management plugin is off)
#   data             DIR/mnesia (RABBITMQ_MNESIA_BASE; the node's store is DIR/mnesia/rabbit-PORT@localhost)
#   logs             DIR/log/rabbit-PORT@localhost.log, DIR/log/startup.out (stdout/stderr)
# `start` waits until the AMQP port answers a protocol header and prints log=<path> and data=<path>.
# Runs as root or any user (no su to the rabbitmq user). Environment: RABBITMQ_START_TIMEOUT (120 seconds).
set -euo pipefail

RABBITMQ_START_TIMEOUT=${RABBITMQ_START_TIMEOUT:-120}
RABBIT_BIN=/usr/lib/rabbitmq/bin
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CONFIG=$HERE/../compare/config/rabbitmq
# shellcheck source=lib.sh
. "$HERE/lib.sh"

installed() { [[ -x $RABBIT_BIN/rabbitmq-server ]]; }

# install makes sure the Debian package is there (a fresh CI machine has none of it). need_package keeps
# the package's postinst from starting the system-wide node (and stops one that still started, with the
# epmd on 4369), so nothing holds port 5672 or 4369 afterwards.
install() { need_package rabbitmq-server installed; }

version() {
	deb_version rabbitmq-server || die "version: rabbitmq-server is not installed" # 3.10.8-1.1+deb12u1 -> 3.10.8
}

# derived PORT OFFSET maps PORT+OFFSET into 1024..65535.
derived() { echo $(((($1 - 1024 + $2) % 64512) + 1024)); }

# amqp_ok PORT succeeds when PORT answers an AMQP 0-9-1 protocol header with a frame (Connection.Start).
amqp_ok() {
	local port=$1 c=""
	exec 3<>"/dev/tcp/$LISTEN_ADDR/$port" || return 1
	nopipe printf 'AMQP\x00\x00\x09\x01' >&3
	IFS= read -r -s -t 5 -n 1 -d '' c <&3 || true
	exec 3<&- 3>&-
	[[ $c == $'\x01' ]]
}

# env_for DIR PORT exports the environment of the node of DIR/PORT (for the server and for rabbitmqctl).
env_for() {
	local dir=$1 port=$2
	export HOME=$dir/home
	export RABBITMQ_NODENAME=rabbit-$port@localhost
	export RABBITMQ_NODE_IP_ADDRESS=$LISTEN_ADDR
	export RABBITMQ_NODE_PORT=$port
	export RABBITMQ_DIST_PORT=${RABBITMQ_DIST_PORT:-$(derived "$port" 20000)}
	export ERL_EPMD_PORT=${ERL_EPMD_PORT:-$(derived "$port" 10000)}
	export ERL_EPMD_ADDRESS=127.0.0.1
	export RABBITMQ_CTL_DIST_PORT_MIN=$(derived "$port" 30000)
	export RABBITMQ_CTL_DIST_PORT_MAX=$((RABBITMQ_CTL_DIST_PORT_MIN + 10))
	export RABBITMQ_CONF_ENV_FILE=$dir/conf/rabbitmq-env.conf
	export RABBITMQ_CONFIG_FILE=$dir/conf/rabbitmq.conf
	export RABBITMQ_ADVANCED_CONFIG_FILE=$dir/conf/advanced.config
	export RABBITMQ_ENABLED_PLUGINS_FILE=$dir/conf/enabled_plugins
	export RABBITMQ_MNESIA_BASE=$dir/mnesia
	export RABBITMQ_LOG_BASE=$dir/log
	export RABBITMQ_PID_FILE=$dir/rabbitmq.pid.erl
	# Distribution listens on 127.0.0.1 only, like epmd: only the node and rabbitmqctl use them.
	export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
}

start() {
	local dir=$1 port=$2
	check_port "$port"
	[[ -f $CONFIG/rabbitmq.conf ]] || die "start: missing $CONFIG/rabbitmq.conf"
	install
	mkdir -p "$dir/conf" "$dir/home" "$dir/mnesia" "$dir/log"
	dir=$(cd "$dir" && pwd)
	env_for "$dir" "$port"
	local log=$dir/log/$RABBITMQ_NODENAME.log out=$dir/log/startup.out data=$dir/mnesia/$RABBITMQ_NODENAME
	refuse_running "$dir/rabbitmq.pid" node
	port_in_use "$port" && die "start: AMQP port $port is already in use"
	port_in_use "$RABBITMQ_DIST_PORT" 127.0.0.1 && die "start: distribution port $RABBITMQ_DIST_PORT (derived from $port) is in use; pick another PORT or set RABBITMQ_DIST_PORT"
	cp "$CONFIG"/* "$dir/conf/"
	if [[ $LISTEN_ADDR != 127.0.0.1 ]]; then
		# The guest user may log in only over loopback by default; on another address (the server host of the
		# two-host set-up, reachable only from its client host) the clients come from the other end.
		printf '\n# Added by scripts/rabbitmq.sh: AMQP listens on %s, not loopback.\nloopback_users.guest = false\n' \
			"$LISTEN_ADDR" >>"$dir/conf/rabbitmq.conf"
	fi
	chmod 700 "$dir/home"
	# $! is rabbitmq-server's shell, which runs beam.smp as its child and turns SIGTERM into a clean stop.
	# Erlang starts our own epmd on ERL_EPMD_PORT (127.0.0.1) if none answers there; AMQP listens on
	# LISTEN_ADDR.
	(cd "$dir" && exec nohup "$RABBIT_BIN/rabbitmq-server" >"$out" 2>&1 </dev/null) &
	echo $! >"$dir/rabbitmq.pid"
	echo "$ERL_EPMD_PORT" >"$dir/epmd.port"
	await_start "$dir" "$dir/rabbitmq.pid" "$RABBITMQ_START_TIMEOUT" "$out" node \
		"log=$log (startup output: $out)" "no AMQP answer on port $port" amqp_ok "$port"
	started "log=$log" "data=$data"
}

# ours DIR PID succeeds when PID is still the node of DIR: rabbitmq-server's shell (parent of beam.smp)
# with DIR's environment.
ours() { environ "$2" | grep -qxF "RABBITMQ_MNESIA_BASE=$1/mnesia"; }

stop() {
	local dir=$1
	pidfile_present "$dir/rabbitmq.pid" || return 0
	# SIGTERM: rabbitmq-server stops the node cleanly and waits for it.
	stop_process "$dir/rabbitmq.pid" node 30 ours "$dir"
	# Our epmd (on the port recorded by start) has no node left to serve.
	local epmd_port
	epmd_port=$(cat "$dir/epmd.port" 2>/dev/null || echo "")
	if [[ -n $epmd_port ]]; then
		ERL_EPMD_PORT=$epmd_port epmd -port "$epmd_port" -kill >/dev/null 2>&1 || true
	fi
}

service_main "$@"
