#!/bin/bash
# Entrypoint of the zookeeper stand-in, with the official image's behaviour:
# write $ZOO_CONF_DIR/zoo.cfg from ZOO_* variables unless one is mounted,
# write myid, and run the server as user zookeeper.
set -e

if [[ "$1" == zkServer.sh && "$(id -u)" == 0 ]]; then
	chown -R zookeeper:zookeeper "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR" "$ZOO_LOG_DIR"
	exec setpriv --reuid=zookeeper --regid=zookeeper --init-groups "$0" "$@"
fi

cfg="$ZOO_CONF_DIR/zoo.cfg"
if [[ ! -f "$cfg" ]]; then
	{
		echo "dataDir=$ZOO_DATA_DIR"
		echo "dataLogDir=$ZOO_DATA_LOG_DIR"
		echo "tickTime=$ZOO_TICK_TIME"
		echo "initLimit=$ZOO_INIT_LIMIT"
		echo "syncLimit=$ZOO_SYNC_LIMIT"
		echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
		echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
		echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
		echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
		echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
		for server in ${ZOO_SERVERS:-server.1=localhost:2888:3888;2181}; do
			echo "$server"
		done
		[[ -z "$ZOO_4LW_COMMANDS_WHITELIST" ]] || echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
		for extra in $ZOO_CFG_EXTRA; do
			echo "$extra"
		done
	} >"$cfg"
fi
if [[ ! -f "$ZOO_DATA_DIR/myid" ]]; then
	echo "${ZOO_MY_ID:-1}" >"$ZOO_DATA_DIR/myid"
fi
exec "$@"
