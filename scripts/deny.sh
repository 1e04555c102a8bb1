#!/usr/bin/env bash
# Checks the dependency policy of deny.toml with cargo-deny: licences, banned and duplicate
# versions, and sources; and RustSec advisories where the advisory database can be fetched.
# A machine that reaches only the package registries skips the advisories, saying so.
# cargo-deny is installed once into target/tools (a pinned version, from crates.io).
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.20.2
root="${CARGO_TARGET_DIR:-target}/tools"
deny="$root/bin/cargo-deny"
if ! "$deny" --version 2>/dev/null | grep -qF "$version"; then
    echo "deny: installing cargo-deny $version into $root" >&2
    cargo install --quiet --locked --version "$version" --root "$root" cargo-deny
fi
"$deny" --locked check licenses bans sources
# The advisory database lives in a git repository on GitHub; fetching it is bounded so that
# a machine without that route fails fast rather than waiting on it.
if timeout 120 "$deny" --locked fetch db >/dev/null 2>&1; then
    "$deny" --locked check --disable-fetch advisories
else
    echo "deny: advisories: skipped: the RustSec advisory database could not be fetched from this machine" >&2
fi
