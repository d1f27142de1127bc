#!/usr/bin/env bash
# Keeps every core busy (one spinning process per core, normal priority) so the test suite can be run as on a
# loaded CI machine: `scripts/cpu-burn.sh -- ./scripts/test.sh` runs the command under the load and stops the
# burners after it; `scripts/cpu-burn.sh 600` burns for 600 s on its own. Exits with the command's status.
set -euo pipefail
cores="${BURN_CORES:-$(nproc)}"
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop EXIT
for _ in $(seq "$cores"); do
  ( while :; do :; done ) &
  pids+=("$!")
done
echo "[burn] $cores burners running (load on every core)" >&2
if [ "${1:-}" = "--" ]; then
  shift
  status=0
  "$@" || status=$?
  exit "$status"
fi
sleep "${1:-3600}"
