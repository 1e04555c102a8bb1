#!/usr/bin/env bash
# Kept for old instructions: scripts/install.sh --prefix PREFIX installs the C library,
# its header and pkg-config file, the command, its pinning library, man pages and
# completions.
# Usage: scripts/install-capi.sh PREFIX
set -euo pipefail
exec "$(dirname "$0")/install.sh" --prefix "${1:?usage: scripts/install-capi.sh PREFIX}"
