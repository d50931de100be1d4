#!/usr/bin/env bash
# Starts three demo backends and the tensorgate binary on loopback ports (a
# default route to a backend of two replicas, shadowed to the third), sends
# traffic of every kind (translated, rule violation, passthrough, no route),
# scrapes /metrics, runs `promtool check metrics` on it and checks every
# dashboard query's metric is in it.
#   bash scripts/check-metrics.sh [path/to/tensorgate]
set -euo pipefail
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/tensorgate}
command -v promtool >/dev/null 2>&1 || { echo "promtool not found (apt-get install prometheus)" >&2; exit 1; }
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

DATA=$(free_port)
ADMIN=$(free_port)
trap stop_all EXIT
B1=$(free_port); B2=$(free_port); B3=$(free_port)
for port in "$B1" "$B2" "$B3"; do
  start_bg /dev/null "$BIN" demo-backend --listen "127.0.0.1:$port"
done
CONFIG=$(mktemp)
cat >"$CONFIG" <<EOF
[server]
listen = "127.0.0.1:$DATA"
admin_listen = "127.0.0.1:$ADMIN"
[backends.demo]
urls = ["http://127.0.0.1:$B1", "http://127.0.0.1:$B2"]
[backends.next]
url = "http://127.0.0.1:$B3"
[[routes]]
name = "default"
default = true
backend = "demo"
shadow = { backend = "next" }
[routes.inputs.INPUT0]
shape = [-1, 16]
allowed_types = ["INT32"]
[routes.inputs.INPUT1]
shape = [-1, 16]
allowed_types = ["INT32"]
EOF
start_bg /dev/null "$BIN" --config "$CONFIG"

# Each up to 10 s; one that is not ready shows in the checks below.
for url in "http://127.0.0.1:$ADMIN/readyz" "http://127.0.0.1:$B1/v2/health/ready" \
  "http://127.0.0.1:$B2/v2/health/ready" "http://127.0.0.1:$B3/v2/health/ready"; do
  wait_http "$url" || true
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
python3 scripts/dashboard_metrics.py deploy/grafana/tensorgate.json --check "$SCRAPE" --strict
echo "promtool: $(grep -c '^tensorgate_' "$SCRAPE") tensorgate series OK"
rm -f "$SCRAPE" "$CONFIG"
