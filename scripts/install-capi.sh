#!/usr/bin/env bash
# Builds and installs topoprobe's C API: libtopoprobe.so and libtopoprobe.a in PREFIX/lib,
# topoprobe.h in PREFIX/include, topoprobe.pc in PREFIX/lib/pkgconfig; and the `topoprobe`
# command with its preload library (for `topoprobe run`) in PREFIX/bin and PREFIX/lib.
# Usage: scripts/install-capi.sh PREFIX      (for example /usr/local or $HOME/.local)
set -euo pipefail
prefix="${1:?usage: scripts/install-capi.sh PREFIX}"
cd "$(dirname "$0")/.."
cargo build --release --locked -p topoprobe-capi -p topoprobe-preload -p topoprobe-cli
target="${CARGO_TARGET_DIR:-target}/release"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
install -d "$prefix/lib/pkgconfig" "$prefix/include" "$prefix/bin"
install -m 755 "$target/libtopoprobe.so" "$target/libtopoprobe_preload.so" "$prefix/lib/"
install -m 644 "$target/libtopoprobe.a" "$prefix/lib/"
install -m 644 capi/include/topoprobe.h "$prefix/include/"
install -m 755 "$target/topoprobe" "$prefix/bin/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" capi/topoprobe.pc.in > "$prefix/lib/pkgconfig/topoprobe.pc"
echo "installed in $prefix; compile with: gcc prog.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs topoprobe)"
