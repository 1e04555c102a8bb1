#!/usr/bin/env bash
# The pair probe beside core-to-core-latency (`cargo install core-to-core-latency`),
# ROUNDS alternated rounds (default 10) on CPUs 0 and 1: core-to-core-latency's CAS bench
# (`5000 300`), `topoprobe latency 0 1` (each side retries the CAS: one transfer per hop)
# and `topoprobe latency 0 1 --wait load` (spin on loads, then swap: the probe's first
# form). Ratios to core-to-core-latency.
#
#   scripts/bench/pair-vs-c2c.sh [ROUNDS]   # log: docs/bench/pair-vs-c2c-DATE.log
source "$(dirname "$0")/common.sh" pair-vs-c2c
ROUNDS=${1:-10}
C2C=${C2C:-$(command -v core-to-core-latency || echo "$HOME/.cargo/bin/core-to-core-latency")}
log "# commands: $C2C 5000 300 --csv -c 0,1 ; $TP latency 0 1 --json ; $TP latency 0 1 --json --wait load"
log "round  c2c_ns  cas_ns  load_ns  cas/c2c  load/c2c  load/cas"
r_cas=(); r_load=()
lat() { "$TP" latency 0 1 --json "$@" | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["median_ns"])'; }
for r in $(seq 1 "$ROUNDS"); do
    c=$("$C2C" 5000 300 --csv -c 0,1 2>/dev/null | sed -n 2p | cut -d, -f1)
    a=$(lat); l=$(lat --wait load)
    read -r q1 q2 q3 < <(python3 -c "print(f'{$a/$c:.3f} {$l/$c:.3f} {$l/$a:.3f}')")
    r_cas+=("$q1"); r_load+=("$q2:$q3")
    log "$(printf '%5s  %6.1f  %6s  %7s  %7s  %8s  %8s' "$r" "$c" "$a" "$l" "$q1" "$q2" "$q3")"
done
python3 - "${r_cas[*]}" "${r_load[*]}" <<'PY' | tee -a "$LOG"
import statistics, sys
cas = [float(x) for x in sys.argv[1].split()]
load = [float(x.split(":")[0]) for x in sys.argv[2].split()]; lc = [float(x.split(":")[1]) for x in sys.argv[2].split()]
m = statistics.median
print(f"median ratio to core-to-core-latency: cas {m(cas):.3f} (min {min(cas):.3f}, max {max(cas):.3f}); load {m(load):.3f} (min {min(load):.3f}, max {max(load):.3f}); load/cas {m(lc):.3f}")
PY
finish
