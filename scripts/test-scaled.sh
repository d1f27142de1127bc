#!/usr/bin/env bash
# The scaled topology's test leg (the second leg of .ci/run): the whole suite with FerretDB on its PostgreSQL
# backend (a fresh database, dropped afterwards) and every Redis client of the service a Redis Cluster client
# (3 masters + 3 replicas, started and stopped by the test setup). The failover test (a master SIGKILLed under
# load) and the pod failures test (a web process and a FerretDB sidecar SIGKILLed) are part of it. Installs what
# is missing first (scripts/ensure-deps.sh, PostgreSQL included).
#   ./scripts/test-scaled.sh                 # the whole suite
#   ./scripts/test-scaled.sh test/v2         # some files or vitest options, on the same topology
# TEST_REDIS_CLUSTER_PORT fixes the cluster's base port (ports base..base+5 and their bus ports, 10,000
# above), TEST_FERRETDB_PORT FerretDB's, TEST_POSTGRES_URL the PostgreSQL server.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
bash scripts/ensure-deps.sh
TEST_DATABASE=postgresql TEST_REDIS=cluster npx vitest run "$@"
