#!/usr/bin/env bash
# Acceptance of `topoprobe balance` on a 2-CPU machine: two busy processes both started
# with `taskset -c 0`; `balance --pid A --pid B --duration 5 --interval 0.5 --json -o -` must
# move one of them to CPU 1 within 2 s, their combined CPU time per second must rise at
# least 1.7x, and nothing may move afterwards. Then `--advise` on the same setup must
# report the same decision and move nothing. Run at normal priority on a quiet machine:
# on a loaded one the other processes take the CPU the move frees, and the ratio says so.
#
#   scripts/bench/balance-2cpu.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
TP=${TP:-target/release/topoprobe}
[ -x "$TP" ] || cargo build --release --locked -q -p topoprobe-cli
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]:-}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
printf ',50\n50,\n' > "$dir/m2.csv"
"$TP" infer --from-matrix "$dir/m2.csv" --json -o "$dir/m2.json" 2>/dev/null
busy() { taskset -c 0 sh -c 'while :; do :; done' >/dev/null 2>&1 & pids+=($!); }
echo "uptime before: $(uptime)"
pass=0
for run in $(seq 1 "$RUNS"); do
  # --advise first, on a pair of its own: it must leave both on CPU 0.
  busy; a=$!; busy; b=$!
  sleep 0.2
  "$TP" balance --topology "$dir/m2.json" --pid "$a" --pid "$b" --duration 2 --interval 0.5 --json -o - --advise \
    > "$dir/advise.json" 2>/dev/null || true
  still=$(taskset -pc "$a" | sed 's/.*: //')$(taskset -pc "$b" | sed 's/.*: //')
  [ "$still" = "00" ] || echo "run $run: --advise moved something ($still)"
  kill "$a" "$b"; wait "$a" "$b" 2>/dev/null || true
  busy; a=$!; busy; b=$!
  sleep 0.2
  "$TP" balance --topology "$dir/m2.json" --pid "$a" --pid "$b" --duration 5 --interval 0.5 --json -o - \
    > "$dir/r.json" 2> "$dir/err"
  kill "$a" "$b"; wait "$a" "$b" 2>/dev/null || true
  line=$(python3 - "$dir/r.json" "$dir/advise.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); adv = json.load(open(sys.argv[2]))
moves = [m for m in r["moves"] if m["kind"] == "move"]
if not moves:
    print("no move  FAIL"); sys.exit()
first = moves[0]
k = first["interval"]
series = r["cpu_s_per_s"]
before = sum(series[:k]) / k
after = series[k + 1:]
after = sum(after) / len(after) if after else 0.0
ratio = after / before if before else float("inf")
later = len(r["moves"]) - 1
advice = [m for m in adv["moves"] if m["kind"] == "advice"]
same = bool(advice) and advice[0]["from"] == first["from"] and advice[0]["to"] == first["to"]
ok = first["time_s"] <= 2.0 and first["to"] == [1] and ratio >= 1.7 and later == 0 and same
print(f'move at {first["time_s"]:.2f} s {first["from"]}->{first["to"]}, CPU s/s {before:.2f} -> {after:.2f} ({ratio:.2f}x), later decisions {later}, advise same {same}, monitor {r["self_cpu_s_per_s"]*1000:.1f} ms/s  {"PASS" if ok else "FAIL"}')
PY
)
  echo "run $run: $line"
  case "$line" in *PASS) pass=$((pass + 1));; esac
done
echo "uptime after: $(uptime)"
echo "$pass of $RUNS runs passed"
