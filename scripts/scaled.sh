#!/usr/bin/env bash
# The scaled topology on one machine, for people and for tests (`scripts/up.sh --scaled` runs `scaled.sh up`,
# `scripts/down.sh` runs `scaled.sh down`):
#   - a Redis Cluster of 3 masters + 3 replicas (scripts/redis-cluster.sh);
#   - PostgreSQL with one FerretDB per pod: web-1, web-2, worker-1 and worker-2 each have a FerretDB process of
#     their own on a port of its own, all on one PostgreSQL database of the project's own;
#   - 2 web and 2 worker processes;
#   - HAProxy in front of the webs (deploy/haproxy.cfg): health checks on /readyz, X-Request-Id passed through.
# What is missing is installed from Debian's packages (redis-server, haproxy, postgresql) and npm, as up.sh does.
# A PostgreSQL that already listens on SCALED_PG_HOST:SCALED_PG_PORT is used (its database is created when
# missing); otherwise one is started here, with its data under SCALED_DIR. `up` seeds the demo data and prints
# the load balancer's URL and how to get a token.
#
#   scripts/scaled.sh up     # (re)starts the pods and the load balancer; a running cluster and PostgreSQL stay
#   scripts/scaled.sh down   # stops all that `up` started (the data in PostgreSQL stays)
#
# Settings (environment), with their defaults:
#   SCALED_LB_PORT=3000               the load balancer: http://127.0.0.1:3000
#   SCALED_WEB_BASE_PORT=3001         web-1, web-2 on 3001, 3002
#   SCALED_FERRETDB_BASE_PORT=27018   the FerretDB of web-1, web-2, worker-1, worker-2 on 27018 … 27021
#   REDIS_CLUSTER_BASE_PORT=7100      the Redis Cluster on 7100 … 7105 (cluster bus 17100 … 17105)
#   SCALED_PG_HOST=127.0.0.1  SCALED_PG_PORT=5432  SCALED_PG_USER=postgres  SCALED_PG_PASSWORD=(none)
#   SCALED_PG_DATABASE=account_migration
#   SCALED_FERRETDB_POOL=(max_connections - 10) / 4   PostgreSQL connections each FerretDB may open
#   SCALED_DIR=.data/scaled           pids, logs, generated settings, FerretDB state, PostgreSQL's data if started here
set -euo pipefail
cd "$(dirname "$0")/.."
action="${1:-}"

LB_PORT="${SCALED_LB_PORT:-3000}"
WEB_BASE="${SCALED_WEB_BASE_PORT:-3001}"
FERRET_BASE="${SCALED_FERRETDB_BASE_PORT:-27018}"
REDIS_BASE="${REDIS_CLUSTER_BASE_PORT:-7100}"
PG_HOST="${SCALED_PG_HOST:-127.0.0.1}"
PG_PORT="${SCALED_PG_PORT:-5432}"
PG_USER="${SCALED_PG_USER:-postgres}"
PG_PASSWORD="${SCALED_PG_PASSWORD:-}"
PG_DATABASE="${SCALED_PG_DATABASE:-account_migration}"
DIR="$(realpath -m "${SCALED_DIR:-.data/scaled}")"
# The MongoDB-level database every pod uses (a PostgreSQL schema inside PG_DATABASE).
MONGO_DB="account_migration"

pods=(web-1 web-2 worker-1 worker-2)
# A pod's ports: its web port (webs only) and its FerretDB's.
web_port() { echo "$((WEB_BASE + ${1#web-} - 1))"; }
ferret_port() {
  local i
  for i in "${!pods[@]}"; do if [ "${pods[$i]}" = "$1" ]; then echo "$((FERRET_BASE + i))"; fi; done
}

log() { echo "[scaled +${SECONDS}s] $*" >&2; }
fail() {
  echo "[scaled] $*" >&2
  [ "$action" != up ] || echo "[scaled] what did start keeps running: scripts/down.sh stops it" >&2
  exit 1
}
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  log "installing $* (Debian packages)"
  as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

# The process in a pid file, if it is still the one that was started (a pid can be reused by another process
# after a reboot: that one is left alone).
running_pid() {
  local file="$DIR/pids/$1.pid" pid
  [ -f "$file" ] || return 1
  pid="$(cat "$file")"
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2" && echo "$pid"
}
# What each name's command line contains.
signature() {
  case "$1" in
    lb) echo haproxy ;;
    web-*) echo dist/api/server.js ;;
    worker-*) echo dist/workers/index.js ;;
    ferretdb-*) echo ferretdb ;;
  esac
}
# Running: there, and not a zombie waiting for its parent to read its exit status.
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]; }
stop_one() {
  local name="$1" pid
  if pid="$(running_pid "$name" "$(signature "$name")")"; then
    kill "$pid" 2>/dev/null || true
    # A web drains for up to 10 s and a worker closes its jobs for up to 30 s before it exits on its own.
    for _ in $(seq 1 400); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
    echo "stopped $name ($pid)"
  fi
  rm -f "$DIR/pids/$name.pid"
}

# The load balancer first (no new requests), then the webs and the workers, then their FerretDBs.
stop_apps() {
  local name
  stop_one lb
  for name in "${pods[@]}"; do stop_one "$name" & done
  wait
  for name in "${pods[@]}"; do stop_one "ferretdb-$name" & done
  wait
}

pg_bin() { find /usr/lib/postgresql -maxdepth 3 -path '*/bin/initdb' 2>/dev/null | sort -V | tail -1 | xargs -r dirname; }
# PostgreSQL refuses to run as root: a cluster started here runs as the postgres user when this runs as root.
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

down() {
  [ -d "$DIR/pids" ] || return 0
  stop_apps
  if [ -f "$DIR/redis-cluster.started" ]; then
    bash scripts/redis-cluster.sh stop "$(cat "$DIR/redis-cluster.started")"
    echo "stopped the Redis Cluster on $(cat "$DIR/redis-cluster.started")"
    rm -f "$DIR/redis-cluster.started"
  fi
  if [ -f "$DIR/postgres.started" ]; then
    as_pg "$(cat "$DIR/postgres.started")/pg_ctl" -D "$DIR/postgres" -m fast -w stop >/dev/null
    echo "stopped PostgreSQL ($DIR/postgres)"
    rm -f "$DIR/postgres.started"
  fi
}

# PostgreSQL: the one listening on the port, else one of our own (installed from Debian when absent).
ensure_postgres() {
  if ! port_open "$PG_HOST" "$PG_PORT"; then
    case "$PG_HOST" in 127.* | localhost) ;; *) fail "no PostgreSQL answers on $PG_HOST:$PG_PORT" ;; esac
    if [ -z "$(pg_bin)" ]; then
      apt_install postgresql
      # On a machine whose services start on installation, Debian's own cluster may now be the one listening.
    fi
  fi
  if ! port_open "$PG_HOST" "$PG_PORT"; then
    local bin
    bin="$(pg_bin)"
    [ -n "$bin" ] || fail "PostgreSQL's server programs were not found under /usr/lib/postgresql"
    if [ ! -f "$DIR/postgres/PG_VERSION" ]; then
      log "creating a PostgreSQL cluster in $DIR/postgres"
      mkdir -p "$DIR/postgres"
      if [ "$(id -u)" -eq 0 ]; then chown postgres: "$DIR/postgres"; fi
      # Trust on loopback only: a local demo and test cluster, reachable from this machine alone.
      as_pg "$bin/initdb" -D "$DIR/postgres" -U "$PG_USER" --auth=trust -E UTF8 --locale=C >"$DIR/logs/postgres-initdb.log"
    fi
    touch "$DIR/logs/postgres.log"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$DIR/logs/postgres.log"; fi
    log "starting PostgreSQL on $PG_HOST:$PG_PORT"
    as_pg "$bin/pg_ctl" -D "$DIR/postgres" -l "$DIR/logs/postgres.log" -w -t 120 \
      -o "-p $PG_PORT -c listen_addresses=$PG_HOST -c unix_socket_directories=''" start >/dev/null
    echo "$bin" >"$DIR/postgres.started"
  fi
  if ! command -v psql >/dev/null 2>&1; then apt_install postgresql-client; fi
  [[ "$PG_DATABASE" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || fail "SCALED_PG_DATABASE must be a plain identifier"
  export PGPASSWORD="$PG_PASSWORD"
  local exists
  exists="$(psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$PG_DATABASE'")" || fail "cannot query PostgreSQL on $PG_HOST:$PG_PORT as $PG_USER"
  if [ "$exists" != 1 ]; then
    log "creating the PostgreSQL database $PG_DATABASE"
    createdb -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" "$PG_DATABASE"
  fi
}

start_ferretdb() {
  local pod="$1" port
  port="$(ferret_port "$pod")"
  mkdir -p "$DIR/ferretdb/$pod"
  # GOGC as scripts/up.sh runs FerretDB (FERRETDB_GOGC overrides it).
  GOGC="${FERRETDB_GOGC:-400}" nohup .tools/bin/ferretdb --handler=postgresql --postgresql-url="$PG_URL" \
    --state-dir="$DIR/ferretdb/$pod" --listen-addr="127.0.0.1:$port" --debug-addr=- \
    --telemetry=disable --log-level=WARN >>"$DIR/logs/ferretdb-$pod.log" 2>&1 </dev/null &
  echo $! >"$DIR/pids/ferretdb-$pod.pid"
}

# Waits until `check` succeeds; fails naming what it waited for (and the log to read) when `pid` died first
# or the bound (seconds) passed. Bounds are generous: the machine may be busy.
wait_for() {
  local what="$1" logfile="$2" pid="$3" bound="$4"
  shift 4
  local deadline=$((SECONDS + bound))
  until "$@" >/dev/null 2>&1; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$logfile" >&2 || true
      fail "$what: the process exited (see $logfile)"
    fi
    [ "$SECONDS" -lt "$deadline" ] || fail "$what: not after ${bound} s (see $logfile)"
    sleep 0.2
  done
}

up() {
  local started=$SECONDS name pod port
  source scripts/ensure-node.sh
  mkdir -p "$DIR/logs" "$DIR/pids" "$DIR/ferretdb"
  # The pods and the load balancer of an earlier run of this directory make way (their data stays).
  stop_apps >/dev/null

  local busy=() ports=("$LB_PORT")
  ports+=("$(web_port web-1)" "$(web_port web-2)")
  for pod in "${pods[@]}"; do ports+=("$(ferret_port "$pod")"); done
  for port in "${ports[@]}"; do if port_open 127.0.0.1 "$port"; then busy+=("$port"); fi; done
  [ "${#busy[@]}" -eq 0 ] || fail "ports in use: ${busy[*]} (another topology? scripts/down.sh stops this checkout's)"

  # npm packages, redis-server, haproxy, FerretDB.
  SKIP_CHROMIUM=1 bash scripts/ensure-deps.sh
  ensure_postgres
  # Each FerretDB opens up to pool_max_conns PostgreSQL connections (50 unless told): the 4 sidecars share the
  # server's max_connections, 10 kept for others (psql, another topology's init). SCALED_FERRETDB_POOL overrides.
  local max_conns pool
  max_conns="$(psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -tAc 'SHOW max_connections')"
  pool="${SCALED_FERRETDB_POOL:-$(((max_conns - 10) / ${#pods[@]}))}"
  [ "$pool" -ge 5 ] || fail "PostgreSQL's max_connections ($max_conns) leaves $pool connections per FerretDB: raise it"
  # Fewer commands in flight per pod than its FerretDB has connections: a stock FerretDB v1 update holds one
  # PostgreSQL connection while it waits for another, so as many updates as connections deadlock it (the
  # project's build writes an update's documents after closing their read; findAndModify still holds two).
  export MONGO_MAX_POOL_SIZE="${MONGO_MAX_POOL_SIZE:-$((pool - 2))}"
  PG_URL="postgres://$PG_USER${PG_PASSWORD:+:$PG_PASSWORD}@$PG_HOST:$PG_PORT/$PG_DATABASE?pool_max_conns=$pool"

  log "building"
  npm run --silent build >/dev/null || fail "build failed: npm run build"

  if redis-cli -p "$REDIS_BASE" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; then
    log "using the Redis Cluster on $REDIS_BASE"
  else
    log "starting a Redis Cluster on $REDIS_BASE-$((REDIS_BASE + 5))"
    bash scripts/redis-cluster.sh start "$REDIS_BASE" >/dev/null || fail "the Redis Cluster on $REDIS_BASE did not start (above)"
    echo "$REDIS_BASE" >"$DIR/redis-cluster.started"
  fi
  local seeds
  seeds="$(bash scripts/redis-cluster.sh seeds "$REDIS_BASE")"

  # Secrets are generated once per checkout and kept out of git (shared with scripts/up.sh).
  mkdir -p .data
  if [ ! -f .data/secrets.env ]; then
    {
      echo "JWT_SECRET=$(node -e 'console.log(require("crypto").randomBytes(32).toString("base64url"))')"
      echo "API_KEY_HASH_SECRET=$(node -e 'console.log(require("crypto").randomBytes(32).toString("base64url"))')"
      echo "OPERATOR_PASSWORD=$(node -e 'console.log(require("crypto").randomBytes(12).toString("base64url"))')"
    } >.data/secrets.env
  fi
  set -a
  source .data/secrets.env
  if [ -f .env ]; then source .env; fi
  set +a
  export PAYMENT_VENDORS="${PAYMENT_VENDORS:-STRIPE,SIMULATED}" WEBHOOK_ALLOW_PRIVATE="${WEBHOOK_ALLOW_PRIVATE:-true}"
  export REDIS_CLUSTER_NODES="$seeds"

  # FerretDB v1 reads the list of collections and indexes from PostgreSQL once, at its first request, and
  # never again: a collection another FerretDB creates afterwards stays unknown to it (it reads nothing there
  # and fails to write). So the schema is created first, through web-1's FerretDB, and only then do the other
  # FerretDBs start. (Each process creating the schema at boot is then a no-op.)
  start_ferretdb web-1
  port="$(ferret_port web-1)"
  wait_for "FerretDB of web-1" "$DIR/logs/ferretdb-web-1.log" "$(cat "$DIR/pids/ferretdb-web-1.pid")" 60 port_open 127.0.0.1 "$port"
  log "creating the schema (import-admin db init)"
  MONGO_URL="mongodb://127.0.0.1:$port/$MONGO_DB" node dist/cli/admin/main.js db init >"$DIR/logs/db-init.log" ||
    fail "import-admin db init failed (see $DIR/logs/db-init.log)"
  for pod in web-2 worker-1 worker-2; do start_ferretdb "$pod"; done
  for pod in web-2 worker-1 worker-2; do
    wait_for "FerretDB of $pod" "$DIR/logs/ferretdb-$pod.log" "$(cat "$DIR/pids/ferretdb-$pod.pid")" 60 \
      port_open 127.0.0.1 "$(ferret_port "$pod")"
  done

  log "starting web-1, web-2, worker-1, worker-2"
  local offsets=()
  for pod in "${pods[@]}"; do
    offsets+=("$(stat -c %s "$DIR/logs/$pod.log" 2>/dev/null || echo 0)")
    local script=dist/workers/index.js pod_env=()
    if [[ "$pod" == web-* ]]; then
      script=dist/api/server.js
      pod_env=(PORT="$(web_port "$pod")" HOST=127.0.0.1)
    fi
    env "${pod_env[@]}" MONGO_URL="mongodb://127.0.0.1:$(ferret_port "$pod")/$MONGO_DB" \
      nohup node "$script" >>"$DIR/logs/$pod.log" 2>&1 </dev/null &
    echo $! >"$DIR/pids/$pod.pid"
  done
  for name in web-1 web-2; do
    wait_for "$name /readyz" "$DIR/logs/$name.log" "$(cat "$DIR/pids/$name.pid")" 180 \
      curl -fsS "http://127.0.0.1:$(web_port "$name")/readyz"
  done
  worker_started() { tail -c "+$(($2 + 1))" "$DIR/logs/$1.log" | grep -q '"msg":"workers started"'; }
  wait_for "worker-1" "$DIR/logs/worker-1.log" "$(cat "$DIR/pids/worker-1.pid")" 180 worker_started worker-1 "${offsets[2]}"
  wait_for "worker-2" "$DIR/logs/worker-2.log" "$(cat "$DIR/pids/worker-2.pid")" 180 worker_started worker-2 "${offsets[3]}"

  log "starting HAProxy on 127.0.0.1:$LB_PORT"
  LB_BIND="127.0.0.1:$LB_PORT" LB_WEB_1="127.0.0.1:$(web_port web-1)" LB_WEB_2="127.0.0.1:$(web_port web-2)"
  export LB_BIND LB_WEB_1 LB_WEB_2
  haproxy -c -q -f deploy/haproxy.cfg || fail "deploy/haproxy.cfg is not valid (haproxy -c -f deploy/haproxy.cfg)"
  # A new file each time: HAProxy makes its output non-blocking, which drops the append mode, so it would write
  # over an old log from its start.
  if [ -f "$DIR/logs/lb.log" ]; then mv -f "$DIR/logs/lb.log" "$DIR/logs/lb.log.1"; fi
  nohup haproxy -db -f deploy/haproxy.cfg >"$DIR/logs/lb.log" 2>&1 </dev/null &
  echo $! >"$DIR/pids/lb.pid"
  wait_for "the load balancer" "$DIR/logs/lb.log" "$(cat "$DIR/pids/lb.pid")" 60 \
    curl -fsS "http://127.0.0.1:$LB_PORT/readyz"

  # What an operator needs to run import-admin against this topology (as web-1 would: through its FerretDB).
  {
    echo "MONGO_URL=mongodb://127.0.0.1:$(ferret_port web-1)/$MONGO_DB"
    echo "REDIS_CLUSTER_NODES=$seeds"
    echo "IMPORT_BASE_URL=http://127.0.0.1:$LB_PORT"
  } >"$DIR/admin.env"
  local demo
  demo="$(MONGO_URL="mongodb://127.0.0.1:$(ferret_port web-1)/$MONGO_DB" node dist/cli/admin/main.js demo --base-url "http://127.0.0.1:$LB_PORT")"
  node -e '
const [d, lb, dir, took, pg, redis] = [JSON.parse(process.argv[1]), ...process.argv.slice(2)];
const ports = JSON.parse(process.argv[7]);
console.log(`
The scaled topology is up (${took} s): load balancer http://127.0.0.1:${lb} (docs /docs), in front of 2 webs; 2 workers.
  HAProxy         127.0.0.1:${lb}
  web-1, web-2    127.0.0.1:${ports.web.join(", ")}
  FerretDB        web-1 ${ports.ferretdb[0]}, web-2 ${ports.ferretdb[1]}, worker-1 ${ports.ferretdb[2]}, worker-2 ${ports.ferretdb[3]} (PostgreSQL backend)
  PostgreSQL      ${pg}
  Redis Cluster   ${redis}
Logs in ${dir}/logs/, stop with scripts/down.sh. import-admin: set -a; . .data/secrets.env; . ${dir}/admin.env; set +a
Demo: organisation "${d.organisation}", import supplier ${d.import_supplier}, operations team "${d.operations_team}".
Payment vendors: ${d.payment_vendors.join(", ")}${d.simulated_payment_references ? ` (SIMULATED: ${d.simulated_payment_references})` : ""}.
API key (shown once): ${d.api_key}

Get a token:
  ${d.get_token}
Then call the API with:  -H "Authorization: Token <token>"
Queue dashboard: http://127.0.0.1:${lb}/admin/queues  (user: operator, password: OPERATOR_PASSWORD in .data/secrets.env)`);
' "$demo" "$LB_PORT" "$DIR" "$((SECONDS - started))" "$PG_HOST:$PG_PORT, database $PG_DATABASE" "$seeds" \
    "{\"web\":[$(web_port web-1),$(web_port web-2)],\"ferretdb\":[$(ferret_port web-1),$(ferret_port web-2),$(ferret_port worker-1),$(ferret_port worker-2)]}"
}

case "$action" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
