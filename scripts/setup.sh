#!/usr/bin/env bash
# One-time setup of everything the tests need beyond the Rust toolchain:
#   - Debian packages: promtool (package "prometheus") to check a real
#     /metrics scrape; libpython for Triton's Python backend; wrk and nginx
#     (package "nginx-light"), haproxy and caddy for scripts/bench-proxy.sh;
#     valgrind for scripts/bench/instructions.sh;
#     libssl-dev and pkg-config, which the Decthings client's native-tls
#     needs to build;
#   - podman and runc (Debian), to build and run the container image
#     (scripts/image.sh);
#   - chromium (Debian), the real browser the status page is tested in
#     (tests/status/check_page.py);
#   - redis-server (Debian), which tests/it/shared_limits.rs starts on
#     127.0.0.1 for the rate limits several gateways share;
#   - cargo-deny (pinned, `cargo install`), for the dependency policy;
#   - Python venvs under ${TENSORGATE_CACHE_DIR:-~/.cache/tensorgate}: a real
#     Triton 2.51 with tritonclient, KServe 0.21, the SageMaker SDK with
#     boto3 (also what examples/ use), the deploy validators, and the
#     official OpenTelemetry protobuf definitions (the OTLP receiver of
#     tests/otel).
# Idempotent: a second run takes seconds (scripts/test.sh calls it first).
# The first run needs root (or sudo) for apt-get and the Debian, PyPI and
# crates.io registries (README.md, Quick start, has disk and time).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf 'setup: %s\n' "$*" >&2; }

apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    log "no apt-get: install $* by hand"
    return 1
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { log "need root to install $*"; return 1; }
    sudo="sudo"
  fi
  log "apt-get install $*"
  if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2
  fi
}

# Packages that also install a server (prometheus, nginx) must not start it:
# its default configuration listens on every address, and no listener may
# appear on a non-loopback address. A policy-rc.d that exits 101 tells the
# package scripts not to start services; ours is removed on exit.
deny_service_starts() {
  if [ "$(id -u)" -eq 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
}

if ! command -v promtool >/dev/null 2>&1; then
  # promtool ships in Debian's "prometheus" package, with the server.
  deny_service_starts
  apt_install prometheus
fi

bench_packages=()
command -v wrk >/dev/null 2>&1 || bench_packages+=(wrk)
command -v nginx >/dev/null 2>&1 || bench_packages+=(nginx-light)
command -v haproxy >/dev/null 2>&1 || bench_packages+=(haproxy)
command -v caddy >/dev/null 2>&1 || bench_packages+=(caddy)
# h2load, for scripts/bench-grpc.sh (not run by CI).
command -v h2load >/dev/null 2>&1 || bench_packages+=(nghttp2-client)
# valgrind, for scripts/bench/instructions.sh (its --smoke runs in CI).
command -v valgrind >/dev/null 2>&1 || bench_packages+=(valgrind)
if [ "${#bench_packages[@]}" -gt 0 ]; then
  # nginx-light's and caddy's scripts would start a server on port 80 of
  # every address (haproxy's default configuration listens nowhere, but is
  # a service all the same).
  deny_service_starts
  apt_install "${bench_packages[@]}"
  # A policy-rc.d that was already there may have let them start: stop the
  # services the packages started (scripts/bench-proxy.sh runs its own
  # proxies, on loopback, and stops them itself).
  for service in nginx haproxy caddy; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
      log "stopping the $service service its package started"
      systemctl stop "$service" || true
      systemctl disable --quiet "$service" 2>/dev/null || true
    elif [ -s "/run/$service.pid" ] && pid=$(cat "/run/$service.pid") &&
      [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$service" ]; then
      log "stopping the $service service its package started (pid $pid)"
      kill -TERM "$pid"
    fi
  done
fi

# tests/it/shared_limits.rs starts its own Redis on 127.0.0.1; the package's
# service (127.0.0.1:6379) is not started.
if ! command -v redis-server >/dev/null 2>&1; then
  deny_service_starts
  apt_install redis-server
fi

# The official Decthings client (a dev-dependency) reaches OpenSSL through
# reqwest's native-tls: openssl-sys needs the headers and pkg-config.
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists openssl; then
  apt_install pkg-config libssl-dev
fi

# The container image check (scripts/image.sh): Podman with Debian's runc
# (crun refuses this machine kind's cgroups).
container_packages=()
command -v podman >/dev/null 2>&1 || container_packages+=(podman)
[ -x /usr/sbin/runc ] || container_packages+=(runc)
if [ "${#container_packages[@]}" -gt 0 ]; then
  apt_install "${container_packages[@]}" || log "no ${container_packages[*]}: the image check will skip"
fi

# The status page's browser test: Debian's Chromium, headless.
if ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium || log "no chromium: the status page test will skip"
fi

bash scripts/deny.sh --install

started=$(date +%s)
bash scripts/triton-backend.sh setup
bash scripts/kserve-backend.sh setup
bash scripts/sagemaker/client.sh setup   # the SageMaker SDK and boto3, real clients for tests/sagemaker
bash scripts/otel.sh setup               # opentelemetry-proto, for the OTLP receiver of tests/otel
bash scripts/validate-deploy.sh >/dev/null  # creates its venv; validation itself runs in scripts/test.sh
log "done in $(( $(date +%s) - started ))s"
