#!/usr/bin/env bash
# The OTLP receiver's environment: tests/otel/receiver.py decodes what
# tensorgate exports with the official `opentelemetry-proto` package.
#
# Usage: scripts/otel.sh setup | python ARGS...
#
#   setup        venv $TENSORGATE_CACHE_DIR/venv-otel with the pinned
#                scripts/backends/requirements-otel.txt. Idempotent.
#   python ARGS  run the venv's python (setup first if needed), e.g.
#                scripts/otel.sh python tests/otel/check_traces.py
#                scripts/otel.sh python tests/otel/receiver.py 4318
set -euo pipefail

TG_NAME=otel
# shellcheck source=backends/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/backends/common.sh"

VENV="$TG_CACHE_DIR/venv-otel"
REQUIREMENTS="$TG_BACKENDS_DIR/requirements-otel.txt"

case "${1:-}" in
  setup)
    tg_make_venv "$VENV" "$REQUIREMENTS"
    ;;
  python)
    tg_make_venv "$VENV" "$REQUIREMENTS"
    shift
    "$VENV/bin/python" "$@"
    ;;
  *)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
