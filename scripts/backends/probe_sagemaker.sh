#!/usr/bin/env bash
# Runs probe_triton.py including the SageMaker front end of tritonserver.
#
# tritonserver's SageMaker listener (--allow-sagemaker=true) binds 0.0.0.0
# and has no address flag, so this script re-executes itself inside a new,
# private network namespace (unshare --net; only a loopback interface exists
# there) and starts a separate Triton there, with its own run folder.
# Needs root (or unprivileged user namespaces for `unshare -rn`).
#
# Usage: scripts/backends/probe_sagemaker.sh [OUTPUT_FILE]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TENSORGATE_CACHE_DIR:-${HOME:?set HOME or TENSORGATE_CACHE_DIR}/.cache/tensorgate}"

if [ "${TG_IN_NETNS:-}" != 1 ]; then
  "$here/../triton-backend.sh" setup
  if [ "$(id -u)" -eq 0 ]; then
    exec env TG_IN_NETNS=1 unshare --net -- "$0" "$@"
  fi
  exec env TG_IN_NETNS=1 unshare -rn -- "$0" "$@"
fi

ip link set lo up
# Nothing but loopback may exist in here.
if ip -o link show | grep -v ': lo:' | grep -q .; then
  echo "unexpected network interfaces in the namespace" >&2
  exit 1
fi
export TENSORGATE_RUN_DIR="$cache/run-sagemaker-netns"
export SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=simple
http_port=18000
sm_port=18080
trap '"$here/../triton-backend.sh" stop' EXIT
TENSORGATE_TRITON_ARGS="--allow-sagemaker=true --sagemaker-port=$sm_port" \
  "$here/../triton-backend.sh" start "$http_port" >/dev/null
out="${1:-/dev/stdout}"
"$cache/venv-triton/bin/python" "$here/probe_triton.py" "http://127.0.0.1:$http_port" \
  --sagemaker "http://127.0.0.1:$sm_port" >"$out"
