#!/usr/bin/env bash
# The cost plans against reality: for every plugin of `topoprobe infer` and for each measuring
# command, the plan a dry run prints (`--plan --json`: seconds, largest buffer) beside what the
# real run took (wall time and peak RSS from /usr/bin/time), as ratios reality / plan. For
# `infer`, each plugin's own steps are also compared, from the description's provenance
# (`provenance.cost`: every step's planned and spent seconds). The acceptance: every ratio
# within 2x (the plan's memory counts the probes' buffers; the process itself adds its code
# and tables, measured here by `infer --plugins none`).
#
#   scripts/bench/plan.sh [RUNS]      # log: docs/bench/plan-DATE.log (RUNS per line, default 3)
source "$(dirname "$0")/common.sh" plan
RUNS=${1:-3}
tmp=$(mktemp -d)
export TOPOPROBE_FILE=$tmp/machine.json
"$TP" infer --plugins none > /dev/null 2>&1
log "# $RUNS runs per line; ratios are reality / plan; times are medians of the runs"
log "# commands: $TP infer --plugins P --plan --json, then /usr/bin/time -f '%e %M' $TP infer --plugins P --format json -o FILE; the same with cache, mem, mem --full, contention, matrix --full"
# plan JSON -> "seconds largest_step_bytes"
plan_of() { python3 -c 'import json,sys; p=json.load(sys.stdin); print(sum(s["seconds"] for s in p["steps"]), max([s["bytes"] for s in p["steps"] if s["probe"] != "inference"] + [0]))'; }
# /usr/bin/time output file -> "seconds kib"
timed() { local out=$1; shift; /usr/bin/time -f '%e %M' -o "$out" "$@" > /dev/null 2>&1 || true; }
base_kib=""
row() { # name, plan "seconds bytes", list of "wall kib" lines
    python3 - "$@" <<'PY' | tee -a "$LOG"
import statistics, sys
name, plan = sys.argv[1], sys.argv[2].split()
runs = [tuple(map(float, r.split())) for r in sys.argv[4:]]
base = float(sys.argv[3]) if sys.argv[3] else 0.0
ps, pb = float(plan[0]), float(plan[1])
wall = statistics.median(r[0] for r in runs); kib = statistics.median(r[1] for r in runs)
planned_mib = (pb / 2**20) + base / 1024
ratio_t = wall / ps if ps > 0 else float("nan")
ratio_m = (kib / 1024) / planned_mib if planned_mib > 0 else float("nan")
ok = "ok" if 0.5 <= ratio_t <= 2 and 0.5 <= ratio_m <= 2 else "OUT"
print(f"{name:<28} {ps:7.2f} s {wall:7.2f} s {ratio_t:5.2f}x  {planned_mib:7.0f} MiB {kib/1024:7.0f} MiB {ratio_m:5.2f}x  {ok}")
PY
}
log "$(printf '%-28s %9s %9s %6s  %11s %11s %6s' what planned wall ratio 'planned+base' 'peak RSS' ratio)"
for P in none cache mem mem-latency power shared-caches contention default all; do
    args=(--plugins "$P"); [ "$P" = default ] && args=()
    plan=$("$TP" infer "${args[@]}" --plan --json 2>/dev/null | plan_of)
    lines=()
    for r in $(seq 1 "$RUNS"); do
        timed "$tmp/t" "$TP" infer "${args[@]}" --format json -o "$tmp/d$P$r.json"
        lines+=("$(cat "$tmp/t")")
    done
    if [ "$P" = none ]; then base_kib=$(echo "${lines[0]}" | awk '{print $2}'); fi
    row "infer --plugins $P" "$plan" "$base_kib" "${lines[@]}"
done
for C in "cache" "mem" "mem --full" "contention" "matrix --full"; do
    # shellcheck disable=SC2086
    plan=$("$TP" $C --plan --json 2>/dev/null | plan_of)
    lines=()
    for r in $(seq 1 "$RUNS"); do
        # shellcheck disable=SC2086
        timed "$tmp/t" "$TP" $C
        lines+=("$(cat "$tmp/t")")
    done
    row "$C" "$plan" "$base_kib" "${lines[@]}"
done
log "# each plugin's own steps inside infer (--plugins all, run 1): planned and spent seconds from provenance.cost"
python3 - "$tmp/dall1.json" <<'PY' | tee -a "$LOG"
import json, sys, collections
d = json.load(open(sys.argv[1])); steps = d["provenance"]["cost"]["steps"]
by = collections.OrderedDict()
for s in steps:
    p = by.setdefault(s["probe"], [0.0, 0.0])
    p[0] += s["seconds"]; p[1] += s.get("spent_seconds") or 0.0
for k, (plan, spent) in by.items():
    ratio = spent / plan if plan > 0 else float("nan")
    print(f"  {k:<14} planned {plan:6.2f} s  spent {spent:6.2f} s  {ratio:5.2f}x")
PY
finish
