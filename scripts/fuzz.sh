#!/usr/bin/env bash
# Coverage-guided fuzzing of every input reader with AFL++ (cargo afl, stable toolchain).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default: 600 s each, every target)
# For each target: a run of SECONDS under nice -n 19 (hang: an input over 2 s; memory limit
# 1 GiB) that starts from the committed seeds (fuzz/seeds, refreshed by
# scripts/fuzz-seeds.py), the named regressions (fuzz/regressions) and the queue of the last
# campaign; then the queue minimized with afl-cmin into target/fuzz-corpus/<target>/, outside
# the repository. Prints the executions per second, the edges and the bitmap coverage
# reached, and any crash or hang; a crash or hang found is kept as a named regression
# (fuzz/tests/it/reproducers.rs) once fixed. See docs/FUZZING.md.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(mct csv json sysfs args json_gen args_gen hwloc_xml capture)
command -v cargo-afl >/dev/null || cargo install cargo-afl --version '^0.18'
cargo afl config --build >/dev/null 2>&1 || true
cargo build -q -p topoprobe-cli
python3 scripts/fuzz-seeds.py
nice -n 19 cargo afl build -q --release -p topoprobe-fuzz --features afl
afl_bin=$(dirname "$(find "${XDG_DATA_HOME:-$HOME/.local/share}/afl.rs" -name afl-fuzz -path '*/bin/*' | head -1)")
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1
mkdir -p target/fuzz-out target/fuzz-corpus
for t in "${targets[@]}"; do
    out=target/fuzz-out/$t
    rm -rf "$out"
    # The campaign starts from the seeds, the named regressions and the last queue.
    start=target/fuzz-start/$t
    rm -rf "$start" && mkdir -p "$start"
    for from in "fuzz/seeds/$t" "fuzz/regressions/$t" "target/fuzz-corpus/$t"; do
        [ ! -d "$from" ] || find "$from" -maxdepth 1 -type f -exec cp {} "$start/" \;
    done
    nice -n 19 cargo afl fuzz -i "$start" -o "$out" -V "$secs" -t 2000 -m 1024 \
        -- "target/release/fuzz_$t" > "target/fuzz-$t.log" 2>&1 || true
    stats=$out/default/fuzzer_stats
    crashes=$(find "$out/default/crashes" -type f -name 'id*' | wc -l)
    hangs=$(find "$out/default/hangs" -type f -name 'id*' | wc -l)
    corpus=target/fuzz-corpus/$t
    rm -rf "$corpus.new"
    # afl-cmin.bash: the Python afl-cmin finds no tuples in afl.rs's persistent targets.
    AFL_MAP_SIZE=65536 nice -n 19 "$afl_bin/afl-cmin.bash" -i "$out/default/queue" \
        -o "$corpus.new" -t 2000 -m 1024 -- "target/release/fuzz_$t" \
        > "target/fuzz-$t-cmin.log" 2>&1
    rm -rf "$corpus" && mv "$corpus.new" "$corpus"
    get() { grep "^$1 " "$stats" | sed 's/.*: //'; }
    echo "$t: $(get execs_done) executions in $(get run_time) s, $(get execs_per_sec) exec/s," \
        "edges $(get edges_found)/$(get total_edges) (bitmap $(get bitmap_cvg))," \
        "queue $(get corpus_count) -> $(ls "$corpus" | wc -l) minimized," \
        "crashes $crashes, hangs $hangs"
done
