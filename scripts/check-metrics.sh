#!/usr/bin/env bash
# Starts the tensorgate binary in demo mode on loopback ports, sends traffic
# of every kind (translated, rule violation, passthrough, no route), scrapes
# /metrics and runs `promtool check metrics` on it.
#   bash scripts/check-metrics.sh [path/to/tensorgate]
set -euo pipefail
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/tensorgate}
command -v promtool >/dev/null 2>&1 || { echo "promtool not found (apt-get install prometheus)" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
DATA=$(free_port)
ADMIN=$(free_port)
"$BIN" --listen "127.0.0.1:$DATA" --admin-listen "127.0.0.1:$ADMIN" >/dev/null 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$ADMIN/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
BODY='{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
curl -fs "http://127.0.0.1:$DATA/v2/models/simple/infer" -d "$BODY" >/dev/null
curl -s "http://127.0.0.1:$DATA/v2/models/simple/infer" -d '{"inputs":[]}' >/dev/null
curl -s "http://127.0.0.1:$DATA/v2/models/nope/infer" -d '{}' >/dev/null
curl -fs "http://127.0.0.1:$DATA/v2/health/ready" >/dev/null
sleep 0.2
SCRAPE=$(mktemp)
curl -fs "http://127.0.0.1:$ADMIN/metrics" >"$SCRAPE"
grep -q '^tensorgate_requests_total{' "$SCRAPE" || { echo "no tensorgate_requests_total in the scrape" >&2; exit 1; }
promtool check metrics <"$SCRAPE"
python3 scripts/dashboard_metrics.py deploy/grafana/tensorgate.json --check "$SCRAPE"
echo "promtool: $(grep -c '^tensorgate_' "$SCRAPE") tensorgate series OK"
rm -f "$SCRAPE"
