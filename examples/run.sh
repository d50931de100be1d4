#!/usr/bin/env bash
# Runs every getting-started example against a real gateway on 127.0.0.1, as
# scripts/test.sh does:
#   1. the embedded demo (tensorgate with no arguments): v2_client.py,
#      decthings_client.rs, boto3_client.py;
#   2. two-replicas.toml with two demo backends: the same clients with a key
#      (boto3 signing with SigV4), a request without a key refused (401), and
#      both replicas counted in /metrics.
# Every port is a free one on 127.0.0.1 (two-replicas.toml's are rewritten
# in a temporary copy). Processes are stopped by PID on exit.
#
#   TENSORGATE_BIN=target/release/tensorgate bash examples/run.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${TENSORGATE_BIN:-${CARGO_TARGET_DIR:-target}/release/tensorgate}
[ -x "$BIN" ] || cargo build --release --locked --bin tensorgate
PY_SAGEMAKER=(bash scripts/sagemaker/client.sh python)

LIB_NAME=examples
# shellcheck source=../scripts/lib.sh
. scripts/lib.sh
say() { printf 'examples: %s\n' "$*" >&2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tensorgate-examples.XXXXXX")
trap 'stop_all; rm -rf "$WORK"' EXIT
start() { # LOG ARGS...
  local log=$1
  shift
  start_bg "$WORK/$log" "$@"
}
# ready URL LOG: until URL answers 200 (at most 30 s); when it never does,
# what the process started with LOG said.
ready() {
  wait_http "$1" 30 && return 0
  echo "examples: $2:" >&2
  tail -n 40 "$WORK/$2" >&2 || true
  return 1
}

# A debug build: `cargo test --all-targets` has built it already, and one
# request needs no optimisation.
say "building examples/decthings_client.rs"
cargo build --locked --example decthings_client
DECTHINGS=${CARGO_TARGET_DIR:-target}/debug/examples/decthings_client

# ---------------------------------------------------------------- 1. demo
D=$(free_port); A=$(free_port)
start demo.log "$BIN" --listen "127.0.0.1:$D" --admin-listen "127.0.0.1:$A"
ready "http://127.0.0.1:$A/readyz" demo.log
say "demo: v2_client.py"
python3 examples/v2_client.py --url "http://127.0.0.1:$D"
say "demo: decthings_client"
"$DECTHINGS" "http://127.0.0.1:$D/v0" simple
say "demo: boto3_client.py"
"${PY_SAGEMAKER[@]}" examples/boto3_client.py --url "http://127.0.0.1:$D"

# ---------------------------------------------------------------- 2. two replicas, keys
R1=$(free_port); R2=$(free_port); D=$(free_port); A=$(free_port)
start replica1.log "$BIN" demo-backend --listen "127.0.0.1:$R1"
start replica2.log "$BIN" demo-backend --listen "127.0.0.1:$R2"
mkdir -p "$WORK/config"
cp -r examples/keys "$WORK/config/"
sed -e "s#127.0.0.1:8101#127.0.0.1:$R1#; s#127.0.0.1:8102#127.0.0.1:$R2#" \
  -e "s#127.0.0.1:8000#127.0.0.1:$D#; s#127.0.0.1:9000#127.0.0.1:$A#" \
  examples/two-replicas.toml >"$WORK/config/two-replicas.toml"
start replicas.log "$BIN" serve --config "$WORK/config/two-replicas.toml"
ready "http://127.0.0.1:$R1/v2/health/ready" replica1.log
ready "http://127.0.0.1:$R2/v2/health/ready" replica2.log
ready "http://127.0.0.1:$A/readyz" replicas.log
KEY=$(sed -n 's/^alice://p' examples/keys/example.keys)
say "two replicas: v2_client.py with alice's key, 20 times"
for _ in $(seq 1 20); do
  python3 examples/v2_client.py --url "http://127.0.0.1:$D" --key "$KEY" >/dev/null
done
status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$D/v2/models/simple/infer" -d '{}')
[ "$status" = 401 ] || { echo "examples: no key: HTTP $status, expected 401" >&2; exit 1; }
say "two replicas: no key: 401"
say "two replicas: decthings_client with alice's key"
"$DECTHINGS" "http://127.0.0.1:$D/v0" simple "$KEY"
say "two replicas: boto3_client.py signing with alice's key (SigV4)"
"${PY_SAGEMAKER[@]}" examples/boto3_client.py --url "http://127.0.0.1:$D" --key-id alice --secret "$KEY"
curl -fs "http://127.0.0.1:$A/metrics" >"$WORK/metrics"
for r in "$R1" "$R2"; do
  n=$(awk -v r="replica=\"http://127.0.0.1:$r\"" 'index($0, "tensorgate_replica_requests_total{") == 1 && index($0, r) { print $NF }' "$WORK/metrics")
  [ -n "$n" ] && [ "${n%.*}" -gt 0 ] || { echo "examples: replica 127.0.0.1:$r got no requests" >&2; grep replica_requests "$WORK/metrics" >&2; exit 1; }
  say "two replicas: 127.0.0.1:$r served $n"
done
grep -q 'tensorgate_authenticated_requests_total{.*key="alice"' "$WORK/metrics" \
  || { echo "examples: alice's requests are not counted" >&2; exit 1; }
say "ok"
