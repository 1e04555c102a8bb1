#!/usr/bin/env bash
# Runs every test of the workspace (unit, integration, property and doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo test --workspace --locked
