#!/usr/bin/env bash
# The written mixes of `topoprobe mem --full` beside likwid-bench (Debian package `likwid`),
# with regular and with non-temporal stores, alternated ROUNDS times (default 5) on the
# same CPUs:
#
#   1:1 (copy)   likwid-bench -t copy_avx     / copy_mem_avx   (streaming stores)
#   triad        likwid-bench -t stream_avx   / stream_mem_avx (streaming stores)
#
# each with `-w S0:1GB:N` (N = every CPU), against the mixes `one_to_one` and `triad` of
# `topoprobe mem --full --isa avx2 --json` (N threads, non_temporal false and true). Both
# tools count the bytes the program reads and writes (not the reads for ownership of regular
# stores). Ratios are topoprobe / likwid-bench, and their medians.
#
#   scripts/bench/mixes.sh [ROUNDS]    # log: docs/bench/mixes-DATE.log
source "$(dirname "$0")/common.sh" mixes
ROUNDS=${1:-5}
N=$(nproc)
KERNELS=(copy_avx copy_mem_avx stream_avx stream_mem_avx)
likwid() { # kernel -> GB/s (likwid's MByte/s is 10^6 bytes/s)
    likwid-bench -t "$1" -w "S0:1GB:$N" 2>/dev/null | awk '/^MByte\/s/ {printf "%.2f", $2 / 1000}'
}
log "# commands: likwid-bench -t K -w S0:1GB:$N for K in ${KERNELS[*]} ; $TP mem --full --isa avx2 --json"
log "round | copy: likwid tp ratio | copy NT: likwid tp ratio | triad: likwid tp ratio | triad NT: likwid tp ratio"
figures=()
for r in $(seq 1 "$ROUNDS"); do
    lk=()
    for k in "${KERNELS[@]}"; do lk+=("$(likwid "$k")"); done
    read -r -a tp < <("$TP" mem --full --isa avx2 --json 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)
def gbps(mix, nt):
    return max(m["gbps"] for m in v["mixes"] if m["mix"] == mix and m["non_temporal"] == nt)
print(" ".join("%.2f" % gbps(m, nt) for m, nt in
               (("one_to_one", False), ("one_to_one", True), ("triad", False), ("triad", True))))')
    line=$(printf '%5s' "$r")
    row=""
    for i in 0 1 2 3; do
        q=$(python3 -c "print(f'{${tp[$i]} / ${lk[$i]}:.3f}')")
        line+=" | $(printf '%6s %6s %6s' "${lk[$i]}" "${tp[$i]}" "$q")"
        row+="$q:"
    done
    figures+=("${row%:}")
    log "$line"
done
python3 - "${figures[@]}" <<'PY' | tee -a "$LOG"
import statistics, sys
rounds = [[float(x) for x in f.split(":")] for f in sys.argv[1:]]
for k, name in enumerate(("1:1 / copy_avx", "1:1 NT / copy_mem_avx", "triad / stream_avx", "triad NT / stream_mem_avx")):
    v = sorted(r[k] for r in rounds)
    print(f"median {name}: {statistics.median(v):.3f} ({v[0]:.3f}-{v[-1]:.3f})")
PY
finish
