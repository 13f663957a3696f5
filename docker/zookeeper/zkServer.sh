#!/bin/bash
# zkServer.sh start-foreground: the only mode a container needs. Debian's
# packaged script expects /etc/zookeeper; this one reads $ZOO_CONF_DIR and
# logs to the console (slf4j-simple) so `docker logs` shows the server.
set -e
case "${1:-start-foreground}" in
start-foreground) ;;
*)
	echo "zkServer.sh: only start-foreground is supported in this image, got $1" >&2
	exit 2
	;;
esac
cp="$ZOO_CONF_DIR:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
# shellcheck disable=SC2086 # JVMFLAGS is a list of flags, as in the official image.
exec java -Dzookeeper.log.dir="$ZOO_LOG_DIR" -Dorg.slf4j.simpleLogger.showDateTime=true \
	$JVMFLAGS -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZOO_CONF_DIR/zoo.cfg"
