#!/usr/bin/env bash
# The one test entry point, for a fresh machine and for CI (.ci/run calls exactly this).
# Installs what the tests need, then checks formatting, lints and runs every test.
#
#   scripts/test.sh            everything
#   scripts/test.sh -- FILTER  only tests matching FILTER (passed to cargo nextest)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "tools"
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked
fi
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
export CCM_TEST_TOOLS="$PWD/target/test-tools" && scripts/test-tools.sh # validators the tests run

filter=()
if [ "${1:-}" = "--" ]; then shift; filter=("$@"); fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
# A missing or changed golden file fails the run instead of being written (review them with
# `cargo insta review`, or regenerate with INSTA_UPDATE=always and read the diff).
export INSTA_UPDATE=no
cargo nextest run --workspace --locked --no-fail-fast "${filter[@]}"
if [ ${#filter[@]} -eq 0 ]; then
  cargo test --workspace --locked --doc
fi
