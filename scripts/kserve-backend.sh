#!/usr/bin/env bash
# KServe 0.21 V2 model server (tests/kserve/server.py) for tensorgate tests.
#
# Usage: scripts/kserve-backend.sh setup | start [PORT] | stop | status
#
#   setup        venv $TENSORGATE_CACHE_DIR/venv-kserve with the pinned
#                scripts/backends/requirements-kserve.txt. Idempotent.
#   start [PORT] serve kserve_simple and kserve_identity on 127.0.0.1:PORT
#                (a free port if omitted; the server binds loopback only), wait
#                until /v2/health/ready is 200 and print
#                TENSORGATE_KSERVE_URL=http://127.0.0.1:PORT on stdout, so
#                   eval "$(scripts/kserve-backend.sh start)"
#                works. Runs setup first if needed. pid/url/log files are in
#                $TENSORGATE_CACHE_DIR/run (kserve.pid, kserve.url, kserve.log).
#   stop         TERM (then KILL after TENSORGATE_STOP_TIMEOUT s) by recorded PID.
#   status       exit 0 running and ready, 1 running not ready, 3 stopped.
#
# Environment: TENSORGATE_CACHE_DIR (default ~/.cache/tensorgate),
# TENSORGATE_RUN_DIR, TENSORGATE_PYTHON (default python3),
# TENSORGATE_KSERVE_START_TIMEOUT (default 60), TENSORGATE_KSERVE_GRPC_PORT
# (also serve gRPC, inference.GRPCInferenceService, on 127.0.0.1:PORT; the
# caller checks it with its own client).
set -euo pipefail

TG_NAME=kserve
# shellcheck source=backends/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/backends/common.sh"

VENV="$TG_CACHE_DIR/venv-kserve"
REQUIREMENTS="$TG_BACKENDS_DIR/requirements-kserve.txt"
SERVER="$TG_REPO_DIR/tests/kserve/server.py"
START_TIMEOUT="${TENSORGATE_KSERVE_START_TIMEOUT:-60}"

setup() {
  tg_make_venv "$VENV" "$REQUIREMENTS"
}

start() {
  local port grpc
  if tg_already_running "${1:-}" TENSORGATE_KSERVE_URL; then
    return 0
  fi
  setup
  port="$(tg_pick_port "${1:-}")"
  grpc=()
  [ -z "${TENSORGATE_KSERVE_GRPC_PORT:-}" ] || grpc=(--grpc_port "$TENSORGATE_KSERVE_GRPC_PORT")
  tg_start "$port" /v2/health/ready "$START_TIMEOUT" TENSORGATE_KSERVE_URL -- \
    env PYTHONUNBUFFERED=1 "$VENV/bin/python" "$SERVER" --http_port "$port" ${grpc[@]+"${grpc[@]}"}
}

case "${1:-}" in
  setup)
    setup
    tg_log "setup complete ($VENV)"
    ;;
  start) start "${2:-}" ;;
  stop) tg_stop ;;
  status) tg_status /v2/health/ready ;;
  *)
    echo "usage: $0 setup | start [PORT] | stop | status" >&2
    exit 64
    ;;
esac
