#!/usr/bin/env bash
# Two real Triton 2.51 replicas for tests/replicas_triton.rs: explicit model
# control (so the repository API can unload a model on one), `simple` and
# `identity_fp32` loaded, each with its own run directory.
#
# Usage: scripts/triton-pair.sh start | stop
#   start   prints TENSORGATE_TRITON_URLS=http://A,http://B, so
#              eval "$(bash scripts/triton-pair.sh start)"
#              cargo test --test replicas_triton
#   stop    stops both.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${TENSORGATE_CACHE_DIR:-$HOME/.cache/tensorgate}"
export TENSORGATE_TRITON_ARGS="--model-control-mode=explicit --load-model=simple --load-model=identity_fp32"

case "${1:-}" in
  start)
    urls=()
    for n in a b; do
      line="$(TENSORGATE_RUN_DIR="$CACHE/run-pair-$n" bash "$HERE/triton-backend.sh" start | grep '^TENSORGATE_TRITON_URL=')"
      urls+=("${line#TENSORGATE_TRITON_URL=}")
    done
    echo "TENSORGATE_TRITON_URLS=${urls[0]},${urls[1]}"
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
