# shellcheck shell=bash
# HAProxy, a reference proxy of scripts/bench-proxy.sh. Sourced; needs
# common.sh.
#
# haproxy_config DIR BACKEND_PORT LISTEN_PORT: writes DIR/haproxy.cfg: one
# process in the foreground with 2 threads (`nbthread 2`), `mode http`,
# keep-alive on both sides with backend connections shared between client
# connections (`http-reuse always`), one access-log line per request
# (`option httplog`) written to standard output, which start_haproxy sends
# to a file as the other proxies write theirs. Listens on 127.0.0.1 only;
# no stats socket, no master process.
#
# The timeouts are HAProxy's required ones, long enough that no wrk run
# meets them; maxconn is set so that HAProxy does not size itself from the
# open-file limit.
haproxy_config() {
  local dir=$1 backend=$2 listen=$3
  mkdir -p "$dir"
  cat >"$dir/haproxy.cfg" <<CONF
global
  nbthread 2
  maxconn 4096
  log stdout format raw local0 info

defaults
  mode http
  log global
  option httplog
  http-reuse always
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s

frontend bench
  bind 127.0.0.1:$listen
  default_backend demo

backend demo
  server demo 127.0.0.1:$backend
CONF
}

# start_haproxy DIR BACKEND_PORT: sets PEER_PORT and PEER_PID.
start_haproxy() {
  local dir=$1
  PEER_PORT=$(free_port)
  haproxy_config "$dir" "$2" "$PEER_PORT"
  haproxy -c -q -f "$dir/haproxy.cfg" >"$dir/check.log" 2>&1 ||
    bench_die "haproxy rejected $dir/haproxy.cfg: $(cat "$dir/check.log")"
  # -db: stay in the foreground, one process.
  start_bg "$dir/access.log" haproxy -db -f "$dir/haproxy.cfg"
  # shellcheck disable=SC2034 # read by the caller
  PEER_PID=$BG_PID
  wait_port "$PEER_PORT" || bench_die "haproxy did not listen (log: $dir/access.log)"
}

# haproxy_version: "2.6.12-1+deb12u3".
haproxy_version() {
  haproxy -v 2>/dev/null | sed -n 's/^HAProxy version \([^ ]*\).*/\1/p'
}
