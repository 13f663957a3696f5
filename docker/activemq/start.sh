#!/bin/bash
# start.sh — run ActiveMQ in a container with the experiments' configuration
# (compare/config/activemq, mounted read-only at $KAFKA_REPRO_CONFIG), so the
# container path measures the same server settings as the local path
# (scripts/activemq.sh): KahaDB with enableJournalDiskSyncs=false, STOMP.
#
# Two changes only, both needed inside a container: the STOMP connector
# listens on every interface instead of 127.0.0.1 (a published port reaches
# the container's own address), and an OpenWire connector on 61616 is added
# as in the official image. Logs also go to the console (docker logs).
# Works with the kafka-repro stand-in and with the official image alike.
set -euo pipefail
src=${KAFKA_REPRO_CONFIG:-/kafka-repro/config}
conf=${ACTIVEMQ_CONF:-/opt/apache-activemq/conf}
stomp_port=${ACTIVEMQ_STOMP_PORT:-61613}

if [[ -f "$src/activemq.xml" ]]; then
	sed -e 's#stomp://127\.0\.0\.1:#stomp://0.0.0.0:#' \
		-e 's#</transportConnectors>#    <transportConnector name="openwire" uri="tcp://0.0.0.0:61616"/>\n        </transportConnectors>#' \
		"$src/activemq.xml" >"$conf/activemq.xml"
	if ! grep -q 'stomp://0\.0\.0\.0:' "$conf/activemq.xml"; then
		echo "start.sh: no stomp://127.0.0.1 connector found in $src/activemq.xml" >&2
		exit 1
	fi
fi
if [[ -f "$src/log4j.properties" ]]; then
	{
		sed -e 's#^log4j.rootLogger=\(.*\)$#log4j.rootLogger=\1, console#' "$src/log4j.properties"
		echo 'log4j.appender.console=org.apache.log4j.ConsoleAppender'
		echo 'log4j.appender.console.layout=org.apache.log4j.PatternLayout'
		echo 'log4j.appender.console.layout.ConversionPattern=%5p | %m%n'
	} >"$conf/log4j.properties"
fi
mkdir -p "${ACTIVEMQ_DATA:-/opt/apache-activemq/data}"
chown -R activemq "${ACTIVEMQ_DATA:-/opt/apache-activemq/data}" 2>/dev/null || true

# The JVM settings of scripts/activemq.sh (1 GB heap, parallel GC, dedicated task runners).
export ACTIVEMQ_OPTS="${ACTIVEMQ_OPTS_MEMORY:--Xms1g -Xmx1g} -XX:+UseParallelGC -Dorg.apache.activemq.UseDedicatedTaskRunner=true -Dactivemq.stomp.port=$stomp_port ${ACTIVEMQ_EXTRA_OPTS:-}"
exec activemq console
