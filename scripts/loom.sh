#!/usr/bin/env bash
# Model-checks the mutual exclusion of every lock of topoprobe-sync with loom (every
# interleaving up to a preemption bound of 3, 1 with three threads). A separate target directory keeps the
# `--cfg loom` build apart from the normal one.
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom" \
    cargo test -p topoprobe-sync --release --locked --test loom "$@"
