#!/usr/bin/env bash
# Installs what the tests and `make reproduce` need on a fresh Debian 12
# machine: the ZooKeeper, ActiveMQ and RabbitMQ servers (the real ones the
# paper's §5 compares against, and the coordination service of §3.2), and
# debootstrap for building container images where none can be pulled; also
# the tools the Makefile and scripts use that a minimal Debian may lack (make,
# procps for pgrep, util-linux for flock, valgrind and git for make perf-check).
# Nothing is started here: each test or run starts its own servers. The
# packages' postinst does not start the system-wide services either (see
# apt_install in lib.sh: a policy-rc.d forbids it while apt-get runs).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
pkgs=(zookeeperd activemq rabbitmq-server debootstrap)
# Tools: package -> a command it provides.
tools=(make:make procps:pgrep util-linux:flock valgrind:valgrind git:git)
is_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${pkgs[@]}"; do
  is_installed "$p" || missing+=("$p")
done
for t in "${tools[@]}"; do
  command -v "${t#*:}" >/dev/null || is_installed "${t%%:*}" || missing+=("${t%%:*}")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${pkgs[*]})"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
apt_lock
apt_install "${missing[@]}" >/dev/null
exec 4>&-
echo "install-deps: done"
