#!/usr/bin/env bash
# Memory bandwidth beside likwid-bench, run alternately in the same window, and the cache
# benchmark's agreement with the OS.
#
#   scripts/bench/mem.sh [ROUNDS] [CACHE_RUNS]
#
# Each round runs likwid-bench load_avx and copy_avx on S0:1GB with 1 and 2 threads and,
# right after, `topoprobe mem --size 1G --isa avx2` (1 thread and every context of the
# socket: the same working set split the same way). Prints one line per round with both
# tools' GB/s and their ratio, then the median ratios. Then runs `topoprobe cache --json`
# CACHE_RUNS times and counts how often L1d, L2 and L3 equal the OS's sizes.
# Needs likwid (Debian package `likwid`) and this machine's description (topoprobe infer).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
CACHE_RUNS=${2:-10}
TP=${TP:-target/release/topoprobe}
cargo build --release --quiet --locked -p topoprobe-cli

likwid() { # test threads -> GB/s (likwid's MByte/s is 10^6 bytes/s)
    likwid-bench -t "$1" -w "S0:1GB:$2" 2>/dev/null | awk '/^MByte\/s/ {printf "%.2f", $2 / 1000}'
}
ratios=()
echo "round  kernel threads  likwid  topoprobe  ratio"
for r in $(seq 1 "$ROUNDS"); do
    l_load1=$(likwid load_avx 1); l_load2=$(likwid load_avx 2)
    l_copy1=$(likwid copy_avx 1); l_copy2=$(likwid copy_avx 2)
    json=$("$TP" mem --json --size 1G --isa avx2 2>/dev/null)
    for spec in "read 1 $l_load1" "read 2 $l_load2" "copy 1 $l_copy1" "copy 2 $l_copy2"; do
        set -- $spec
        t=$(python3 -c "import json,sys; v=json.loads(sys.argv[1]); print('%.2f' % [x for x in v['results'] if x['threads']==int(sys.argv[2])][0][sys.argv[3]+'_gbps'])" "$json" "$2" "$1")
        ratio=$(python3 -c "print('%.3f' % ($t / $3))")
        ratios+=("$1:$2:$ratio")
        printf "%5s  %6s %7s  %6s  %9s  %5s\n" "$r" "$1" "$2" "$3" "$t" "$ratio"
    done
done
python3 - "${ratios[@]}" <<'PY'
import sys, statistics
by = {}
for a in sys.argv[1:]:
    k, t, r = a.split(":")
    by.setdefault(f"{k} {t} thread(s)", []).append(float(r))
for k, v in by.items():
    within = sum(1 for x in v if abs(x - 1) <= 0.10)
    print(f"{k}: ratio median {statistics.median(v):.3f} (min {min(v):.3f}, max {max(v):.3f}), within 10%: {within}/{len(v)}")
PY

echo "cache: $CACHE_RUNS runs of topoprobe cache"
ok=(0 0 0)
for r in $(seq 1 "$CACHE_RUNS"); do
    start=$(date +%s.%N)
    json=$("$TP" cache --json)
    secs=$(python3 -c "import time; print('%.1f' % (time.time() - $start))")
    line=$(python3 - "$json" <<'PY'
import json, sys
v = json.loads(sys.argv[1])
out = []
for name, level, kind in (("L1d", 1, "data"), ("L2", 2, "unified"), ("L3", 3, "unified")):
    l = [x for x in v["levels"] if x["level"] == level and x["kind"] == kind]
    m, o = (l[0]["size_bytes"], l[0]["os_size_bytes"]) if l else (None, None)
    kib = lambda b: "-" if b is None else f"{b // 1024}K"
    out.append(f"{name} {kib(m)}/{kib(o)} {'=' if m == o and m else '≠'}")
print("  ".join(out))
PY
)
    echo "run $r (${secs} s): $line"
    eq=$(grep -o "[=≠]" <<<"$line" | tr -d '\n')
    for k in 0 1 2; do [ "${eq:$k:1}" = "=" ] && ok[$k]=$((ok[$k] + 1)); done
done
echo "equal to the OS: L1d ${ok[0]}/$CACHE_RUNS, L2 ${ok[1]}/$CACHE_RUNS, L3 ${ok[2]}/$CACHE_RUNS"
