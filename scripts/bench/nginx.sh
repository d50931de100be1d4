# shellcheck shell=bash
# nginx, one of the reference proxies of scripts/bench-proxy.sh (and the one
# scripts/bench/instructions.sh --nginx counts). Sourced; needs common.sh.
#
# nginx_config DIR BACKEND_PORT LISTEN_PORT [WORKERS [MASTER]]: writes
# DIR/nginx.conf. nginx runs in the foreground (`daemon off`) as the current
# user, with every path it writes (pid, logs, temp folders) inside DIR,
# listening on 127.0.0.1 only. WORKERS defaults to 2; MASTER (on or off)
# to on: instructions.sh runs one worker with `master_process off`, so the
# process valgrind starts is the one that serves.
#
# Beyond the settings the benchmark asks for (2 workers, a keep-alive
# upstream pool, HTTP/1.1 upstream, no buffering either way, access log on),
# keepalive_requests is raised on both sides: nginx's default of 1000 would
# close wrk's connections every 1000 requests, a cost tensorgate does not
# pay, and the comparison is against a tuned nginx, not a default one.
#
# With NGINX_GRPC=1 it passes gRPC through instead (`listen ... http2` and
# `grpc_pass` over the same keep-alive upstream), for scripts/bench-grpc.sh.
nginx_config() {
  local dir=$1 backend=$2 listen=$3 workers=${4:-2} master=${5:-on} user_line=""
  local listen_opts="" location
  location='proxy_pass http://demo;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;'
  if [ "${NGINX_GRPC:-0}" = 1 ]; then
    listen_opts=" http2"
    location='grpc_pass grpc://demo;'
  fi
  # Only a root master switches users; left alone it would run its workers
  # as "nobody".
  if [ "$(id -u)" -eq 0 ]; then
    user_line="user $(id -un) $(id -gn);"
  fi
  mkdir -p "$dir/tmp"
  cat >"$dir/nginx.conf" <<CONF
worker_processes $workers;
daemon off;
master_process $master;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
$user_line

events {
  worker_connections 1024;
}

http {
  access_log $dir/access.log;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  client_max_body_size 64m;
  keepalive_requests 1000000;

  upstream demo {
    server 127.0.0.1:$backend;
    keepalive 128;
    keepalive_requests 1000000;
  }

  server {
    listen 127.0.0.1:$listen$listen_opts;
    location / {
      $location
    }
  }
}
CONF
}

# nginx_args DIR: the command-line arguments that run DIR/nginx.conf.
nginx_args() {
  printf '%s\n' -p "$1/" -c "$1/nginx.conf" -e "$1/error.log"
}

# start_nginx DIR BACKEND_PORT: nginx as the benchmark runs it (2 workers)
# in front of 127.0.0.1:BACKEND_PORT; sets PEER_PORT and PEER_PID.
start_nginx() {
  local dir=$1 args
  PEER_PORT=$(free_port)
  nginx_config "$dir" "$2" "$PEER_PORT"
  mapfile -t args < <(nginx_args "$dir")
  nginx -t -q "${args[@]}" || bench_die "nginx rejected $dir/nginx.conf"
  start_bg "$dir/stderr.log" nginx "${args[@]}"
  # shellcheck disable=SC2034 # read by the caller
  PEER_PID=$BG_PID
  wait_port "$PEER_PORT" || bench_die "nginx did not listen (log: $dir/error.log)"
}

# nginx_version: "1.22.1".
nginx_version() {
  nginx -v 2>&1 | sed -n 's#^nginx version: nginx/##p'
}
