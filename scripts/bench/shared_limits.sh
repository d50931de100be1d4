#!/usr/bin/env bash
# What a shared rate-limit decision costs: the same gateway, the same key
# and limit (far above the offered load, so nothing is refused), with its
# buckets local and in a Redis on 127.0.0.1 ([rate_limit_store]), each
# loaded by `wrk -t1 -c64` for DURATION seconds, interleaved ROUNDS times.
# Prints wrk's p50 and p99 for each run and the store's own decision
# histogram. Everything listens on 127.0.0.1.
#
# Usage: scripts/bench/shared_limits.sh [DURATION] [ROUNDS]   (default 10 2)
# Needs wrk and redis-server (scripts/setup.sh) and a release build
# (TENSORGATE_BIN, default target/release/tensorgate).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$HERE/common.sh"
BIN="${TENSORGATE_BIN:-$HERE/../../target/release/tensorgate}"
DURATION="${1:-10}"
ROUNDS="${2:-2}"
[ -x "$BIN" ] || bench_die "no $BIN (cargo build --release)"
command -v wrk >/dev/null || bench_die "no wrk (scripts/setup.sh)"
command -v redis-server >/dev/null || bench_die "no redis-server (scripts/setup.sh)"

DIR="$(mktemp -d)"
trap 'stop_all; rm -rf "$DIR"' EXIT
KEY="bench-key-0123456789abcdef"
printf 'bench:%s\n' "$KEY" >"$DIR/keys"

redis_port=$(free_port)
start_bg "$DIR/redis.log" redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR"
wait_port "$redis_port" || bench_die "redis did not start"
backend_port=$(free_port)
start_bg "$DIR/backend.log" "$BIN" demo-backend --listen "127.0.0.1:$backend_port"
wait_port "$backend_port" || bench_die "demo backend did not start"

# gateway NAME STORE_TOML: starts a gateway; sets GW_PORT and GW_ADMIN.
gateway() {
  GW_PORT=$(free_port)
  GW_ADMIN=$(free_port)
  cat >"$DIR/$1.toml" <<TOML
[server]
listen = "127.0.0.1:$GW_PORT"
admin_listen = "127.0.0.1:$GW_ADMIN"
$2
[backends.demo]
url = "http://127.0.0.1:$backend_port"

[[routes]]
name = "all"
default = true
backend = "demo"
[routes.auth]
keys_file = "$DIR/keys"
[routes.rate_limit]
requests_per_second = 10000000
[routes.rate_limit.per_key]
requests_per_second = 10000000
TOML
  start_bg "$DIR/$1.log" "$BIN" serve --config "$DIR/$1.toml"
  wait_port "$GW_PORT" || bench_die "gateway $1 did not start"
}

gateway local ""
local_port=$GW_PORT
gateway shared "[rate_limit_store]
url = \"redis://127.0.0.1:$redis_port\""
shared_port=$GW_PORT
shared_admin=$GW_ADMIN

run() {
  wrk -t1 -c64 -d"${DURATION}s" --latency -H "x-api-key: $KEY" \
    "http://127.0.0.1:$2/v2/health/ready" >"$DIR/wrk.txt"
  local p50 p99 rps non2xx
  p50=$(awk '$1=="50%"{print $2}' "$DIR/wrk.txt")
  p99=$(awk '$1=="99%"{print $2}' "$DIR/wrk.txt")
  rps=$(awk '/Requests\/sec/{print $2}' "$DIR/wrk.txt")
  non2xx=$(awk '/Non-2xx/{print $NF}' "$DIR/wrk.txt")
  printf '%-7s p50 %-9s p99 %-9s %s req/s%s\n' "$1" "$p50" "$p99" "$rps" "${non2xx:+, $non2xx non-2xx}"
}

# Warm both (connections, the script loaded).
wrk -t1 -c64 -d2s -H "x-api-key: $KEY" "http://127.0.0.1:$local_port/v2/health/ready" >/dev/null
wrk -t1 -c64 -d2s -H "x-api-key: $KEY" "http://127.0.0.1:$shared_port/v2/health/ready" >/dev/null
for _ in $(seq 1 "$ROUNDS"); do
  run local "$local_port"
  run shared "$shared_port"
done
echo "store decisions (tensorgate_rate_limit_store_decision_seconds, shared gateway):"
curl -s "http://127.0.0.1:$shared_admin/metrics" | grep -E '^tensorgate_rate_limit_store_(decision_seconds_(bucket|count|sum)|errors_total|up)' |
  grep -E 'le="(0.0001|0.00025|0.0005|0.001|0.0025|0.005)"|_count|_sum|errors|_up'
