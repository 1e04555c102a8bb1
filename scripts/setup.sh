#!/usr/bin/env bash
# Installs what topoprobe needs to build and test on a fresh Debian machine: a Rust
# toolchain (cargo) and the Debian packages listed in scripts/debian-packages.txt.
# Safe to run repeatedly: it only installs what is missing.
#
#   scripts/setup.sh             what the workspace needs
#   scripts/setup.sh --with-mpi  also Open MPI and libclang, for `topoprobe-cluster`
#                                (`cargo build --release -p topoprobe-cluster --features mpi`)
set -euo pipefail
cd "$(dirname "$0")/.."

lists=(scripts/debian-packages.txt)
for arg in "$@"; do
    case "$arg" in
        --with-mpi) lists+=(scripts/debian-packages-mpi.txt) ;;
        *) echo "setup: unknown option $arg (known: --with-mpi)" >&2; exit 2 ;;
    esac
done

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: installing the Rust toolchain with rustup" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal \
        --component rustfmt,clippy
    export PATH="$HOME/.cargo/bin:$PATH"
fi
for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1 && command -v rustup >/dev/null 2>&1; then
        rustup component add "$component"
    fi
done

missing=()
for list in "${lists[@]}"; do
    while read -r pkg; do
        case "$pkg" in ''|'#'*) continue ;; esac
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done < "$list"
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
