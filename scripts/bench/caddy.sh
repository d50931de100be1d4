# shellcheck shell=bash
# Caddy, a reference proxy of scripts/bench-proxy.sh. Sourced; needs common.sh.
#
# caddy_config DIR BACKEND_PORT LISTEN_PORT: writes DIR/Caddyfile: plain
# HTTP on 127.0.0.1 only (`bind`), no admin endpoint (`admin off`), no
# certificates (`auto_https off`), `reverse_proxy` to the backend with one
# access-log line per request to a file, as the other proxies. The upstream
# keeps up to 128 idle connections (`keepalive_idle_conns_per_host`), as
# nginx's `keepalive 128`: fewer than wrk's 64 connections would make Caddy
# open and close backend connections under load, a cost no other proxy
# here pays.
#
# start_caddy points HOME and the XDG folders into DIR, so Caddy keeps
# nothing (data, autosaved configuration) outside the run's folder.
caddy_config() {
  local dir=$1 backend=$2 listen=$3
  mkdir -p "$dir"
  cat >"$dir/Caddyfile" <<CONF
{
	admin off
	auto_https off
}

http://:$listen {
	bind 127.0.0.1
	log {
		output file $dir/access.log
	}
	reverse_proxy 127.0.0.1:$backend {
		transport http {
			keepalive_idle_conns_per_host 128
		}
	}
}
CONF
}

# caddy_env DIR: the environment Caddy runs with (see above).
caddy_env() {
  printf '%s\n' "HOME=$1" "XDG_DATA_HOME=$1/data" "XDG_CONFIG_HOME=$1/config"
}

# start_caddy DIR BACKEND_PORT: sets PEER_PORT and PEER_PID.
start_caddy() {
  local dir=$1 vars
  PEER_PORT=$(free_port)
  caddy_config "$dir" "$2" "$PEER_PORT"
  mapfile -t vars < <(caddy_env "$dir")
  env "${vars[@]}" caddy validate --config "$dir/Caddyfile" --adapter caddyfile >"$dir/check.log" 2>&1 ||
    bench_die "caddy rejected $dir/Caddyfile: $(tail -3 "$dir/check.log")"
  start_bg "$dir/stderr.log" env "${vars[@]}" caddy run --config "$dir/Caddyfile" --adapter caddyfile
  # shellcheck disable=SC2034 # read by the caller
  PEER_PID=$BG_PID
  wait_port "$PEER_PORT" || bench_die "caddy did not listen (log: $dir/stderr.log)"
}

# caddy_version: "2.6.2".
caddy_version() {
  caddy version 2>/dev/null | awk '{sub(/^v/, "", $1); print $1; exit}'
}
