#!/usr/bin/env bash
# Start and stop a real Apache ZooKeeper (the Debian package zookeeperd) without systemd, for the Kafka
# registries of paper §3.2, the tutorial and the integration tests.
#
#   scripts/zookeeper.sh start DIR PORT [ID SERVERS]   one server; with ID and SERVERS one ensemble member
#   scripts/zookeeper.sh stop DIR                      stop the server started in DIR (pid file)
#   scripts/zookeeper.sh status DIR PORT               print the server's `srvr` answer
#   scripts/zookeeper.sh ensemble-start DIR BASEPORT   three members on 127.0.0.1: client ports BASEPORT..+2,
#                                                      peer ports BASEPORT+3..+5, election ports BASEPORT+6..+8
#   scripts/zookeeper.sh ensemble-stop DIR
#   scripts/zookeeper.sh install                       install the Debian package if it is missing
#
# SERVERS is "host:peerport:electionport,..." for members 1, 2, 3, ... in order. Everything (zoo.cfg, data,
# log, pid) stays under DIR. A standalone server listens on LISTEN_ADDR (default 127.0.0.1), an ensemble
# on 127.0.0.1. `start` prints log=<path> and, for a standalone server, connect=LISTEN_ADDR:PORT.
# Environment: ZK_TICK_MS (500), ZK_START_TIMEOUT (60 seconds), ZK_HEAP (256m), JAVA (java).
set -euo pipefail

ZK_TICK_MS=${ZK_TICK_MS:-500}
ZK_START_TIMEOUT=${ZK_START_TIMEOUT:-60}
ZK_HEAP=${ZK_HEAP:-256m}
JAVA=${JAVA:-java}
ZK_JAR=/usr/share/java/zookeeper.jar
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

installed() { [[ -f $ZK_JAR ]] && command -v "$JAVA" >/dev/null; }

# install makes sure the Debian package is there (a fresh CI machine has none of it).
install() { need_package zookeeperd installed; }

# fourletter PORT WORD prints the server's answer to a four-letter word, or fails.
fourletter() {
	local port=$1 word=$2 out=""
	exec 3<>"/dev/tcp/$LISTEN_ADDR/$port" || return 1
	nopipe printf '%s' "$word" >&3
	# The answer has no trailing newline ("imok"): read to EOF, which the server sends after answering.
	IFS= read -r -d '' -t 5 out <&3 || true
	exec 3<&- 3>&-
	printf '%s\n' "$out"
}

# serving PORT ID succeeds when the server answers: a standalone one (no ID) must be serving, an ensemble
# member only up (it serves once a quorum is up).
serving() {
	local out
	if [[ -z $2 ]]; then
		out=$(fourletter "$1" srvr 2>/dev/null || true)
		[[ $out == *"Mode: standalone"* ]]
	else
		out=$(fourletter "$1" ruok 2>/dev/null || true)
		[[ $out == imok* ]]
	fi
}

start() {
	local dir=$1 port=$2 id=${3:-} servers=${4:-}
	check_port "$port"
	install
	mkdir -p "$dir/data"
	dir=$(cd "$dir" && pwd)
	local log=$dir/zookeeper.log cfg=$dir/zoo.cfg
	refuse_running "$dir/zookeeper.pid" server
	if port_in_use "$port"; then die "start: port $port is already in use"; fi
	{
		echo "# written by scripts/zookeeper.sh"
		echo "tickTime=$ZK_TICK_MS"
		echo "initLimit=20"
		echo "syncLimit=10"
		echo "dataDir=$dir/data"
		echo "clientPort=$port"
		echo "clientPortAddress=$LISTEN_ADDR"
		echo "maxClientCnxns=0"
		echo "minSessionTimeout=$((2 * ZK_TICK_MS))"
		echo "maxSessionTimeout=60000"
		echo "admin.enableServer=false"
		echo "4lw.commands.whitelist=*"
		echo "autopurge.purgeInterval=0"
		if [[ -n $id ]]; then
			[[ $id =~ ^[0-9]+$ && -n $servers ]] || die "start: an ensemble member needs a numeric ID and SERVERS"
			local i=1 s
			IFS=, read -r -a members <<<"$servers"
			for s in "${members[@]}"; do echo "server.$i=$s"; i=$((i + 1)); done
		fi
	} >"$cfg"
	if [[ -n $id ]]; then echo "$id" >"$dir/data/myid"; fi
	# Log to standard output (redirected to DIR/zookeeper.log) whichever slf4j binding the package uses:
	# log4j 1.2 reads DIR/log4j.properties (first on the class path), slf4j-simple writes to stderr.
	{
		echo "log4j.rootLogger=INFO, CONSOLE"
		echo "log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender"
		echo "log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout"
		echo "log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n"
	} >"$dir/log4j.properties"
	# The class path: the jar (whose manifest, in zookeeperd 3.8, names its dependencies under /usr/share/java)
	# plus the CLASSPATH of the package's environment file (older packages list the dependencies there).
	local cp=$dir:$ZK_JAR env pkgcp=""
	for env in /etc/zookeeper/conf/environment /etc/zookeeper/conf_example/environment; do
		if [[ -f $env ]]; then
			pkgcp=$(CLASSPATH="" && . "$env" >/dev/null 2>&1 && echo "${CLASSPATH:-}") || pkgcp=""
			break
		fi
	done
	local j
	IFS=: read -r -a jars <<<"$pkgcp"
	for j in "${jars[@]}"; do [[ $j == *.jar && -f $j ]] && cp=$cp:$j; done
	if [[ $cp != *slf4j-log4j12* && -f /usr/share/java/slf4j-simple.jar ]]; then
		cp=$cp:/usr/share/java/slf4j-simple.jar
	fi
	nohup "$JAVA" -Xms32m "-Xmx$ZK_HEAP" -XX:+UseSerialGC -Dzookeeper.log.dir="$dir" \
		-Dzookeeper.root.logger=INFO,CONSOLE -Dlog4j.configuration="file:$dir/log4j.properties" \
		-Dorg.slf4j.simpleLogger.showDateTime=true -cp "$cp" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$cfg" >"$log" 2>&1 </dev/null &
	echo $! >"$dir/zookeeper.pid"
	await_start "$dir" "$dir/zookeeper.pid" "$ZK_START_TIMEOUT" "$log" server "log=$log" "no answer on port $port" \
		serving "$port" "$id"
	started "log=$log"
	[[ -n $id ]] || started "connect=$LISTEN_ADDR:$port"
}

# ours DIR PID succeeds when PID is still the server of DIR: a QuorumPeerMain reading DIR's zoo.cfg.
ours() { cmdline "$2" | grep -q "QuorumPeerMain.*$1"; }

stop() {
	stop_process "$1/zookeeper.pid" server 10 ours "$1"
}

ensemble() { # ensemble BASEPORT prints SERVERS
	local b=$1
	echo "127.0.0.1:$((b + 3)):$((b + 6)),127.0.0.1:$((b + 4)):$((b + 7)),127.0.0.1:$((b + 5)):$((b + 8))"
}

ensemble_start() {
	local dir=$1 base=$2 servers i out
	LISTEN_ADDR=127.0.0.1 # the members name each other by 127.0.0.1 (ensemble)
	[[ $base =~ ^[0-9]+$ ]] || die "ensemble-start: bad base port '$base'"
	servers=$(ensemble "$base")
	for i in 1 2 3; do start "$dir/$i" $((base + i - 1)) "$i" "$servers"; done
	local deadline=$((SECONDS + ZK_START_TIMEOUT))
	for i in 1 2 3; do
		while :; do
			out=$(fourletter $((base + i - 1)) srvr 2>/dev/null || true)
			[[ $out == *"Mode: leader"* || $out == *"Mode: follower"* ]] && break
			((SECONDS < deadline)) || die "ensemble-start: member $i not serving; log=$dir/$i/zookeeper.log"
			sleep 0.2
		done
	done
	echo "connect=127.0.0.1:$base,127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))"
}

cmd=${1:-}
case $cmd in
start) [[ $# -eq 3 || $# -eq 5 ]] || die "usage: start DIR PORT [ID SERVERS]"; start "$2" "$3" "${4:-}" "${5:-}" ;;
stop) [[ $# -eq 2 ]] || die "usage: stop DIR"; stop "$(abs_dir "$2")" ;;
status) [[ $# -eq 3 ]] || die "usage: status DIR PORT"; fourletter "$3" srvr ;;
ensemble-start) [[ $# -eq 3 ]] || die "usage: ensemble-start DIR BASEPORT"; ensemble_start "$2" "$3" ;;
install) install ;;
ensemble-stop)
	[[ $# -eq 2 ]] || die "usage: ensemble-stop DIR"
	for i in 1 2 3; do stop "$(abs_dir "$2/$i")"; done
	;;
*) die "usage: $0 start DIR PORT [ID SERVERS] | stop DIR | status DIR PORT | ensemble-start DIR BASEPORT | ensemble-stop DIR | install" ;;
esac
