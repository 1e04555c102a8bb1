#!/usr/bin/env bash
# Idle latency, loaded latency and all-reads bandwidth of `topoprobe mem --full` beside
# google's multichase (`multichase`, `multiload`) and likwid-bench (Debian package
# `likwid`), alternated ROUNDS times (default 3) on the same CPUs. Fetches nothing: it
# expects multichase built from its public source in a scratch directory (its code is not
# part of topoprobe):
#
#   git clone https://github.com/google/multichase /tmp/multichase && make -C /tmp/multichase
#
#   scripts/bench/loaded-latency.sh [ROUNDS]   # MULTICHASE=/tmp/multichase; log: docs/bench/loaded-latency-DATE.log
#
# Per round:
# Every reference buffer is BUF MiB: 4 times the last-level cache (the sum of its instances),
# at least 256 MiB and at most a quarter of the available memory, so that no reference
# chases or streams a buffer the cache holds in part (a 256 MiB chase on a 300 MiB L3 reads
# 40% faster than memory).
# - idle latency: `multichase -H -s 128 -m ${BUF}m -n 10` (a random chase on THP, 128-byte
#   stride as topoprobe's slots) against the idle point of topoprobe's socket 0 -> local
#   node curve;
# - loaded latency: `multiload -H -s 128 -m ${BUF}m -n 5 -t N -c chaseload -l stream-sum`
#   (thread 0 chases, the N-1 others read at full speed) against topoprobe's curve at
#   multiload's bandwidth, interpolated between the two points around it (its last point
#   when multiload's bandwidth is beyond the curve; both bandwidths printed);
# - more points of the curve: `multiload ... -n 3 -l stream-triad-nontemporal-injection-delay
#   -d D` for D in $DELAYS (multiload's only load with a delay: two reads and a streaming
#   write per element, where topoprobe's loaders only read), each against topoprobe's curve
#   at its bandwidth where the curve reaches it (else left out and counted);
# - bandwidth: `likwid-bench -t load_avx -w S0:${BUF}MB:N` (at least 1 GB) against the all-reads mix of
#   `topoprobe mem --full --isa avx2` (N threads).
# Ratios are topoprobe / reference.
source "$(dirname "$0")/common.sh" loaded-latency
ROUNDS=${1:-3}
DELAYS=${DELAYS:-"400 100 50 25"}
MC=${MULTICHASE:-/tmp/multichase}
if [ ! -x "$MC/multichase" ] || [ ! -x "$MC/multiload" ]; then
    echo "multichase is not built in $MC: git clone https://github.com/google/multichase $MC && make -C $MC" >&2
    exit 2
fi
N=$(nproc)
CPUS=0-$((N - 1))
llc_bytes=$(lscpu -C=ALL-SIZE -B 2>/dev/null | sed -n '$p' | tr -dc 0-9)
avail_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
BUF=$(( 4 * ${llc_bytes:-0} / 1048576 ))
[ "$BUF" -lt 256 ] && BUF=256
[ "$BUF" -gt $(( avail_kib / 4096 )) ] && BUF=$(( avail_kib / 4096 ))
LK=$(( BUF < 1024 ? 1024 : BUF ))
log "# reference buffers: ${BUF} MiB (last-level cache $(( ${llc_bytes:-0} / 1048576 )) MiB in all, $(( avail_kib / 1024 )) MiB available)"
log "# commands: $MC/multichase -H -s 128 -m ${BUF}m -n 10 ; $MC/multiload -H -s 128 -m ${BUF}m -n 5 -t $N -c chaseload -l stream-sum ;"
log "#           $MC/multiload -H -s 128 -m ${BUF}m -n 3 -t $N -c chaseload -l stream-triad-nontemporal-injection-delay -d D (D in $DELAYS) ;"
log "#           likwid-bench -t load_avx -w S0:${LK}MB:$N ; $TP mem --full --isa avx2 --json (CPUs $CPUS)"
[ "$N" -lt 3 ] && log "# note: $N CPUs: one chase and $((N - 1)) loader; the curve cannot reach a node's saturation"
log "round | idle ns: multichase topoprobe ratio | loaded: multiload GB/s ns, topoprobe GB/s ns, ratio | all reads GB/s: likwid topoprobe ratio | delayed points: GB/s ratio ..."
figures=()
for r in $(seq 1 "$ROUNDS"); do
    idle_mc=$(taskset -c "$CPUS" "$MC/multichase" -H -s 128 -m "${BUF}m" -n 10 2>/dev/null | tail -1 | tr -d ' ')
    read -r ml_ns ml_gbps < <(taskset -c "$CPUS" "$MC/multiload" -H -s 128 -m "${BUF}m" -n 5 -t "$N" -c chaseload -l stream-sum 2>/dev/null |
        awk -F, 'NR == 2 {gsub(/ /, ""); printf "%s %.3f\n", $4, $9 * 1.048576 / 1000}')
    delayed=""
    for d in $DELAYS; do
        delayed+=$(taskset -c "$CPUS" "$MC/multiload" -H -s 128 -m "${BUF}m" -n 3 -t "$N" -c chaseload \
            -l stream-triad-nontemporal-injection-delay -d "$d" 2>/dev/null |
            awk -F, 'NR == 2 {gsub(/ /, ""); printf "%.3f:%s,", $9 * 1.048576 / 1000, $4}')
    done
    lk=$(likwid-bench -t load_avx -w "S0:${LK}MB:$N" 2>/dev/null | awk '/^MByte\/s/ {printf "%.2f", $2 / 1000}')
    read -r tp_idle tp_gbps tp_ns tp_reads tp_delayed < <("$TP" mem --full --isa avx2 --json 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)
c = [x for x in v["loaded_latency"] if x["local"]][0]
idle = c["points"][0]["latency_ns"]
pts = sorted(c["points"], key=lambda p: p["gbps"])
def at(target):
    """The curve at `target` GB/s, between the two points around it (None beyond it)."""
    for a, b in zip(pts, pts[1:]):
        if a["gbps"] <= target <= b["gbps"] and b["gbps"] > a["gbps"]:
            t = (target - a["gbps"]) / (b["gbps"] - a["gbps"])
            return a["latency_ns"] + t * (b["latency_ns"] - a["latency_ns"])
    return None
target = float(sys.argv[1])
ns = at(target)
# Beyond the curve: its last point.
gbps, ns = (target, ns) if ns is not None else (pts[-1]["gbps"], pts[-1]["latency_ns"])
delayed = []
for point in filter(None, sys.argv[2].split(",")):
    g, n = (float(x) for x in point.split(":"))
    mine = at(g)
    delayed.append("%.2f:%s" % (g, "beyond" if mine is None else "%.3f" % (mine / n)))
reads = max(m["gbps"] for m in v["mixes"] if m["mix"] == "all_reads")
print("%.1f %.2f %.1f %.2f %s" % (idle, gbps, ns, reads, ",".join(delayed) or "-"))' "$ml_gbps" "$delayed")
    q=$(python3 -c "print(f'{$tp_idle / $idle_mc:.3f} {$tp_ns / $ml_ns:.3f} {$tp_reads / $lk:.3f}')")
    read -r qi ql qb <<< "$q"
    figures+=("$qi:$ql:$qb:$tp_delayed")
    log "$(printf '%5s | %8s %8s %6s | %6s %7s, %6s %7s, %6s | %6s %6s %6s | %s' "$r" "$idle_mc" "$tp_idle" "$qi" "$ml_gbps" "$ml_ns" "$tp_gbps" "$tp_ns" "$ql" "$lk" "$tp_reads" "$qb" "${tp_delayed//,/ }")"
done
python3 - "${figures[@]}" <<'PY' | tee -a "$LOG"
import statistics, sys
rounds = [f.split(":", 3) for f in sys.argv[1:]]
for k, name in enumerate(("idle latency / multichase", "loaded latency / multiload", "all reads / likwid load_avx")):
    v = sorted(float(r[k]) for r in rounds)
    print(f"median {name}: {statistics.median(v):.3f} ({v[0]:.3f}-{v[-1]:.3f})")
points = [p.split(":") for r in rounds for p in r[3].split(",") if ":" in p]
matched = sorted(float(q) for _, q in points if q != "beyond")
if matched:
    inside = sum(abs(q - 1) <= 0.15 for q in matched)
    print(f"median delayed points / multiload: {statistics.median(matched):.3f} "
          f"({matched[0]:.3f}-{matched[-1]:.3f}), {inside}/{len(matched)} within 15%, "
          f"{len(points) - len(matched)} beyond the curve")
PY
finish
