#!/usr/bin/env bash
# Installs what the tests and `make reproduce` need on a fresh Debian 12
# machine: the ZooKeeper, ActiveMQ and RabbitMQ servers (the real ones the
# paper's §5 compares against, and the coordination service of §3.2), and
# debootstrap for building container images where none can be pulled.
# Nothing is started here: each test or run starts its own servers.
set -euo pipefail
pkgs=(zookeeperd activemq rabbitmq-server debootstrap)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${pkgs[*]})"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The packages would start their services through init scripts where an init
# system runs; our tests start their own instances on their own ports.
for svc in zookeeper activemq rabbitmq-server; do
  $SUDO service "$svc" stop >/dev/null 2>&1 || true
done
echo "install-deps: done"
