#!/usr/bin/env bash
# Runs topoprobe on a matrix of virtual servers (QEMU guests of scripts/vm/guest.sh, software
# emulation) and writes what agreed with the OS (hwloc) and what did not, with the boot and
# run times of every shape, to docs/bench/virtual-servers-DATE.md. The raw results of each
# shape (checks.sh's files, the guest's console and times) stay in
# target/vm-bench/DATE/SHAPE/.
#
#   scripts/bench/virtual-servers.sh [SHAPE...]     (default: every shape below)
#
# Shapes:
#   a-2s-snc2-memonly-hmat   2 sockets x 6 cores x 2 threads, 2 nodes per socket (SNC-2)
#                            + 1 memory-only node, HMAT (24 vCPUs, 5 nodes)
#   b-4s-2n                  4 sockets x 4 cores, 2 nodes per socket (16 vCPUs, 8 nodes)
#   c-8s-32n                 8 sockets x 4 cores, 4 nodes per socket: one core a node
#                            (32 vCPUs, 32 nodes, 128 MiB each)
#   d-4s-4c-2t-memonly-hmat  4 sockets x 4 cores x 2 threads, 4 CPU nodes + 4 memory-only,
#                            HMAT (32 vCPUs, 8 nodes)
#   e-offline-cpuset         2 sockets x 4 cores x 2 threads, 2 nodes per socket, CPUs 5
#                            and 13 offline, run in the cpuset 0-4,6-11 with nodes 0-2
#   f-memory-tier            2 sockets x 4 cores x 2 threads, one node per socket, one
#                            memory-only node, HMAT, and a memory tier: one more node
#                            hidden at boot and onlined through DAX/kmem (16 vCPUs, 4 nodes)
# Exit status: 0 when every shape ran (disagreements are results, not failures), 1 when a
# guest failed, 77 when guests cannot run here (scripts/vm/guest.sh --check says why).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

declare -A SHAPES=(
    [a-2s-snc2-memonly-hmat]="--sockets 2 --cores 6 --threads 2 --nodes-per-socket 2 --memory-only 1 --hmat on --mem-per-node 256"
    [b-4s-2n]="--sockets 4 --cores 4 --threads 1 --nodes-per-socket 2 --mem-per-node 256"
    [c-8s-32n]="--sockets 8 --cores 4 --threads 1 --nodes-per-socket 4 --mem-per-node 128"
    [d-4s-4c-2t-memonly-hmat]="--sockets 4 --cores 4 --threads 2 --memory-only 4 --hmat on --mem-per-node 256"
    [e-offline-cpuset]="--sockets 2 --cores 4 --threads 2 --nodes-per-socket 2 --mem-per-node 256 --offline 5,13 --cpuset 0-4,6-11:0-2"
    [f-memory-tier]="--sockets 2 --cores 4 --threads 2 --nodes-per-socket 1 --memory-only 1 --hmat on --memory-tier 256 --mem-per-node 256"
)
order=(a-2s-snc2-memonly-hmat b-4s-2n c-8s-32n d-4s-4c-2t-memonly-hmat e-offline-cpuset f-memory-tier)
[ $# -gt 0 ] && order=("$@")
for s in "${order[@]}"; do
    [ -n "${SHAPES[$s]:-}" ] || { echo "virtual-servers.sh: unknown shape $s (known: ${!SHAPES[*]})" >&2; exit 2; }
done

TP=${TP:-target/release/topoprobe}
[ -x "$TP" ] || cargo build --release --locked -q -p topoprobe-cli
TP=$(cd "$(dirname "$TP")" && pwd)/$(basename "$TP")
if ! check=$(scripts/vm/guest.sh --check 2>&1); then
    echo "$check" >&2
    exit 77
fi

date=$(date +%F)
base=target/vm-bench/$date
report=docs/bench/virtual-servers-$date.md
mkdir -p "$base" docs/bench
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
    echo "# topoprobe on virtual servers, $date"
    echo
    echo "Made by \`scripts/bench/virtual-servers.sh\` at commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (+changes)'),"
    echo "$(date -u +%FT%TZ), on $cpu, $(nproc) CPUs, $(uname -r); load before: $(uptime | sed 's/.*load average: //')."
    echo "Guests: QEMU $(qemu-system-x86_64 --version | head -1 | awk '{print $4}'), $(echo "$check" | sed -n 's/^accelerator: //p' | cut -d' ' -f1), kernel $(basename "$(dirname "$(echo "$check" | sed -n 's/^kernel: //p')")")."
    echo "Binary: $TP. Each shape boots once and runs \`scripts/vm/checks.sh\`; \`scripts/vm/compare.py\`"
    echo "judges the results (hwloc's answer first). Raw results: \`$base/SHAPE/\`."
    echo
    echo "| shape | vCPUs | nodes | boot s | run s | infer s | mem s | agree | disagree | guest |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
} > "$report"
failed=0
for s in "${order[@]}"; do
    dir=$base/$s
    rm -rf "$dir"
    mkdir -p "$dir"
    # shellcheck disable=SC2086 # the shape is a list of options
    read -ra opts <<< "${SHAPES[$s]}"
    echo "virtual-servers.sh: $s: scripts/vm/guest.sh ${SHAPES[$s]}" >&2
    rc=0
    scripts/vm/guest.sh "${opts[@]}" --timeout 600 --out "$dir" --env "TP=$TP" -- scripts/vm/checks.sh \
        > "$dir/guest.out" 2> "$dir/guest.err" || rc=$?
    val() { sed -n "s/^$1 //p" "$dir/.vm/times" 2>/dev/null; }
    step_s() { awk -F'\t' -v n="$1" '$1 == n { print $3 }' "$dir/checks.tsv" 2>/dev/null; }
    qemu_cmd=$(scripts/vm/guest.sh "${opts[@]}" --dry-run)
    ncpu=$(grep -o 'cpus=[0-9]*' <<< "$qemu_cmd" | head -1 | cut -d= -f2 || true)
    nnodes=$(grep -o 'node,nodeid=[0-9]*' <<< "$qemu_cmd" | wc -l || true)
    if [ $rc = 0 ] && [ -s "$dir/checks.tsv" ]; then
        python3 scripts/vm/compare.py "$dir" --shape "$s" > "$dir/compare.txt"
        agree=$(grep -c '^agree' "$dir/compare.txt" || true)
        disagree=$(grep -c '^DISAGREE' "$dir/compare.txt" || true)
        outcome=ok
    else
        agree=- disagree=-
        outcome="failed (exit $rc: $(grep -m1 'guest.sh:' "$dir/guest.err" || tail -1 "$dir/guest.err"))"
        failed=1
    fi
    echo "| $s | $ncpu | $nnodes | $(val boot_s) | $(val run_s) | $(step_s infer) | $(step_s mem) | $agree | $disagree | $outcome |" >> "$report"
    {
        echo
        echo "### $s"
        echo
        echo "\`scripts/vm/guest.sh ${SHAPES[$s]}\`"
        echo
        if [ -s "$dir/compare.txt" ]; then
            echo '```'
            grep -E '^(DISAGREE|unjudged)' "$dir/compare.txt" | cut -c1-400 || echo "(every check agrees)"
            echo '```'
        else
            echo "The guest failed: exit $rc."
            echo '```'
            tail -15 "$dir/guest.err"
            echo '```'
        fi
    } >> "$tmp"
    echo "virtual-servers.sh: $s: $outcome, boot $(val boot_s) s, run $(val run_s) s, $agree agree, $disagree disagree" >&2
done
{
    echo
    echo "Load after: $(uptime | sed 's/.*load average: //'). \`boot s\`: QEMU start to the guest's init mounting"
    echo "its shares; \`run s\`: from there to power-off (checks.sh: about 50 topoprobe, hwloc"
    echo "and numactl runs, infer and mem with a 10 s budget each); all under TCG software emulation."
    echo
    echo "## Disagreements"
    cat "$tmp"
} >> "$report"
echo "virtual-servers.sh: wrote $report" >&2
exit $failed
