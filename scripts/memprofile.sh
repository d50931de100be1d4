#!/usr/bin/env bash
# Peak memory of the gateway against payload size: shows that replies stream
# (memory flat as the reply grows) and where the format forces a bounded
# buffer (a JSON request's binary form is held until its header can be sent).
#
#   bash scripts/memprofile.sh [path/to/tensorgate]
#
# Each measurement starts a fresh gateway (release build) in front of the
# demo backend (`tensorgate demo-backend`, a separate process), sends one
# request with curl, and reads the gateway's VmHWM (peak RSS) from /proc.
# Everything listens on 127.0.0.1 and is stopped by PID.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/tensorgate}
[ -x "$BIN" ] || cargo build --release --bin tensorgate >&2

# shellcheck source=lib.sh
. scripts/lib.sh
peak_kib() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

WORK=$(mktemp -d)
trap 'stop_all; rm -rf "$WORK"' EXIT
BACKEND_PORT=$(free_port)
start_bg "$WORK/backend.log" "$BIN" demo-backend --listen "127.0.0.1:$BACKEND_PORT"
GW=""
wait_port "$BACKEND_PORT" 10

# Limits large enough for the biggest case: 1 GiB bodies, 2^28 elements.
cat >"$WORK/gateway.toml" <<TOML
[limits]
max_body_bytes = 1073741824
max_elements_per_tensor = 268435456
[backends.demo]
url = "http://127.0.0.1:$BACKEND_PORT"
[[routes]]
name = "default"
default = true
backend = "demo"
TOML

start_gateway() {
  local port admin
  port=$(free_port); admin=$(free_port)
  start_bg "$WORK/gateway-$port.log" "$BIN" --config "$WORK/gateway.toml" --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin"
  GW=$BG_PID
  wait_port "$port" 10
  GW_PORT=$port
}

stop_gateway() { stop_pid "$GW"; GW=""; }

# measure LABEL SIZE_DESC CURL_ARGS... : prints one table row.
measure() {
  local label=$1 size=$2; shift 2
  start_gateway
  local base
  base=$(peak_kib "$GW")
  local bytes
  bytes=$(curl -s -o /dev/null -w '%{size_download}' "$@" "http://127.0.0.1:$GW_PORT/v2/models/$MODEL/infer")
  local peak
  peak=$(peak_kib "$GW")
  printf '| %s | %s | %d MB | %d MB | %d MB |\n' "$label" "$size" $((bytes / 1000000)) $((base / 1024)) $((peak / 1024))
  stop_gateway
}

echo "| case | size | reply | RSS idle | peak RSS |"
echo "| --- | --- | --- | --- | --- |"
MODEL=ramp
for n in 1048576 16777216 67108864; do
  body="{\"inputs\":[{\"name\":\"COUNT\",\"shape\":[1],\"datatype\":\"INT64\",\"data\":[$n]}]}"
  measure "binary reply -> JSON, streamed" "$((n / 1048576))M FP32" -d "$body"
  bin="{\"inputs\":[{\"name\":\"COUNT\",\"shape\":[1],\"datatype\":\"INT64\",\"data\":[$n]}],\"parameters\":{\"binary_data_output\":true}}"
  measure "binary reply, passed through" "$((n / 1048576))M FP32" -d "$bin"
done
MODEL=identity
for n in 1048576 4194304 12582912; do
  python3 - "$n" >"$WORK/req.json" <<'PY'
import sys
n = int(sys.argv[1])
sys.stdout.write('{"inputs":[{"name":"X","shape":[%d],"datatype":"FP32","data":[' % n)
sys.stdout.write(",".join("%.7f" % ((i % 1000) * 0.001) for i in range(n)))
sys.stdout.write(']}],"parameters":{"binary_data_output":true}}')
PY
  text_mb=$(( $(stat -c %s "$WORK/req.json") / 1000000 ))
  measure "JSON request -> binary (${text_mb} MB of JSON)" "$((n / 1048576))M FP32" --data-binary "@$WORK/req.json"
done
