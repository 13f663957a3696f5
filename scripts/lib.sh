#!/usr/bin/env bash
# Functions shared by the service scripts (activemq.sh, rabbitmq.sh, zookeeper.sh), which source this file
# from their own directory. Each of those scripts starts one real server without systemd, with every file
# under one directory (DIR) and a pid file there, and has the same start/stop shape:
#
#   start: check the port (check_port, port_in_use, refuse_running), install the Debian package if it is
#          missing (need_package), launch the server in the background, write DIR/<service>.pid, wait
#          until the server answers its protocol (await_start), and print log=<path> and data=<path>
#          (started), which package internal/localsvc parses;
#   stop:  SIGTERM the server of the pid file if it is still ours, wait, SIGKILL if need be (stop_process);
#   version: the installed package's upstream version (deb_version).
# service_main dispatches those three commands. Sourcing sets SCRIPT to the sourcing script's file name,
# the prefix of every message. Nothing here starts anything by itself.
#
# Servers listen on LISTEN_ADDR (default 127.0.0.1), the probes connect there: the experiments' two-host
# set-up runs a script inside the server host's network namespace with LISTEN_ADDR set to that host's end
# of the link (package internal/localsvc, Host). What only the server itself talks to (RabbitMQ's epmd and
# distribution) stays on 127.0.0.1.

SCRIPT=$(basename "${BASH_SOURCE[1]:-$0}")
LISTEN_ADDR=${LISTEN_ADDR:-127.0.0.1}
[[ $LISTEN_ADDR =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || {
	echo "$SCRIPT: LISTEN_ADDR='$LISTEN_ADDR' is not an IPv4 address" >&2
	exit 1
}

die() {
	echo "$SCRIPT: $*" >&2
	exit 1
}

# check_port PORT dies unless PORT is a TCP port number.
check_port() {
	[[ $1 =~ ^[0-9]+$ ]] && (($1 > 0 && $1 < 65536)) || die "start: bad port '$1'"
}

# port_in_use PORT [ADDR] succeeds when something accepts connections on ADDR:PORT (default LISTEN_ADDR).
port_in_use() { (exec 3<>"/dev/tcp/${2:-$LISTEN_ADDR}/$1") 2>/dev/null; }

# need_package PKG CHECK... installs the Debian package PKG (apt_install) unless the command CHECK...
# succeeds, and dies if CHECK... still fails after that. Tests start several servers at once: one installs
# while the others wait on a lock, then find CHECK satisfied.
need_package() {
	local pkg=$1 rc=0
	shift
	"$@" && return 0
	apt_lock
	if ! "$@"; then
		echo "$SCRIPT: installing $pkg" >&2
		apt_install "$pkg" >&2 || rc=$?
	fi
	exec 4>&-
	"$@" || die "could not install $pkg: apt-get status $rc, and the check '$*' still fails"
}

# apt_lock takes (on file descriptor 4, until it is closed) the lock that makes our installs one at a time.
apt_lock() {
	exec 4>"${TMPDIR:-/tmp}/kafkarepro-apt.lock"
	if command -v flock >/dev/null; then flock 4; fi
}

# APT_POLICY is the policy-rc.d that apt_install puts in place while it installs, APT_POLICY_MARK its mark.
APT_POLICY=/usr/sbin/policy-rc.d
APT_POLICY_MARK="# kafkarepro: no service starts while installing"

# apt_install PKG... installs the Debian packages PKG... (apt-get update, then install without recommends),
# as root or through sudo, without letting their postinst start the system-wide services: a policy-rc.d
# that forbids every start (exit 101, honoured by invoke-rc.d and deb-systemd-invoke) is in place while
# apt-get runs, unless the machine has its own, and is removed afterwards, also when interrupted. Our tests
# start their own servers on their own ports; the system-wide ones would only waste memory. Where the
# machine's own policy-rc.d may have let them start, the services whose port was free before are stopped,
# and so is an epmd on 4369 that was not there before. Fails with apt-get's status.
apt_install() {
	local sudo="" p before="" own=0
	[[ $(id -u) -eq 0 ]] || sudo="sudo"
	if [[ -n $sudo ]] && ! command -v sudo >/dev/null; then
		echo "$SCRIPT: installing $* needs root or sudo" >&2
		return 1
	fi
	for p in 2181 61616 5672 4369; do port_in_use "$p" 127.0.0.1 && before="$before $p"; done
	if [[ ! -e $APT_POLICY ]] || grep -qxF "$APT_POLICY_MARK" "$APT_POLICY" 2>/dev/null; then own=1; fi
	(
		if ((own)); then
			trap "$sudo rm -f $APT_POLICY $APT_POLICY.kafkarepro" EXIT
			trap 'exit 129' HUP
			trap 'exit 130' INT
			trap 'exit 143' TERM
			printf '#!/bin/sh\n%s\nexit 101\n' "$APT_POLICY_MARK" | $sudo tee "$APT_POLICY.kafkarepro" >/dev/null &&
				$sudo chmod 755 "$APT_POLICY.kafkarepro" && $sudo mv -f "$APT_POLICY.kafkarepro" "$APT_POLICY" || exit
		fi
		$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq || exit
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
			--no-install-recommends "$@"
	) || return
	((own)) && return 0
	for p in "2181 zookeeper" "61616 activemq" "5672 rabbitmq-server"; do
		set -- $p
		[[ " $before " != *" $1 "* && -x /etc/init.d/$2 ]] || continue
		$sudo service "$2" stop >/dev/null 2>&1 || true
		# zookeeper's init script will not stop a server it cannot see is its java (/proc/PID/exe is
		# unreadable without CAP_SYS_PTRACE, as in containers); its pid file is enough here.
		if [[ -f /run/$2/$2.pid ]] && command -v start-stop-daemon >/dev/null; then
			$sudo start-stop-daemon --stop --quiet --retry=TERM/30/KILL/5 --pidfile "/run/$2/$2.pid" >/dev/null 2>&1 || true
		fi
	done
	if [[ " $before " != *" 4369 "* ]] && port_in_use 4369 127.0.0.1 && command -v epmd >/dev/null; then
		epmd -kill >/dev/null 2>&1 || true
	fi
	return 0
}

# deb_version PKG prints the upstream version of the installed Debian package PKG (1:5.17.2+dfsg-2 ->
# 5.17.2), or fails when it is not installed.
deb_version() {
	local v
	v=$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null) || return 1
	v=${v#*:}            # epoch
	echo "${v%%[+~-]*}" # upstream part
}

# nopipe CMD... runs CMD (e.g. a printf to a probe's socket) in a subshell that ignores SIGPIPE, so that
# writing to a connection the server has already closed fails instead of killing the script.
nopipe() { (trap '' PIPE && "$@") 2>/dev/null; }

# pid_alive PIDFILE succeeds when PIDFILE names a live process.
pid_alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# refuse_running PIDFILE WHAT dies when the WHAT ("broker") of PIDFILE is already running.
refuse_running() {
	if pid_alive "$1"; then die "start: a $2 from $(dirname "$1") is already running (pid $(cat "$1"))"; fi
}

# wait_ready PIDFILE SECONDS OUT PROBE... waits until the command PROBE... succeeds (tried every 0.2 s,
# its stderr dropped) while the process of PIDFILE lives. Returns 0 once it does; 1 when the process
# exited, after copying the last 20 lines of OUT (its output) to stderr; 2 after SECONDS without success.
wait_ready() {
	local pidfile=$1 deadline=$((SECONDS + $2)) out=$3
	shift 3
	while ((SECONDS < deadline)); do
		if ! pid_alive "$pidfile"; then
			tail -n 20 "$out" >&2 || true
			return 1
		fi
		"$@" 2>/dev/null && return 0
		sleep 0.2
	done
	return 2
}

# await_start DIR PIDFILE SECONDS OUT WHAT WHERE NOANSWER PROBE... waits (wait_ready) until the WHAT
# ("broker") of PIDFILE answers PROBE.... If it exits, or gives no answer within SECONDS, it runs the
# script's own `stop DIR` (which also frees what the server left behind, e.g. RabbitMQ's epmd) and dies:
# "start: the WHAT exited; WHERE" or "start: NOANSWER within SECONDSs; WHERE", WHERE saying where its
# log is.
await_start() {
	local dir=$1 pidfile=$2 secs=$3 out=$4 what=$5 where=$6 noanswer=$7 rc=0
	shift 7
	wait_ready "$pidfile" "$secs" "$out" "$@" || rc=$?
	((rc == 0)) && return 0
	stop "$dir" >/dev/null 2>&1 || true
	((rc == 1)) && die "start: the $what exited; $where"
	die "start: $noanswer within ${secs}s; $where"
}

# started KEY=VALUE... prints the lines `start` promises (log=<path>, data=<path>, connect=...), one a
# line; package internal/localsvc and kafka/zk/zktest parse them.
started() { printf '%s\n' "$@"; }

# abs_dir DIR prints DIR as an absolute path, or as it is when it does not exist.
abs_dir() { (cd "$1" 2>/dev/null && pwd) || echo "$1"; }

# service_main ARGS... runs the command line of a service script with the usual three commands, calling
# the script's own start, stop and version functions, and `install` (the script's install: the Debian
# package if it is missing, which the two-host set-up runs before the server host, which has no route
# to a package mirror, exists):
#   start DIR PORT | stop DIR | version | install
service_main() {
	case ${1:-} in
	start)
		[[ $# -eq 3 ]] || die "usage: start DIR PORT"
		start "$2" "$3"
		;;
	stop)
		[[ $# -eq 2 ]] || die "usage: stop DIR"
		stop "$(abs_dir "$2")"
		;;
	version) version ;;
	install) install ;;
	*) die "usage: $0 start DIR PORT | stop DIR | version | install" ;;
	esac
}

# cmdline PID prints the command line of PID, arguments separated by spaces; environ PID its
# environment, one variable a line.
cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }
environ() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null; }

# pidfile_present PIDFILE succeeds when PIDFILE exists; otherwise it says there is nothing to stop.
pidfile_present() {
	[[ -f $1 ]] && return 0
	echo "$SCRIPT: nothing to stop in $(dirname "$1")" >&2
	return 1
}

# wait_exit PID SECONDS waits up to SECONDS for PID to exit; fails if it is still there.
wait_exit() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	! kill -0 "$1" 2>/dev/null
}

# stop_process PIDFILE WHAT SECONDS OURS... stops the WHAT ("broker") of PIDFILE and removes PIDFILE. Only
# if the command `OURS... PID` says the pid is still our server (pids are reused): SIGTERM, up to SECONDS
# for it to exit, then SIGKILL and up to 5 seconds more.
stop_process() {
	local pidfile=$1 what=$2 secs=$3 pid
	shift 3
	pidfile_present "$pidfile" || return 0
	pid=$(cat "$pidfile")
	if kill -0 "$pid" 2>/dev/null && "$@" "$pid"; then
		kill "$pid" 2>/dev/null || true
		if ! wait_exit "$pid" "$secs"; then
			echo "$SCRIPT: $what $pid did not stop within ${secs}s, killing it" >&2
			kill -9 "$pid" 2>/dev/null || true
			wait_exit "$pid" 5 || true
		fi
	fi
	rm -f "$pidfile"
}
