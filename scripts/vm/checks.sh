#!/usr/bin/env bash
# Collects, on the machine it runs on (a guest of scripts/vm/guest.sh, or any Linux
# machine), what scripts/vm/compare.py compares: the OS's view as topoprobe and hwloc see
# it, CPU sets named the hwloc-calc way as both resolve them, and topoprobe's inference,
# memory measurement, placement and hwloc-XML export.
#
#   scripts/vm/checks.sh [OUTDIR]     (default: $TOPOPROBE_VM_OUT, set inside a guest)
#   scripts/vm/guest.sh --out DIR [SHAPE] -- scripts/vm/checks.sh
#
# Every step writes OUTDIR/NAME.out and NAME.err and one line "NAME<TAB>STATUS<TAB>SECONDS
# <TAB>COMMAND" into OUTDIR/checks.tsv; a failing step does not stop the others, and this
# script exits 0 when it could run them all (the results are judged by compare.py).
# TP (default: target/release/topoprobe of this checkout) is the binary under test;
# CHECKS_BUDGET (default 10) is infer's and mem's --budget in seconds; CHECKS_ONLY=os stops
# after the OS's view (topoprobe os, lstopo, numactl).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-${TOPOPROBE_VM_OUT:?give OUTDIR or run inside scripts/vm/guest.sh}}
tp=${TP:-$repo/target/release/topoprobe}
budget=${CHECKS_BUDGET:-10}
mkdir -p "$out"
cd "$out"
[ -x "$tp" ] || { echo "checks.sh: $tp is not an executable" >&2; exit 1; }
# The description infer saves stays in this run's directory, never in the user's.
export XDG_DATA_HOME=$out/xdg-data
unset TOPOPROBE_FILE
: > checks.tsv

now() { date +%s.%N; }
# step NAME COMMAND ARGS...: runs it with stdout in NAME.out, stderr in NAME.err.
step() {
    local name=$1 t0 t1 rc=0
    shift
    t0=$(now)
    "$@" > "$name.out" 2> "$name.err" < /dev/null || rc=$?
    t1=$(now)
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" "$*" >> checks.tsv
}

# What the OS says.
step os "$tp" os --json
# --disallowed: the whole machine, as topoprobe os shows it; CPUs outside the cpuset are
# in the Machine's cpuset but not in its allowed_cpuset.
step lstopo-xml lstopo-no-graphics --disallowed --of xml
step lstopo-v lstopo-no-graphics --disallowed -v --of console
step numactl numactl --hardware
uname -r > kernel.txt
{ nproc; cat /sys/devices/system/cpu/online; cat /sys/devices/system/cpu/offline 2>/dev/null || true; } > cpus-online.txt
# CHECKS_ONLY=os: the OS's view alone (a quick look at many shapes).
if [ "${CHECKS_ONLY:-}" = os ]; then
    echo "checks.sh: $(wc -l < checks.tsv) steps (the OS's view only), results in $out" >&2
    exit 0
fi

# CPU sets named as hwloc-calc names them (logical indexes), as hwloc-calc and topoprobe
# resolve them; topoprobe's answer before and after `infer` has saved a description.
# hwloc-calc answers within the cpuset (its default), as a program run there sees it.
packages=$(find /sys/devices/system/cpu/cpu*/topology/physical_package_id -maxdepth 0 2>/dev/null \
    | xargs cat | sort -u | wc -l)
nodes=$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' | wc -l)
names=(package:0 package:0.core:1 core:3 pu:5 l3cache:0 numanode:0 all)
[ "$packages" -gt 1 ] && names+=(package:1 package:1.core:1 package:1.core:0-1)
[ "$packages" -gt 2 ] && names+=(package:2.core:1 package:2)
[ "$packages" -gt 3 ] && names+=("package:$((packages - 1)).core:0")
[ "$nodes" -gt 1 ] && names+=(numanode:1 node:1)
[ "$nodes" -gt 2 ] && names+=("numanode:$((nodes - 1))")
printf '%s\n' "${names[@]}" > names.txt
for name in "${names[@]}"; do
    step "hwloc-calc.$name" hwloc-calc --physical-output --intersect pu "$name"
    step "cpus-os.$name" "$tp" cpus "$name"
done

# Plans (nothing measured), then the timed measurements.
step infer-plan "$tp" infer --plan
step mem-full-plan "$tp" mem --full --plan
step infer "$tp" infer --budget "$budget" --json -o infer.json
step mem "$tp" mem --budget "$budget" --json -o mem.json
for name in "${names[@]}"; do
    step "cpus.$name" "$tp" cpus "$name"
done
step place "$tp" place --policy rr_core -n 8
# Placement and tuning on this machine use only the CPUs a process here may use.
step allowed grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status
step place-rr "$tp" place --policy rr_core -n 8 -q
step run-pin "$tp" run --pin package:0.core:1 -- grep Cpus_allowed_list /proc/self/status
step run-policy "$tp" run --policy rr_core -n 2 -- grep Cpus_allowed_list /proc/self/status
busy() { i=0; while [ "$i" -lt "$1" ]; do i=$((i + 1)); done; }
step autopin "$tp" autopin --initial-wait 0.5 --warmup 0.2 --measure 0.5 --json -o autopin.json \
    -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'
busy 2000000 &
busy_pid=$!
step balance "$tp" balance --pid "$busy_pid" --duration 2 --interval 0.5 --json -o balance.json
kill "$busy_pid" 2>/dev/null || true
wait "$busy_pid" 2>/dev/null || true
if [ -s infer.json ]; then
    step export "$tp" show --topology infer.json --format hwloc-xml -o export.xml
    step export-load lstopo-no-graphics --input export.xml
    step export-load-xml lstopo-no-graphics --input export.xml --of xml
fi
echo "checks.sh: $(wc -l < checks.tsv) steps, results in $out" >&2
