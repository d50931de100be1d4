#!/usr/bin/env bash
# Load run: the same requests sent straight to a V2 backend and through
# tensorgate, in the same run, so the gateway's cost is a ratio against a
# baseline measured on the same (noisy, shared) machine.
#
#   bash scripts/load.sh [SECONDS] [CONNECTIONS]      (defaults: 10 s, 16)
#
# Backend: the embedded demo (`tensorgate demo-backend`), a separate process.
# Cases, each run with wrk (Debian package "wrk") for SECONDS:
#   direct/json      JSON request straight to the backend (JSON reply)
#   gateway/json     JSON request through tensorgate (converted to binary for
#                    the backend, binary reply converted back to JSON)
#   direct/identity  a 64 KiB FP32 tensor as JSON, straight to the backend
#   gateway/identity the same through tensorgate
# Everything listens on 127.0.0.1, is bounded in time, and is stopped by PID.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SECONDS_PER_CASE=${1:-10}
CONNECTIONS=${2:-16}
BIN=${TENSORGATE_BIN:-${CARGO_TARGET_DIR:-target}/release/tensorgate}
[ -x "$BIN" ] || cargo build --release --bin tensorgate >&2
command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)" >&2; exit 1; }

# shellcheck source=lib.sh
. scripts/lib.sh

WORK=$(mktemp -d)
trap 'stop_all; rm -rf "$WORK"' EXIT
BACKEND_PORT=$(free_port); GW_PORT=$(free_port); ADMIN_PORT=$(free_port)
start_bg "$WORK/backend.log" "$BIN" demo-backend --listen "127.0.0.1:$BACKEND_PORT"
start_bg "$WORK/gateway.log" env RUST_LOG=warn "$BIN" --backend "http://127.0.0.1:$BACKEND_PORT" --listen "127.0.0.1:$GW_PORT" --admin-listen "127.0.0.1:$ADMIN_PORT"
wait_port "$BACKEND_PORT" 10; wait_port "$GW_PORT" 10

SIMPLE='{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
python3 - >"$WORK/identity.json" <<'PY'
import random
random.seed(1)
vals = ",".join(repr(float(f"{random.random():.7g}")) for _ in range(16384))
print('{"inputs":[{"name":"X","shape":[16384],"datatype":"FP32","data":[%s]}]}' % vals, end="")
PY

lua() { # lua FILE_WITH_BODY PATH
  python3 - "$1" "$2" <<'PY'
import json, sys
body = open(sys.argv[1]).read()
print('wrk.method = "POST"')
print('wrk.path = %s' % json.dumps(sys.argv[2]))
print('wrk.headers["Content-Type"] = "application/json"')
print('wrk.body = %s' % json.dumps(body))
PY
}
printf '%s' "$SIMPLE" >"$WORK/simple.json"
lua "$WORK/simple.json" /v2/models/simple/infer >"$WORK/simple.lua"
lua "$WORK/identity.json" /v2/models/identity/infer >"$WORK/identity.lua"

run() { # run NAME PORT LUA
  local out
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_CASE}s" --latency -s "$3" "http://127.0.0.1:$2" 2>&1)
  local rps p50 p99 errors
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  errors=$(awk '/Non-2xx/ {print $NF}' <<<"$out"); errors=${errors:-0}
  printf '| %s | %s | %s | %s | %s |\n' "$1" "$rps" "$p50" "$p99" "$errors"
  echo "$rps" >"$WORK/$1.rps"
}

echo "| case | requests/s | p50 | p99 | non-2xx |"
echo "| --- | --- | --- | --- | --- |"
run direct-simple "$BACKEND_PORT" "$WORK/simple.lua"
run gateway-simple "$GW_PORT" "$WORK/simple.lua"
run direct-identity-16k "$BACKEND_PORT" "$WORK/identity.lua"
run gateway-identity-16k "$GW_PORT" "$WORK/identity.lua"
ratio() { python3 -c "import sys; a,b=float(open(sys.argv[1]).read()),float(open(sys.argv[2]).read()); print(f'{b/a:.2f}')" "$WORK/$1.rps" "$WORK/$2.rps"; }
echo
echo "gateway/direct throughput ratio: simple $(ratio direct-simple gateway-simple), identity-16k $(ratio direct-identity-16k gateway-identity-16k)"
echo "(wrk -t2 -c$CONNECTIONS -d${SECONDS_PER_CASE}s on $(nproc) cores; backend, gateway and wrk share them)"
