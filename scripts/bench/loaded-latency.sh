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
# - idle latency: `multichase -H -s 128 -m 256m -n 10` (a random chase on THP, 128-byte
#   stride as topoprobe's slots) against the idle point of topoprobe's socket 0 -> local
#   node curve;
# - loaded latency: `multiload -H -s 128 -m 256m -n 5 -t N -c chaseload -l stream-sum`
#   (thread 0 chases, the N-1 others read at full speed) against topoprobe's curve at
#   multiload's bandwidth, interpolated between the two points around it (its last point
#   when multiload's bandwidth is beyond the curve; both bandwidths printed);
# - bandwidth: `likwid-bench -t load_avx -w S0:1GB:N` against the all-reads mix of
#   `topoprobe mem --full --isa avx2` (N threads).
# Ratios are topoprobe / reference.
source "$(dirname "$0")/common.sh" loaded-latency
ROUNDS=${1:-3}
MC=${MULTICHASE:-/tmp/multichase}
if [ ! -x "$MC/multichase" ] || [ ! -x "$MC/multiload" ]; then
    echo "multichase is not built in $MC: git clone https://github.com/google/multichase $MC && make -C $MC" >&2
    exit 2
fi
N=$(nproc)
CPUS=0-$((N - 1))
log "# commands: $MC/multichase -H -s 128 -m 256m -n 10 ; $MC/multiload -H -s 128 -m 256m -n 5 -t $N -c chaseload -l stream-sum ;"
log "#           likwid-bench -t load_avx -w S0:1GB:$N ; $TP mem --full --isa avx2 --json (CPUs $CPUS)"
[ "$N" -lt 3 ] && log "# note: $N CPUs: one chase and $((N - 1)) loader; the curve cannot reach a node's saturation"
log "round | idle ns: multichase topoprobe ratio | loaded: multiload GB/s ns, topoprobe GB/s ns, ratio | all reads GB/s: likwid topoprobe ratio"
figures=()
for r in $(seq 1 "$ROUNDS"); do
    idle_mc=$(taskset -c "$CPUS" "$MC/multichase" -H -s 128 -m 256m -n 10 2>/dev/null | tail -1 | tr -d ' ')
    read -r ml_ns ml_gbps < <(taskset -c "$CPUS" "$MC/multiload" -H -s 128 -m 256m -n 5 -t "$N" -c chaseload -l stream-sum 2>/dev/null |
        awk -F, 'NR == 2 {gsub(/ /, ""); printf "%s %.3f\n", $4, $9 * 1.048576 / 1000}')
    lk=$(likwid-bench -t load_avx -w "S0:1GB:$N" 2>/dev/null | awk '/^MByte\/s/ {printf "%.2f", $2 / 1000}')
    read -r tp_idle tp_gbps tp_ns tp_reads < <("$TP" mem --full --isa avx2 --json 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)
target = float(sys.argv[1])
c = [x for x in v["loaded_latency"] if x["local"]][0]
idle = c["points"][0]["latency_ns"]
pts = sorted(c["points"], key=lambda p: p["gbps"])
# The curve at the bandwidth of multiload: between the two points around it, else its end.
gbps, ns = pts[-1]["gbps"], pts[-1]["latency_ns"]
for a, b in zip(pts, pts[1:]):
    if a["gbps"] <= target <= b["gbps"] and b["gbps"] > a["gbps"]:
        t = (target - a["gbps"]) / (b["gbps"] - a["gbps"])
        gbps, ns = target, a["latency_ns"] + t * (b["latency_ns"] - a["latency_ns"])
        break
reads = max(m["gbps"] for m in v["mixes"] if m["mix"] == "all_reads")
print("%.1f %.2f %.1f %.2f" % (idle, gbps, ns, reads))' "$ml_gbps")
    q=$(python3 -c "print(f'{$tp_idle / $idle_mc:.3f} {$tp_ns / $ml_ns:.3f} {$tp_reads / $lk:.3f}')")
    read -r qi ql qb <<< "$q"
    figures+=("$qi:$ql:$qb")
    log "$(printf '%5s | %8s %8s %6s | %6s %7s, %6s %7s, %6s | %6s %6s %6s' "$r" "$idle_mc" "$tp_idle" "$qi" "$ml_gbps" "$ml_ns" "$tp_gbps" "$tp_ns" "$ql" "$lk" "$tp_reads" "$qb")"
done
python3 - "${figures[@]}" <<'PY' | tee -a "$LOG"
import statistics, sys
rounds = [[float(x) for x in f.split(":")] for f in sys.argv[1:]]
for k, name in enumerate(("idle latency / multichase", "loaded latency / multiload", "all reads / likwid load_avx")):
    v = sorted(r[k] for r in rounds)
    print(f"median {name}: {statistics.median(v):.3f} ({v[0]:.3f}-{v[-1]:.3f})")
PY
finish
