#!/usr/bin/env bash
# `topoprobe mem --c2c` beside `topoprobe bench line-ops`, which share their kernels: ROUNDS
# alternated rounds (default 5) of `bench line-ops --json` and `mem --c2c --latency-only
# --json`, each with 100 rounds per figure; for every (distance, state, operation) both
# measure, the ratio c2c / line-ops. The two should agree within the spread of the figure
# itself (a line's transfer time on a guest moves with where the host runs the vCPUs).
#
#   scripts/bench/c2c-vs-line-ops.sh [ROUNDS]   # log: docs/bench/c2c-vs-line-ops-DATE.log
source "$(dirname "$0")/common.sh" c2c-vs-line-ops
ROUNDS=${1:-5}
log "# commands: $TP bench line-ops --json ; $TP mem --c2c --latency-only --json (alternated, $ROUNDS rounds)"
files=()
for r in $(seq 1 "$ROUNDS"); do
    a=$(mktemp) b=$(mktemp)
    "$TP" bench line-ops --json > "$a" 2>/dev/null
    "$TP" mem --c2c --latency-only --json > "$b" 2>/dev/null
    files+=("$a:$b")
done
python3 - "${files[@]}" <<'PY' | tee -a "$LOG"
import json, statistics, sys
ratios = {}
for pair in sys.argv[1:]:
    a, b = pair.split(":")
    ops = {(x["scope"], x["state"], x["op"]): x["latency_ns"] for x in json.load(open(a))["results"]}
    c2c = json.load(open(b))["cache_to_cache"]["transfers"]
    for t in c2c:
        k = (t["scope"], t["state"], t["op"])
        if k in ops and ops[k] > 0:
            ratios.setdefault(k, []).append((ops[k], t["latency_ns"]))
print("distance      state      op      line-ops ns (median)  c2c ns (median)  c2c/line-ops median (range)")
all_q = []
for k in sorted(ratios):
    v = ratios[k]
    q = sorted(c / l for l, c in v)
    all_q += q
    print("%-12s  %-9s  %-5s  %20.1f  %15.1f  %.3f (%.3f-%.3f)" % (
        k[0], k[1], k[2], statistics.median(l for l, _ in v), statistics.median(c for _, c in v),
        statistics.median(q), q[0], q[-1]))
if all_q:
    print("all figures: median c2c/line-ops %.3f, %d of %d within 10%%" % (
        statistics.median(all_q), sum(abs(x - 1) <= 0.10 for x in all_q), len(all_q)))
PY
for p in "${files[@]}"; do rm -f "${p%%:*}" "${p##*:}"; done
finish
