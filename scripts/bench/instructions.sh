#!/usr/bin/env bash
# Instructions per request of the gateway, counted by valgrind's callgrind:
# exact and repeatable to a fraction of a percent, where CPU time on this
# shared machine moves by 5-10 % from run to run and the VM exposes no
# hardware counters. Use it to decide small changes on the request path.
#
#   bash scripts/bench/instructions.sh [--bin PATH] [--requests N] [--top K] [--gw-arg ARG]... [get|infer]...
#
# Starts the demo backend and the gateway (under callgrind) on loopback,
# sends 200 warm-up requests, zeroes the counts, sends N (default 1000)
# sequential requests with Python's http.client, and prints the gateway's
# instructions per request (all threads), then the K (default 25) functions
# with the largest inclusive cost per request below half the total (the
# runtime's and the connection's outer frames are left out). `get` is `GET /v2/models/simple`
# (passthrough); `infer` is the small JSON infer of scripts/bench/infer.lua.
# Each --gw-arg is passed to the gateway (e.g. --gw-arg --otel-endpoint
# --gw-arg http://127.0.0.1:4318 for the cost of traces).
# Needs valgrind (Debian: apt-get install valgrind). Bounded: every wait
# has a deadline, and everything started is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/lib.sh

BIN=target/release/tensorgate
REQUESTS=1000
TOP=25
CASES=()
GW_ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
  --bin) BIN=$2 && shift 2 ;;
  --requests) REQUESTS=$2 && shift 2 ;;
  --top) TOP=$2 && shift 2 ;;
  --gw-arg) GW_ARGS+=("$2") && shift 2 ;;
  get | infer) CASES+=("$1") && shift ;;
  *) bench_die "unknown argument $1" ;;
  esac
done
[ ${#CASES[@]} -gt 0 ] || CASES=(get infer)
command -v valgrind >/dev/null || bench_die "valgrind is not installed (apt-get install valgrind)"
[ -x "$BIN" ] || bench_die "no gateway binary at $BIN (cargo build --release)"

WORK=$(mktemp -d)
trap 'stop_all; rm -rf "$WORK"' EXIT

# send PORT N CASE: N sequential requests on one keep-alive connection;
# every answer must be a 200.
send() {
  timeout 600 python3 - "$@" <<'EOF'
import http.client, re, sys
port, n, case = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
body = re.search(r"^wrk\.body = '(.*)'$", open("scripts/bench/infer.lua").read(), re.M).group(1)
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
for _ in range(n):
    if case == "get":
        c.request("GET", "/v2/models/simple")
    else:
        c.request("POST", "/v2/models/simple/infer", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"{case}: answered {r.status}")
EOF
}

demo_port=$(free_port)
start_bg "$WORK/demo.log" "$BIN" demo-backend --listen "127.0.0.1:$demo_port"
wait_port "$demo_port" || bench_die "the demo backend did not listen (log: $WORK/demo.log)"

for case in "${CASES[@]}"; do
  port=$(free_port)
  admin=$(free_port)
  start_bg "$WORK/gw-$case.log" valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$WORK/cg-$case.%p" \
    "$BIN" --backend "http://127.0.0.1:$demo_port" --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" \
    ${GW_ARGS[@]+"${GW_ARGS[@]}"}
  gw=$BG_PID
  wait_port "$port" 120 || bench_die "the gateway did not listen under valgrind (log: $WORK/gw-$case.log)"
  send "$port" 200 "$case"
  callgrind_control -z "$gw" >/dev/null
  send "$port" "$REQUESTS" "$case"
  callgrind_control -d "$gw" >/dev/null
  dump=$(ls "$WORK"/cg-"$case".*.1 2>/dev/null | head -1)
  [ -n "$dump" ] || bench_die "callgrind wrote no dump for $case"
  total=$(awk '/^totals:/ {print $2}' "$dump")
  printf '%s: %d instructions per request (%d requests, %s)\n' "$case" "$((total / REQUESTS))" "$REQUESTS" "$BIN"
  callgrind_annotate --inclusive=yes --threshold=100 "$dump" 2>/dev/null |
    grep -E '^ *[0-9,]+ \(' | grep -v '=>' | sed -e 's/ \[[^]]*\]$//' -e 's#/rustc/[0-9a-f]*/library/##' \
    -e 's#[^ ]*/registry/src/[^/]*/##' -e "s#$PWD/##" | awk -v n="$REQUESTS" -v top="$TOP" -v total="$total" '
      { c = $1; gsub(",", "", c); if (c + 0 < 0.5 * total && shown < top) { $1 = sprintf("%8d", c / n); $2 = ""; print; shown++ } }'
  stop_pid "$gw"
done
