#!/usr/bin/env bash
# A batch-transform-sized SageMaker request through the gateway: a CSV of
# RECORDS records of FEATURES float features (default 1,000,000 x 8, about
# 80 MB) to the demo backend's `rowsum`, in mini-batches; prints the
# gateway's peak RSS above idle and the records per second.
#
#   bash scripts/sagemaker/stream_bench.sh [RECORDS] [FEATURES] [ACCEPT]
#
# The demo backend runs as its own process (`tensorgate demo-backend`), so
# the gateway's RSS is its own. Everything listens on 127.0.0.1 and is
# stopped by PID.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RECORDS=${1:-1000000}
FEATURES=${2:-8}
ACCEPT=${3:-text/csv}
BIN=${TENSORGATE_BIN:-${CARGO_TARGET_DIR:-target}/release/tensorgate}
[ -x "$BIN" ] || cargo build --release --bin tensorgate >&2

# shellcheck source=../lib.sh
. scripts/lib.sh
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }

WORK=$(mktemp -d)
trap 'stop_all; rm -rf "$WORK"' EXIT

python3 - "$RECORDS" "$FEATURES" >"$WORK/body.csv" <<'PY'
import random, sys
records, features = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(7)
out = sys.stdout
for _ in range(records):
    out.write(",".join(repr(round(rnd.uniform(-100, 100), 4)) for _ in range(features)))
    out.write("\n")
PY
SIZE=$(stat -c %s "$WORK/body.csv")

BACKEND_PORT=$(free_port); PORT=$(free_port); ADMIN=$(free_port)
start_bg "$WORK/backend.log" "$BIN" demo-backend --listen "127.0.0.1:$BACKEND_PORT"
wait_port "$BACKEND_PORT" 10
cat >"$WORK/gateway.toml" <<TOML
[backends.demo]
url = "http://127.0.0.1:$BACKEND_PORT"
[[routes]]
name = "default"
default = true
backend = "demo"
[routes.sagemaker]
default_model = "rowsum"
TOML
start_bg "$WORK/gateway.log" env RUST_LOG=warn "$BIN" --config "$WORK/gateway.toml" --listen "127.0.0.1:$PORT" --admin-listen "127.0.0.1:$ADMIN"
GW=$BG_PID
wait_port "$PORT" 10
# Warm up (connections, metadata cache), then take the idle RSS.
curl -sf -o /dev/null -H 'content-type: text/csv' --data-binary $'1,2\n' "http://127.0.0.1:$PORT/invocations"
IDLE=$(kib "$GW" VmRSS)

START=$(date +%s.%N)
STATUS=$(curl -s -o "$WORK/reply" -w '%{http_code}' -H 'content-type: text/csv' -H "accept: $ACCEPT" \
  --data-binary @"$WORK/body.csv" --max-time 600 "http://127.0.0.1:$PORT/invocations")
END=$(date +%s.%N)
PEAK=$(kib "$GW" VmHWM)
LINES=$(wc -l <"$WORK/reply")

[ "$STATUS" = 200 ] || { echo "status $STATUS: $(head -c 300 "$WORK/reply")" >&2; exit 1; }
python3 - "$RECORDS" "$FEATURES" "$SIZE" "$IDLE" "$PEAK" "$START" "$END" "$ACCEPT" "$LINES" "$(stat -c %s "$WORK/reply")" <<'PY'
import sys
records, features, size, idle, peak = (int(x) for x in sys.argv[1:6])
start, end = float(sys.argv[6]), float(sys.argv[7])
accept, lines, reply = sys.argv[8], int(sys.argv[9]), int(sys.argv[10])
secs = end - start
print(f"{records} records x {features} features, {size / 1e6:.1f} MB of CSV in, {reply / 1e6:.1f} MB of {accept} out ({lines} lines)")
print(f"time {secs:.2f} s: {records / secs:,.0f} records/s, {size / secs / 1e6:.1f} MB/s in")
print(f"gateway RSS: idle {idle / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB, {(peak - idle) / 1024:.1f} MiB above idle")
PY
