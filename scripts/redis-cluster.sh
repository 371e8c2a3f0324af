#!/usr/bin/env bash
# A local 3-master Redis Cluster on loopback, for tests and CI (issue 11 §4). Not for production: no replicas,
# no persistence.
#
#   scripts/redis-cluster.sh start  [BASE_PORT]   start nodes BASE_PORT..BASE_PORT+2, create the cluster, wait for
#                                                 cluster_state:ok, print its REDIS_URL (redis+cluster://…)
#   scripts/redis-cluster.sh stop   [BASE_PORT]   shut the nodes down and remove their directory
#   scripts/redis-cluster.sh status [BASE_PORT]   cluster_state of each node; exit 1 unless all say ok
#
# BASE_PORT defaults to 7100. Each node also listens on its cluster bus port, BASE_PORT+10000 and up. Node
# directories live under $REDIS_CLUSTER_DIR (default: ${TMPDIR:-/tmp}/switchyard-redis-cluster-BASE_PORT).
# `start` on a cluster that is already up and ok only prints its URL. Needs redis-server and redis-cli (>= 7.0).
set -euo pipefail

command="${1:-}"
base="${2:-7100}"
nodes=3
dir="${REDIS_CLUSTER_DIR:-${TMPDIR:-/tmp}/switchyard-redis-cluster-$base}"

ports() { for ((i = 0; i < nodes; i++)); do echo $((base + i)); done; }
cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
url() {
  local list=()
  for port in $(ports); do list+=("127.0.0.1:$port"); done
  (IFS=,; echo "redis+cluster://${list[*]}")
}
state_ok() { cli "$1" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_state:ok'; }
all_ok() {
  for port in $(ports); do state_ok "$port" || return 1; done
}

case "$command" in
  start)
    for tool in redis-server redis-cli; do
      command -v "$tool" >/dev/null || { echo "redis-cluster: $tool not found (apt-get install redis-server)" >&2; exit 127; }
    done
    if all_ok; then url; exit 0; fi
    for port in $(ports); do
      if cli "$port" ping >/dev/null 2>&1; then
        echo "redis-cluster: port $port already answers but the cluster is not ok; run '$0 stop $base' first" >&2
        exit 1
      fi
      mkdir -p "$dir/$port"
      redis-server --port "$port" --bind 127.0.0.1 --daemonize yes \
        --dir "$dir/$port" --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log" \
        --cluster-enabled yes --cluster-config-file "$dir/$port/nodes.conf" --cluster-node-timeout 5000 \
        --save "" --appendonly no --maxmemory-policy noeviction
    done
    for port in $(ports); do
      for _ in $(seq 1 100); do cli "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
      cli "$port" ping >/dev/null || { echo "redis-cluster: node $port did not start; see $dir/$port/redis.log" >&2; exit 1; }
    done
    addresses=()
    for port in $(ports); do addresses+=("127.0.0.1:$port"); done
    redis-cli --cluster create "${addresses[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 || {
      cat "$dir/create.log" >&2
      exit 1
    }
    for _ in $(seq 1 300); do all_ok && break; sleep 0.1; done
    all_ok || { echo "redis-cluster: cluster_state is not ok after 30 s" >&2; for port in $(ports); do cli "$port" cluster info >&2 || true; done; exit 1; }
    url
    ;;
  stop)
    for port in $(ports); do
      cli "$port" shutdown nosave >/dev/null 2>&1 || true
      pidfile="$dir/$port/redis.pid"
      if [ -f "$pidfile" ]; then
        pid="$(cat "$pidfile")"
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
      fi
    done
    rm -rf "$dir"
    ;;
  status)
    status=0
    for port in $(ports); do
      state="$(cli "$port" cluster info 2>/dev/null | tr -d '\r' | grep '^cluster_state:' || echo 'cluster_state:down')"
      echo "127.0.0.1:$port $state"
      [ "$state" = "cluster_state:ok" ] || status=1
    done
    [ "$status" = 0 ] && url
    exit "$status"
    ;;
  *)
    echo "usage: $0 start|stop|status [BASE_PORT]" >&2
    exit 2
    ;;
esac
