#!/usr/bin/env bash
# Regenerates link/symbol-order.txt, the order in which the linker places
# the functions every request runs (see build.rs and
# scripts/bench/symbol_order.py), from callgrind runs of the release build
# serving the cases of scripts/bench/instructions.sh (passthrough GET, the
# small JSON infer, the 256-element one).
#
#   bash scripts/bench/symbol_order.sh
#
# Run it after changes to the request path, a dependency update or a new
# toolchain (each renames functions), then build again: the names in the
# list do not depend on the order, so one pass is enough. A name that no
# longer exists orders nothing (lld warns about it), and scripts/test.sh
# fails when fewer than 90 % of the names are in the release binary
# (symbol_order.py --check, the last line printed here too). Needs valgrind
# (scripts/setup.sh); about 2 minutes after the build. Loopback only,
# bounded (instructions.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
REQUESTS=300
BIN=${CARGO_TARGET_DIR:-target}/release/tensorgate
cargo build --release --locked --bin tensorgate
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
bash scripts/bench/instructions.sh --bin "$BIN" --mangled --top 0 --requests "$REQUESTS" --keep "$DIR" get infer infer256
python3 scripts/bench/symbol_order.py "$REQUESTS" "$DIR/cg-gateway-get.out" "$DIR/cg-gateway-infer.out" \
  "$DIR/cg-gateway-infer256.out" >link/symbol-order.txt
echo "symbol_order: $(wc -l <link/symbol-order.txt) functions in link/symbol-order.txt"
cargo build --release --locked --bin tensorgate
python3 scripts/bench/symbol_order.py --check "$BIN" link/symbol-order.txt
