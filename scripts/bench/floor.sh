# shellcheck shell=bash
# hyper alone, an optional peer of scripts/bench-proxy.sh (`--peers
# ...,floor`): examples/hyper_floor.rs, the smallest reverse proxy hyper
# makes (hyper's server and its client::conn::http1, one kept backend
# connection per client connection, no access log, pool, metrics, timeouts
# or header rules), the floor under issue 25's targets for a proxy that
# keeps hyper on both sides. Run with 2 threads, beside nginx's 2 workers
# and HAProxy's 2 threads. Sourced; needs common.sh. The binary is
# TENSORGATE_FLOOR_BIN, by default the release build of the example
# (cargo build --release --example hyper_floor).

floor_bin() {
  echo "${TENSORGATE_FLOOR_BIN:-target/release/examples/hyper_floor}"
}

# start_floor DIR BACKEND_PORT: sets PEER_PORT and PEER_PID.
start_floor() {
  local dir=$1
  PEER_PORT=$(free_port)
  start_bg "$dir/stderr.log" "$(floor_bin)" --backend "http://127.0.0.1:$2" \
    --listen "127.0.0.1:$PEER_PORT" --threads 2
  # shellcheck disable=SC2034 # read by the caller
  PEER_PID=$BG_PID
  wait_port "$PEER_PORT" || bench_die "hyper_floor did not listen (log: $dir/stderr.log)"
}

# floor_version: "hyper 1.12.0" (hyper 1.x's version in Cargo.lock).
floor_version() {
  awk '/^name = "hyper"$/ { getline; gsub(/"/, "", $3); if ($3 ~ /^1\./) { print "hyper " $3; exit } }' Cargo.lock
}
