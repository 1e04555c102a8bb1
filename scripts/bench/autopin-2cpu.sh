#!/usr/bin/env bash
# Acceptance of autopin on a 2-CPU machine: a program with two compute-bound threads
# (cli/tests/progs/spin_threads.c) under `topoprobe autopin --schedule 0:0 --schedule 0:1`,
# with the default metric and with --metric cpu-time. autopin must pick 0:1 with a score
# at least 1.7x that of 0:0 (two threads on two CPUs get about twice the CPU time of two
# threads sharing one). Run at normal priority on a quiet machine: on a loaded one the
# scheduler gives both pinnings the same share and the ratio says so.
#
#   scripts/bench/autopin-2cpu.sh [RUNS]
#
# Prints, per run and metric: the scores of 0:0 and 0:1, their ratio and the pick; then
# how many runs passed, with `uptime` before and after.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
TP=${TP:-target/release/topoprobe}
[ -x "$TP" ] || cargo build --release --locked -q -p topoprobe-cli
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
gcc -O1 -o "$dir/spin" cli/tests/progs/spin_threads.c -pthread
printf ',50\n50,\n' > "$dir/m2.csv"
"$TP" infer --from-matrix "$dir/m2.csv" --json -o "$dir/m2.json" 2>/dev/null
echo "uptime before: $(uptime)"
pass=0; total=0
for run in $(seq 1 "$RUNS"); do
  for metric in auto cpu-time; do
    total=$((total + 1))
    "$TP" autopin --topology "$dir/m2.json" --schedule 0:0 --schedule 0:1 \
      --metric "$metric" --initial-wait 1 --warmup 0.5 --measure 3 --no-early-stop --json -o - \
      -- "$dir/spin" 2 10 2>"$dir/err" | sed -n '/^{/,$p' > "$dir/report.json"
    line=$(python3 - "$dir/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = {c["name"]: c["score"] or 0.0 for c in r["candidates"]}
ratio = s["0:1"] / s["0:0"] if s["0:0"] else float("inf")
ok = r["best"]["name"] == "0:1" and ratio >= 1.7
print(f'{r["metric"]:<10} 0:0 {s["0:0"]:.3f}  0:1 {s["0:1"]:.3f}  ratio {ratio:.2f}  pick {r["best"]["name"]}  {"PASS" if ok else "FAIL"}')
PY
)
    echo "run $run metric $metric: $line"
    case "$line" in *PASS) pass=$((pass + 1));; esac
  done
done
echo "uptime after: $(uptime)"
echo "$pass of $total runs picked 0:1 with a ratio >= 1.7"
