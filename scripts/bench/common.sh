# shellcheck shell=bash
# Helpers of the benchmark scripts (scripts/bench-proxy.sh, bench-grpc.sh,
# scripts/bench/*.sh): wrk runs and their parsing, CPU time read from /proc,
# the binary, work folder and gateway under test. Ports, and processes
# started and stopped by PID, come from scripts/lib.sh, sourced here.
# Sourced, not executed. Everything listens on 127.0.0.1.

# shellcheck source=../lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

bench_log() { printf '%s: %s\n' "${BENCH_NAME:-bench-proxy}" "$*" >&2; }
bench_die() {
  bench_log "error: $*"
  exit 1
}

# cpu_ticks PID...: user+system CPU time of the processes, in clock ticks:
# fields 14 (utime) and 15 (stime) of /proc/PID/stat. A process's fields
# already sum all its threads, those that have ended included (their time
# stays with the process), so the threads under /proc/PID/task are not
# added again; children are counted by naming their PIDs (tree_pids).
cpu_ticks() {
  local pid total=0 t
  for pid in "$@"; do
    # Everything after the last ") " (the command name may hold spaces or
    # parentheses): field 3 onwards, so 14 and 15 are the 12th and 13th.
    t=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12 + $13}') || t=0
    total=$((total + ${t:-0}))
  done
  echo "$total"
}

# tree_pids PID: the process and all its descendants (a server and its
# workers), one PID a line.
tree_pids() {
  ps -e -o pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END {
      for (p in parent) {
        q = p
        for (depth = 0; q != "" && q != 0 && depth < 64; depth++) {
          if (q == root) { print p; break }
          q = parent[q]
        }
      }
    }' | sort -n
}

# wrk_parse FILE: "RPS P50_MS P99_MS REQUESTS ERRORS" from wrk --latency
# output; ERRORS counts non-2xx/3xx replies and socket errors.
wrk_parse() {
  awk '
    function ms(v) {
      if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
      if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
      if (v ~ /m$/) return substr(v, 1, length(v) - 1) * 60000
      if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
      return -1
    }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    /requests in/ { reqs = $1 }
    /Requests\/sec/ { rps = $2 }
    /Non-2xx/ { errors += $NF }
    /Socket errors/ { for (i = 4; i <= NF; i += 2) { v = $i; sub(",", "", v); errors += v } }
    END {
      if (rps == "" || p50 == "" || p99 == "") exit 1
      printf "%s %.6f %.6f %s %d\n", rps, p50, p99, reqs, errors
    }' "$1"
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

machine_line() {
  local cpu
  cpu=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)
  printf 'nproc %s, %s, kernel %s, %s GiB memory' "$(nproc)" "${cpu:-unknown CPU}" "$(uname -r)" \
    "$(awk '/MemTotal/ {printf "%d", $2 / 1048576 + 0.5}' /proc/meminfo)"
}

# bench_binary: sets BIN to $TENSORGATE_BIN, or to a release build made now.
bench_binary() {
  if [ -n "${TENSORGATE_BIN:-}" ]; then
    BIN=$TENSORGATE_BIN
  else
    BIN=${CARGO_TARGET_DIR:-target}/release/tensorgate
    cargo build --release --bin tensorgate >&2
  fi
  [ -x "$BIN" ] || bench_die "no tensorgate binary at $BIN"
}

# bench_workdir NAME: a fresh WORK folder, removed on exit (kept with
# BENCH_KEEP=1) after every server started is stopped, a Triton started
# into $WORK/triton-run included (TRITON_STARTED=1).
bench_workdir() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  TRITON_STARTED=0
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

bench_cleanup() {
  stop_all
  if [ "$TRITON_STARTED" = 1 ]; then
    TENSORGATE_RUN_DIR="$WORK/triton-run" bash scripts/triton-backend.sh stop 2>/dev/null || true
  fi
  if [ "${BENCH_KEEP:-0}" = 1 ]; then bench_log "kept $WORK"; else rm -rf "$WORK"; fi
}

# start_gateway BACKEND_URL: tensorgate ($BIN) with default logging to a
# file in $WORK; sets GW_PORT and GW_PID.
start_gateway() {
  local admin
  GW_PORT=$(free_port)
  admin=$(free_port)
  start_bg "$WORK/tensorgate-$GW_PORT.log" "$BIN" --backend "$1" \
    --listen "127.0.0.1:$GW_PORT" --admin-listen "127.0.0.1:$admin"
  # shellcheck disable=SC2034 # read by the caller
  GW_PID=$BG_PID
  wait_port "$GW_PORT" || bench_die "tensorgate did not listen on $GW_PORT (log: $WORK/tensorgate-$GW_PORT.log)"
}
