#!/usr/bin/env bash
# RUNS consecutive `topoprobe infer` runs (default 20, default plugins): each must give the
# OS's structure (sockets = packages, cores = the OS's cores, SMT as the OS says) or say
# that the guest's topology is unstable; any other structure is counted as silent.
#
#   scripts/bench/unstable.sh [RUNS]     # log: docs/bench/unstable-DATE.log
source "$(dirname "$0")/common.sh" unstable
RUNS=${1:-20}
export TOPOPROBE_FILE=$(mktemp -d)/machine.json
os=$(python3 - <<'PY'
import glob, os
pk, cores, smt = set(), set(), False
for d in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology"):
    p = open(f"{d}/physical_package_id").read().strip(); c = open(f"{d}/core_id").read().strip()
    pk.add(p); cores.add((p, c))
    smt |= "," in open(f"{d}/thread_siblings_list").read() or "-" in open(f"{d}/thread_siblings_list").read()
print(len(pk), len(cores), smt)
PY
)
read -r os_sockets os_cores os_smt <<<"$os"
log "# OS: $os_sockets socket(s), $os_cores cores, SMT $os_smt; command: $TP infer --format json (x $RUNS)"
same=0; unstable=0; silent=0
for r in $(seq 1 "$RUNS"); do
    out=$("$TP" infer --format json 2>/dev/null) || { log "run $r: exit $?"; silent=$((silent+1)); continue; }
    read -r s c m u lat refs < <(python3 -c '
import json, sys
v = json.loads(sys.stdin.read())
u = [w["message"] for w in v["validation"]["warnings"] if w["kind"] == "unstable_topology"]
print(v["facts"]["sockets"]["value"], len(v["cores"]), v["facts"]["smt"]["value"], len(u),
      "%.1f" % v["latency"]["raw"][0][1], v["provenance"]["parameters"].get("reference_pairs", "-").replace(" ", "_"))' <<<"$out")
    if [ "$s" = "$os_sockets" ] && [ "$c" = "$os_cores" ] && [ "$m" = "$os_smt" ]; then verdict="OS structure"; same=$((same+1))
    else verdict="different structure"; fi
    if [ "$u" != 0 ]; then verdict="$verdict, UNSTABLE reported ($u finding(s))"; unstable=$((unstable+1))
    elif [ "$verdict" = "different structure" ]; then silent=$((silent+1)); verdict="$verdict, SILENT"; fi
    log "run $r: sockets $s cores $c smt $m latency(0,1) $lat ns, reference checks ${refs//_/ }: $verdict"
done
log "OS structure: $same/$RUNS; unstable reported: $unstable/$RUNS; different structure without saying so: $silent/$RUNS"
finish
