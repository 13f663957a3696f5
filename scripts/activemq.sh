#!/usr/bin/env bash
# Start and stop a real Apache ActiveMQ (the Debian package activemq) without systemd, for the paper's §5
# comparison (package compare/activemq speaks STOMP 1.2 to it).
#
#   scripts/activemq.sh start DIR PORT   one broker with STOMP on LISTEN_ADDR:PORT (default 127.0.0.1) and
#                                        nothing else listening
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
# shellcheck source=lib.sh
. "$HERE/lib.sh"

installed() { [[ -f $ACTIVEMQ_JAR ]] && command -v "$JAVA" >/dev/null; }

# install makes sure the Debian package is there (a fresh CI machine has none of it).
install() { need_package activemq installed; }

version() {
	deb_version activemq || die "version: the activemq package is not installed" # 5.17.2+dfsg-2 -> 5.17.2
}

# stomp_ok PORT succeeds when a STOMP 1.2 CONNECT on PORT is answered with CONNECTED.
stomp_ok() {
	local port=$1 line
	exec 3<>"/dev/tcp/$LISTEN_ADDR/$port" || return 1
	nopipe printf 'CONNECT\naccept-version:1.2\nhost:localhost\n\n\0' >&3
	IFS= read -r -t 5 line <&3 || true
	nopipe printf 'DISCONNECT\n\n\0' >&3 || true
	exec 3<&- 3>&-
	[[ ${line%$'\r'} == CONNECTED ]]
}

start() {
	local dir=$1 port=$2
	check_port "$port"
	[[ -f $CONFIG/activemq.xml ]] || die "start: missing $CONFIG/activemq.xml"
	install
	mkdir -p "$dir/conf" "$dir/data/tmp"
	dir=$(cd "$dir" && pwd)
	local log=$dir/data/activemq.log out=$dir/activemq.out
	refuse_running "$dir/activemq.pid" broker
	if port_in_use "$port"; then die "start: port $port is already in use"; fi
	cp "$CONFIG"/* "$dir/conf/"
	# The connector listens on LISTEN_ADDR (the configuration says 127.0.0.1).
	sed -i "s#stomp://127\.0\.0\.1:#stomp://$LISTEN_ADDR:#" "$dir/conf/activemq.xml"
	grep -qF "stomp://$LISTEN_ADDR:" "$dir/conf/activemq.xml" || die "start: no stomp://127.0.0.1 connector in $CONFIG/activemq.xml"
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
	await_start "$dir" "$dir/activemq.pid" "$ACTIVEMQ_START_TIMEOUT" "$out" broker \
		"log=$log (JVM output: $out)" "no STOMP answer on port $port" stomp_ok "$port"
	started "log=$log" "data=$dir/data"
}

# ours DIR PID succeeds when PID is still the broker of DIR: a java reading DIR's activemq.xml.
ours() { cmdline "$2" | grep -qF "activemq.base=$1 "; }

stop() {
	stop_process "$1/activemq.pid" broker 30 ours "$1"
}

service_main "$@"
