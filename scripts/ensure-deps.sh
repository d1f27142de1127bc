#!/usr/bin/env bash
# Installs npm packages when missing or stale, redis-server, haproxy, chromium and PostgreSQL when absent,
# and builds FerretDB. SKIP_REDIS=1 / SKIP_FERRETDB=1 / SKIP_POSTGRES=1 leave out a service that is provided
# another way. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
# A node_modules that is a symbolic link (a git worktree sharing another checkout's packages) is left alone:
# `npm ci` would empty the directory it points to, under every checkout that shares it.
if [ -L node_modules ]; then
  [ -d node_modules/ ] || { echo "[setup] node_modules links to a missing directory" >&2; exit 1; }
elif [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[setup] npm ci" >&2
  # `npm ci` installs exactly the lock and never writes it: setup must leave a clone's tracked files as they were.
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ -z "${SKIP_REDIS:-}" ] && ! command -v redis-server >/dev/null 2>&1; then
  echo "[setup] installing redis-server" >&2
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi
# Debian's HAProxy: the scaled topology's load balancer (up.sh --scaled) and its test.
if [ -z "${SKIP_HAPROXY:-}" ] && ! command -v haproxy >/dev/null 2>&1; then
  echo "[setup] installing haproxy" >&2
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq haproxy >/dev/null
fi
# Debian's Chromium, for the test that renders the migration client's HTML report (puppeteer-core drives it;
# no browser download).
if [ -z "${SKIP_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then
  echo "[setup] installing chromium" >&2
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
if [ -z "${SKIP_FERRETDB:-}" ]; then bash scripts/ensure-ferretdb.sh; fi
# PostgreSQL, for FerretDB's PostgreSQL backend: the scaled leg's database and the sidecar test's.
if [ -z "${SKIP_POSTGRES:-}" ]; then bash scripts/ensure-postgres.sh; fi
