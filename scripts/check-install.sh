#!/usr/bin/env bash
# Checks the two ways to install topoprobe, into temporary directories:
# 1. `cargo install --path cli --root DIR` gives a `topoprobe` whose `run` pins a
#    program's threads as `topoprobe place` says, with no other file (the pinning library
#    is carried inside the binary and written to a per-user cache).
# 2. `scripts/install.sh --prefix DIR` installs stripped files, the C library with its
#    SONAME and links, man pages and completions; `run` uses the installed library, and a
#    C program builds against the install with pkg-config and runs.
# To stay cheap both reuse the test build (`--profile test`, the default target
# directory): after `cargo test`, only the crates whose features differ are built again.
# Usage: scripts/check-install.sh      (run by .ci/run; needs gcc, readelf, pkg-config)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(mktemp -d "${TMPDIR:-/tmp}/topoprobe-install.XXXXXX")"
trap 'rm -rf "$root"' EXIT
fail() { echo "check-install: FAILED: $*" >&2; exit 1; }

if ! cargo install --path cli --root "$root" --locked --quiet --profile test \
    --target-dir "${CARGO_TARGET_DIR:-target}" 2> "$root/install.log"; then
    cat "$root/install.log" >&2
    fail "cargo install --path cli"
fi
bin="$root/bin/topoprobe"
[ -x "$bin" ] || fail "cargo install left no $bin"
[ "$(ls "$root/bin")" = topoprobe ] || fail "more than the binary in $root/bin: $(ls "$root/bin")"
[ ! -e "$root/lib" ] || fail "cargo install made $root/lib"

# A 2-CPU machine (CPUs 0 and 1), or 1 CPU where this process has only one.
cpus="$(nproc)"
n=$(( cpus < 2 ? 1 : 2 ))
printf ',50\n50,\n' > "$root/m2.csv"
"$bin" infer --from-matrix "$root/m2.csv" --json -o "$root/m2.json" 2>/dev/null
if [ "$n" = 1 ]; then topo=(--cpus 0); else topo=(); fi
placement="$("$bin" place --policy rr_core -n "$n" -q --topology "$root/m2.json" "${topo[@]}")"
IFS=, read -r -a want <<< "$placement"

# As a new user runs it: no TOPOPROBE_PRELOAD, a cache of its own.
run() {
    env -u TOPOPROBE_PRELOAD XDG_CACHE_HOME="$root/cache" \
        "$bin" run --policy rr_core -n "$n" --topology "$root/m2.json" "${topo[@]}" -- "$@"
}
got="$(run sh -c 'grep Cpus_allowed_list /proc/self/status')" || fail "run: $got"
got="$(echo "${got#*:}" | tr -d '[:space:]')"
[ "$got" = "${want[0]}" ] || fail "the main thread may run on '$got', place says ${want[0]}"
ls "$root/cache/topoprobe/"libtopoprobe_preload-*.so >/dev/null 2>&1 ||
    fail "no cached library in $root/cache/topoprobe"

# A program that creates a thread: the thread on the second CPU of the placement.
if [ "$n" = 2 ] && command -v gcc >/dev/null; then
    gcc -O1 -pthread -o "$root/affinity" cli/tests/progs/affinity.c
    out="$(run "$root/affinity")" || fail "run affinity: $out"
    grep -qx "main ${want[0]}" <<< "$out" || fail "main thread: $out (place: $placement)"
    grep -qx "thread1 ${want[1]}" <<< "$out" || fail "created thread: $out (place: $placement)"
fi
echo "check-install: ok: cargo install's topoprobe run pins as place says ($placement)"

# 2. scripts/install.sh
prefix="$root/usr"
scripts/install.sh --prefix "$prefix" --profile test > "$root/install.sh.log" 2>&1 ||
    { cat "$root/install.sh.log" >&2; fail "scripts/install.sh"; }
lib="$prefix/lib"
for f in "$prefix/bin/topoprobe" "$lib/libtopoprobe.so.0" "$lib/topoprobe/libtopoprobe_preload.so"; do
    [ -f "$f" ] || fail "no $f"
    if readelf -SW "$f" | grep -qE '\.debug_info|\.symtab'; then fail "$f is not stripped"; fi
done
readelf -d "$lib/libtopoprobe.so" | grep -q 'Library soname: \[libtopoprobe.so.0\]' ||
    fail "libtopoprobe.so has no SONAME libtopoprobe.so.0"
[ "$(readlink "$lib/libtopoprobe.so")" = libtopoprobe.so.0 ] || fail "libtopoprobe.so is not a link to .so.0"
for page in topoprobe.1 topoprobe-run.1 topoprobe-place.1 topoprobe-completions.1; do
    [ -s "$prefix/share/man/man1/$page" ] || fail "no man page $page"
done
grep -q -- '--policy' "$prefix/share/bash-completion/completions/topoprobe" || fail "bash completions"
[ -s "$prefix/share/zsh/site-functions/_topoprobe" ] || fail "zsh completions"
[ -s "$prefix/share/fish/vendor_completions.d/topoprobe.fish" ] || fail "fish completions"
report="$(env -u TOPOPROBE_PRELOAD XDG_CACHE_HOME="$root/cache2" "$prefix/bin/topoprobe" run \
    --policy rr_core -n "$n" --topology "$root/m2.json" "${topo[@]}" --json -- true 2>&1)" ||
    fail "installed run: $report"
grep -q "\"preload\": \"$(realpath "$lib/topoprobe/libtopoprobe_preload.so")\"" <<< "$report" ||
    fail "the installed run did not use $lib/topoprobe/libtopoprobe_preload.so: $report"
gcc -O1 -pthread -o "$root/place" capi/examples/place.c \
    $(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --cflags --libs topoprobe)
readelf -d "$root/place" | grep -q 'Shared library: \[libtopoprobe.so.0\]' ||
    fail "a program linked with -ltopoprobe does not need libtopoprobe.so.0"
"$root/place" "$root/m2.json" > "$root/place.out" 2>&1 || { cat "$root/place.out" >&2; fail "place.c"; }
echo "check-install: ok: scripts/install.sh installs stripped files, the C library (SONAME libtopoprobe.so.0), man pages and completions"
