# shellcheck shell=bash
# Comparison 1 of scripts/bench-proxy.sh: wrk against the demo backend
# directly, through nginx and through tensorgate, alternating. Sourced; uses
# the caller's WORK, BIN, DURATION, ROUNDS, CONNECTIONS and start_gateway.
# Appends one line per wrk run to $WORK/proxy.tsv.

# check_target NAME PORT: both cases answer 200 before anything is timed.
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
wrk_run() {
  local args=(-t1 "-c$CONNECTIONS" "-d${3}s" --latency)
  [ "$1" = passthrough ] || args+=(-s scripts/bench/infer.lua)
  local url="http://127.0.0.1:$2/v2/models/simple"
  [ "$1" = passthrough ] || url="http://127.0.0.1:$2"
  timeout --kill-after=5 "$(($3 + 30))" wrk "${args[@]}" "$url" >"$4" 2>&1 ||
    bench_die "wrk against $url failed: $(tail -3 "$4")"
}

# measure CASE TARGET PORT ROUND PROXY_PGID: one timed wrk run, one line.
measure() {
  local case=$1 target=$2 port=$3 round=$4 pgid=${5:-} proxy_pids=() b0 b1 p0="" p1="" load parsed
  local rps p99 requests errors
  [ -z "$pgid" ] || mapfile -t proxy_pids < <(group_pids "$pgid")
  load=$(loadavg)
  b0=$(cpu_ticks "$DEMO_PID")
  [ -z "$pgid" ] || p0=$(cpu_ticks "${proxy_pids[@]}")
  wrk_run "$case" "$port" "$DURATION" "$WORK/wrk.out"
  b1=$(cpu_ticks "$DEMO_PID")
  [ -z "$pgid" ] || p1=$(cpu_ticks "${proxy_pids[@]}")
  parsed=$(wrk_parse "$WORK/wrk.out") || bench_die "could not read wrk's output: $(cat "$WORK/wrk.out")"
  read -r rps p99 requests errors <<<"$parsed"
  [ "$errors" = 0 ] || bench_log "warning: $case/$target round $round: $errors errors"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$target" "$round" "$rps" "$p99" "$requests" \
    "$errors" "$((b1 - b0))" "${p1:+$((p1 - p0))}" "$load" >>"$WORK/proxy.tsv"
  bench_log "round $round $case $target: $rps requests/s, p99 $p99 ms (load $load)"
}

run_proxy() {
  local demo_port nginx_port round case
  demo_port=$(free_port)
  nginx_port=$(free_port)
  start_bg "$WORK/demo.log" "$BIN" demo-backend --listen "127.0.0.1:$demo_port"
  DEMO_PID=$BG_PID
  wait_port "$demo_port" || bench_die "demo backend did not listen (log: $WORK/demo.log)"

  nginx_config "$WORK/nginx" "$demo_port" "$nginx_port"
  local nginx_args=(-p "$WORK/nginx/" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log")
  nginx -t -q "${nginx_args[@]}" || bench_die "nginx rejected $WORK/nginx/nginx.conf"
  start_bg "$WORK/nginx/stderr.log" nginx "${nginx_args[@]}"
  local nginx_pid=$BG_PID
  wait_port "$nginx_port" || bench_die "nginx did not listen (log: $WORK/nginx/error.log)"

  start_gateway "http://127.0.0.1:$demo_port"
  local tg_pid=$GW_PID tg_port=$GW_PORT

  check_target direct "$demo_port"
  check_target nginx "$nginx_port"
  check_target tensorgate "$tg_port"
  bench_log "proxy: demo :$demo_port, nginx :$nginx_port (pid $nginx_pid), tensorgate :$tg_port (pid $tg_pid)"
  for case in passthrough infer; do # warm-up: connection pools, page cache
    for port in "$demo_port" "$nginx_port" "$tg_port"; do
      wrk_run "$case" "$port" 1 "$WORK/warmup.out"
    done
  done
  for round in $(seq 1 "$ROUNDS"); do
    for case in passthrough infer; do
      measure "$case" direct "$demo_port" "$round"
      measure "$case" nginx "$nginx_port" "$round" "$nginx_pid"
      measure "$case" tensorgate "$tg_port" "$round" "$tg_pid"
    done
  done
  stop_all
}
