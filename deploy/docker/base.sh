#!/usr/bin/env bash
# The base image of every simhash-index image: a minimal Debian bookworm made with debootstrap from the
# Debian mirror this machine's apt uses, then `docker import`ed.  No registry is involved.
# Usage: deploy/docker/base.sh [TAG]   (does nothing when TAG exists; `make images` calls it)
set -euo pipefail
tag=${1:-simhash-index/base:bookworm}
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag: present"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is missing: run 'make deps' (as root)" >&2; exit 1; }
sources=/etc/apt/sources.list.d/debian.sources
mirror=$(awk '$1 == "URIs:" {print $2; exit}' "$sources" 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
began=$SECONDS
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 ||
  { tail -20 "$rootfs.log" >&2; exit 1; }
rm -f "$rootfs.log"
# The image's apt reads the same suites as the host's (updates and security included).
if [ -f "$sources" ]; then
  rm -f "$rootfs/etc/apt/sources.list"
  cp "$sources" "$rootfs/etc/apt/sources.list.d/debian.sources"
fi
# Smaller and quieter images: no documentation, no recommends, no apt caches.
cat >"$rootfs/etc/apt/apt.conf.d/90simhash" <<'CONF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
CONF
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/90simhash" <<'CONF'
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/locale/*
path-include /usr/share/doc/*/copyright
CONF
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
mkdir -p "$rootfs/usr/share/simhash-index"
chroot "$rootfs" dpkg-query -W -f '${Package}=${Version}\n' >"$rootfs/usr/share/simhash-index/base-packages.txt"
tar --numeric-owner -C "$rootfs" -c . |
  docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL org.opencontainers.image.title=simhash-index-base org.opencontainers.image.base.name=debian:bookworm-debootstrap" \
    - "$tag" >/dev/null
echo "$tag: built in $((SECONDS - began)) s"
