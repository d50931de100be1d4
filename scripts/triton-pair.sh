#!/usr/bin/env bash
# Two real Triton 2.51 replicas for tests/it/replicas_triton.rs and
# tests/it/queue_balancing.rs: explicit model control (so the repository API
# can unload a model on one), `simple`, `identity_fp32` and `slow`
# (tests/models-queue) loaded, each with its own run directory and its
# Prometheus metrics on a loopback port of its own.
#
# Usage: scripts/triton-pair.sh start | stop
#   start   prints TENSORGATE_TRITON_URLS=http://A,http://B and
#           TENSORGATE_TRITON_METRICS_URLS=http://A'/metrics,http://B'/metrics, so
#              eval "$(bash scripts/triton-pair.sh start)"
#              cargo test --test it -- replicas_triton:: queue_balancing::
#   stop    stops both.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
CACHE="${TENSORGATE_CACHE_DIR:-$HOME/.cache/tensorgate}"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
PAIR_ARGS="--model-control-mode=explicit --load-model=simple --load-model=identity_fp32 --load-model=slow --model-repository=$REPO/tests/models-queue"

case "${1:-}" in
  start)
    urls=()
    metrics=()
    for n in a b; do
      run="$CACHE/run-pair-$n"
      mkdir -p "$run"
      # The port stays with the run directory: a pair already running
      # (start is idempotent) keeps its metrics port.
      if [ ! -s "$run/metrics.port" ] || ! TENSORGATE_RUN_DIR="$run" bash "$HERE/triton-backend.sh" status >/dev/null 2>&1; then
        free_port >"$run/metrics.port"
      fi
      port="$(cat "$run/metrics.port")"
      args="$PAIR_ARGS --allow-metrics=true --metrics-address=127.0.0.1 --metrics-port=$port"
      line="$(TENSORGATE_TRITON_ARGS="$args" TENSORGATE_RUN_DIR="$run" bash "$HERE/triton-backend.sh" start | grep '^TENSORGATE_TRITON_URL=')"
      urls+=("${line#TENSORGATE_TRITON_URL=}")
      metrics+=("http://127.0.0.1:$port/metrics")
    done
    echo "TENSORGATE_TRITON_URLS=${urls[0]},${urls[1]}"
    echo "TENSORGATE_TRITON_METRICS_URLS=${metrics[0]},${metrics[1]}"
    ;;
  stop)
    for n in a b; do
      TENSORGATE_RUN_DIR="$CACHE/run-pair-$n" bash "$HERE/triton-backend.sh" stop
    done
    ;;
  *)
    echo "usage: $0 start | stop" >&2
    exit 64
    ;;
esac
