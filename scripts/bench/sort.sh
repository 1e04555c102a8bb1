#!/usr/bin/env bash
# The sort experiment (docs/BENCHMARKS.md, "Sort"): topoprobe's sort against rayon's
# par_sort_unstable and std's sort_unstable on the same random u32 and u64 arrays, median
# of 5, at 64 MiB and 1 GiB, with 2 threads (all of this machine's contexts), then GNU
# parallel mode sort on the same inputs (scripts/bench/gnu-sort.sh).
#
#   scripts/bench/sort.sh [OUTDIR] [THREADS]
#
# Writes OUTDIR/sort-64M.json, sort-1G.json, gnu-sort.txt and uptime before and after.
# Needs this machine's description (topoprobe infer), g++ with OpenMP, 4 GiB of free memory.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-docs/bench/sort-$(date +%F)}
THREADS=${2:-2}
TP=${TP:-target/release/topoprobe}
cargo build --release --quiet --locked -p topoprobe-cli
mkdir -p "$OUT"
uptime | tee "$OUT/uptime-before.txt"
"$TP" bench sort --size 64M --threads "$THREADS" --runs 5 --json > "$OUT/sort-64M.json"
"$TP" bench sort --size 1G --threads "$THREADS" --runs 5 --json > "$OUT/sort-1G.json"
scripts/bench/gnu-sort.sh "$THREADS" 5 | tee "$OUT/gnu-sort.txt"
uptime | tee "$OUT/uptime-after.txt"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for f in ["sort-64M.json", "sort-1G.json"]:
    d = json.load(open(f"{out}/{f}"))
    print(f"\n{f}: verified={d['verified']}; " + "; ".join(d["calibration"]))
    print("| keys | algorithm | threads | seconds (median of 5) | rayon / this | std / this |")
    print("|---|---|---|---|---|---|")
    rs = d["results"]
    for r in rs:
        ray = next(x["seconds"] for x in rs if x["keys"] == r["keys"] and x["algorithm"] == "rayon_par_sort_unstable")
        std = next(x["seconds"] for x in rs if x["keys"] == r["keys"] and x["algorithm"] == "std_sort_unstable")
        print(f"| {r['keys']} | {r['algorithm']} | {r['threads']} | {r['seconds']:.3f} | {ray/r['seconds']:.2f}x | {std/r['seconds']:.2f}x |")
PY
