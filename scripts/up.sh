#!/usr/bin/env bash
# Brings the service up on this machine: installs what is missing, starts MongoDB-compatible storage
# (FerretDB) and Redis when they are not reachable, builds, starts the `web` and `worker` processes in the
# background, seeds the demo organisation / supplier DEMO / team Migrations, and prints how to get a token.
# Stop everything with scripts/down.sh. Logs: .data/logs/.
# `up.sh --scaled` brings up the scaled topology instead (Redis Cluster, PostgreSQL with one FerretDB per pod,
# 2 webs and 2 workers behind HAProxy): see scripts/scaled.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--scaled" ]; then exec bash scripts/scaled.sh up; fi
source scripts/ensure-node.sh
mkdir -p .data/logs .data/pids

export PORT="${PORT:-3000}"
export MONGO_URL="${MONGO_URL:-mongodb://127.0.0.1:27017/account_migration}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_port() { for _ in $(seq 1 100); do port_open "$1" "$2" && return 0; sleep 0.1; done; echo "nothing listens on $1:$2" >&2; exit 1; }
hostport() { sed -E 's#^[a-z]+://([^/@]*@)?([^/:]+):?([0-9]*).*#\2 \3#' <<<"$1"; }

read -r MHOST MPORT <<<"$(hostport "$MONGO_URL")"; MPORT="${MPORT:-27017}"
read -r RHOST RPORT <<<"$(hostport "$REDIS_URL")"; RPORT="${RPORT:-6379}"

# Only install what this run will start itself.
# shellcheck disable=SC2015 # `open && echo 1 || true`: 1 when open, nothing otherwise
SKIP_FERRETDB="$(port_open "$MHOST" "$MPORT" && echo 1 || true)" \
SKIP_REDIS="$(port_open "$RHOST" "$RPORT" && echo 1 || true)" SKIP_HAPROXY=1 \
  bash scripts/ensure-deps.sh

if ! port_open "$MHOST" "$MPORT"; then
  echo "[up] starting FerretDB (SQLite backend) on $MHOST:$MPORT"
  mkdir -p .data/ferretdb
  # WAL with synchronous=NORMAL: a commit survives a crash of FerretDB or the service, and only an OS crash
  # or power loss can drop the last few (MongoDB's default journaling has the same window, ~100 ms).
  # GOGC=400: FerretDB's garbage collector runs a quarter as often (about 15% less of its CPU, ~25 MB more
  # memory; see docs/benchmarks.md). FERRETDB_GOGC overrides it.
  GOGC="${FERRETDB_GOGC:-400}" nohup .tools/bin/ferretdb --handler=sqlite --sqlite-url='file:.data/ferretdb/?_pragma=synchronous(normal)' \
    --state-dir=.data/ferretdb \
    --listen-addr="$MHOST:$MPORT" --debug-addr=- --telemetry=disable --log-level=WARN \
    >.data/logs/ferretdb.log 2>&1 &
  echo $! >.data/pids/ferretdb.pid
  wait_port "$MHOST" "$MPORT"
fi
if ! port_open "$RHOST" "$RPORT"; then
  echo "[up] starting redis-server on $RHOST:$RPORT"
  redis-server --port "$RPORT" --bind "$RHOST" --save "" --appendonly no --daemonize yes \
    --pidfile "$PWD/.data/pids/redis.pid" --logfile "$PWD/.data/logs/redis.log"
  wait_port "$RHOST" "$RPORT"
fi

# Secrets are generated once per checkout and kept out of git.
if [ ! -f .data/secrets.env ]; then
  {
    echo "JWT_SECRET=$(node -e 'console.log(require("crypto").randomBytes(32).toString("base64url"))')"
    echo "API_KEY_HASH_SECRET=$(node -e 'console.log(require("crypto").randomBytes(32).toString("base64url"))')"
    echo "OPERATOR_PASSWORD=$(node -e 'console.log(require("crypto").randomBytes(12).toString("base64url"))')"
  } >.data/secrets.env
fi
set -a; source .data/secrets.env; [ -f .env ] && source .env; set +a
# A local demo: the simulated payment vendor is on next to Stripe (a deployment enables only what it lists).
export PAYMENT_VENDORS="${PAYMENT_VENDORS:-STRIPE,SIMULATED}"
# ... and webhook endpoints on this machine (http://127.0.0.1:...) may be subscribed, for trying webhooks out.
export WEBHOOK_ALLOW_PRIVATE="${WEBHOOK_ALLOW_PRIVATE:-true}"

npm run --silent build >/dev/null || { echo "[up] build failed: npm run build" >&2; exit 1; }
bash scripts/down.sh --apps-only >/dev/null 2>&1 || true
nohup node dist/api/server.js >>.data/logs/web.log 2>&1 &
echo $! >.data/pids/web.pid
nohup node dist/workers/index.js >>.data/logs/worker.log 2>&1 &
echo $! >.data/pids/worker.pid

for _ in $(seq 1 150); do
  curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null || { echo "[up] the API did not become ready; see .data/logs/web.log" >&2; exit 1; }

demo="$(node dist/cli/admin/main.js demo --base-url "http://127.0.0.1:$PORT")"
node -e '
const d = JSON.parse(process.argv[1]); const port = process.argv[2];
console.log(`
Service is up: API http://127.0.0.1:${port} (docs /docs), worker running. Logs in .data/logs/, stop with scripts/down.sh.
Demo: organisation "${d.organisation}", import supplier ${d.import_supplier}, operations team "${d.operations_team}".
Payment vendors: ${d.payment_vendors.join(", ")}${d.simulated_payment_references ? ` (SIMULATED: ${d.simulated_payment_references})` : ""}.
API key (shown once): ${d.api_key}

Get a token:
  ${d.get_token}
Then call the API with:  -H "Authorization: Token <token>"
Queue dashboard: http://127.0.0.1:${port}/admin/queues  (user: operator, password: OPERATOR_PASSWORD in .data/secrets.env)`);
' "$demo" "$PORT"
