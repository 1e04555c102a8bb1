#!/usr/bin/env bash
# The main job: build topoprobe and print the topology it infers.
# Until live measurement is available, it infers from a bundled measured matrix
# (2x Intel Xeon Gold 6242); pass another file as the first argument to use it instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --quiet -p topoprobe-cli
input="${1:-data/examples/xeon-gold-6242-2s.csv}"
case "$input" in
    *.mct) exec target/release/topoprobe infer --from-mct "$input" ;;
    *) exec target/release/topoprobe infer --from-matrix "$input" ;;
esac
