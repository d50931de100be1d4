#!/usr/bin/env bash
# Real NVIDIA Triton Inference Server (2.51, CPU only) for tensorgate tests.
#
# Usage: scripts/triton-backend.sh setup | start [PORT] | stop | status | python ARGS...
#
#   setup        venv $TENSORGATE_CACHE_DIR/venv-triton with the pinned
#                scripts/backends/requirements-triton.txt (nvidia-pytriton 0.7.0
#                ships the tritonserver binary and its Python backend), plus a
#                backend folder $TENSORGATE_CACHE_DIR/triton-backends/python with
#                the stub for the venv's Python. Idempotent; fast when done.
#   start [PORT] serve tests/models on 127.0.0.1:PORT (a free port if omitted),
#                wait until /v2/health/ready is 200 and print
#                TENSORGATE_TRITON_URL=http://127.0.0.1:PORT on stdout, so
#                   eval "$(scripts/triton-backend.sh start)"
#                works. Runs setup first if needed. pid/url/log files are in
#                $TENSORGATE_CACHE_DIR/run (triton.pid, triton.url, triton.log).
#   stop         TERM (then KILL after TENSORGATE_STOP_TIMEOUT s) by recorded PID.
#   status       exit 0 running and ready, 1 running not ready, 3 stopped.
#   python ARGS  run the venv's python (tritonclient[http,grpc],
#                grpcio-health-checking, numpy, pytest); setup first if needed.
#
# Environment: TENSORGATE_CACHE_DIR (default ~/.cache/tensorgate),
# TENSORGATE_RUN_DIR, TENSORGATE_PYTHON (default python3),
# TENSORGATE_TRITON_START_TIMEOUT (default 60), TENSORGATE_TRITON_MODELS
# (model repository, default tests/models), TENSORGATE_TRITON_ARGS (extra
# tritonserver flags, split on spaces).
set -euo pipefail

TG_NAME=triton
# shellcheck source=backends/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/backends/common.sh"

VENV="$TG_CACHE_DIR/venv-triton"
BACKEND_DIR="$TG_CACHE_DIR/triton-backends"
REQUIREMENTS="$TG_BACKENDS_DIR/requirements-triton.txt"
MODELS="${TENSORGATE_TRITON_MODELS:-$TG_REPO_DIR/tests/models}"
START_TIMEOUT="${TENSORGATE_TRITON_START_TIMEOUT:-60}"

site_packages() {
  "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
}

ensure_libpython() {
  local ver="$1"
  if [ -e "/usr/lib/x86_64-linux-gnu/libpython${ver}.so.1.0" ] ||
    { command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q "libpython${ver}\.so\.1\.0"; }; then
    return 0
  fi
  tg_apt_install "libpython${ver}"
}

setup() {
  local pyver sp stub stamp want
  tg_make_venv "$VENV" "$REQUIREMENTS"
  pyver="$(tg_python_version "$VENV/bin/python")"
  # The Python backend stub links against the shared libpython of this version.
  ensure_libpython "$pyver"
  sp="$(site_packages)"
  stub="$sp/pytriton/tritonserver/python_backend_stubs/$pyver/triton_python_backend_stub"
  [ -x "$stub" ] || tg_die "nvidia-pytriton has no Python backend stub for Python $pyver"
  stamp="$BACKEND_DIR/.tensorgate-complete"
  want="$(cat "$VENV/.tensorgate-complete")"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$BACKEND_DIR/python/triton_python_backend_stub" ]; then
    return 0
  fi
  tg_log "laying out $BACKEND_DIR"
  rm -rf "$BACKEND_DIR"
  mkdir -p "$BACKEND_DIR/python"
  cp "$sp/pytriton/tritonserver/backends/python/libtriton_python.so" \
    "$sp/pytriton/tritonserver/backends/python/triton_python_backend_utils.py" \
    "$stub" "$BACKEND_DIR/python/"
  printf '%s\n' "$want" >"$stamp"
}

start() {
  local port sp triton_bin libs extra=()
  if tg_already_running "${1:-}" TENSORGATE_TRITON_URL; then
    return 0
  fi
  setup
  port="$(tg_pick_port "${1:-}")"
  sp="$(site_packages)"
  triton_bin="$sp/pytriton/tritonserver/bin/tritonserver"
  libs="$sp/nvidia_pytriton.libs"
  if [ -n "${TENSORGATE_TRITON_ARGS:-}" ]; then
    read -r -a extra <<<"$TENSORGATE_TRITON_ARGS"
  fi
  [ -d "$MODELS" ] || tg_die "model repository not found: $MODELS"
  # The venv's bin goes first on PATH so the embedded Python finds numpy.
  tg_start "$port" /v2/health/ready "$START_TIMEOUT" TENSORGATE_TRITON_URL -- \
    env "PATH=$VENV/bin:$PATH" "LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$triton_bin" \
    --model-repository="$MODELS" \
    --backend-directory="$BACKEND_DIR" \
    --cache-directory="$sp/pytriton/tritonserver/caches" \
    --http-address=127.0.0.1 --http-port="$port" \
    --allow-grpc=false --allow-metrics=false --allow-gpu-metrics=false \
    --allow-cpu-metrics=false --allow-sagemaker=false --allow-vertex-ai=false \
    --strict-readiness=true --exit-on-error=true --log-verbose=0 \
    ${extra[@]+"${extra[@]}"}
}

case "${1:-}" in
  setup)
    setup
    tg_log "setup complete ($VENV)"
    ;;
  start) start "${2:-}" ;;
  stop) tg_stop ;;
  status) tg_status /v2/health/ready ;;
  python)
    shift
    setup
    exec "$VENV/bin/python" "$@"
    ;;
  *)
    echo "usage: $0 setup | start [PORT] | stop | status | python ARGS..." >&2
    exit 64
    ;;
esac
