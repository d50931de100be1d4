#!/usr/bin/env bash
# Proxy benchmark: tensorgate against nginx, HAProxy and Caddy and against
# direct access, in one run, alternating, so the ratios come from
# measurements taken seconds apart on the same (shared, noisy) machine.
# Writes its tables into docs/PERFORMANCE.md between the bench-proxy
# markers.
#
#   bash scripts/bench-proxy.sh [--smoke] [--only proxy|triton]
#        [--peers nginx,haproxy,caddy,floor] [--duration S] [--rounds R]
#        [--connections C] [--triton-rounds R] [--requests N=K,...]
#        [--triton-cpu N] [--note TEXT] [--write | --no-write]
#
# 1. Plain proxy: the demo backend (`tensorgate demo-backend`), the peers
#    (scripts/bench/nginx.sh, haproxy.sh, caddy.sh: Debian's nginx-light,
#    haproxy 2.6 and caddy 2.6) and tensorgate (`--backend`) in front of
#    it; wrk against each in turn, R rounds, for GET /v2/models/simple and a
#    small JSON infer (scripts/bench/infer.lua) at `-t1 -cC`, and the same
#    infer sequentially (`-t1 -c1`). For every target: requests/s, p50, p99,
#    and for every proxy its CPU time per request (user+system ticks of all
#    its processes, from /proc, over the run, divided by the requests wrk
#    counted). Defaults: 10 s per wrk run, 3 rounds, 64 connections, all
#    three peers.
# 2. A JSON client (scripts/bench/json_client.py, Triton venv's python) to a
#    real Triton 2.51 (model identity_fp32), directly, through tensorgate
#    and, when nginx is a peer, through nginx forwarding the JSON as it is
#    (one hop's cost), alternating; N=K gives the requests per round for N
#    FP32 elements. Defaults: 3 rounds, 256=100,16384=40,1048576=6.
#
# --smoke: a CI-sized run (2 s per wrk run, 3 rounds, medians; peers nginx
# and haproxy; 256=30,16384=10,1048576=2) that prints the tables, writes
# nothing, and exits 1 when a result is past half its target (see
# scripts/bench/report.py for the lines). A full run writes
# docs/PERFORMANCE.md unless --no-write.
# --note TEXT is printed at the top of the written section.
# --triton-cpu N pins Triton (its server and the Python backend's stub) to
# CPU N, and the JSON client, tensorgate and nginx to the other CPUs, for
# the Triton comparison only: the placement a Triton with cores of its own
# would have (by default the scheduler spreads everything over all cores).
#
# `floor` (not a default peer) is hyper alone: examples/hyper_floor.rs with 2
# threads (scripts/bench/floor.sh; cargo build --release --example
# hyper_floor first), what hyper on both sides costs before any feature.
#
# Needs wrk, nginx, haproxy and caddy (scripts/setup.sh installs them) and,
# for the Triton comparison, the Triton venv (scripts/setup.sh). Everything
# listens on 127.0.0.1 at ports chosen at run time, every wait and run is
# bounded, and every process started is stopped by PID on exit.
# TENSORGATE_BIN overrides the binary (default: a release build);
# BENCH_KEEP=1 keeps the work folder.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE/.."
. "$HERE/bench/common.sh"
. "$HERE/bench/nginx.sh"
. "$HERE/bench/haproxy.sh"
. "$HERE/bench/caddy.sh"
. "$HERE/bench/floor.sh"

usage() {
  awk 'NR > 1 && /^# shellcheck/ { exit } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 64
}

SMOKE=0 ONLY=all WRITE="" NOTE="" DURATION="" ROUNDS="" CONNECTIONS=64 TRITON_ROUNDS="" REQUESTS="" PEERS=""
TRITON_CPU=""
SHOWN_ARGS=()
while [ $# -gt 0 ]; do
  opt=$1 val=""
  case "$opt" in
    --only | --peers | --duration | --rounds | --connections | --triton-rounds | --requests | --note | --triton-cpu)
      [ $# -ge 2 ] || bench_die "$opt needs a value"
      val=$2
      shift 2
      ;;
    *) shift ;;
  esac
  case "$opt" in
    --smoke) SMOKE=1 ;;
    --only) ONLY=$val ;;
    --peers) PEERS=$val ;;
    --duration) DURATION=$val ;;
    --rounds) ROUNDS=$val ;;
    --connections) CONNECTIONS=$val ;;
    --triton-rounds) TRITON_ROUNDS=$val ;;
    --requests) REQUESTS=$val ;;
    --note) NOTE=$val ;;
    --triton-cpu) TRITON_CPU=$val ;;
    --write) WRITE=1 ;;
    --no-write) WRITE=0 ;;
    -h | --help) usage ;;
    *) bench_log "unknown argument: $opt" && usage ;;
  esac
  # The command shown in the report; the note itself is printed above it.
  if [ "$opt" = --note ]; then
    SHOWN_ARGS+=(--note "'...'")
  else
    SHOWN_ARGS+=("$opt" ${val:+"$val"})
  fi
done
case "$ONLY" in all | proxy | triton) ;; *) bench_die "--only takes proxy or triton, not $ONLY" ;; esac
if [ "$SMOKE" = 1 ]; then
  : "${DURATION:=2}" "${ROUNDS:=3}" "${TRITON_ROUNDS:=1}" "${REQUESTS:=256=30,16384=10,1048576=2}" "${WRITE:=0}"
  : "${PEERS:=nginx,haproxy}"
else
  : "${DURATION:=10}" "${ROUNDS:=3}" "${TRITON_ROUNDS:=3}" "${REQUESTS:=256=100,16384=40,1048576=6}" "${WRITE:=1}"
  : "${PEERS:=nginx,haproxy,caddy}"
fi
[[ "$PEERS" =~ ^(nginx|haproxy|caddy|floor)(,(nginx|haproxy|caddy|floor))*$ ]] ||
  bench_die "--peers takes a comma-separated list of nginx, haproxy, caddy and floor, not $PEERS"
[ -z "$(tr ',' '\n' <<<"$PEERS" | sort | uniq -d)" ] || bench_die "--peers names a peer twice: $PEERS"
if [ "$SMOKE" = 1 ] && [ "$ONLY" != triton ] && ! [[ ",$PEERS," == *,nginx,* && ",$PEERS," == *,haproxy,* ]]; then
  bench_die "--smoke checks tensorgate against nginx and haproxy: --peers must name both"
fi
[[ "$REQUESTS" =~ ^[0-9]+=[0-9]+(,[0-9]+=[0-9]+)*$ ]] || bench_die "--requests takes N=K,... (elements=requests per round), not $REQUESTS"
for v in "$DURATION" "$ROUNDS" "$CONNECTIONS" "$TRITON_ROUNDS"; do
  case "$v" in '' | *[!0-9]* | 0) bench_die "durations, rounds and connections are positive integers" ;; esac
done

if [ -n "$TRITON_CPU" ]; then
  case "$TRITON_CPU" in *[!0-9]*) bench_die "--triton-cpu takes a CPU number, not $TRITON_CPU" ;; esac
  if [ "$(nproc)" -lt 2 ] || [ "$TRITON_CPU" -ge "$(nproc)" ]; then
    bench_die "--triton-cpu $TRITON_CPU: needs at least 2 CPUs and a CPU below $(nproc)"
  fi
  command -v taskset >/dev/null || bench_die "--triton-cpu needs taskset (util-linux)"
fi
TRITON_PY=${TENSORGATE_TRITON_PYTHON:-${TENSORGATE_CACHE_DIR:-$HOME/.cache/tensorgate}/venv-triton/bin/python}
if [ "$ONLY" != triton ]; then
  command -v wrk >/dev/null || bench_die "wrk not found: bash scripts/setup.sh (or apt-get install wrk)"
fi
for peer in ${PEERS//,/ }; do
  # The Triton comparison uses nginx alone of the peers (scripts/bench/triton.sh).
  [ "$ONLY" != triton ] || [ "$peer" = nginx ] || continue
  if [ "$peer" = floor ]; then
    [ -x "$(floor_bin)" ] || bench_die "no hyper_floor at $(floor_bin): cargo build --release --example hyper_floor"
    continue
  fi
  package=$peer
  [ "$peer" != nginx ] || package=nginx-light
  command -v "$peer" >/dev/null || bench_die "$peer not found: bash scripts/setup.sh (or apt-get install $package)"
done
if [ "$ONLY" != proxy ]; then
  [ -x "$TRITON_PY" ] || bench_die "no Triton venv at $TRITON_PY: run bash scripts/setup.sh"
fi
bench_binary
bench_workdir bench-proxy

. "$HERE/bench/proxy.sh"
. "$HERE/bench/triton.sh"

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || COMMIT="$COMMIT (with uncommitted changes)"
{
  echo "command=bash scripts/bench-proxy.sh${SHOWN_ARGS[*]+ ${SHOWN_ARGS[*]}}"
  echo "note=$NOTE"
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit=$COMMIT"
  echo "machine=$(machine_line)"
  echo "load_before=$(loadavg)"
  echo "duration=$DURATION"
  echo "rounds=$ROUNDS"
  echo "connections=$CONNECTIONS"
  echo "peers=$PEERS"
  echo "triton_rounds=$TRITON_ROUNDS"
  echo "triton_cpu=$TRITON_CPU"
  echo "requests=$REQUESTS"
} >"$WORK/meta.txt"
bench_log "load average before: $(loadavg)"

started=$SECONDS
[ "$ONLY" = triton ] || run_proxy
[ "$ONLY" = proxy ] || run_triton
{
  echo "load_after=$(loadavg)"
  echo "elapsed=$((SECONDS - started))"
} >>"$WORK/meta.txt"

report_args=("$WORK")
[ "$WRITE" = 0 ] || report_args+=(--doc docs/PERFORMANCE.md)
[ "$SMOKE" = 0 ] || report_args+=(--smoke)
python3 scripts/bench/report.py "${report_args[@]}"
