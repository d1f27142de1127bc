#!/usr/bin/env bash
# Stops what scripts/up.sh started (web, worker and, unless --apps-only, FerretDB and Redis), and what
# `up.sh --scaled` started (scripts/scaled.sh down; SCALED_DIR names another scaled topology's directory).
#   scripts/down.sh               # both
#   scripts/down.sh --apps-only   # the plain topology's web and worker only (up.sh uses it to restart them)
#   scripts/down.sh --scaled      # the scaled topology only
cd "$(dirname "$0")/.." || exit 1
if [ "${1:-}" = "--scaled" ]; then exec bash scripts/scaled.sh down; fi
names="web worker"
[ "${1:-}" = "--apps-only" ] || names="$names ferretdb redis"
for name in $names; do
  pidfile=".data/pids/$name.pid"
  [ -f "$pidfile" ] || continue
  pid="$(cat "$pidfile")"
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    echo "stopped $name ($pid)"
  fi
  rm -f "$pidfile"
done
[ "${1:-}" = "--apps-only" ] || bash scripts/scaled.sh down
