#!/usr/bin/env bash
# Runs every test of the workspace (unit, integration, property and doc tests): first the
# build, then the tests, and prints the wall time of each at the end.
#
#   scripts/test.sh            the suite
#   scripts/test.sh --busy     the suite while every CPU is kept busy by another process and
#                              memory is under pressure (scripts/with-load.sh), as on a
#                              laptop doing other things or a shared CI runner
#
# Other arguments go to `cargo test` (e.g. `scripts/test.sh -p topoprobe-infer`).
set -euo pipefail
cd "$(dirname "$0")/.."
busy=()
args=()
for a in "$@"; do
    case "$a" in
        --busy) busy=(scripts/with-load.sh) ;;
        *) args+=("$a") ;;
    esac
done
[ ${#args[@]} -gt 0 ] || args=(--workspace)
scripts/setup.sh

start=$(date +%s)
"${busy[@]}" cargo test "${args[@]}" --locked --no-run
built=$(date +%s)
"${busy[@]}" cargo test "${args[@]}" --locked
done_at=$(date +%s)

mode="quiet"
[ ${#busy[@]} -eq 0 ] || mode="busy"
echo "test.sh ($mode): build $((built - start)) s, tests $((done_at - built)) s, total $((done_at - start)) s"
