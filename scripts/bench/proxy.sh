# shellcheck shell=bash
# Comparison 1 of scripts/bench-proxy.sh: wrk against the demo backend
# directly, through each reference proxy (PEERS: nginx, haproxy, caddy) and
# through tensorgate, alternating. Sourced; uses the caller's WORK, BIN,
# DURATION, ROUNDS, CONNECTIONS, PEERS and start_gateway, and the
# start_PEER functions of nginx.sh, haproxy.sh and caddy.sh. Appends one
# line per wrk run to $WORK/proxy.tsv (see report.py) and the peers'
# versions to $WORK/meta.txt. It never edits what it measures: CPU time is
# read from /proc, requests and latencies from wrk.
#
# Three cases, each timed against every target once per round:
#   passthrough  GET /v2/models/simple, wrk -t1 -cC
#   infer        the small JSON infer of infer.lua, wrk -t1 -cC
#   infer-c1     the same request sequentially, wrk -t1 -c1: what each hop
#                adds to one request's latency when nothing else waits
# Within a round the targets take turns in an order that moves by one
# every round, so no proxy always runs right after the same other one.

# check_target NAME PORT: both requests answer 200 before anything is timed.
check_target() {
  local code body
  code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/v2/models/simple") || code=000
  [ "$code" = 200 ] || bench_die "$1: GET /v2/models/simple answered $code"
  body=$(sed -n "s/^wrk.body = '\\(.*\\)'$/\\1/p" scripts/bench/infer.lua)
  code=$(curl -s --max-time 5 -o "$WORK/check-$1.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d "$body" "http://127.0.0.1:$2/v2/models/simple/infer") || code=000
  [ "$code" = 200 ] || bench_die "$1: POST /v2/models/simple/infer answered $code: $(head -c 300 "$WORK/check-$1.json")"
}

# wrk_run CASE PORT SECONDS OUTFILE
# shellcheck disable=SC2153 # CONNECTIONS is the caller's
wrk_run() {
  local connections=$CONNECTIONS
  [ "$1" != infer-c1 ] || connections=1
  local args=(-t1 "-c$connections" "-d${3}s" --latency)
  local url="http://127.0.0.1:$2/v2/models/simple"
  if [ "$1" != passthrough ]; then
    args+=(-s scripts/bench/infer.lua)
    url="http://127.0.0.1:$2"
  fi
  timeout --kill-after=5 "$(($3 + 30))" wrk "${args[@]}" "$url" >"$4" 2>&1 ||
    bench_die "wrk against $url failed: $(tail -3 "$4")"
}

# measure CASE TARGET PORT ROUND [PROXY_PID]: one timed wrk run, one line.
# The proxy's CPU time is that of PROXY_PID and all its descendants (nginx's
# workers), read just before and just after the run.
measure() {
  local case=$1 target=$2 port=$3 round=$4 pid=${5:-} proxy_pids=() b0 b1 p0="" p1="" load parsed
  local rps p50 p99 requests errors
  [ -z "$pid" ] || mapfile -t proxy_pids < <(tree_pids "$pid")
  load=$(loadavg)
  b0=$(cpu_ticks "$DEMO_PID")
  [ -z "$pid" ] || p0=$(cpu_ticks "${proxy_pids[@]}")
  wrk_run "$case" "$port" "$DURATION" "$WORK/wrk.out"
  b1=$(cpu_ticks "$DEMO_PID")
  [ -z "$pid" ] || p1=$(cpu_ticks "${proxy_pids[@]}")
  if [ -n "$pid" ] && [ "$(tree_pids "$pid" | tr '\n' ' ')" != "${proxy_pids[*]} " ]; then
    bench_log "warning: $target's processes changed during round $round ($case): its CPU time is incomplete"
  fi
  parsed=$(wrk_parse "$WORK/wrk.out") || bench_die "could not read wrk's output: $(cat "$WORK/wrk.out")"
  read -r rps p50 p99 requests errors <<<"$parsed"
  [ "$errors" = 0 ] || bench_log "warning: $case/$target round $round: $errors errors"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$target" "$round" "$rps" "$p50" "$p99" \
    "$requests" "$errors" "$((b1 - b0))" "${p1:+$((p1 - p0))}" "$load" >>"$WORK/proxy.tsv"
  bench_log "round $round $case $target: $rps requests/s, p50 $p50 ms, p99 $p99 ms (load $load)"
}

run_proxy() {
  local demo_port round case peer i n t
  local -A port pid
  local targets=(direct)
  demo_port=$(free_port)
  start_bg "$WORK/demo.log" "$BIN" demo-backend --listen "127.0.0.1:$demo_port"
  DEMO_PID=$BG_PID
  wait_port "$demo_port" || bench_die "demo backend did not listen (log: $WORK/demo.log)"
  port[direct]=$demo_port

  for peer in ${PEERS//,/ }; do
    mkdir -p "$WORK/$peer"
    "start_$peer" "$WORK/$peer" "$demo_port"
    port[$peer]=$PEER_PORT
    pid[$peer]=$PEER_PID
    targets+=("$peer")
    echo "version_$peer=$("${peer}_version")" >>"$WORK/meta.txt"
  done
  start_gateway "http://127.0.0.1:$demo_port"
  port[tensorgate]=$GW_PORT
  pid[tensorgate]=$GW_PID
  targets+=(tensorgate)
  echo "targets=${targets[*]}" >>"$WORK/meta.txt"

  for t in "${targets[@]}"; do
    check_target "$t" "${port[$t]}"
    bench_log "proxy: $t on :${port[$t]}${pid[$t]:+ (pid ${pid[$t]})}"
  done
  for case in passthrough infer; do # warm-up: connection pools, page cache
    for t in "${targets[@]}"; do
      wrk_run "$case" "${port[$t]}" 1 "$WORK/warmup.out"
    done
  done
  n=${#targets[@]}
  for round in $(seq 1 "$ROUNDS"); do
    for case in passthrough infer infer-c1; do
      for i in $(seq 0 $((n - 1))); do
        t=${targets[$(((i + round - 1) % n))]}
        measure "$case" "$t" "${port[$t]}" "$round" "${pid[$t]:-}"
      done
    done
  done
  stop_all
}
