#!/usr/bin/env bash
# Start and stop a real Apache ActiveMQ (the Debian package activemq) without systemd, for the paper's §5
# comparison (package compare/activemq speaks STOMP 1.2 to it).
#
#   scripts/activemq.sh start DIR PORT   one broker with STOMP on 127.0.0.1:PORT and nothing else listening
#   scripts/activemq.sh stop DIR         stop the broker started in DIR (pid file) and wait for it
#   scripts/activemq.sh version          print the installed ActiveMQ version (e.g. 5.17.2)
#
# The broker configuration is compare/config/activemq/activemq.xml (persistent KahaDB, journal written
# without fsync, STOMP only, no JMX/web console/scheduler); it is copied to DIR/conf. Everything else stays
# under DIR too: DIR/data/kahadb (the store), DIR/data/activemq.log, DIR/activemq.out (JVM stdout/stderr),
# DIR/activemq.pid. `start` waits until a STOMP CONNECT is answered and prints log=<path> and data=<path>.
# Environment: ACTIVEMQ_START_TIMEOUT (90 seconds), ACTIVEMQ_HEAP (1g), JAVA (java).
set -euo pipefail

ACTIVEMQ_START_TIMEOUT=${ACTIVEMQ_START_TIMEOUT:-90}
ACTIVEMQ_HEAP=${ACTIVEMQ_HEAP:-1g}
JAVA=${JAVA:-java}
ACTIVEMQ_HOME=/usr/share/activemq
ACTIVEMQ_JAR=$ACTIVEMQ_HOME/bin/activemq.jar
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CONFIG=$HERE/../compare/config/activemq

die() { echo "activemq.sh: $*" >&2; exit 1; }

# install makes sure the Debian package is there (a fresh CI machine has none of it).
install() {
	if [[ -f $ACTIVEMQ_JAR ]] && command -v "$JAVA" >/dev/null; then return; fi
	local sudo=""
	[[ $(id -u) -eq 0 ]] || sudo="sudo"
	echo "activemq.sh: installing activemq" >&2
	$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq activemq >&2
	[[ -f $ACTIVEMQ_JAR ]] || die "activemq installed but $ACTIVEMQ_JAR is missing"
}

version() {
	local v
	v=$(dpkg-query -W -f='${Version}' activemq 2>/dev/null) || die "version: the activemq package is not installed"
	v=${v#*:}          # epoch
	echo "${v%%[+~-]*}" # upstream part: 5.17.2+dfsg-2 -> 5.17.2
}

# stomp_ok PORT succeeds when a STOMP 1.2 CONNECT on PORT is answered with CONNECTED.
stomp_ok() {
	local port=$1 line
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'CONNECT\naccept-version:1.2\nhost:localhost\n\n\0' >&3
	IFS= read -r -t 5 line <&3 || true
	printf 'DISCONNECT\n\n\0' >&3 2>/dev/null || true
	exec 3<&- 3>&-
	[[ ${line%$'\r'} == CONNECTED ]]
}

alive() { [[ -f $1/activemq.pid ]] && kill -0 "$(cat "$1/activemq.pid")" 2>/dev/null; }

start() {
	local dir=$1 port=$2
	[[ $port =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "start: bad port '$port'"
	[[ -f $CONFIG/activemq.xml ]] || die "start: missing $CONFIG/activemq.xml"
	install
	mkdir -p "$dir/conf" "$dir/data/tmp"
	dir=$(cd "$dir" && pwd)
	local log=$dir/data/activemq.log out=$dir/activemq.out
	if alive "$dir"; then die "start: a broker from $dir is already running (pid $(cat "$dir/activemq.pid"))"; fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then die "start: port $port is already in use"; fi
	cp "$CONFIG"/* "$dir/conf/"
	# As /usr/bin/activemq does for Java > 8, minus its su to the activemq user and its shared /var/lib base.
	# The conf dir comes first on the classpath so our log4j.properties wins.
	nohup "$JAVA" "-Xms$ACTIVEMQ_HEAP" "-Xmx$ACTIVEMQ_HEAP" -XX:+UseParallelGC \
		-Dorg.apache.activemq.UseDedicatedTaskRunner=true \
		--add-reads=java.xml=java.logging \
		--add-opens java.base/java.security=ALL-UNNAMED \
		--add-opens java.base/java.net=ALL-UNNAMED \
		--add-opens java.base/java.lang=ALL-UNNAMED \
		--add-opens java.base/java.util=ALL-UNNAMED \
		--add-opens java.naming/javax.naming.spi=ALL-UNNAMED \
		--add-opens java.rmi/sun.rmi.transport.tcp=ALL-UNNAMED \
		--add-opens java.base/java.util.concurrent=ALL-UNNAMED \
		--add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED \
		--add-exports=java.base/sun.net.www.protocol.http=ALL-UNNAMED \
		--add-exports=java.base/sun.net.www.protocol.https=ALL-UNNAMED \
		--add-exports=java.base/sun.net.www.protocol.jar=ALL-UNNAMED \
		--add-exports=jdk.xml.dom/org.w3c.dom.html=ALL-UNNAMED \
		--add-exports=jdk.naming.rmi/com.sun.jndi.url.rmi=ALL-UNNAMED \
		-Dlog4j.configuration="file:$dir/conf/log4j.properties" \
		-Dactivemq.classpath="$dir/conf" \
		-Dactivemq.home="$ACTIVEMQ_HOME" \
		-Dactivemq.base="$dir" \
		-Dactivemq.conf="$dir/conf" \
		-Dactivemq.data="$dir/data" \
		-Dactivemq.stomp.port="$port" \
		-Djava.io.tmpdir="$dir/data/tmp" \
		-jar "$ACTIVEMQ_JAR" start "xbean:file:$dir/conf/activemq.xml" >"$out" 2>&1 </dev/null &
	echo $! >"$dir/activemq.pid"
	local deadline=$((SECONDS + ACTIVEMQ_START_TIMEOUT))
	while ((SECONDS < deadline)); do
		if ! alive "$dir"; then
			tail -n 20 "$out" >&2 || true
			die "start: the broker exited; log=$log (JVM output: $out)"
		fi
		stomp_ok "$port" 2>/dev/null && break
		sleep 0.2
	done
	if ((SECONDS >= deadline)); then
		stop "$dir" >/dev/null 2>&1 || true
		die "start: no STOMP answer on port $port within ${ACTIVEMQ_START_TIMEOUT}s; log=$log (JVM output: $out)"
	fi
	echo "log=$log"
	echo "data=$dir/data"
}

stop() {
	local dir=$1 pid
	[[ -f $dir/activemq.pid ]] || { echo "activemq.sh: nothing to stop in $dir" >&2; return 0; }
	pid=$(cat "$dir/activemq.pid")
	# Only our own broker: the pid must still be a java reading this DIR's activemq.xml.
	if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "activemq.base=$dir "; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$pid" 2>/dev/null; then
			echo "activemq.sh: broker $pid did not stop within 30s, killing it" >&2
			kill -9 "$pid" 2>/dev/null || true
			for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		fi
	fi
	rm -f "$dir/activemq.pid"
}

cmd=${1:-}
case $cmd in
start) [[ $# -eq 3 ]] || die "usage: start DIR PORT"; start "$2" "$3" ;;
stop) [[ $# -eq 2 ]] || die "usage: stop DIR"; stop "$(cd "$2" 2>/dev/null && pwd || echo "$2")" ;;
version) version ;;
*) die "usage: $0 start DIR PORT | stop DIR | version" ;;
esac
