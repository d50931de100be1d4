#!/usr/bin/env bash
# The real SageMaker Python SDK (v2) and boto3, for golden fixtures and reply checks.
#
# Usage: scripts/sagemaker/client.sh setup | fixtures | check-replies | python ARGS...
#
#   setup          venv $TENSORGATE_CACHE_DIR/venv-sagemaker with the pinned
#                  scripts/backends/requirements-sagemaker.txt. Idempotent
#                  (stamped with the interpreter and the requirements' hash);
#                  fast when done.
#   fixtures       regenerate tests/fixtures/sagemaker/ request bodies and their
#                  .expect.json with the SDK's own serializers (gen_fixtures.py).
#   check-replies  run the SDK's deserializers on the committed reply samples
#                  (tests/fixtures/sagemaker/replies/, written by tensorgate's
#                  writers through `cargo test --test it sagemaker_codec::`) and
#                  compare with what they must read (check_replies.py).
#   python ARGS    run the venv's python (setup first if needed).
#
# Environment: TENSORGATE_CACHE_DIR (default ~/.cache/tensorgate),
# TENSORGATE_PYTHON (interpreter that creates the venv, default python3).
set -euo pipefail

TG_NAME=sagemaker
# shellcheck source=../backends/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/backends/common.sh"

VENV="$TG_CACHE_DIR/venv-sagemaker"
REQUIREMENTS="$TG_BACKENDS_DIR/requirements-sagemaker.txt"
HERE="$TG_REPO_DIR/scripts/sagemaker"
FIXTURES="$TG_REPO_DIR/tests/fixtures/sagemaker"

# The SDK prints a deprecation banner for v2 on import unless told not to.
export SAGEMAKER_SUPPRESS_V2_WARNING=1

setup() {
  tg_make_venv "$VENV" "$REQUIREMENTS"
}

case "${1:-}" in
  setup)
    setup
    ;;
  fixtures)
    setup
    "$VENV/bin/python" "$HERE/gen_fixtures.py" "$FIXTURES"
    ;;
  check-replies)
    setup
    "$VENV/bin/python" "$HERE/check_replies.py" "$FIXTURES/replies"
    ;;
  python)
    setup
    shift
    "$VENV/bin/python" "$@"
    ;;
  *)
    sed -n '2,17p' "$0" >&2
    exit 2
    ;;
esac
