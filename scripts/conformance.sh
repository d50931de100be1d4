#!/usr/bin/env bash
# Conformance: what tensorgate answers == what Triton (and KServe) answer.
#
# Usage: bash scripts/conformance.sh
#
# One command, idempotent:
#   1. sets up the Triton and KServe venvs (scripts/*-backend.sh setup; fast
#      when done);
#   2. starts a real Triton 2.51 (HTTP, and gRPC on a port of its own) and
#      a KServe 0.21 on 127.0.0.1, unless TENSORGATE_TRITON_URL /
#      TENSORGATE_KSERVE_URL already name running ones (then those are used
#      and left running; TENSORGATE_TRITON_GRPC and TENSORGATE_KSERVE_GRPC
#      name the reused servers' gRPC ports);
#   3. builds tensorgate: the debug profile by default (the same build
#      `cargo test` makes; TENSORGATE_CONFORMANCE_PROFILE=release for a
#      release build), or uses TENSORGATE_BIN when set;
#   4. runs the Rust conformance tests (tests/it/conformance_triton.rs,
#      tests/it/conformance_kserve.rs), the pytest suite with tritonclient's
#      HTTP and gRPC clients and grpcio-health-checking (tests/conformance/,
#      Triton venv) and the kserve InferenceRESTClient
#      check (KServe venv);
#   5. stops every server it started, by PID (also on error or Ctrl-C);
#   6. runs scripts/conformance_report.py: prints the matrix and rewrites the
#      generated section of docs/CONFORMANCE.md.
# Results: target/conformance/ (results.jsonl, pytest.xml, logs).
# Exits non-zero if any case failed (or no case ran).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
. scripts/lib.sh

OUT="$ROOT/target/conformance"
CACHE="${TENSORGATE_CACHE_DIR:-${HOME:?}/.cache/tensorgate}"
PY="${TENSORGATE_PYTHON:-python3}"
PROFILE="${TENSORGATE_CONFORMANCE_PROFILE:-debug}"
# Servers this script starts get their own pid/url/log files, so an already
# running developer instance is neither reused by accident nor stopped.
RUN_DIR="$OUT/run"
started=$(date +%s)
STARTED_SERVERS=()

log() { printf '\n==> conformance: %s\n' "$*" >&2; }

stop_servers() {
  local name
  for name in ${STARTED_SERVERS[@]+"${STARTED_SERVERS[@]}"}; do
    TENSORGATE_RUN_DIR="$RUN_DIR" bash "scripts/$name-backend.sh" stop >&2 || true
  done
  STARTED_SERVERS=()
}
trap stop_servers EXIT
trap 'exit 130' INT TERM

mkdir -p "$OUT"
rm -f "$OUT/results.jsonl" "$OUT/pytest.xml" "$OUT"/*.log "$OUT"/tensorgate-*.toml
export TENSORGATE_CONFORMANCE_RESULTS="$OUT/results.jsonl"
export TENSORGATE_CONFORMANCE_DIR="$OUT"

log "setting up the backend venvs"
bash scripts/triton-backend.sh setup
bash scripts/kserve-backend.sh setup

# ensure_backend NAME VAR: reuse $VAR if it answers, else start one.
# Triton and KServe started here serve gRPC too, on a port of their own
# (TENSORGATE_TRITON_GRPC and TENSORGATE_KSERVE_GRPC, for
# tests/conformance/test_grpc.py and test_kserve_grpc.py).
ensure_backend() {
  local name="$1" var="$2" url out port args=""
  url="${!var:-}"
  if [ -n "$url" ] && "$PY" scripts/backends/svc.py probe "$url/v2/health/ready"; then
    log "$name: using $url"
    return 0
  fi
  log "$name: starting on 127.0.0.1"
  STARTED_SERVERS+=("$name")
  port=$(free_port)
  if [ "$name" = triton ]; then
    args="--allow-grpc=true --grpc-address=127.0.0.1 --grpc-port=$port"
    export TENSORGATE_TRITON_GRPC="127.0.0.1:$port"
  else
    export TENSORGATE_KSERVE_GRPC="127.0.0.1:$port"
  fi
  out="$(TENSORGATE_RUN_DIR="$RUN_DIR" TENSORGATE_TRITON_ARGS="$args" TENSORGATE_KSERVE_GRPC_PORT="$port" \
    bash "scripts/$name-backend.sh" start)"
  eval "$out"
  export "${var?}"
}
ensure_backend triton TENSORGATE_TRITON_URL
ensure_backend kserve TENSORGATE_KSERVE_URL

if [ -n "${TENSORGATE_BIN:-}" ]; then
  log "using TENSORGATE_BIN=$TENSORGATE_BIN"
else
  log "cargo build ($PROFILE)"
  if [ "$PROFILE" = release ]; then
    cargo build --release --bin tensorgate
  else
    cargo build --bin tensorgate
  fi
  export TENSORGATE_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE/tensorgate"
fi
export TENSORGATE_BIN

failed=0
log "Rust conformance tests"
if ! cargo test --test it -- conformance_triton:: conformance_kserve:: 2>&1 | tee "$OUT/rust.log"; then
  failed=1
fi

log "pytest with tritonclient (Triton venv)"
rc=0
"$CACHE/venv-triton/bin/python" -m pytest tests/conformance -p no:cacheprovider -q \
  --junitxml="$OUT/pytest.xml" 2>&1 | tee "$OUT/pytest.log" || rc=$?
[ "$rc" -eq 0 ] || failed=1

log "kserve InferenceRESTClient (KServe venv)"
rc=0
"$CACHE/venv-kserve/bin/python" tests/conformance/kserve_rest_client.py 2>&1 | tee "$OUT/kserve-client.log" || rc=$?
[ "$rc" -eq 0 ] || failed=1

log "stopping the servers started here"
stop_servers

log "report"
rc=0
"$PY" scripts/conformance_report.py --results "$OUT/results.jsonl" --rust-log "$OUT/rust.log" \
  --junit "$OUT/pytest.xml" --doc docs/CONFORMANCE.md || rc=$?
[ "$rc" -eq 0 ] || failed=1

log "done in $(($(date +%s) - started))s ($([ "$failed" -eq 0 ] && echo passed || echo FAILED))"
exit "$failed"
