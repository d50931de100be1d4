#!/usr/bin/env bash
# One-time setup of everything the tests need beyond the Rust toolchain:
#   - Debian packages: promtool (package "prometheus") to check a real
#     /metrics scrape; libpython for Triton's Python backend; libssl-dev and
#     pkg-config, which the Decthings client's native-tls needs to build;
#   - Python venvs under ${TENSORGATE_CACHE_DIR:-~/.cache/tensorgate}: a real
#     Triton 2.51 with tritonclient, KServe 0.21, and the deploy validators.
# Idempotent: a second run takes seconds.
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

if ! command -v promtool >/dev/null 2>&1; then
  # promtool ships in Debian's "prometheus" package, which also installs the
  # server: keep the package scripts from starting it (no listener may
  # appear on a non-loopback address).
  if [ "$(id -u)" -eq 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt_install prometheus
fi

# The official Decthings client (a dev-dependency) reaches OpenSSL through
# reqwest's native-tls: openssl-sys needs the headers and pkg-config.
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists openssl; then
  apt_install pkg-config libssl-dev
fi

started=$(date +%s)
bash scripts/triton-backend.sh setup
bash scripts/kserve-backend.sh setup
bash scripts/validate-deploy.sh >/dev/null  # creates its venv; validation itself runs in scripts/test.sh
log "done in $(( $(date +%s) - started ))s"
