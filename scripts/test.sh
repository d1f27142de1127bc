#!/usr/bin/env bash
# Runs the whole test suite against real services. Installs what is missing first (Node 24, npm packages,
# FerretDB, redis-server). Uses MONGO_URL / REDIS_URL when set; otherwise the test setup starts its own
# FerretDB and redis-server (or containers, where a container runtime runs) and stops them afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
SKIP_FERRETDB="${MONGO_URL:+1}" SKIP_REDIS="${REDIS_URL:+1}" bash scripts/ensure-deps.sh
npx vitest run "$@"
