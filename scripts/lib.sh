#!/usr/bin/env bash
# Functions shared by the service scripts (activemq.sh, rabbitmq.sh, zookeeper.sh), which source this file
# from their own directory. Each of those scripts starts one real server without systemd, with every file
# under one directory (DIR) and a pid file there, and has the same start/stop shape:
#
#   start: check the port (check_port, port_in_use, refuse_running), install the Debian package if it is
#          missing (need_package), launch the server in the background, write DIR/<service>.pid, wait
#          until the server answers its protocol (await_start), and print log=<path> and data=<path>
#          (started), which package compare/localsvc parses;
#   stop:  SIGTERM the server of the pid file if it is still ours, wait, SIGKILL if need be (stop_process);
#   version: the installed package's upstream version (deb_version).
# service_main dispatches those three commands. Sourcing sets SCRIPT to the sourcing script's file name,
# the prefix of every message. Nothing here starts anything by itself.

SCRIPT=$(basename "${BASH_SOURCE[1]:-$0}")

die() {
	echo "$SCRIPT: $*" >&2
	exit 1
}

# check_port PORT dies unless PORT is a TCP port number.
check_port() {
	[[ $1 =~ ^[0-9]+$ ]] && (($1 > 0 && $1 < 65536)) || die "start: bad port '$1'"
}

# port_in_use PORT succeeds when something accepts connections on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# need_package PKG CHECK... installs the Debian package PKG with apt-get (as root, or through sudo) unless
# the command CHECK... succeeds, and dies if CHECK... still fails after that. Tests start several servers
# at once: one installs while the others wait on a lock, then find CHECK satisfied.
need_package() {
	local pkg=$1 sudo="" rc=0
	shift
	"$@" && return 0
	[[ $(id -u) -eq 0 ]] || sudo="sudo"
	if command -v flock >/dev/null; then
		exec 4>"${TMPDIR:-/tmp}/kafkarepro-apt.lock"
		flock 4
	fi
	if ! "$@"; then
		echo "$SCRIPT: installing $pkg" >&2
		{ $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq &&
			$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$pkg" >&2; } || rc=$?
	fi
	exec 4>&-
	"$@" || die "could not install $pkg: apt-get status $rc, and the check '$*' still fails"
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
# line; package compare/localsvc and kafka/zk/zktest parse them.
started() { printf '%s\n' "$@"; }

# abs_dir DIR prints DIR as an absolute path, or as it is when it does not exist.
abs_dir() { (cd "$1" 2>/dev/null && pwd) || echo "$1"; }

# service_main ARGS... runs the command line of a service script with the usual three commands, calling
# the script's own start, stop and version functions:
#   start DIR PORT | stop DIR | version
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
	*) die "usage: $0 start DIR PORT | stop DIR | version" ;;
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
