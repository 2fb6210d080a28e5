#!/usr/bin/env bash
# A Docker engine that answers, for `make images` and the container tests: nothing to do when one does;
# as root, installs Debian's docker.io, docker-compose and debootstrap where missing and starts dockerd
# (these machines have no systemd); otherwise says what is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
missing=""
command -v dockerd >/dev/null || missing="$missing docker.io"
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || missing="$missing docker-compose"
command -v debootstrap >/dev/null || missing="$missing debootstrap"
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "the container path needs:$missing (apt-get install as root, or run 'make deps' as root)" >&2
    exit 1
  fi
  echo "installing:$missing"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if docker info >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "no Docker engine answers, and only root can start dockerd here: start it, or join the docker group" >&2
  exit 1
fi
mkdir -p var/docker
# A machine restored with its /var/run keeps containerd's pid file; dockerd then waits on whatever process
# has that pid now, and gives up after a minute.
pidfile=/var/run/docker/containerd/containerd.pid
if [ -f "$pidfile" ] && [ "$(cat "/proc/$(cat "$pidfile")/comm" 2>/dev/null)" != containerd ]; then
  rm -f "$pidfile"
fi
echo "starting dockerd (log: var/docker/dockerd.log)"
nohup dockerd >var/docker/dockerd.log 2>&1 &
for _ in $(seq 1 120); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 0.5
done
echo "dockerd did not answer within 60 s:" >&2
tail -20 var/docker/dockerd.log >&2
exit 1
