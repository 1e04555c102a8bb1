#!/usr/bin/env bash
# The cost of `topoprobe infer`: RUNS runs with the default plugins (default 5) and
# ALL_RUNS with `--plugins all` (default 2), each under `/usr/bin/time -v`: wall time and
# peak RSS, and whether the description has memory latency, bandwidth and caches.
#
#   scripts/bench/infer-cost.sh [RUNS] [ALL_RUNS]   # log: docs/bench/infer-cost-DATE.log
source "$(dirname "$0")/common.sh" infer-cost
RUNS=${1:-5}
ALL_RUNS=${2:-2}
export TOPOPROBE_FILE=$(mktemp -d)/machine.json
one() { # label, extra args
    local label=$1; shift
    local err; err=$(mktemp)
    /usr/bin/time -v "$TP" infer --format json "$@" > "$TOPOPROBE_FILE.out" 2> "$err"
    python3 - "$TOPOPROBE_FILE.out" "$err" "$label" <<'PY'
import json, re, sys
v = json.load(open(sys.argv[1])); t = open(sys.argv[2]).read()
wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", t)
secs = (int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3)))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
mem = v.get("memory") or {}
lat = [m["latency"] for m in mem.get("latency", [])]
bw = [b["gbps"] for b in mem.get("bandwidth", []) if b["access"] == "read"]
caches = [f"{(l.get('measured_size_kib') or 0)}K" for l in (v.get("caches") or {}).get("levels", []) if l.get("kind") != "instruction"]
ws = v["provenance"]["parameters"].get("memory_working_set", "-")
unstable = any(w["kind"] == "unstable_topology" for w in v["validation"]["warnings"])
print(f"{sys.argv[3]}: {secs:.2f} s, peak RSS {rss:.0f} MiB; memory latency {lat and f'{lat[0]:.0f} ns' or 'MISSING'}, "
      f"read {' / '.join(f'{x:.1f}' for x in bw) or 'MISSING'} GB/s, caches {' '.join(caches) or 'MISSING'}; working set {ws}"
      + ("; unstable topology reported" if unstable else ""))
PY
}
log "# command: /usr/bin/time -v $TP infer --format json   (x $RUNS, default plugins)"
for r in $(seq 1 "$RUNS"); do log "$(one "run $r")"; done
log "# command: /usr/bin/time -v $TP infer --format json --plugins all   (x $ALL_RUNS)"
for r in $(seq 1 "$ALL_RUNS"); do log "$(one "all $r" --plugins all)"; done
finish
