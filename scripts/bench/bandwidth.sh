#!/usr/bin/env bash
# Read bandwidth with 1 and 2 threads beside likwid-bench (Debian package `likwid`), run
# alternately ROUNDS times (default 5): `likwid-bench -t load_avx -w S0:1GB:N` and
# `topoprobe mem --json` with its default bandwidth working set (6 x the last-level cache
# within the 512 MiB memory budget, evicted before every pass: what `topoprobe infer` uses
# too), plus `topoprobe mem --size 1G` at likwid-bench's own footprint. Ratios topoprobe /
# likwid-bench and their medians, at both sizes.
#
# Each round also prints the 0-1 pair latency (`topoprobe latency 0 1`) before and after it:
# on a guest whose vCPUs the host moves, it says whether the two threads shared a die, and
# a round whose two latencies differ by more than 1.5x had the vCPUs moved under it (the
# tools then ran at different placements); the summary also gives the median of the other
# rounds.
#
# Both tools use the same vector loads: likwid's `load_avx` is AVX (256-bit), so topoprobe
# runs with `--isa avx2` (ISA=avx512 compares `load_avx512` with `--isa avx512`).
#
#   scripts/bench/bandwidth.sh [ROUNDS]    # log: docs/bench/bandwidth-DATE.log
source "$(dirname "$0")/common.sh" bandwidth
ROUNDS=${1:-5}
ISA=${ISA:-avx2}
KERNEL=$([ "$ISA" = avx512 ] && echo load_avx512 || echo load_avx)
TOPO=$(mktemp -d)/machine.json
TOPOPROBE_FILE=$TOPO "$TP" infer --plugins none > /dev/null 2>&1
likwid() { # threads -> GB/s (likwid's MByte/s is 10^6 bytes/s)
    likwid-bench -t "$KERNEL" -w "S0:1GB:$1" 2>/dev/null | awk '/^MByte\/s/ {printf "%.2f", $2 / 1000}'
}
tp() { # extra args -> "read1 read2 bandwidth_working_set_MiB latency_working_set_MiB"
    "$TP" mem --json --isa "$ISA" --topology "$TOPO" "$@" 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin); r = {x["threads"]: x["read_gbps"] for x in v["results"]}
print("%.2f %.2f %d %d" % (r.get(1, 0), r.get(max(r), 0), v["bandwidth_working_set_bytes"] >> 20, v["working_set_bytes"] >> 20))'
}
SMALL=1G
log "# commands: likwid-bench -t $KERNEL -w S0:1GB:1 | :2 ; $TP mem --json --isa $ISA ; $TP mem --json --isa $ISA --size $SMALL"
pair_ns() {
    "$TP" latency 0 1 --json 2>/dev/null | python3 -c 'import json, sys; print("%.0f" % json.load(sys.stdin)["median_ns"])' || echo "?"
}
log "round  likwid1  likwid2 | topoprobe1 topoprobe2 (MiB) ratio1 ratio2 | $SMALL: tp1 tp2 | 0-1 ns before, after"
figures=()
for r in $(seq 1 "$ROUNDS"); do
    before=$(pair_ns)
    l1=$(likwid 1); l2=$(likwid 2)
    read -r t1 t2 ws _ < <(tp)
    read -r g1 g2 _ _ < <(tp --size "$SMALL")
    q1=$(python3 -c "print(f'{$t1 / $l1:.3f}')"); q2=$(python3 -c "print(f'{$t2 / $l2:.3f}')")
    after=$(pair_ns)
    moved=$(python3 -c "a, b = '$before', '$after'; print(int(not (a.isdigit() and b.isdigit()) or max(int(a), int(b)) > 1.5 * max(1, min(int(a), int(b)))))")
    figures+=("$l1:$l2:$t1:$t2:$g1:$g2:$moved")
    log "$(printf '%5s  %7s  %7s | %10s %10s (%s) %6s %6s | %s %s | %s, %s%s' "$r" "$l1" "$l2" "$t1" "$t2" "$ws" "$q1" "$q2" "$g1" "$g2" "$before" "$after" "$([ "$moved" = 1 ] && echo ' moved')")"
done
python3 - "$SMALL" "${figures[@]}" <<'PY' | tee -a "$LOG"
import statistics, sys
# Each round: likwid 1, likwid 2, topoprobe 1, topoprobe 2, topoprobe small 1, topoprobe small 2,
# 1 when the vCPUs moved during the round.
small = sys.argv[1]
sys.argv = sys.argv[1:]
rounds = [[float(x) for x in f.split(":")] for f in sys.argv[1:]]
still = [r for r in rounds if not r[6]]
for k, name in enumerate(("1 thread", "2 threads")):
    v = [r[2 + k] / r[k] for r in rounds]
    same = [r[4 + k] / r[k] for r in rounds]
    lw = statistics.median(r[k] for r in rounds); tp = statistics.median(r[2 + k] for r in rounds)
    print(f"read, {name}: topoprobe/likwid-bench median {statistics.median(v):.3f} (min {min(v):.3f}, max {max(v):.3f}), at least 0.95: {sum(1 for x in v if x >= 0.95)}/{len(v)}, within 10%: {sum(1 for x in v if abs(x - 1) <= 0.1)}/{len(v)}; medians {tp:.2f} / {lw:.2f} GB/s = {tp / lw:.3f}; at likwid-bench's footprint (--size {small}) median {statistics.median(same):.3f}")
    if still:
        w = [r[2 + k] / r[k] for r in still]
        print(f"  rounds without a move ({len(still)}/{len(rounds)}): median {statistics.median(w):.3f}, within 10%: {sum(1 for x in w if abs(x - 1) <= 0.1)}/{len(w)}")
PY
finish
