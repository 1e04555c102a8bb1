#!/usr/bin/env bash
# Cache sizes against the OS's: RUNS runs of `topoprobe cache --json` (default 10).
#
#   scripts/bench/cache.sh [RUNS]      # log: docs/bench/cache-DATE.log
#
# For each run: seconds, L1d, L2 and L3 measured/OS with = or ≠, and how each was found;
# then how often L1d and L2 equal the OS's, how often L3 is no larger than the OS's (with
# the explanation the run printed when smaller), and the slowest run.
source "$(dirname "$0")/common.sh" cache
RUNS=${1:-10}
log "# command: $TP cache --json   (x $RUNS, normal priority)"
tmp=$(mktemp -d)
for r in $(seq 1 "$RUNS"); do
    start=$(date +%s.%N)
    "$TP" cache --json > "$tmp/run$r.json"
    end=$(date +%s.%N)
    python3 -c "print($end - $start)" > "$tmp/run$r.secs"
    log "$(python3 - "$tmp/run$r.json" "$start" "$end" "$r" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])); secs = float(sys.argv[3]) - float(sys.argv[2])
out = [f"run {sys.argv[4]} ({secs:.1f} s)"]
for name, level, kind in (("L1d", 1, "data"), ("L2", 2, "unified"), ("L3", 3, "unified")):
    l = [x for x in v["levels"] if x["level"] == level and x["kind"] == kind]
    m, o = (l[0]["size_bytes"], l[0]["os_size_bytes"]) if l else (None, None)
    kib = lambda b: "-" if b is None else f"{b // 1024}K"
    eq = "=" if m == o and m else ("<" if m and o and m < o else "≠")
    lat = l[0].get("latency_ns") if l else None
    out.append(f"{name} {kib(m)}/{kib(o)} {eq} ({'-' if lat is None else f'{lat:.1f} ns'}, {l[0]['method'] if l else '-'})")
print("  ".join(out))
PY
)"
done
python3 - "$tmp" "$RUNS" <<'PY' | tee -a "$LOG"
import json, sys, glob
runs = [json.load(open(f"{sys.argv[1]}/run{r}.json")) for r in range(1, int(sys.argv[2]) + 1)]
def lvl(v, level, kind):
    l = [x for x in v["levels"] if x["level"] == level and x["kind"] == kind]
    return l[0] if l else {}
l1 = sum(1 for v in runs if lvl(v, 1, "data").get("size_bytes") == lvl(v, 1, "data").get("os_size_bytes"))
l2 = sum(1 for v in runs if lvl(v, 2, "unified").get("size_bytes") == lvl(v, 2, "unified").get("os_size_bytes"))
l3 = [lvl(v, 3, "unified") for v in runs]
le = sum(1 for x in l3 if x.get("size_bytes") and x["size_bytes"] <= x["os_size_bytes"])
smaller = [v for v, x in zip(runs, l3) if x.get("size_bytes") and x["size_bytes"] < x["os_size_bytes"]]
explained = sum(1 for v in smaller if any(n.startswith("L3: measured") for n in v["notes"]))
print(f"L1d = OS: {l1}/{len(runs)}   L2 = OS: {l2}/{len(runs)}   L3 <= OS: {le}/{len(runs)} ({len(smaller)} smaller, {explained} of them with the explanation)")
wall = [float(open(f"{sys.argv[1]}/run{r}.secs").read()) for r in range(1, len(runs) + 1)]
print(f"slowest run: {max(wall):.1f} s wall, as timed in the lines above (the probe's own time: {max(v['seconds'] for v in runs):.1f} s)")
if smaller:
    print("explanation of run 1 that was smaller: " + [n for n in smaller[0]["notes"] if n.startswith("L3: measured")][0])
PY
"$TP" cache --curve > "$tmp/curve.txt"
log "# one more run with --curve (huge pages, then 4 KiB pages):"
cat "$tmp/curve.txt" >> "$LOG"
finish
