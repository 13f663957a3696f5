#!/usr/bin/env bash
# build-images.sh — make sure every container image the experiments and
# docker-compose.yml use exists locally, building stand-ins where needed.
#
# Image names come from docker/images.env (one place; an environment variable
# of the same name or a flag below overrides each). For every image:
#   1. `docker image inspect` finds it          -> "reused"
#   2. `docker pull` gets it (official images)  -> "pulled in Ns"
#   3. otherwise build a local stand-in under the SAME name from Debian
#      bookworm packages, with the official image's ports, paths and
#      environment                              -> "built in Ns"
# Stand-ins start FROM a debootstrap'ed Debian base (BASE_IMAGE, built once,
# about a minute) and share one OpenJDK layer (JRE_IMAGE) for ZooKeeper and
# ActiveMQ. Nothing is pulled for them: only the Debian mirror is used.
#
# Our broker image (KAFKA_IMAGE) is always built from this tree: the static
# binary (CGO_ENABLED=0 go build ./kafka/cmd/kafka) is rebuilt and the image is
# reused only if it already holds exactly that binary (label checked).
#
# Usage: scripts/build-images.sh [flags] [service...]
#   services: zookeeper activemq rabbitmq kafka (default: all)
#   --zookeeper-image NAME  --activemq-image NAME  --rabbitmq-image NAME
#   --kafka-image NAME      --base-image NAME      --jre-image NAME
#   --mirror URL            Debian mirror for the base (DEBIAN_MIRROR)
#   --no-pull               do not try `docker pull` (it fails fast offline anyway)
#   --rebuild               build stand-ins even if images exist (base and jre too)
#   --serial                build one image at a time (default: independent
#                           builds run side by side; their times then overlap)
#   --print                 print the resolved image names (KEY=value) and exit
# Needs: docker; for stand-ins root and debootstrap; for KAFKA_IMAGE go.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
env_file="$repo/docker/images.env"

# Defaults from images.env, unless the environment already sets a name.
while IFS='=' read -r key value; do
	[[ "$key" =~ ^[A-Z_][A-Z0-9_]*$ ]] || continue
	if [[ -z "${!key:-}" ]]; then
		printf -v "$key" '%s' "$value"
	fi
	export "${key?}"
done <"$env_file"

pull=1 rebuild=0 print=0 parallel=1 services=()
while (($#)); do
	case "$1" in
	--zookeeper-image) ZOOKEEPER_IMAGE=$2; shift ;;
	--activemq-image) ACTIVEMQ_IMAGE=$2; shift ;;
	--rabbitmq-image) RABBITMQ_IMAGE=$2; shift ;;
	--kafka-image) KAFKA_IMAGE=$2; shift ;;
	--base-image) BASE_IMAGE=$2; shift ;;
	--jre-image) JRE_IMAGE=$2; shift ;;
	--mirror) DEBIAN_MIRROR=$2; shift ;;
	--no-pull) pull=0 ;;
	--rebuild) rebuild=1 ;;
	--serial) parallel=0 ;;
	--print) print=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	zookeeper | activemq | rabbitmq | kafka) services+=("$1") ;;
	*) echo "build-images: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
((${#services[@]})) || services=(zookeeper activemq rabbitmq kafka)

if ((print)); then
	for key in ZOOKEEPER_IMAGE ACTIVEMQ_IMAGE RABBITMQ_IMAGE KAFKA_IMAGE BASE_IMAGE JRE_IMAGE DEBIAN_MIRROR; do
		echo "$key=${!key}"
	done
	exit 0
fi

export DOCKER_BUILDKIT=0 # the legacy builder needs no buildx plugin and no pulls for local FROMs
total_start=$SECONDS

have() { docker image inspect "$1" >/dev/null 2>&1; }
note() { printf '%-40s %s\n' "$1" "$2"; }

# dbuild ARGS...: docker build, quiet, without the legacy builder's notice.
dbuild() {
	local st
	docker build -q "$@" 2>&1 >/dev/null |
		{ grep -vE 'DEPRECATED: The legacy builder|BuildKit is currently disabled|environment-variable\.|^$' >&2; true; }
	st=${PIPESTATUS[0]}
	return "$st"
}

# build NAME CONTEXT [docker build args...]: a timed `docker build`.
build() {
	local name=$1 context=$2 start=$SECONDS
	shift 2
	echo "build-images: building $name from $context ..." >&2
	if ! dbuild --label kafka-repro.stand-in=true -t "$name" "$@" "$context"; then
		echo "build-images: docker build of $name failed (context $context)" >&2
		exit 1
	fi
	note "$name" "built in $((SECONDS - start))s"
}

base_ready() {
	if ((!rebuild)) && have "$BASE_IMAGE"; then
		return
	fi
	[[ "${base_done:-}" ]] && return
	if [[ $(id -u) != 0 ]] || ! command -v debootstrap >/dev/null; then
		echo "build-images: building $BASE_IMAGE needs root and debootstrap" >&2
		exit 1
	fi
	local start=$SECONDS
	echo "build-images: debootstrap bookworm minbase from $DEBIAN_MIRROR -> $BASE_IMAGE ..." >&2
	"$repo/docker/base/build-base.sh" "$BASE_IMAGE" "$DEBIAN_MIRROR"
	base_done=1
	note "$BASE_IMAGE" "built in $((SECONDS - start))s"
}

jre_ready() {
	base_ready
	if ((!rebuild)) && have "$JRE_IMAGE"; then
		return
	fi
	[[ "${jre_done:-}" ]] && return
	build "$JRE_IMAGE" "$repo/docker/jre" --build-arg "BASE_IMAGE=$BASE_IMAGE"
	jre_done=1
}

# ensure NAME: reuse or pull; returns 1 if a stand-in must be built.
ensure() {
	local name=$1 start=$SECONDS
	if ((!rebuild)) && have "$name"; then
		note "$name" "reused"
		return 0
	fi
	if ((pull && !rebuild)) && timeout 120 docker pull -q "$name" >/dev/null 2>&1; then
		note "$name" "pulled in $((SECONDS - start))s"
		return 0
	fi
	return 1
}

# kafka_binary builds the static kafka command into $kafka_ctx and sets
# kafka_sum to its SHA-256.
kafka_binary() {
	local start=$SECONDS
	command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
	(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$kafka_ctx/kafka" ./kafka/cmd/kafka) || {
		echo "build-images: go build ./kafka/cmd/kafka failed" >&2
		return 1
	}
	echo $((SECONDS - start)) >"$kafka_ctx/go-build-seconds"
}

# kafka_image builds KAFKA_IMAGE around the binary unless the image already
# holds exactly that binary.
kafka_image() {
	local sum old old_id gobuild start=$SECONDS
	gobuild=$(cat "$kafka_ctx/go-build-seconds")
	sum=$(sha256sum "$kafka_ctx/kafka" | cut -c1-64)
	old_id=$(docker image inspect -f '{{.Id}}' "$KAFKA_IMAGE" 2>/dev/null || true)
	old=$(docker image inspect -f '{{index .Config.Labels "kafka-repro.binary.sha256"}}' "$KAFKA_IMAGE" 2>/dev/null || true)
	if ((!rebuild)) && [[ "$old" == "$sum" ]]; then
		note "$KAFKA_IMAGE" "reused (binary unchanged; go build ${gobuild}s)"
		return
	fi
	base_ready
	cp "$repo"/docker/kafka/{Dockerfile,entrypoint.sh,server.properties} "$kafka_ctx/"
	echo "build-images: building $KAFKA_IMAGE ..." >&2
	dbuild -t "$KAFKA_IMAGE" --build-arg "BASE_IMAGE=$BASE_IMAGE" \
		--label "kafka-repro.binary.sha256=$sum" "$kafka_ctx" || {
		echo "build-images: docker build of $KAFKA_IMAGE failed" >&2
		exit 1
	}
	note "$KAFKA_IMAGE" "built in $((gobuild + SECONDS - start))s (go build ${gobuild}s + image $((SECONDS - start))s)"
	# The image it replaces would stay behind untagged; drop it unless in use.
	if [[ -n "$old_id" && "$old_id" != "$(docker image inspect -f '{{.Id}}' "$KAFKA_IMAGE")" ]]; then
		docker image rm "$old_id" >/dev/null 2>&1 || true
	fi
}

# Run "$@" now, or in the background with --parallel (its pid is kept).
pids=()
spawn() {
	if ((parallel)); then
		("$@") &
		pids+=($!)
	else
		"$@"
	fi
}
wait_all() {
	local pid failed=0
	for pid in "${pids[@]}"; do
		wait "$pid" || failed=1
	done
	pids=()
	((!failed)) || { echo "build-images: a build failed (see above)" >&2; exit 1; }
}

# 1. What exists or can be pulled; what is left to build.
todo=()
for svc in "${services[@]}"; do
	case "$svc" in
	zookeeper) ensure "$ZOOKEEPER_IMAGE" || todo+=(zookeeper) ;;
	activemq) ensure "$ACTIVEMQ_IMAGE" || todo+=(activemq) ;;
	rabbitmq) ensure "$RABBITMQ_IMAGE" || todo+=(rabbitmq) ;;
	esac
done
want() { [[ " ${todo[*]} " == *" $1 "* ]]; }

# 2. Our binary compiles while the base image is made (no Docker needed).
if [[ " ${services[*]} " == *" kafka "* ]]; then
	kafka_ctx=$(mktemp -d /tmp/kafka-repro-image.XXXXXX)
	trap 'rm -rf "$kafka_ctx"' EXIT
	spawn kafka_binary
fi
((${#todo[@]} == 0)) || base_ready

# 3. Stand-ins: RabbitMQ needs only the base; ZooKeeper and ActiveMQ share
# the Java layer. With --parallel they build side by side.
if want rabbitmq; then
	spawn build "$RABBITMQ_IMAGE" "$repo/docker/rabbitmq" --build-arg "BASE_IMAGE=$BASE_IMAGE"
fi
if want zookeeper || want activemq; then
	jre_ready
	if want zookeeper; then
		spawn build "$ZOOKEEPER_IMAGE" "$repo/docker/zookeeper" --build-arg "JRE_IMAGE=$JRE_IMAGE"
	fi
	if want activemq; then
		spawn build "$ACTIVEMQ_IMAGE" "$repo/docker/activemq" --build-arg "JRE_IMAGE=$JRE_IMAGE"
	fi
fi
wait_all
if [[ -n "${kafka_ctx:-}" ]]; then
	kafka_image
fi

echo "build-images: done in $((SECONDS - total_start))s" >&2
