#!/usr/bin/env bash
# build-base.sh IMAGE MIRROR — build the local Debian bookworm base image that
# every stand-in image starts FROM, without pulling anything: debootstrap a
# minbase root file system from the Debian mirror, trim it, and `docker import`
# it under IMAGE. Needs root (debootstrap) and about 1-3 minutes.
set -euo pipefail
image=${1:?usage: build-base.sh IMAGE MIRROR}
mirror=${2:-http://deb.debian.org/debian}
security=${mirror%/debian}/debian-security

root=$(mktemp -d /tmp/kafka-repro-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT

debootstrap --variant=minbase --components=main bookworm "$root" "$mirror" >"$root.log" 2>&1 || {
	echo "build-base: debootstrap failed, log follows ($root.log)" >&2
	tail -30 "$root.log" >&2
	exit 1
}
rm -f "$root.log"

# Apt sources with updates and security, the same suites the host uses.
cat >"$root/etc/apt/sources.list" <<SRC
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
SRC
# Keep images small: no recommends, no docs/man/locales, no package caches.
cat >"$root/etc/apt/apt.conf.d/90kafka-repro" <<'APT'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
APT
cat >"$root/etc/dpkg/dpkg.cfg.d/90kafka-repro" <<'DPKG'
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
DPKG
# Debian's openjdk postinst needs this directory, which dpkg excludes above would not create.
mkdir -p "$root/usr/share/man/man1"
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* \
	"$root"/usr/share/man/man[2-9] "$root"/usr/share/locale/* "$root"/var/log/*.log "$root"/tmp/* || true
# The image must not carry this machine's identity.
: >"$root/etc/hostname"
: >"$root/etc/resolv.conf"
rm -f "$root/etc/machine-id"

tar --numeric-owner -C "$root" -c . | docker import \
	--change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'CMD ["bash"]' \
	--change 'LABEL org.opencontainers.image.description="Debian bookworm minbase from debootstrap (kafka-repro stand-in base)"' \
	- "$image" >/dev/null
