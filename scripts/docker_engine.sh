#!/usr/bin/env bash
# A private Docker engine for the docker sandbox backend, for machines that reach no image registry.
#
#   scripts/docker_engine.sh start [DIR]   install docker.io + debootstrap (root, apt) if missing, start
#                                          dockerd with its data-root, exec-root, pidfile and socket under
#                                          DIR, and make sure the image exists; prints DOCKER_HOST=...
#   scripts/docker_engine.sh stop  [DIR]   remove every container, stop that dockerd, delete DIR
#
# DIR defaults to $CF_DOCKER_DIR or /tmp/cf-docker. The engine runs with `--bridge=none --iptables=false`
# (the sandbox wants no network). The image, tagged $CF_DOCKER_IMAGE (default python:3.11-slim, the
# backend's default), is `docker import`ed from a Debian bookworm minbase rootfs with python3 (3.11) built
# by debootstrap; the rootfs tarball is cached in ~/.cache/coding-framework/docker, so only the first run
# needs the Debian mirror. Every step is idempotent.
#
# Exit status 3 means this machine cannot run an engine at all (not root, docker.io not installable,
# dockerd refused the privileges it needs), with the reason on stderr; tests skip on it. Any other failure
# is a failure.
set -euo pipefail

cmd=${1:?usage: docker_engine.sh start|stop [DIR]}
dir=$(realpath -m "${2:-${CF_DOCKER_DIR:-/tmp/cf-docker}}")
image=${CF_DOCKER_IMAGE:-python:3.11-slim}
mirror=${CF_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/coding-framework/docker
rootfs_tar=$cache/bookworm-minbase-python3.tar
export DOCKER_HOST=unix://$dir/docker.sock

say() { echo "docker_engine: $*" >&2; }
cannot_run() { say "cannot run a Docker engine here: $*"; exit 3; }

installable() {  # not `apt-cache policy | grep -q`: grep's early exit fails the pipe under pipefail
  local policy; policy=$(apt-cache policy "$1" 2>/dev/null)
  [[ $policy == *"Candidate: "* && $policy != *"Candidate: (none)"* ]]
}

install_tools() {
  command -v dockerd >/dev/null && command -v debootstrap >/dev/null && return
  [ "$(id -u)" = 0 ] || cannot_run "dockerd/debootstrap missing and not root: apt-get install docker.io debootstrap"
  command -v apt-get >/dev/null || cannot_run "dockerd/debootstrap missing and no apt-get to install them"
  say "installing docker.io and debootstrap with apt-get"
  apt-get update -q >&2 || say "apt-get update failed; trying the package lists there are"
  for pkg in docker.io debootstrap; do
    installable "$pkg" || cannot_run "apt has no installable $pkg"
  done
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io debootstrap >&2
}

engine_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_engine() {
  engine_up && return
  [ "$(id -u)" = 0 ] || cannot_run "dockerd needs root"
  mkdir -p "$dir"
  say "starting dockerd under $dir"
  setsid dockerd --bridge=none --iptables=false --ip-masq=false \
    --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/docker.pid" \
    --host "$DOCKER_HOST" >"$dir/dockerd.log" 2>&1 </dev/null &
  local pid=$!
  for _ in $(seq 120); do
    engine_up && return
    if ! kill -0 "$pid" 2>/dev/null; then
      # e.g. an unprivileged container: no mounts, no cgroups for dockerd
      local refused
      refused=$(grep -iE -m1 'operation not permitted|permission denied|requires root' "$dir/dockerd.log" || true)
      [ -z "$refused" ] || cannot_run "dockerd lacks privileges: $refused"
      say "dockerd exited; its log:"; tail -20 "$dir/dockerd.log" >&2; exit 4
    fi
    sleep 0.5
  done
  say "dockerd did not answer within 60 s; its log:"; tail -20 "$dir/dockerd.log" >&2; exit 4
}

build_rootfs() {
  [ -s "$rootfs_tar" ] && return
  local tmp; tmp=$(mktemp -d)
  say "building a bookworm minbase rootfs with python3 (debootstrap, once; cached in $cache)"
  debootstrap --variant=minbase --include=python3 bookworm "$tmp/rootfs" "$mirror" >"$tmp/debootstrap.log" 2>&1 \
    || { tail -20 "$tmp/debootstrap.log" >&2; rm -rf "$tmp"; exit 5; }
  rm -rf "$tmp"/rootfs/var/cache/apt/archives/*.deb "$tmp"/rootfs/var/lib/apt/lists/* \
    "$tmp"/rootfs/usr/share/{doc,man,locale}
  mkdir -p "$cache"
  tar -C "$tmp/rootfs" -cf "$rootfs_tar.part" . && mv "$rootfs_tar.part" "$rootfs_tar"
  rm -rf "$tmp"
}

ensure_image() {
  docker image inspect "$image" >/dev/null 2>&1 && return
  build_rootfs
  say "importing $rootfs_tar as $image"
  docker import --change 'CMD ["python3"]' "$rootfs_tar" "$image" >/dev/null
}

stop_engine() {
  if engine_up; then
    local ids; ids=$(docker ps -aq)
    [ -z "$ids" ] || docker rm -f $ids >/dev/null
  fi
  if [ -s "$dir/docker.pid" ]; then
    local pid; pid=$(cat "$dir/docker.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  # overlay2 layers and the engine's shm mounts would keep rm -rf from finishing
  grep -o " $dir/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$dir"
}

case $cmd in
  start) install_tools; start_engine; ensure_image; echo "DOCKER_HOST=$DOCKER_HOST" ;;
  stop) stop_engine ;;
  *) say "unknown command $cmd (start|stop)"; exit 2 ;;
esac
