#!/usr/bin/env bash
# Builds the container image from the Dockerfile with Docker or Podman, then
# runs it as a non-root user and checks /healthz, the demo infer and /metrics.
#
#   bash scripts/image.sh [--builder stage|host] [--tag TAG] [--no-run]
#
# --builder stage  compile inside the Dockerfile's builder stage (BUILDER_IMAGE);
# --builder host   `cargo build --release` here, and the Dockerfile copies that
#                  binary (BINARY_FROM=prebuilt; dist/tensorgate in the context).
#                  Default: stage with a registry, host with the stand-ins (a
#                  from-scratch release build in a container takes about 15 minutes
#                  on 2 cores, the host's target/ has it already).
#
# Engine: $TENSORGATE_ENGINE (docker or podman), else Docker if its daemon
# answers, else Podman. Podman runs with what this machine kind needs: a
# containers.conf with `default_ulimits = []` (crun/runc may not raise
# RLIMIT_NOFILE here), Debian's runc when it is installed, and
# `--cgroup-manager=cgroupfs`.
#
# Base images: $BUILDER_IMAGE and $RUNTIME_IMAGE when set; else the Dockerfile's
# defaults when they can be pulled; else local stand-ins made from this Debian
# host (scripts/image/standins.sh): the runtime from the host's glibc, libgcc
# and CA certificates, the builder (only for --builder stage) a debootstrapped
# bookworm with the host's Rust toolchain.
#
# The checks run the image on the host network with every listener on
# 127.0.0.1 (--listen / --admin-listen override the image's 0.0.0.0): the demo
# (healthz, infer, metrics), then `serve --config /etc/tensorgate/tensorgate.toml`
# (the baked-in configuration) in front of `demo-backend` from the same image.
# Containers are removed on exit, whatever happens. Needs root for the stand-ins.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

BUILDER=""
TAG=localhost/tensorgate:dev
RUN_CHECKS=1
while [ $# -gt 0 ]; do
  case $1 in
    --builder) BUILDER=$2; shift 2 ;;
    --tag) TAG=$2; shift 2 ;;
    --no-run) RUN_CHECKS=""; shift ;;
    *) echo "usage: $0 [--builder stage|host] [--tag TAG] [--no-run]" >&2; exit 2 ;;
  esac
done

say() { printf 'image: %s\n' "$*" >&2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tensorgate-image.XXXXXX")
CONTAINERS=()
cleanup() {
  for c in ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
    "${ENGINE[@]}" rm -f "$c" >/dev/null 2>&1 || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# ---------------------------------------------------------------- engine
engine=${TENSORGATE_ENGINE:-}
if [ -z "$engine" ]; then
  if command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; then
    engine=docker
  elif command -v podman >/dev/null 2>&1; then
    engine=podman
  else
    echo "image: no container engine: install Docker or Podman (scripts/setup.sh installs podman)" >&2
    exit 1
  fi
fi
case $engine in
  docker) ENGINE=(docker) ;;
  podman)
    if [ -z "${CONTAINERS_CONF:-}" ]; then
      printf '[containers]\ndefault_ulimits = []\n' >"$WORK/containers.conf"
      export CONTAINERS_CONF="$WORK/containers.conf"
    fi
    ENGINE=(podman --cgroup-manager=cgroupfs)
    if [ -x /usr/sbin/runc ]; then ENGINE+=(--runtime /usr/sbin/runc); fi
    ;;
  *) echo "image: TENSORGATE_ENGINE must be docker or podman" >&2; exit 2 ;;
esac
say "engine: ${ENGINE[*]}"

# ---------------------------------------------------------------- bases
# shellcheck source=scripts/image/standins.sh
source "$ROOT/scripts/image/standins.sh"
dockerfile_default() { sed -n "s/^ARG $1=//p" Dockerfile | head -n1; }
RUST_VERSION=$(dockerfile_default RUST_VERSION)
DEFAULT_BUILDER=$(dockerfile_default BUILDER_IMAGE | sed "s/\${RUST_VERSION}/$RUST_VERSION/")
DEFAULT_RUNTIME=$(dockerfile_default RUNTIME_IMAGE)

have_image() { "${ENGINE[@]}" image inspect "$1" >/dev/null 2>&1; }
pullable() { have_image "$1" || timeout 120 "${ENGINE[@]}" pull -q "$1" >/dev/null 2>&1; }

STANDINS=""
RUNTIME=${RUNTIME_IMAGE:-}
if [ -z "$RUNTIME" ]; then
  if pullable "$DEFAULT_RUNTIME"; then
    RUNTIME=$DEFAULT_RUNTIME
  else
    say "cannot pull $DEFAULT_RUNTIME: using a local stand-in"
    STANDINS=1
    RUNTIME=localhost/tensorgate-runtime:bookworm
    have_image "$RUNTIME" || runtime_standin "$RUNTIME"
  fi
fi
[ -n "$BUILDER" ] || { if [ -n "$STANDINS" ]; then BUILDER=host; else BUILDER=stage; fi; }

BUILD_ARGS=(--build-arg "RUNTIME_IMAGE=$RUNTIME")
case $BUILDER in
  stage)
    BUILDER_BASE=${BUILDER_IMAGE:-}
    if [ -z "$BUILDER_BASE" ]; then
      if pullable "$DEFAULT_BUILDER"; then
        BUILDER_BASE=$DEFAULT_BUILDER
      else
        say "cannot pull $DEFAULT_BUILDER: using a local stand-in"
        BUILDER_BASE=localhost/tensorgate-builder:bookworm
        have_image "$BUILDER_BASE" || builder_standin "$BUILDER_BASE"
      fi
    fi
    BUILD_ARGS+=(--build-arg "BUILDER_IMAGE=$BUILDER_BASE" --build-arg BINARY_FROM=builder)
    ;;
  host)
    say "cargo build --release (host)"
    cargo build --release --locked --bin tensorgate
    mkdir -p dist
    cp "${CARGO_TARGET_DIR:-target}/release/tensorgate" dist/tensorgate
    BUILD_ARGS+=(--build-arg BINARY_FROM=prebuilt)
    ;;
  *) echo "image: --builder must be stage or host" >&2; exit 2 ;;
esac

say "build $TAG (${BUILD_ARGS[*]})"
started=$(date +%s)
# Host network for RUN steps (the builder fetches crates): no bridge is made.
"${ENGINE[@]}" build --network host "${BUILD_ARGS[@]}" -t "$TAG" . >&2
say "built in $(($(date +%s) - started))s: $("${ENGINE[@]}" image inspect --format '{{.Size}}' "$TAG") bytes"
[ -n "$RUN_CHECKS" ] || exit 0

# ---------------------------------------------------------------- run
# shellcheck source=lib.sh
. "$ROOT/scripts/lib.sh"
run() { # NAME ARGS...: detached, non-root, host network
  local name=$1
  shift
  CONTAINERS+=("$name")
  "${ENGINE[@]}" run -d --name "$name" --network host --user 10001:10001 --read-only "$TAG" "$@" >/dev/null
}
logs_on_failure() {
  for c in "${CONTAINERS[@]}"; do
    echo "--- logs of $c" >&2
    "${ENGINE[@]}" logs "$c" >&2 2>&1 || true
  done
}
trap 'logs_on_failure; cleanup' ERR

BODY='{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
SUM='"data":[2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]'
check_gateway() { # DATA ADMIN WHAT
  local data=$1 admin=$2 what=$3 got
  wait_http "http://127.0.0.1:$admin/healthz"
  got=$(curl -fsS "http://127.0.0.1:$data/v2/models/simple/infer" -d "$BODY")
  case $got in
    *"$SUM"*) ;;
    *) echo "image: $what: unexpected infer reply: $got" >&2; return 1 ;;
  esac
  curl -fsS "http://127.0.0.1:$admin/metrics" >"$WORK/metrics"
  grep -q '^tensorgate_requests_total{.*code="200"' "$WORK/metrics" \
    || { echo "image: $what: no 200 counted in /metrics" >&2; return 1; }
  grep -q '^tensorgate_build_info{' "$WORK/metrics" \
    || { echo "image: $what: no build info in /metrics" >&2; return 1; }
  say "$what: /healthz 200, infer sum ok, /metrics counts it"
}

user=$("${ENGINE[@]}" image inspect --format '{{.Config.User}}' "$TAG")
[ "$user" = "10001:10001" ] || { echo "image: USER is $user, not 10001:10001" >&2; exit 1; }

# 1. The default command (the demo), its listeners moved to 127.0.0.1.
D=$(free_port); A=$(free_port)
run "tg-image-demo-$$" --listen "127.0.0.1:$D" --admin-listen "127.0.0.1:$A"
check_gateway "$D" "$A" "demo"
pid=$("${ENGINE[@]}" inspect --format '{{.State.Pid}}' "tg-image-demo-$$")
uid=$(stat -c %u "/proc/$pid")
[ "$uid" = 10001 ] || { echo "image: the gateway runs as uid $uid, not 10001" >&2; exit 1; }
say "demo: the process runs as uid $uid"

# 2. The baked-in configuration in front of demo-backend: the configuration
#    expects its backend at 127.0.0.1:8001, so both share the host network and
#    this check needs that port free.
if curl -s -o /dev/null "http://127.0.0.1:8001/" 2>/dev/null; then
  say "127.0.0.1:8001 is taken: skipping the baked-in configuration check"
else
  run "tg-image-backend-$$" demo-backend --listen 127.0.0.1:8001
  wait_http "http://127.0.0.1:8001/v2/health/ready"
  D=$(free_port); A=$(free_port)
  run "tg-image-config-$$" serve --config /etc/tensorgate/tensorgate.toml \
    --listen "127.0.0.1:$D" --admin-listen "127.0.0.1:$A"
  check_gateway "$D" "$A" "serve --config /etc/tensorgate/tensorgate.toml"
fi
trap cleanup EXIT
trap - ERR
say "ok: $TAG runs as 10001:10001"
