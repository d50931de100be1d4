# shellcheck shell=bash
# Helpers of the scripts that start a backend server or run a venv's Python
# (scripts/triton-backend.sh, scripts/kserve-backend.sh, scripts/otel.sh,
# scripts/sagemaker/client.sh): venvs, and servers started, waited for and
# stopped through PID files. Ports, PIDs and stopping come from
# scripts/lib.sh, sourced here. Sourced, not executed. Callers set TG_NAME
# (e.g. "triton") before sourcing.
#
# Environment:
#   TENSORGATE_CACHE_DIR  cache folder (default: $HOME/.cache/tensorgate)
#   TENSORGATE_RUN_DIR    pid/url/log files (default: $TENSORGATE_CACHE_DIR/run)
#   TENSORGATE_PYTHON     interpreter used to create the venvs (default: python3)

TG_BACKENDS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TG_REPO_DIR="$(cd "$TG_BACKENDS_DIR/../.." && pwd)"
TG_CACHE_DIR="${TENSORGATE_CACHE_DIR:-${HOME:?set HOME or TENSORGATE_CACHE_DIR}/.cache/tensorgate}"
TG_RUN_DIR="${TENSORGATE_RUN_DIR:-$TG_CACHE_DIR/run}"
TG_PYTHON="${TENSORGATE_PYTHON:-python3}"
LIB_NAME="${LIB_NAME:-$TG_NAME-backend}"
# shellcheck source=../lib.sh
. "$TG_BACKENDS_DIR/../lib.sh"

tg_log() {
  printf '%s-backend: %s\n' "$TG_NAME" "$*" >&2
}

tg_die() {
  tg_log "error: $*"
  exit 1
}

tg_pid_file() { printf '%s/%s.pid\n' "$TG_RUN_DIR" "$TG_NAME"; }
tg_url_file() { printf '%s/%s.url\n' "$TG_RUN_DIR" "$TG_NAME"; }
tg_log_file() { printf '%s/%s.log\n' "$TG_RUN_DIR" "$TG_NAME"; }

tg_sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$@" | cut -d' ' -f1 | tr -d '\n'
  else
    "$TG_PYTHON" - "$@" <<'EOF'
import hashlib, sys
h = hashlib.sha256()
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        h.update(f.read())
print(h.hexdigest(), end="")
EOF
  fi
}

tg_python_version() {
  "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}

tg_apt_install() {
  command -v apt-get >/dev/null 2>&1 || tg_die "need $* but apt-get is not available; install it by hand"
  if [ "$(id -u)" -ne 0 ]; then
    tg_die "need $* (apt-get install -y $*) but not running as root"
  fi
  tg_log "apt-get install -y $*"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2; then
    DEBIAN_FRONTEND=noninteractive apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2
  fi
}

# tg_make_venv VENV_DIR REQUIREMENTS_FILE
# Creates VENV_DIR with exactly the pinned requirements, or reuses it when a
# previous run completed with the same requirements and interpreter.
tg_make_venv() {
  local venv="$1" req="$2" pyver stamp want
  command -v "$TG_PYTHON" >/dev/null 2>&1 || tg_die "$TG_PYTHON not found (set TENSORGATE_PYTHON)"
  pyver="$(tg_python_version "$TG_PYTHON")"
  want="python=$pyver req=$(tg_sha256 "$req")"
  stamp="$venv/.tensorgate-complete"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
    return 0
  fi
  if ! "$TG_PYTHON" -c 'import ensurepip' >/dev/null 2>&1; then
    tg_apt_install "python${pyver}-venv"
  fi
  tg_log "creating $venv (python $pyver)"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  # Explicit checks: callers may run this where `set -e` does not apply, and
  # the stamp must only ever mark a complete install.
  "$TG_PYTHON" -m venv "$venv" >&2 || tg_die "could not create $venv"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >&2; then
    rm -rf "$venv"
    tg_die "could not install $req into $venv"
  fi
  printf '%s\n' "$want" >"$stamp"
}

# Prints the recorded PID if that process is still alive.
tg_running_pid() {
  pid_file_pid "$(tg_pid_file)"
}

tg_show_log_tail() {
  if [ -f "$(tg_log_file)" ]; then
    tg_log "last lines of $(tg_log_file):"
    tail -n "${1:-40}" "$(tg_log_file)" >&2
  fi
}

# tg_start PORT READY_PATH TIMEOUT_S ENV_VAR_NAME -- COMMAND...
# Runs COMMAND in its own session (so its process group id is its PID) with
# output to the log file, waits for http://127.0.0.1:PORT/READY_PATH to answer
# 200, records pid/url and prints ENV_VAR_NAME=URL on stdout.
tg_start() {
  local port="$1" ready_path="$2" timeout="$3" var="$4" pid url rc started
  shift 5
  mkdir -p "$TG_RUN_DIR"
  url="http://127.0.0.1:$port"
  # Otherwise the readiness poll below could be answered by whoever holds it.
  port_free "$port" || tg_die "port $port on 127.0.0.1 is in use"
  started="$(date +%s)"
  : >"$(tg_log_file)"
  setsid "$@" </dev/null >>"$(tg_log_file)" 2>&1 &
  pid=$!
  printf '%s\n' "$pid" >"$(tg_pid_file)"
  printf '%s\n' "$url" >"$(tg_url_file)"
  rc=0
  "$TG_PYTHON" "$TG_BACKENDS_DIR/svc.py" wait-ready "$url$ready_path" "$timeout" "$pid" || rc=$?
  if [ "$rc" -ne 0 ]; then
    if [ "$rc" -eq 2 ]; then
      tg_log "server exited during startup"
    else
      tg_log "server not ready after ${timeout}s"
    fi
    tg_show_log_tail 60
    tg_stop_pid "$pid"
    rm -f "$(tg_pid_file)" "$(tg_url_file)"
    exit 1
  fi
  tg_log "ready at $url (pid $pid, log $(tg_log_file), $(($(date +%s) - started))s)"
  printf '%s=%s\n' "$var" "$url"
}

# Stops PID: TERM, wait up to TENSORGATE_STOP_TIMEOUT (default 20 s), then KILL.
# The server was started as a session leader, so its process group (its
# children, e.g. Triton's Python backend stubs) is stopped as well.
tg_stop_pid() {
  stop_pid "$1" "${TENSORGATE_STOP_TIMEOUT:-20}"
}

tg_stop() {
  local pid
  if pid="$(tg_running_pid)"; then
    tg_log "stopping pid $pid"
    tg_stop_pid "$pid"
    tg_log "stopped"
  else
    tg_log "not running"
  fi
  rm -f "$(tg_pid_file)" "$(tg_url_file)"
}

# tg_status READY_PATH: exit 0 running+ready, 1 running but not ready, 3 stopped.
tg_status() {
  local pid url
  if ! pid="$(tg_running_pid)"; then
    echo "$TG_NAME: stopped"
    return 3
  fi
  url="$(cat "$(tg_url_file)" 2>/dev/null || true)"
  if "$TG_PYTHON" "$TG_BACKENDS_DIR/svc.py" probe "$url$1"; then
    echo "$TG_NAME: running pid=$pid url=$url ready"
    return 0
  fi
  echo "$TG_NAME: running pid=$pid url=$url NOT ready"
  return 1
}

# tg_pick_port [PORT]: validates PORT or picks a free loopback port.
tg_pick_port() {
  local port="${1:-}"
  if [ -z "$port" ]; then
    free_port
    return 0
  fi
  case "$port" in '' | *[!0-9]*) tg_die "invalid port: $port" ;; esac
  printf '%s\n' "$port"
}

# tg_already_running PORT: if a server is recorded and alive, print its URL
# variable and return 0 (error if a different explicit port was requested).
tg_already_running() {
  local want_port="$1" var="$2" pid url
  pid="$(tg_running_pid)" || return 1
  url="$(cat "$(tg_url_file)" 2>/dev/null || true)"
  if [ -n "$want_port" ] && [ "$url" != "http://127.0.0.1:$want_port" ]; then
    tg_die "already running (pid $pid, $url); stop it first"
  fi
  tg_log "already running (pid $pid)"
  printf '%s=%s\n' "$var" "$url"
}
