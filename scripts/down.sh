#!/usr/bin/env bash
# Stops what scripts/up.sh started (web, worker and, unless --apps-only, FerretDB and Redis).
cd "$(dirname "$0")/.."
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
