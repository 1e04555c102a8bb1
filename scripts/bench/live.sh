#!/usr/bin/env bash
# Acceptance runs of live measurement on this machine, side by side with
# core-to-core-latency (`cargo install core-to-core-latency`; pass its path as C2C).
#
#   scripts/bench/live.sh [RUNS] [BUSY_RUNS]
#
# 1. RUNS consecutive `topoprobe infer` runs (default 50), each followed by one run of
#    `core-to-core-latency 5000 300 --csv` on the same two CPUs (interleaved, because the
#    host may move vCPUs between runs). Reports the inferred structure of every run and the
#    ratio topoprobe / core-to-core-latency of the 0<->1 latency.
# 2. BUSY_RUNS runs (default 20) with a competing busy loop pinned on the last CPU: each
#    run must give the right topology, or fail with a clear message.
# 3. Wall time and peak memory of `infer`, `matrix --full` and core-to-core-latency.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-50}
BUSY_RUNS=${2:-20}
TP=${TP:-target/release/topoprobe}
C2C=${C2C:-$(command -v core-to-core-latency || true)}
[ -x "$TP" ] || cargo build --release --locked -q
export TOPOPROBE_FILE=$(mktemp -d)/machine.json
cpus=$(nproc)
expect_cores=$cpus

echo "# topoprobe infer x $RUNS, interleaved with core-to-core-latency 5000 300"
ok=0; ratios=()
for i in $(seq 1 "$RUNS"); do
  out=$("$TP" infer --format json 2>/dev/null) || { echo "run $i: exit $?"; continue; }
  read -r sockets cores smt lat < <(python3 -c '
import json,sys; v=json.loads(sys.stdin.read())
print(v["facts"]["sockets"]["value"], len(v["cores"]), v["facts"]["smt"]["value"], v["latency"]["raw"][0][1])' <<<"$out")
  if [ "$sockets" = 1 ] && [ "$cores" = "$expect_cores" ] && [ "$smt" = False ]; then ok=$((ok+1)); fi
  line="run $i: sockets $sockets cores $cores smt $smt latency(0,1) ${lat} ns"
  if [ -n "$C2C" ]; then
    c=$("$C2C" 5000 300 --csv -c 0,1 2>/dev/null | sed -n 2p | cut -d, -f1)
    r=$(python3 -c "print(f'{$lat/$c:.3f}')")
    ratios+=("$r")
    line="$line  core-to-core-latency ${c} ns  ratio $r"
  fi
  echo "$line"
done
echo "correct (1 socket, $expect_cores cores, no SMT): $ok of $RUNS"
if [ ${#ratios[@]} -gt 0 ]; then
  python3 -c "
import statistics,sys; r=[float(x) for x in sys.argv[1:]]
print(f'ratio topoprobe/core-to-core-latency: median {statistics.median(r):.3f}, min {min(r):.3f}, max {max(r):.3f}, within 1.5x: {sum(1 for x in r if 1/1.5<=x<=1.5)} of {len(r)}')" "${ratios[@]}"
fi

echo
echo "# topoprobe infer x $BUSY_RUNS with a busy loop pinned on CPU $((cpus-1))"
taskset -c $((cpus-1)) sh -c 'while :; do :; done' &
busy=$!
trap 'kill $busy 2>/dev/null || true' EXIT
right=0; failed=0; wrong=0
for i in $(seq 1 "$BUSY_RUNS"); do
  if out=$("$TP" infer --format json 2>/tmp/topoprobe-busy.err); then
    read -r sockets cores smt warn < <(python3 -c '
import json,sys; v=json.loads(sys.stdin.read())
print(v["facts"]["sockets"]["value"], len(v["cores"]), v["facts"]["smt"]["value"], len(v["validation"]["warnings"])+len(v["validation"]["unresolved"]))' <<<"$out")
    if [ "$sockets" = 1 ] && [ "$cores" = "$expect_cores" ] && [ "$smt" = False ]; then right=$((right+1)); echo "run $i: right";
    else wrong=$((wrong+1)); echo "run $i: WRONG (sockets $sockets cores $cores smt $smt, $warn warnings)"; fi
  else
    failed=$((failed+1)); echo "run $i: failed: $(tail -1 /tmp/topoprobe-busy.err)"
  fi
done
kill $busy; trap - EXIT
echo "busy loop: right $right, failed with a message $failed, wrong $wrong (of $BUSY_RUNS)"

echo
echo "# wall time and peak memory (same run)"
t() { /usr/bin/time -f "%e s, %M KB peak" "$@" >/dev/null 2>/tmp/topoprobe-time.err; tail -1 /tmp/topoprobe-time.err; }
echo "topoprobe infer:               $(t "$TP" infer)"
echo "topoprobe matrix --full --format csv: $(t "$TP" matrix --full --format csv)"
[ -n "$C2C" ] && echo "core-to-core-latency 5000 300: $(t "$C2C" 5000 300 --csv)"
exit 0
