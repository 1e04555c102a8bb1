#!/usr/bin/env bash
# The main job: build topoprobe, measure this machine and print the topology it infers
# (the description is saved to $XDG_DATA_HOME/topoprobe/<host>.json, or $TOPOPROBE_FILE).
# Arguments are passed to `topoprobe infer` (for example --cpus 0-7, --full, --json);
# `scripts/main.sh --from-matrix data/examples/xeon-gold-6242-2s.csv` infers from a file.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --quiet --locked -p topoprobe-cli -p topoprobe-preload
exec target/release/topoprobe infer "$@"
