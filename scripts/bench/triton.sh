# shellcheck shell=bash
# Comparison 2 of scripts/bench-proxy.sh: a JSON client to a real Triton,
# directly and through tensorgate. Sourced; uses the caller's WORK, BIN,
# TRITON_PY, TRITON_ROUNDS, REQUESTS and start_gateway. Writes
# $WORK/triton.tsv (one line per request) and body sizes into meta.txt.
#
# Triton gets its own run folder (pid, url, log) inside WORK, so a Triton
# that someone else started with scripts/triton-backend.sh is neither reused
# nor stopped, and a model repository holding only identity_fp32 (copied,
# links resolved), so it starts in seconds.
#
# With nginx among the peers, nginx (the benchmark's configuration) also
# forwards the same JSON to Triton as it is: the cost of one hop that
# translates nothing, measured in the same run, so target 5's ratios can be
# read against what any proxy in that place costs on these two cores.
#
# With TRITON_CPU set (--triton-cpu), Triton's processes are pinned to that
# CPU and the client, tensorgate and nginx to the others (taskset).

# pin_tree PID CPUS: every thread of PID and of its descendants onto CPUS.
pin_tree() {
  local p
  for p in $(tree_pids "$1"); do
    taskset -a -p -c "$2" "$p" >/dev/null || bench_die "taskset could not pin $p to $2"
  done
}

run_triton() {
  local url targets=() others="" pin=() nginx_pid=""
  mkdir -p "$WORK/models"
  cp -rL tests/models/identity_fp32 "$WORK/models/"
  # shellcheck disable=SC2034 # read by the caller's EXIT trap
  TRITON_STARTED=1
  url=$(TENSORGATE_RUN_DIR="$WORK/triton-run" TENSORGATE_TRITON_MODELS="$WORK/models" \
    TENSORGATE_TRITON_START_TIMEOUT=120 bash scripts/triton-backend.sh start) ||
    bench_die "Triton did not start (log: $WORK/triton-run/triton.log)"
  url=${url#TENSORGATE_TRITON_URL=}
  start_gateway "$url"
  bench_log "triton: direct $url, tensorgate :$GW_PORT (pid $GW_PID)"
  targets=(--target "direct=$url" --target "gateway=http://127.0.0.1:$GW_PORT")
  if [[ ",$PEERS," == *,nginx,* ]]; then
    mkdir -p "$WORK/nginx-triton"
    start_nginx "$WORK/nginx-triton" "${url##*:}"
    bench_log "triton: nginx :$PEER_PORT (pid $PEER_PID), forwarding as it is"
    targets+=(--target "nginx=http://127.0.0.1:$PEER_PORT")
    nginx_pid=$PEER_PID
  fi
  if [ -n "${TRITON_CPU:-}" ]; then
    others=$(seq 0 $(($(nproc) - 1)) | grep -vx "$TRITON_CPU" | paste -sd,)
    pin_tree "$(cat "$WORK/triton-run/triton.pid")" "$TRITON_CPU"
    pin_tree "$GW_PID" "$others"
    [ -z "$nginx_pid" ] || pin_tree "$nginx_pid" "$others"
    pin=(taskset -c "$others")
    bench_log "triton: Triton on CPU $TRITON_CPU; client, tensorgate and nginx on CPUs $others"
  fi
  # The same values sent binary, directly and through tensorgate (nothing to
  # convert): what Triton's binary input saves, and what the hop costs alone.
  targets+=(--binary-target "direct-binary=$url" --binary-target "gateway-binary=http://127.0.0.1:$GW_PORT")
  timeout --kill-after=10 3600 ${pin[@]+"${pin[@]}"} "$TRITON_PY" scripts/bench/json_client.py "${targets[@]}" \
    --model identity_fp32 --sizes "$REQUESTS" --rounds "$TRITON_ROUNDS" \
    --deadline 3000 --out "$WORK/triton.tsv" ||
    bench_die "the JSON client failed (Triton log: $WORK/triton-run/triton.log)"
  awk -F'\t' '{print "body_" $1 "=" $2}' "$WORK/triton.tsv.bodies" >>"$WORK/meta.txt"
  stop_all
  TENSORGATE_RUN_DIR="$WORK/triton-run" bash scripts/triton-backend.sh stop 2>/dev/null || true
  # shellcheck disable=SC2034
  TRITON_STARTED=0
}
