# shellcheck shell=bash
# nginx_config DIR BACKEND_PORT LISTEN_PORT: writes DIR/nginx.conf, the
# reference proxy of scripts/bench-proxy.sh. nginx runs in the foreground
# (`daemon off`) as the current user, with every path it writes (pid, logs,
# temp folders) inside DIR, listening on 127.0.0.1 only.
#
# Beyond the settings the benchmark asks for (2 workers, a keep-alive
# upstream pool, HTTP/1.1 upstream, no buffering either way, access log on),
# keepalive_requests is raised on both sides: nginx's default of 1000 would
# close wrk's connections every 1000 requests, a cost tensorgate does not
# pay, and the comparison is against a tuned nginx, not a default one.
nginx_config() {
  local dir=$1 backend=$2 listen=$3 user_line=""
  # Only a root master switches users; left alone it would run its workers
  # as "nobody".
  if [ "$(id -u)" -eq 0 ]; then
    user_line="user $(id -un) $(id -gn);"
  fi
  mkdir -p "$dir/tmp"
  cat >"$dir/nginx.conf" <<CONF
worker_processes 2;
daemon off;
master_process on;
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
    listen 127.0.0.1:$listen;
    location / {
      proxy_pass http://demo;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
CONF
}
