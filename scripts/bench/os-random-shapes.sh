#!/usr/bin/env bash
# Boots N virtual servers of random shapes (scripts/vm/guest.sh: sockets, dies, cores,
# threads, NUMA nodes per socket, memory-only nodes, HMAT, offline CPUs, a cpuset) and
# checks in each that `topoprobe os --json` equals lstopo inside the same guest (counts,
# the PU sets of packages, cores, nodes, L2 and L3, distances, memory-side caches,
# offline CPUs, the cpuset: compare.py's os.* checks). Writes one line per shape and the
# total to docs/bench/os-random-shapes-DATE.md; the guests' files stay in
# target/vm-bench/os-random-DATE/.
#
#   scripts/bench/os-random-shapes.sh [N [SEED]]     (default: 20 shapes, seed 1)
#
# TP (default: target/release/topoprobe) is the binary under test. Exit status: 0 when
# every shape agrees, 1 when one disagrees or could not run, 77 when guests cannot run here.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
n=${1:-20}
seed=${2:-1}
tp=${TP:-$repo/target/release/topoprobe}
[ -x "$tp" ] || { echo "os-random-shapes.sh: build first: cargo build --release -p topoprobe-cli" >&2; exit 2; }
scripts/vm/guest.sh --check >/dev/null || exit 77
date=$(date -u +%F)
root=target/vm-bench/os-random-$date
report=docs/bench/os-random-shapes-$date.md
mkdir -p "$root" docs/bench
# Shapes from the seed: one line of guest.sh options each.
python3 - "$n" "$seed" > "$root/shapes.txt" <<'PY'
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
for _ in range(n):
    while True:
        # 3 cores a die stalls the guest's boot under TCG (soft lockups before init, every
        # time): a limit of the emulated machine, said in docs/VIRTUAL_SERVERS.md.
        s, d, c, t = rng.choice([1, 2, 2, 4, 8]), rng.choice([1, 1, 2]), rng.choice([1, 2, 4, 6]), rng.choice([1, 2])
        cpus = s * d * c * t
        if 2 <= cpus <= 32:
            break
    per_die = [k for k in (1, 2, 4) if (d * c) % k == 0]
    k = rng.choice(per_die)
    mem_only = rng.choice([0, 0, 1, 2])
    nodes = s * k + mem_only
    opts = ["--sockets", s, "--dies", d, "--cores", c, "--threads", t, "--nodes-per-socket", k,
            "--memory-only", mem_only, "--hmat", rng.choice(["on", "off"]), "--mem-per-node", 128 if nodes > 8 else 192]
    if cpus > 2 and rng.random() < 0.35:
        off = sorted(rng.sample(range(1, cpus), rng.randint(1, min(3, cpus - 2))))
        opts += ["--offline", ",".join(map(str, off))]
    if cpus > 2 and rng.random() < 0.35:
        keep = sorted(rng.sample(range(cpus), rng.randint(2, cpus - 1)))
        opts += ["--cpuset", ",".join(map(str, keep))]
    print(" ".join(map(str, opts)))
PY
{
    echo "# topoprobe os against lstopo on $n random virtual servers, $date"
    echo
    echo "Made by \`scripts/bench/os-random-shapes.sh $n $seed\` at commit $(git rev-parse --short HEAD),"
    echo "on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs. Each guest runs"
    echo "\`scripts/vm/checks.sh\` with \`CHECKS_ONLY=os\`; \`scripts/vm/compare.py\` judges its \`os.*\` checks."
    echo
    echo "| # | shape (guest.sh options) | nproc | boot s | os checks | result |"
    echo "|---|---|---|---|---|---|"
} > "$report"
agree=0 i=0 bad=0
while read -r line; do
    i=$((i + 1))
    dir=$root/$i
    rm -rf "$dir"
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    if scripts/vm/guest.sh $line --out "$dir" --env TP="$tp" --env CHECKS_ONLY=os --timeout 300 \
        -- "$repo/scripts/vm/checks.sh" > "$dir/guest.out" 2> "$dir/guest.err"; then
        python3 scripts/vm/compare.py "$dir" | grep -E ' os\.' > "$dir/compare.txt" || true
        checks=$(wc -l < "$dir/compare.txt")
        wrong=$(grep -c '^DISAGREE' "$dir/compare.txt" || true)
        if [ "$checks" -gt 0 ] && [ "$wrong" -eq 0 ]; then
            result=agree
            agree=$((agree + 1))
        else
            result="DISAGREE: $(grep '^DISAGREE' "$dir/compare.txt" | cut -c11-200 | tr '\n' ';')"
            bad=1
        fi
    else
        checks=0
        result="guest failed ($(tail -1 "$dir/guest.err" | cut -c1-120))"
        bad=1
    fi
    cpus=$(head -1 "$dir/cpus-online.txt" 2>/dev/null || echo -)
    boot=$(sed -n 's/^boot_s //p' "$dir/.vm/times" 2>/dev/null || echo -)
    echo "| $i | \`$line\` | $cpus | $boot | $checks | $result |" >> "$report"
    echo "os-random-shapes.sh: $i: $result" >&2
done < "$root/shapes.txt"
echo >> "$report"
echo "Total: $agree of $i shapes agree." >> "$report"
echo "os-random-shapes.sh: $agree of $i agree; wrote $report" >&2
exit "$bad"
