#!/usr/bin/env bash
# A Redis Cluster on loopback for the scaled topology and its tests: 3 masters + 3 replicas of Debian's
# redis-server (installed when absent), no persistence, state under .data/redis-cluster/<base port>.
#   scripts/redis-cluster.sh start [base port]   # ports base..base+5 (default 7100); prints the seed list
#   scripts/redis-cluster.sh stop  [base port]
#   scripts/redis-cluster.sh kill-node <port> [base port]    # SIGKILL one node (a failure, for tests)
#   scripts/redis-cluster.sh start-node <port> [base port]   # start it again; it rejoins with its saved config
#   scripts/redis-cluster.sh pause-node|resume-node <port> [base port]   # SIGSTOP / SIGCONT one node
# Idempotent: a cluster already answering `cluster_state:ok` on the base port is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
action="${1:-start}"
node=""
case "$action" in kill-node | start-node | pause-node | resume-node) node="$2"; shift ;; esac
base="${2:-${REDIS_CLUSTER_BASE_PORT:-7100}}"
dir=".data/redis-cluster/$base"
ports=()
for i in 0 1 2 3 4 5; do ports+=("$((base + i))"); done
seeds() { local s=""; for p in "${ports[@]}"; do s+="${s:+,}127.0.0.1:$p"; done; echo "$s"; }

# A replica takes over however long its link to the master was down (validity factor 0): availability first,
# the service restores from its database what the replica had not received (see the README's failover notes).
start_node() {
  redis-server --port "$1" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file "nodes-$1.conf" \
    --cluster-node-timeout 2000 --cluster-replica-validity-factor 0 --save "" --appendonly no \
    --dir "$PWD/$dir" --daemonize yes \
    --pidfile "$PWD/$dir/redis-$1.pid" --logfile "$PWD/$dir/redis-$1.log"
}

case "$action" in
  start)
    if ! command -v redis-server >/dev/null 2>&1; then
      if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
      $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
    fi
    if redis-cli -p "$base" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; then seeds; exit 0; fi
    mkdir -p "$dir"
    for p in "${ports[@]}"; do
      rm -f "$dir/nodes-$p.conf"
      start_node "$p"
    done
    for p in "${ports[@]}"; do
      for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
      if ! redis-cli -p "$p" ping >/dev/null 2>&1; then
        echo "[redis-cluster] the node on $p did not start: $(tail -n 1 "$dir/redis-$p.log" 2>/dev/null)" >&2
        exit 1
      fi
    done
    addrs=(); for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
    if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1; then
      echo "[redis-cluster] creating the cluster on $base failed: $(tail -n 2 "$dir/create.log")" >&2
      exit 1
    fi
    # Ready once the slots are covered and every replica follows its master (a failover needs them).
    for _ in $(seq 300); do
      if redis-cli -p "$base" cluster info 2>/dev/null | grep -q 'cluster_state:ok' &&
        [ "$(redis-cli -p "$base" cluster nodes 2>/dev/null | grep -c ' slave ')" -eq 3 ]; then
        seeds
        exit 0
      fi
      sleep 0.1
    done
    echo "[redis-cluster] the cluster on $base did not reach cluster_state:ok (see $dir)" >&2
    exit 1
    ;;
  stop)
    pids=()
    for p in "${ports[@]}"; do
      if [ -f "$dir/redis-$p.pid" ]; then pids+=("$(cat "$dir/redis-$p.pid")"); fi
    done
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    rm -rf "$dir"
    ;;
  kill-node)
    pid="$(cat "$dir/redis-$node.pid")"
    kill -9 "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    ;;
  pause-node) kill -STOP "$(cat "$dir/redis-$node.pid")" ;;
  resume-node) kill -CONT "$(cat "$dir/redis-$node.pid")" ;;
  start-node)
    start_node "$node"
    for _ in $(seq 100); do redis-cli -p "$node" ping >/dev/null 2>&1 && break; sleep 0.1; done
    ;;
  seeds) seeds ;;
  *)
    echo "usage: $0 start|stop|seeds [base port] | kill-node|start-node|pause-node|resume-node <port> [base port]" >&2
    exit 2
    ;;
esac
