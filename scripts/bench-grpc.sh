#!/usr/bin/env bash
# gRPC benchmark: what tensorgate costs gRPC clients, against direct access
# and against nginx's grpc_pass, in one run, alternating, so the ratios come
# from measurements taken seconds apart on the same (shared, noisy) machine.
# Prints markdown tables (docs/PERFORMANCE.md quotes them).
#
#   bash scripts/bench-grpc.sh [--only passthrough|triton] [--duration S]
#        [--rounds R] [--streams C,M] [--triton-rounds R] [--sizes N=K,...]
#
# 1. passthrough: the demo backend's gRPC port (`tensorgate demo-backend
#    --grpc-listen`), nginx (`grpc_pass`, 2 workers, upstream keep-alive)
#    and tensorgate (`--backend grpc://`) in front of it; h2load (Debian's
#    nghttp2-client) against each in turn, R rounds of S seconds, C
#    connections with M streams each, for ModelInfer of the demo's `simple`
#    model (two INT32 [1,16] inputs, raw contents) and for ServerReady. For
#    every target: calls/s and mean latency; for both proxies their CPU
#    time per call (user+system ticks of all their processes, from /proc,
#    over the run, divided by the calls h2load counted) and the reply bytes
#    per call (a refusal would show as fewer bytes). Defaults: 10 s, 3
#    rounds, 4 connections x 16 streams.
# 2. triton: a real Triton 2.51 (identity_fp32) serving HTTP and gRPC, and
#    two gateways in front of it, one speaking HTTP to it and one gRPC.
#    tritonclient.grpc (scripts/bench/grpc_client.py) to Triton directly and
#    through each gateway, for N FP32 elements (N=K: calls per round); then
#    the V2 JSON client (scripts/bench/json_client.py) at 1M elements
#    through each gateway: JSON in, binary HTTP or gRPC out. Defaults: 3
#    rounds, 256=100,16384=40,1048576=6.
#
# Needs h2load and nginx (scripts/setup.sh installs them) and the Triton
# venv. Everything listens on 127.0.0.1 at ports chosen at run time, every
# wait and run is bounded, and every process started is stopped by PID on
# exit. TENSORGATE_BIN overrides the binary (default: a release build);
# BENCH_KEEP=1 keeps the work folder.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE/.."
BENCH_NAME=bench-grpc
. "$HERE/bench/common.sh"
. "$HERE/bench/nginx.sh"

usage() {
  awk 'NR > 1 && /^# shellcheck/ { exit } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 64
}

ONLY=all DURATION=10 ROUNDS=3 STREAMS=4,16 TRITON_ROUNDS=3 SIZES=256=100,16384=40,1048576=6
ARGS="$*"
while [ $# -gt 0 ]; do
  case "$1" in -h | --help) usage ;; esac
  [ $# -ge 2 ] || bench_die "$1 needs a value"
  case "$1" in
    --only) ONLY=$2 ;;
    --duration) DURATION=$2 ;;
    --rounds) ROUNDS=$2 ;;
    --streams) STREAMS=$2 ;;
    --triton-rounds) TRITON_ROUNDS=$2 ;;
    --sizes) SIZES=$2 ;;
    *) bench_log "unknown argument: $1" && usage ;;
  esac
  shift 2
done
case "$ONLY" in all | passthrough | triton) ;; *) bench_die "--only takes passthrough or triton, not $ONLY" ;; esac
[[ "$STREAMS" =~ ^[1-9][0-9]*,[1-9][0-9]*$ ]] || bench_die "--streams takes C,M (connections, streams each), not $STREAMS"
[[ "$SIZES" =~ ^[0-9]+=[0-9]+(,[0-9]+=[0-9]+)*$ ]] || bench_die "--sizes takes N=K,..., not $SIZES"
for v in "$DURATION" "$ROUNDS" "$TRITON_ROUNDS"; do
  case "$v" in '' | *[!0-9]* | 0) bench_die "durations and rounds are positive integers" ;; esac
done
CONNS=${STREAMS%,*} PER_CONN=${STREAMS#*,}

TRITON_PY=${TENSORGATE_TRITON_PYTHON:-${TENSORGATE_CACHE_DIR:-$HOME/.cache/tensorgate}/venv-triton/bin/python}
[ -x "$TRITON_PY" ] || bench_die "no Triton venv at $TRITON_PY: run bash scripts/setup.sh"
if [ "$ONLY" != triton ]; then
  command -v h2load >/dev/null || bench_die "h2load not found: bash scripts/setup.sh (or apt-get install nghttp2-client)"
  command -v nginx >/dev/null || bench_die "nginx not found: bash scripts/setup.sh (or apt-get install nginx-light)"
fi
bench_binary
bench_workdir bench-grpc

# h2load_run TARGET PORT CASE: one timed run; appends a line to
# $WORK/passthrough.tsv: case target round calls/s mean_ms calls
# cpu_ticks data_bytes.
h2load_run() {
  local target=$1 port=$2 case=$3 pids before after out method
  case "$case" in
    infer) method=ModelInfer ;;
    ready) method=ServerReady ;;
  esac
  pids=()
  [ -z "${PID_OF[$target]:-}" ] || mapfile -t pids < <(tree_pids "${PID_OF[$target]}")
  before=$(cpu_ticks ${pids[@]+"${pids[@]}"})
  out="$WORK/h2load-$target-$case.out"
  timeout --kill-after=10 $((DURATION + 30)) h2load -D "$DURATION" -c "$CONNS" -m "$PER_CONN" -t 1 \
    -d "$WORK/$case.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$port/inference.GRPCInferenceService/$method" >"$out" 2>&1 ||
    bench_die "h2load against $target failed: $(tail -3 "$out")"
  after=$(cpu_ticks ${pids[@]+"${pids[@]}"})
  awk -v c="$case" -v t="$target" -v r="$ROUND" -v ticks=$((after - before)) '
    /^finished in/ { rps = $4 }
    /^requests:/ { done = $8; failed = $10 }
    /^traffic:/ { for (i = 2; i <= NF; i++) if ($i == "data") { d = $(i - 1); gsub(/[()]/, "", d) } }
    /^time for request:/ { mean = $6 }
    END {
      if (done == "" || done == 0) exit 1
      m = mean; f = 1
      if (m ~ /us$/) { f = 0.001 } else if (m ~ /ms$/) { f = 1 } else if (m ~ /s$/) { f = 1000 }
      sub(/[a-z]+$/, "", m)
      printf "%s\t%s\t%s\t%s\t%.3f\t%s\t%s\t%s\t%s\n", c, t, r, rps, m * f, done, failed, ticks, d
    }' "$out" >>"$WORK/passthrough.tsv" || bench_die "could not read h2load's output: $out"
}

declare -A PID_OF PORT_OF
passthrough() {
  local demo_http demo_grpc targets n i t case
  demo_http=$(free_port)
  demo_grpc=$(free_port)
  start_bg "$WORK/demo.log" "$BIN" demo-backend --listen "127.0.0.1:$demo_http" --grpc-listen "127.0.0.1:$demo_grpc"
  wait_port "$demo_grpc" || bench_die "the demo backend did not listen (log: $WORK/demo.log)"
  NGINX_GRPC=1 start_nginx "$WORK/nginx" "$demo_grpc"
  start_gateway "grpc://127.0.0.1:$demo_grpc"
  PORT_OF=([direct]=$demo_grpc [nginx]=$PEER_PORT [tensorgate]=$GW_PORT)
  PID_OF=([nginx]=$PEER_PID [tensorgate]=$GW_PID)
  targets=(direct nginx tensorgate)
  "$TRITON_PY" - "$WORK" <<'PY' || bench_die "could not write the request messages"
import struct, sys
from tritonclient.grpc import service_pb2 as pb
req = pb.ModelInferRequest(model_name="simple")
for name in ("INPUT0", "INPUT1"):
    req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
    req.raw_input_contents.append(struct.pack("<16i", *range(16)))
for case, msg in (("infer", req), ("ready", pb.ServerReadyRequest())):
    body = msg.SerializeToString()
    open(f"{sys.argv[1]}/{case}.bin", "wb").write(b"\0" + struct.pack(">I", len(body)) + body)
PY
  for t in "${targets[@]}"; do # every target answers the call right before anything is timed
    "$TRITON_PY" - "127.0.0.1:${PORT_OF[$t]}" <<'PY' || bench_die "$t: ModelInfer through it failed"
import sys
import numpy as np
import tritonclient.grpc as g
c = g.InferenceServerClient(sys.argv[1])
ins = [g.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
for i in ins:
    i.set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
r = c.infer("simple", ins)
assert (r.as_numpy("OUTPUT0") == 2 * np.arange(16)).all(), r.as_numpy("OUTPUT0")
assert c.is_server_ready()
PY
    bench_log "passthrough: $t on :${PORT_OF[$t]}${PID_OF[$t]:+ (pid ${PID_OF[$t]})}"
  done
  : >"$WORK/passthrough.tsv"
  n=${#targets[@]}
  for ROUND in $(seq 1 "$ROUNDS"); do
    for case in infer ready; do
      for i in $(seq 0 $((n - 1))); do # the order moves by one every round
        t=${targets[$(((i + ROUND) % n))]}
        h2load_run "$t" "${PORT_OF[$t]}" "$case"
      done
    done
    bench_log "passthrough: round $ROUND/$ROUNDS done (load $(loadavg))"
  done
  stop_all
}

triton() {
  local url grpc_port http_gw grpc_gw
  mkdir -p "$WORK/models"
  cp -rL tests/models/identity_fp32 "$WORK/models/"
  grpc_port=$(free_port)
  TRITON_STARTED=1
  url=$(TENSORGATE_RUN_DIR="$WORK/triton-run" TENSORGATE_TRITON_MODELS="$WORK/models" \
    TENSORGATE_TRITON_START_TIMEOUT=120 \
    TENSORGATE_TRITON_ARGS="--allow-grpc=true --grpc-address=127.0.0.1 --grpc-port=$grpc_port" \
    bash scripts/triton-backend.sh start) ||
    bench_die "Triton did not start (log: $WORK/triton-run/triton.log)"
  url=${url#TENSORGATE_TRITON_URL=}
  start_gateway "$url"
  http_gw=$GW_PORT
  start_gateway "grpc://127.0.0.1:$grpc_port"
  grpc_gw=$GW_PORT
  bench_log "triton: $url and gRPC :$grpc_port; tensorgate to HTTP :$http_gw, to gRPC :$grpc_gw"
  timeout --kill-after=10 3600 "$TRITON_PY" scripts/bench/grpc_client.py \
    --target "direct=127.0.0.1:$grpc_port" --target "via-http=127.0.0.1:$http_gw" \
    --target "via-grpc=127.0.0.1:$grpc_gw" --model identity_fp32 --sizes "$SIZES" \
    --rounds "$TRITON_ROUNDS" --deadline 3000 --out "$WORK/grpc.tsv" ||
    bench_die "the gRPC client failed (Triton log: $WORK/triton-run/triton.log)"
  timeout --kill-after=10 3600 "$TRITON_PY" scripts/bench/json_client.py \
    --target "direct-http=$url" --target "via-http=http://127.0.0.1:$http_gw" \
    --target "via-grpc=http://127.0.0.1:$grpc_gw" --model identity_fp32 \
    --sizes "$(tr ',' '\n' <<<"$SIZES" | grep '^1048576=' || echo 1048576=6)" \
    --rounds "$TRITON_ROUNDS" --deadline 3000 --out "$WORK/json.tsv" ||
    bench_die "the JSON client failed (Triton log: $WORK/triton-run/triton.log)"
  stop_all
  TENSORGATE_RUN_DIR="$WORK/triton-run" bash scripts/triton-backend.sh stop 2>/dev/null || true
  TRITON_STARTED=0
}

{
  echo "command: bash scripts/bench-grpc.sh${ARGS:+ $ARGS}"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "machine: $(machine_line); load before $(loadavg)"
  echo "h2load: $(h2load --version 2>/dev/null | head -1 || echo none); nginx $(nginx -v 2>&1 | sed -n 's#^nginx version: nginx/##p')"
} >"$WORK/meta.txt"
[ "$ONLY" = triton ] || passthrough
[ "$ONLY" = passthrough ] || triton
echo "load after: $(loadavg)" >>"$WORK/meta.txt"
python3 scripts/bench/grpc_report.py "$WORK" "$CONNS" "$PER_CONN" "$DURATION"
