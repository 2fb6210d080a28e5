#!/usr/bin/env bash
# `make images`: the base image (debootstrap), then simhash-index/hbase, simhash-index/server and
# simhash-index/prometheus, built here from Debian's packages, PyPI, crates.io and the jars `make jars`
# fetched.  No registry.  Prints each image's build time and size.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v docker >/dev/null && docker info >/dev/null 2>&1 ||
  { echo "no Docker engine answers: run 'make deps' as root (installs docker.io, starts dockerd)" >&2; exit 1; }
[ -f deploy/hbase-local/target/lib/.complete ] || { echo "the HBase jars are missing: run 'make jars'" >&2; exit 1; }
[ -f deploy/yarn/target/lib/.complete ] || { echo "the YARN jars are missing: run 'make jars'" >&2; exit 1; }
version=$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
hbase=$(sed -n 's:.*<hbase.version>\(.*\)</hbase.version>.*:\1:p' deploy/hbase-local/pom.xml)

deploy/docker/base.sh simhash-index/base:bookworm
# Stages that fetch from PyPI or crates.io trust what this machine's own tools trust (a proxy's CA, say);
# the final images do not fetch, and do not get these.
rm -rf var/docker/ca && mkdir -p var/docker/ca
cp /usr/local/share/ca-certificates/*.crt var/docker/ca/ 2>/dev/null || true

build() {
  local tag=$1 file=$2 began=$SECONDS
  docker build -q --force-rm -f "deploy/docker/$file" -t "$tag" --label "org.opencontainers.image.version=${tag##*:}" . >/dev/null
  docker image inspect -f '{{.Size}}' "$tag" |
    awk -v tag="$tag" -v s=$((SECONDS - began)) '{printf "%s: built in %d s, %.0f MB\n", tag, s, $1 / 1e6}'
}
build "simhash-index/hbase:$hbase" hbase.Dockerfile
build "simhash-index/server:$version" server.Dockerfile
build "simhash-index/prometheus:bookworm" prometheus.Dockerfile
