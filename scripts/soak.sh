#!/usr/bin/env bash
# Load and soak runs through the gateway to the demo backend, on loopback.
#
#   bash scripts/soak.sh [--requests N] [--concurrency C] [--kinds a,b]
#        [--no-write]
#   bash scripts/soak.sh --soak DURATION [--warmup DURATION]
#        [--concurrency C] [--kinds a,b] [--no-write]
#
# Mix (the default): N requests (default 100000) of every kind the load
# client knows (examples/soak/kinds.rs: V2 JSON infer on `simple`,
# binary-extension infer on `identity`, model metadata passed through, a
# Decthings `Model.evaluate` of `identity`, a SageMaker CSV invocation of
# `rowsum`), C
# at a time (default 64), through `tensorgate --backend` in front of
# `tensorgate demo-backend`. Fails unless every reply is a 200 with the body
# the demo computes.
# Soak (--soak 10m): the same mix for DURATION (also bounded at 50,000,000
# requests); the gateway's RSS is sampled every 10 s; fails on any error or
# if the RSS at the end is more than 10% above the RSS after the warm-up
# (default 60s).
# The last results go into docs/RELIABILITY.md between the soak markers
# unless --no-write. Durations are NUMBER followed by s, m or h. Every
# server listens on 127.0.0.1 at ports chosen at run time, and every
# process started is stopped by PID on exit. TENSORGATE_BIN and SOAK_CLIENT
# override the binaries (default: release builds).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE/.."
# shellcheck source=scripts/soak/common.sh
. "$HERE/soak/common.sh"

usage() {
  awk 'NR > 1 && /^set -/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2
  exit 64
}

REQUESTS=100000 CONCURRENCY=64 KINDS="" SOAK="" WARMUP=60s WRITE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --requests | --concurrency | --kinds | --soak | --warmup)
      [ $# -ge 2 ] || soak_die "$1 needs a value" ;;
  esac
  case "$1" in
    --requests) REQUESTS=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --kinds) KINDS=$2; shift 2 ;;
    --soak) SOAK=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --no-write) WRITE=0; shift ;;
    -h | --help) usage ;;
    *) soak_die "unknown argument $1 (see --help)" ;;
  esac
done
[[ $REQUESTS =~ ^[1-9][0-9]*$ ]] || soak_die "--requests must be a positive number"
[[ $CONCURRENCY =~ ^[1-9][0-9]*$ ]] || soak_die "--concurrency must be a positive number"
WARMUP_S=$(to_seconds "$WARMUP")
if [ -n "$SOAK" ]; then
  SOAK_S=$(to_seconds "$SOAK")
  [ "$WARMUP_S" -lt "$SOAK_S" ] || soak_die "--warmup must be shorter than --soak"
fi

BIN=${TENSORGATE_BIN:-target/release/tensorgate}
CLIENT=${SOAK_CLIENT:-target/release/examples/soak}
if [ -z "${TENSORGATE_BIN:-}" ] || [ -z "${SOAK_CLIENT:-}" ]; then
  soak_log "building tensorgate and the load client (release)"
  cargo build --locked --release --bin tensorgate --example soak >&2
fi

WORK=$(mktemp -d)
trap 'stop_all; rm -rf "$WORK"' EXIT
BACKEND_PORT=$(free_port) GW_PORT=$(free_port) ADMIN_PORT=$(free_port)
start_bg "$WORK/backend.log" "$BIN" demo-backend --listen "127.0.0.1:$BACKEND_PORT"
start_bg "$WORK/gateway.log" env RUST_LOG=warn "$BIN" --backend "http://127.0.0.1:$BACKEND_PORT" \
  --listen "127.0.0.1:$GW_PORT" --admin-listen "127.0.0.1:$ADMIN_PORT"
GW_PID=$BG_PID
wait_port "$BACKEND_PORT" || soak_die "the demo backend did not start: $(cat "$WORK/backend.log")"
wait_port "$GW_PORT" || soak_die "the gateway did not start: $(cat "$WORK/gateway.log")"

client() { # client JSON_OUT ARGS...
  local out=$1
  shift
  "$CLIENT" --target "127.0.0.1:$GW_PORT" --concurrency "$CONCURRENCY" \
    ${KINDS:+--kinds "$KINDS"} --json "$out" "$@"
}

if [ -z "$SOAK" ]; then
  soak_log "mix: $REQUESTS requests at concurrency $CONCURRENCY"
  status=0
  client "$WORK/mix.json" --requests "$REQUESTS" --duration 30m | tee "$WORK/mix.txt" || status=$?
  [ -s "$WORK/mix.json" ] || soak_die "the load client wrote no summary (exit $status)"
  [ "$WRITE" = 1 ] && write_section soak-mix "$(mix_section "$WORK/mix.json")"
  [ "$status" = 0 ] || soak_die "the mix had errors (see above)"
  soak_log "mix: no errors"
  exit 0
fi

soak_log "soak: $SOAK at concurrency $CONCURRENCY, RSS sampled every 10 s after a $WARMUP warm-up"
client "$WORK/soak.json" --requests 50000000 --duration "$SOAK" >"$WORK/soak.txt" 2>&1 &
CLIENT_PID=$!
started=$(date +%s)
: >"$WORK/rss"
while kill -0 "$CLIENT_PID" 2>/dev/null; do
  sleep 10
  printf '%s %s\n' "$(($(date +%s) - started))" "$(rss_kb "$GW_PID")" >>"$WORK/rss"
done
status=0
wait "$CLIENT_PID" || status=$?
# One more sample as the load ends, before the gateway is stopped.
printf '%s %s\n' "$(($(date +%s) - started))" "$(rss_kb "$GW_PID")" >>"$WORK/rss"
cat "$WORK/soak.txt"
[ -s "$WORK/soak.json" ] || soak_die "the load client wrote no summary (exit $status)"
read -r warm end verdict < <(rss_verdict "$WORK/rss" "$WARMUP_S")
soak_log "soak: RSS after warm-up ${warm} kB, at the end ${end} kB: $verdict"
[ "$WRITE" = 1 ] && write_section soak-rss "$(soak_section "$WORK/soak.json" "$WORK/rss" "$WARMUP_S" "$SOAK")"
[ "$status" = 0 ] || soak_die "the soak had errors (see above)"
[ "$verdict" = ok ] || soak_die "RSS grew more than 10% over the soak"
soak_log "soak: no errors, RSS within 10%"
