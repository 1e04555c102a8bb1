#!/usr/bin/env bash
# Builds topoprobe and installs it under a prefix:
#   PREFIX/bin/topoprobe                                  the command (stripped)
#   PREFIX/lib/topoprobe/libtopoprobe_preload.so          the pinning library of `run`
#   PREFIX/lib/libtopoprobe.so.X.Y.Z (+ .so.X, .so links) the C library, SONAME libtopoprobe.so.X
#   PREFIX/lib/libtopoprobe.a                             the static C library
#   PREFIX/include/topoprobe.h, PREFIX/lib/pkgconfig/topoprobe.pc
#   PREFIX/share/man/man1/topoprobe*.1                    man pages (topoprobe manpages)
#   PREFIX/share/bash-completion/completions/topoprobe, PREFIX/share/zsh/site-functions/_topoprobe,
#   PREFIX/share/fish/vendor_completions.d/topoprobe.fish (topoprobe completions SHELL)
# Everything installed is stripped (the release profile keeps line tables for profiling:
# the files in target/release are not).
#
# Usage: scripts/install.sh [--prefix DIR] [--profile NAME]
#   --prefix DIR     where to install (default: ~/.local)
#   --profile NAME   cargo profile to build with (default: release)
#   DESTDIR=/stage   install into /stage/PREFIX (for packages); the paths inside name PREFIX
set -euo pipefail
usage() { sed -n '/^# Usage:/,/^set /p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
prefix="$HOME/.local"
profile=release
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --prefix=*) prefix="${1#*=}"; shift ;;
        --profile) profile="${2:?--profile needs a name}"; shift 2 ;;
        --profile=*) profile="${1#*=}"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
cd "$(dirname "$0")/.."

cargo build --locked --profile "$profile" -p topoprobe-cli -p topoprobe-capi -p topoprobe-preload
case "$profile" in
    dev|test) dir=debug ;;
    release|bench) dir=release ;;
    *) dir="$profile" ;;
esac
target="${CARGO_TARGET_DIR:-target}/$dir"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
major="${version%%.*}"
dest="${DESTDIR:-}$prefix"

install -d "$dest/bin" "$dest/lib/topoprobe" "$dest/lib/pkgconfig" "$dest/include" \
    "$dest/share/man/man1" "$dest/share/bash-completion/completions" \
    "$dest/share/zsh/site-functions" "$dest/share/fish/vendor_completions.d"
install -m 755 -s "$target/topoprobe" "$dest/bin/topoprobe"
install -m 755 "$target/libtopoprobe_preload.so" "$dest/lib/topoprobe/"
strip --strip-unneeded "$dest/lib/topoprobe/libtopoprobe_preload.so"
install -m 755 "$target/libtopoprobe.so" "$dest/lib/libtopoprobe.so.$version"
strip --strip-unneeded "$dest/lib/libtopoprobe.so.$version"
ln -sfn "libtopoprobe.so.$version" "$dest/lib/libtopoprobe.so.$major"
ln -sfn "libtopoprobe.so.$major" "$dest/lib/libtopoprobe.so"
install -m 644 "$target/libtopoprobe.a" "$dest/lib/libtopoprobe.a"
strip --strip-debug "$dest/lib/libtopoprobe.a"
install -m 644 capi/include/topoprobe.h "$dest/include/topoprobe.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" capi/topoprobe.pc.in \
    > "$dest/lib/pkgconfig/topoprobe.pc"

# Man pages and completions, from the command-line definition of the binary just built.
"$target/topoprobe" manpages "$dest/share/man/man1" 2>/dev/null
chmod 644 "$dest/share/man/man1"/topoprobe*.1
"$target/topoprobe" completions bash > "$dest/share/bash-completion/completions/topoprobe"
"$target/topoprobe" completions zsh > "$dest/share/zsh/site-functions/_topoprobe"
"$target/topoprobe" completions fish > "$dest/share/fish/vendor_completions.d/topoprobe.fish"

echo "installed topoprobe $version in $dest"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "add $prefix/bin to PATH to run topoprobe" ;; esac
echo "C programs: gcc prog.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs topoprobe)"
