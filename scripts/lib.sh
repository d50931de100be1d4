# shellcheck shell=bash
# The helpers the scripts share, written once: free ports and waiting for
# them, processes started in the background and stopped by PID (and their
# process group), PID files. Sourced, not executed, by every script that
# needs one, from any working directory:
#
#   . "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"        # scripts/*.sh
#   . "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"     # scripts/*/*.sh
#
# Every address here is on loopback (127.0.0.1): a port is chosen there,
# waited for there, and nothing else is ever probed. The families of
# scripts keep what only they use beside them (scripts/backends/common.sh,
# scripts/bench/common.sh, scripts/soak/common.sh), each sourcing this file.

# The name messages start with: LIB_NAME if the caller set one, else the
# script's file name without ".sh".
LIB_NAME=${LIB_NAME:-$(basename "$0" .sh)}

# free_port: a TCP port free on 127.0.0.1 right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# port_free PORT: whether PORT can be bound on 127.0.0.1 right now.
port_free() {
  python3 -c 'import socket, sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}

# wait_port PORT [SECONDS]: until 127.0.0.1:PORT accepts a connection, at
# most SECONDS (default 20), trying every 50 ms.
wait_port() {
  local tries=$((${2:-20} * 20))
  for _ in $(seq 1 "$tries"); do
    (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# wait_http URL [SECONDS]: until URL answers 200 (curl -f), at most SECONDS
# (default 10), trying every 100 ms; says so on stderr when it never does.
wait_http() {
  local tries=$((${2:-10} * 10))
  for _ in $(seq 1 "$tries"); do
    curl -fs -o /dev/null "$1" && return 0
    sleep 0.1
  done
  printf '%s: no 200 from %s within %s s\n' "$LIB_NAME" "$1" "${2:-10}" >&2
  return 1
}

# pid_alive PID: the process exists and is not a zombie.
pid_alive() {
  local state
  kill -0 "$1" 2>/dev/null || return 1
  if [ -r "/proc/$1/stat" ]; then
    # Everything after the last ") " (the command name may hold spaces).
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ "$state" != Z ] || return 1
  fi
  return 0
}

# pid_file_pid FILE: prints the PID recorded in FILE if that process is
# alive; fails otherwise (no file, not a number, gone).
pid_file_pid() {
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1")
  case "$pid" in '' | *[!0-9]*) return 1 ;; esac
  pid_alive "$pid" || return 1
  printf '%s\n' "$pid"
}

# Processes started by start_bg, stopped by stop_all (callers put it in
# their EXIT trap).
LIB_PIDS=()

# start_bg LOGFILE COMMAND...: runs COMMAND in the background in its own
# session (so its process group id is its PID and its children can be
# stopped with it), output to LOGFILE; sets BG_PID.
start_bg() {
  local logfile=$1
  shift
  setsid "$@" </dev/null >"$logfile" 2>&1 &
  BG_PID=$!
  LIB_PIDS+=("$BG_PID")
}

# stop_pid PID [SECONDS]: TERM, up to SECONDS (default 10) for it to exit,
# then KILL; then, when PID leads its own process group (start_bg,
# setsid), whatever is left of that group (nginx workers, Triton's Python
# stubs) after a second's grace. Never signals the caller's own group.
# PID leaves the list stop_all stops, so that a number the system gives to
# another process later is not signalled.
stop_pid() {
  local pid=$1 limit=${2:-10} waited=0 pgid p kept=()
  pgid=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f3 || true)
  # A leader's group id is its pid, also once it is gone.
  [ -n "$pgid" ] || pgid=$pid
  kill -TERM "$pid" 2>/dev/null || true
  while pid_alive "$pid" && [ "$waited" -lt $((limit * 5)) ]; do
    sleep 0.2
    waited=$((waited + 1))
  done
  if pid_alive "$pid"; then
    printf '%s: pid %s still alive after %ss, sending KILL\n' "$LIB_NAME" "$pid" "$limit" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  # (A group led by PID, a child, is never the caller's own.)
  if [ "$pgid" = "$pid" ] && kill -0 -- "-$pgid" 2>/dev/null; then
    sleep 1
    kill -KILL -- "-$pgid" 2>/dev/null || true
  fi
  # Reaps it when it is the caller's child.
  wait "$pid" 2>/dev/null || true
  for p in ${LIB_PIDS[@]+"${LIB_PIDS[@]}"}; do
    [ "$p" = "$pid" ] || kept+=("$p")
  done
  LIB_PIDS=(${kept[@]+"${kept[@]}"})
}

# stop_all: every process start_bg started, TERM first to all of them (so
# they stop together), then stop_pid each.
stop_all() {
  local pid
  for pid in ${LIB_PIDS[@]+"${LIB_PIDS[@]}"}; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in ${LIB_PIDS[@]+"${LIB_PIDS[@]}"}; do
    stop_pid "$pid"
  done
  LIB_PIDS=()
}
