#!/usr/bin/env bash
# Overhead of the balancer's monitor: CPU time per second of `topoprobe balance` watching
# one process of 100 threads (each wakes every 10 ms for a little work) at a 0.5 s
# interval, with every metric, for DURATION seconds (default 20); several runs. Also the
# same with 10 threads, to show how the cost grows with threads. Beside it, in the same
# window, `top -b -H -d 0.5` watching the same threads for as long (procps top reads the
# same per-thread /proc files every interval): the nearest existing monitor.
#
#   scripts/bench/balance-overhead.sh [RUNS] [DURATION]
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
DURATION=${2:-20}
TP=${TP:-target/release/topoprobe}
[ -x "$TP" ] || cargo build --release --locked -q -p topoprobe-cli
dir=$(mktemp -d)
prog=""
cleanup() { [ -n "$prog" ] && kill "$prog" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
cat > "$dir/sleepers.c" <<'C'
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
static void *run(void *a) {
    volatile unsigned long x = 0;
    struct timespec ts = {0, 10 * 1000 * 1000};
    for (;;) { for (int i = 0; i < 20000; i++) x += i; nanosleep(&ts, NULL); }
    return a;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100;
    pthread_t t;
    for (int i = 1; i < n; i++) pthread_create(&t, NULL, run, NULL);
    run(NULL);
}
C
gcc -O1 -o "$dir/sleepers" "$dir/sleepers.c" -pthread
echo "uptime before: $(uptime)"
for threads in 100 10; do
  "$dir/sleepers" "$threads" & prog=$!
  sleep 0.5
  for run in $(seq 1 "$RUNS"); do
    "$TP" balance --pid "$prog" --interval 0.5 --duration "$DURATION" --json -o - 2>/dev/null > "$dir/r.json"
    python3 - "$dir/r.json" "$threads" "$run" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"threads {sys.argv[2]:>3} run {sys.argv[3]}: monitor {r['self_cpu_s_per_s']*1000:.2f} ms CPU per s "
      f"({r['intervals']} intervals, {len(r['moves'])} decisions)")
PY
    n=$(python3 -c "print(int($DURATION / 0.5))")
    /usr/bin/time -f "%U %S %e" -o "$dir/top.time" top -b -H -d 0.5 -n "$n" -p "$prog" > /dev/null
    read -r u s e < "$dir/top.time"
    python3 -c "print(f'threads {$threads:>3} run $run: top -H  {($u + $s) / $e * 1000:.2f} ms CPU per s')"
  done
  kill "$prog"; wait "$prog" 2>/dev/null || true; prog=""
done
echo "uptime after: $(uptime)"
