#!/usr/bin/env bash
# The contention experiments of topoprobe-sync on this machine, with their alternatives in
# the same run (docs/BENCHMARKS.md, "Locks, false sharing and cache-line operations").
#
#   scripts/bench/sync.sh [OUTDIR]
#
# Writes to OUTDIR (default docs/bench/sync-DATE): uptime before and after, the pair latency
# of CPUs 0 and 1 (`topoprobe latency`, for the line-ops comparison), and JSON of
#   bench locks --threads 2 --runs 5 (every kind and backoff, std/parking_lot/spin),
#   bench locks --threads 2 --runs 5 --cs-ns 100 --pause-ns 2000 (low contention),
#   bench false-sharing --threads 2 --runs 5,
#   bench line-ops --rounds 500,
# then prints the summary tables. Needs this machine's description (topoprobe infer).
# Run at normal priority in a quiet window: the numbers are timings.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-docs/bench/sync-$(date +%F)}
TP=${TP:-target/release/topoprobe}
cargo build --release --quiet --locked -p topoprobe-cli
mkdir -p "$OUT"
uptime | tee "$OUT/uptime-before.txt"
"$TP" latency 0 1 --json > "$OUT/latency-0-1.json"
"$TP" bench locks --threads 2 --runs 5 --json > "$OUT/locks.json"
"$TP" bench locks --threads 2 --runs 5 --cs-ns 100 --pause-ns 2000 --json > "$OUT/locks-low.json"
"$TP" bench false-sharing --threads 2 --runs 5 --json > "$OUT/false-sharing.json"
"$TP" bench line-ops --rounds 500 --json > "$OUT/line-ops.json"
"$TP" latency 0 1 --json > "$OUT/latency-0-1-after.json"
uptime | tee "$OUT/uptime-after.txt"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for name in ["locks", "locks-low"]:
    d = json.load(open(f"{out}/{name}.json"))
    rs = d["results"]
    std = next(r["acquisitions_per_s"] for r in rs if r["lock"] == "std")
    print(f"\n{name}: cs {d['cs_ns']} ns, pause {d['pause_ns']} ns, {d['threads']} threads, median of {d['runs']}")
    print("| lock | backoff | M acq/s | fairness | vs none | vs std |")
    print("|---|---|---|---|---|---|")
    for r in rs:
        none = next((x["acquisitions_per_s"] for x in rs if x["lock"] == r["lock"] and x["backoff"] == "none"), None)
        vn = f"{r['acquisitions_per_s']/none:.2f}x" if none else "-"
        print(f"| {r['lock']} | {r['backoff']} | {r['acquisitions_per_s']/1e6:.3f} | {r['fairness']:.2f} | {vn} | {r['acquisitions_per_s']/std:.2f}x |")
d = json.load(open(f"{out}/false-sharing.json"))
base = d["results"][0]["ops_per_s"]
print("\nfalse sharing | stride | M incr/s | vs 8 B |")
for r in d["results"]:
    print(f"| {r['stride_bytes']} | {r['ops_per_s']/1e6:.1f} | {r['ops_per_s']/base:.2f}x |")
print("advice:", *d["advice"], sep="\n  ")
d = json.load(open(f"{out}/line-ops.json"))
print("\nline ops | op | state | scope | ns |")
for r in d["results"]:
    print(f"| {r['op']} | {r['state']} | {r['scope']} | {r['latency_ns']:.1f} |")
lat = [json.load(open(f"{out}/{f}"))["median_ns"] for f in ["latency-0-1.json", "latency-0-1-after.json"]]
cas = next(r["latency_ns"] for r in d["results"] if r["op"] == "cas" and r["state"] == "modified" and r["scope"] in ("socket", "group"))
print(f"\nCAS on a modified line {cas:.1f} ns; topoprobe latency 0 1: {lat[0]:.1f} / {lat[1]:.1f} ns (before/after): ratio {cas/lat[0]:.2f} / {cas/lat[1]:.2f}")
PY
