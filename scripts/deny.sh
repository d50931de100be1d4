#!/usr/bin/env bash
# The dependency policy of deny.toml: allowed licenses, no registry but the
# default one, no git sources, duplicate versions shown as warnings.
#
#   bash scripts/deny.sh             check
#   bash scripts/deny.sh --install   only install cargo-deny (scripts/setup.sh)
#
# Installs cargo-deny (pinned version, `cargo install --locked`) when it is
# missing; the installed binary stays in cargo's bin folder for later runs.
# The check reads Cargo.lock and the local registry cache (advisories, which
# would need the network, are not checked). That cache must hold every
# package of Cargo.lock, other platforms' too (windows-sys, ...), which a
# build on this machine never downloads: `cargo fetch` gets them first (a
# no-op once they are there).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VERSION=0.20.2

if ! cargo deny --version 2>/dev/null | grep -q " $VERSION\$"; then
  echo "installing cargo-deny $VERSION (a few minutes, once)" >&2
  cargo install --locked "cargo-deny@$VERSION"
fi
[ "${1:-}" = --install ] && exit 0
cargo fetch --locked --quiet
cargo deny --frozen check bans licenses sources
