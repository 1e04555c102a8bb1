#!/usr/bin/env bash
# A check of topoprobe on a larger machine, in one command that needs no network and
# installs nothing: it runs the release binaries (and, when they are on the PATH,
# core-to-core-latency, likwid-bench and lstopo) and writes everything under OUTDIR:
#
#   machine.txt      lscpu, sysfs topology and caches, NUMA nodes, lstopo, kernel, load
#   infer            default `infer` (wall time, peak RSS): description.json, infer.txt
#   stability/       10 x `infer --plugins none --format tsv`: exit codes, partitions, runs
#                    flagged unstable or noisy
#   matrix-full.csv  3 x `matrix --full` (exit codes; the first good CSV is kept);
#                    c2c.csv from `core-to-core-latency --csv` when present
#   cache.json, mem.json, likwid-*.txt (`likwid-bench -t load_avx -w S0:1GB:1` and
#                    `:n`, n the contexts of socket 0, beside mem's read bandwidth)
#   locks.json, sort.json   `bench locks` and `bench sort --size 1G` with every CPU
#   autopin.*        `autopin` on tune/examples/thread_pairs.rs (ping-pong thread pairs
#                    with heartbeats), then the program alone, pinned as chosen and unpinned
#   steps.tsv        per step: exit code, wall s, peak RSS MiB, time limit s
#   summary.md       the summary table, also printed at the end
#
#   scripts/bench/machine-check.sh OUTDIR
#
# Build first (the script builds nothing):
#   cargo build --release --locked -p topoprobe-cli -p topoprobe-tune --bins --examples
# On another machine, point at the binaries: TP=/path/topoprobe PAIRS=/path/thread_pairs.
# Other settings: BUDGET (seconds for the whole run; default 175 up to 4 CPUs, 350 up to
# 16, 2 s more per CPU beyond), SORT_SIZE (default 1G), C2C, LIKWID, LSTOPO (tools to use
# instead of the ones on the PATH; an empty value skips the tool).
#
# Every step runs under `timeout` with a limit planned from the CPU count, cut so that the
# steps still to come keep their minimum and the whole run stays within BUDGET; a step that
# fails or times out is recorded and the run goes on. Wall time and peak RSS come from
# /usr/bin/time when it is there, else from the clock and VmHWM read every 0.2 s.
# docs/BENCHMARKS.md says where to commit the result (data/machines/<cpu>-<date>/).
set -uo pipefail # no -e: one step's failure must not stop the others

usage() { echo "usage: $0 OUTDIR   (see the comments at the top of this script)" >&2; exit 2; }
[ $# -eq 1 ] || usage
case $1 in -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TP=${TP:-$ROOT/target/release/topoprobe}
PAIRS=${PAIRS:-$ROOT/target/release/examples/thread_pairs}
missing=0
for b in "$TP" "$PAIRS"; do
    if [ ! -x "$b" ]; then
        echo "machine-check: $b is missing" >&2
        missing=1
    fi
done
if [ "$missing" = 1 ]; then
    cat >&2 <<EOF
machine-check: build the binaries first (this script builds and installs nothing):
  cargo build --release --locked -p topoprobe-cli -p topoprobe-tune --bins --examples
or name them: TP=/path/to/topoprobe PAIRS=/path/to/thread_pairs $0 OUTDIR
EOF
    exit 2
fi
tool() { # SETTING NAME... -> SETTING ("-": unset; empty: no tool), else the first NAME on the PATH
    local s=$1 n
    shift
    if [ "$s" != "-" ]; then echo "$s"; return; fi
    for n in "$@"; do command -v "$n" 2> /dev/null && return; done
}
C2C=$(tool "${C2C--}" core-to-core-latency)
LIKWID=$(tool "${LIKWID--}" likwid-bench)
LSTOPO=$(tool "${LSTOPO--}" lstopo-no-graphics lstopo)
unset PAIRS_CPUS # thread_pairs pins itself only where this script says so

mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
if [ -n "$(ls -A "$OUT")" ]; then
    echo "machine-check: $OUT is not empty; give a new folder" >&2
    exit 2
fi
mkdir -p "$OUT/logs" "$OUT/stability"
exec > >(tee "$OUT/logs/run.log") 2>&1

N=$(nproc)
T=$((N - N % 2)); [ "$T" -ge 2 ] || T=2 # threads of thread_pairs: an even number
if [ "$N" -le 4 ]; then DEF_BUDGET=175; elif [ "$N" -le 16 ]; then DEF_BUDGET=350; else DEF_BUDGET=$((350 + 2 * (N - 16))); fi
BUDGET=${BUDGET:-$DEF_BUDGET}
SORT_SIZE=${SORT_SIZE:-1G}
START=$(date +%s)
DEADLINE=$((START + BUDGET))
GRACE=3 # seconds between timeout's TERM and its KILL
if [ -x /usr/bin/time ] && /usr/bin/time -f '%e %M' -o /dev/null true 2>/dev/null; then TIME=/usr/bin/time; else TIME=; fi

# Time limits, seconds: planned from the CPU count, and a floor kept for each step until it runs.
P_FACTS=20 F_FACTS=3
P_INFER=$((30 + 5 * N)) F_INFER=10
P_STAB=$((20 + 3 * N)) F_STAB=10 P_STAB_RUN=$((5 + N / 2))
P_MATRIX=$((10 + 2 * N)) F_MATRIX=3 P_MATRIX_RUN=$((5 + N / 2))
P_C2C=$((20 + 2 * N)) F_C2C=0
P_CACHE=$((30 + N)) F_CACHE=5
P_MEM=$((40 + 5 * N)) F_MEM=15
P_LIKWID=20 F_LIKWID=0
P_LOCKS=$((20 + 2 * N)) F_LOCKS=5
P_SORT=90 F_SORT=20
PAIRS_S=$((4 + 5 * (N < 8 ? N : 8) / 2)) # thread_pairs under autopin: its initial wait and up to 8 candidates
P_AUTOPIN=$((PAIRS_S + 15)) F_AUTOPIN=15
PAIRS_ALONE_S=3 P_ALONE=16 F_ALONE=8 # then the program alone, pinned as chosen and unpinned
[ -n "$C2C" ] && F_C2C=5
[ -n "$LIKWID" ] && [ "$(uname -m)" = x86_64 ] && F_LIKWID=5
RESERVE=$((F_FACTS + F_INFER + F_STAB + F_MATRIX + F_C2C + F_CACHE + F_MEM + F_LIKWID + F_LOCKS + F_SORT + F_AUTOPIN + F_ALONE))
LOCK_S=$([ "$N" -le 4 ] && echo 0.25 || echo 0.5) # seconds per lock measurement (21 of them)

plan() { # PLANNED FLOOR -> LIMIT: PLANNED, or less when later steps would not keep their
    # floors, but not below this step's FLOOR; never past the deadline (0: skip the step)
    RESERVE=$((RESERVE - $2))
    local left=$((DEADLINE - $(date +%s) - GRACE))
    LIMIT=$((left - RESERVE))
    [ "$LIMIT" -ge "$2" ] || LIMIT=$2
    [ "$LIMIT" -le "$1" ] || LIMIT=$1
    [ "$LIMIT" -le "$left" ] || LIMIT=$left
    [ "$LIMIT" -ge 1 ] || LIMIT=0
}

# step NAME LIMIT CMD...: runs CMD under `timeout LIMIT`, stdin from /dev/null, stdout to
# $STDOUT (default logs/NAME.out), stderr to logs/NAME.err; sets RC, WALL (s), PEAK (MiB)
# and appends them to steps.tsv. A limit of 0 skips the step (RC "skip").
printf 'step\trc\twall_s\tpeak_mib\tlimit_s\n' > "$OUT/steps.tsv"
step() {
    local name=$1 lim=$2 out=${STDOUT:-$OUT/logs/$1.out} err=$OUT/logs/$1.err
    shift 2
    RC=skip WALL=0 PEAK="?"
    if [ "$lim" -lt 1 ]; then
        echo "  $name: skipped (no time left in the budget of $BUDGET s)"
        printf '%s\tskip\t0\t?\t0\n' "$name" >> "$OUT/steps.tsv"
        return
    fi
    if [ -n "$TIME" ]; then
        "$TIME" -f '%e %M' -o "$OUT/logs/$name.time" timeout -k "$GRACE" "$lim" "$@" < /dev/null > "$out" 2> "$err"
        RC=$?
        read -r WALL PEAK < <(tail -1 "$OUT/logs/$name.time")
        rm -f "$OUT/logs/$name.time"
        PEAK=$(awk -v k="$PEAK" 'BEGIN { printf "%.0f", k / 1024 }')
    else
        local t0 t1 pid c k v hwm=0 kids
        t0=$(date +%s%N)
        timeout -k "$GRACE" "$lim" "$@" < /dev/null > "$out" 2> "$err" &
        pid=$!
        while kill -0 "$pid" 2> /dev/null; do
            kids=()
            read -ra kids < "/proc/$pid/task/$pid/children" 2> /dev/null # no newline at its end
            for c in "${kids[@]}"; do
                while read -r k v _; do
                    [ "$k" = VmHWM: ] && [ "$v" -gt "$hwm" ] && hwm=$v
                done < "/proc/$c/status" 2> /dev/null
            done
            sleep 0.2
        done
        wait "$pid"
        RC=$?
        t1=$(date +%s%N)
        WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
        PEAK=$([ "$hwm" -gt 0 ] && awk -v k="$hwm" 'BEGIN { printf "%.0f", k / 1024 }' || echo "?")
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$RC" "$WALL" "$PEAK" "$lim" >> "$OUT/steps.tsv"
    local note=""
    [ "$RC" = 124 ] || [ "$RC" = 137 ] && note=" (timed out after $lim s)"
    echo "  $name: exit $RC$note, $WALL s, peak $PEAK MiB"
}

# flat FILE: a JSON document as topoprobe prints it (pretty, one value per line) -> one
# `path=value` line per value, arrays indexed from 0: `results.2.read_gbps=13.6`.
flat() {
    awk '
    function here(   p, i) { p = ""; for (i = 1; i <= d; i++) if (name[i] != "") p = p name[i] "."; return p }
    {
        s = $0; sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); sub(/,$/, "", s)
        if (s == "") next
        if (s == "}" || s == "]") { d--; next }
        key = ""
        if (s ~ /^"[^"]*": /) { i = index(s, "\": "); key = substr(s, 2, i - 2); s = substr(s, i + 3) }
        else if (d > 0 && arr[d]) key = cnt[d]++
        if (s == "{" || s == "[") { d++; name[d] = key; arr[d] = (s == "["); cnt[d] = 0; next }
        if (s ~ /^".*"$/) s = substr(s, 2, length(s) - 2)
        print here() key "=" s
    }' "$1" 2> /dev/null
}
# objects PREFIX < flat: one line per element of the array PREFIX, its fields as key=value
# separated by tabs (`lock=ticket<TAB>backoff=none<TAB>...`).
objects() {
    awk -v p="$1." 'index($0, p) == 1 {
        r = substr($0, length(p) + 1); i = index(r, "."); n = substr(r, 1, i - 1); kv = substr(r, i + 1)
        if (!(n in row)) order[++m] = n
        row[n] = row[n] (row[n] == "" ? "" : "\t") kv
    } END { for (j = 1; j <= m; j++) print row[order[j]] }'
}
field() { # KEY: the value of KEY in a line of `objects` on stdin (first line)
    awk -F'\t' -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }'
}
human() { # bytes -> KiB/MiB/GiB
    awk -v b="$1" 'BEGIN { if (b == "" || b == "null") { print "?"; exit }
        split("B KiB MiB GiB TiB", u, " "); i = 1; while (b >= 1024 && i < 5) { b /= 1024; i++ }
        f = (b == int(b) ? "%d %s" : "%.1f %s"); printf f, b, u[i] }'
}
exits() { # rc... -> "0 ×10" or "0 ×8, 1 ×2"
    printf '%s\n' "$@" | sort | uniq -c | awk '{ printf "%s%s ×%d", (NR > 1 ? ", " : ""), $2, $1 }'
}
maxpeak() { # MiB MiB ("?": unknown) -> the larger
    if [ "$1" = "?" ]; then echo "$2"; elif [ "$2" = "?" ] || [ "$1" -ge "$2" ]; then echo "$1"; else echo "$2"; fi
}
ROWS=()
row() { # WHAT EXITS WALL PEAK FIGURES
    local fig=$5
    case $2 in skip*) fig="skipped: no time left in the budget" ;; esac
    ROWS+=("| $1 | $2 | $3 | $4 | $fig |")
}
lscpu_field() { lscpu 2> /dev/null | sed -n "s/^$1: *//p" | head -1; }

# --- the machine ----------------------------------------------------------------------
echo "machine-check: $N CPUs, budget $BUDGET s, output in $OUT"
LOAD_BEFORE=$(uptime)
MODEL=$(lscpu_field 'Model name')
[ -n "$MODEL" ] || MODEL=$(sed -n 's/^\(model name\|Model\|cpu model\)[[:space:]]*: //p' /proc/cpuinfo | head -1)
FAMILY=$(lscpu_field 'CPU family')
CPU_MODEL=$(lscpu_field 'Model')
SOCKETS=$(cat /sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id 2> /dev/null | sort -u | wc -l)
NODES=$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' 2> /dev/null | wc -l)
L3=$(lscpu_field 'L3 cache')
[ -n "$L3" ] || L3=$(cat /sys/devices/system/cpu/cpu0/cache/index3/size 2> /dev/null || echo none)
HYPERVISOR=$(lscpu_field 'Hypervisor vendor')
[ -n "$HYPERVISOR" ] || HYPERVISOR=$(grep -qw hypervisor /proc/cpuinfo && echo "a hypervisor" || echo "bare metal")
SOCKET0=$(grep -lx 0 /sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id 2> /dev/null | wc -l)
[ "$SOCKET0" -ge 1 ] || SOCKET0=$N
MACHINE="$MODEL (family ${FAMILY:-?}, model ${CPU_MODEL:-?}), $N CPUs, $SOCKETS socket(s), $NODES NUMA node(s), L3 $L3, $HYPERVISOR, $(uname -sr)"
if [ -e "$ROOT/.git" ] && COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null); then
    git -C "$ROOT" diff --quiet HEAD 2> /dev/null || COMMIT="$COMMIT+changes"
else
    COMMIT="? (the script is not in a checkout)"
fi
VERSION="$("$TP" --version 2> /dev/null | head -1), built $(date -r "$TP" '+%F %T')"
SLUG=$(echo "$MODEL" | tr '[:upper:]' '[:lower:]' | sed 's/([a-z]*)//g; s/@.*//; s/\b\(processor\|cpu\|[0-9]*-core\)\b//g; s/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
[ "$HYPERVISOR" = "bare metal" ] || SLUG="$SLUG-vm"
SLUG="$SLUG-${N}cpu-$(date +%F)"
echo "machine: $MACHINE"
echo "topoprobe: commit $COMMIT; $VERSION ($TP)"

plan "$P_FACTS" "$F_FACTS"
{
    echo "# machine-check $(date -u +%FT%TZ): $MACHINE"
    echo "# topoprobe: commit $COMMIT; $VERSION; $TP"
    echo "# load before: $LOAD_BEFORE"
    echo "## lscpu"; lscpu 2>&1
    echo "## cpu (core, package, die, SMT siblings, L2 and L3 sharing from sysfs)"
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        t=$c/topology
        echo "$(basename "$c") core=$(cat "$t/core_id" 2> /dev/null) pkg=$(cat "$t/physical_package_id" 2> /dev/null)" \
            "die=$(cat "$t/die_id" 2> /dev/null) sib=$(cat "$t/thread_siblings_list" 2> /dev/null)" \
            "l2=$(cat "$c/cache/index2/shared_cpu_list" 2> /dev/null) l3=$(cat "$c/cache/index3/shared_cpu_list" 2> /dev/null)"
    done | sort -V
    echo "## cache sizes of cpu0 (sysfs)"
    for i in /sys/devices/system/cpu/cpu0/cache/index*; do
        echo "L$(cat "$i/level") $(cat "$i/type") $(cat "$i/size") shared by $(cat "$i/shared_cpu_list")"
    done 2> /dev/null
    echo "## NUMA nodes"
    for n in /sys/devices/system/node/node[0-9]*; do
        [ -d "$n" ] && echo "$(basename "$n") cpus $(cat "$n/cpulist") $(sed -n 's/.*MemTotal: *//p' "$n/meminfo")"
    done
    echo "## memory"; grep -E '^(MemTotal|MemFree|MemAvailable|HugePages_Total|Hugepagesize)' /proc/meminfo
    echo "## transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2> /dev/null)"
    echo "## kernel: $(uname -a)"
    echo "## tools: lstopo ${LSTOPO:-absent}, core-to-core-latency ${C2C:-absent}, likwid-bench ${LIKWID:-absent}, /usr/bin/time ${TIME:-absent}"
} > "$OUT/machine.txt" 2>&1
if [ -n "$LSTOPO" ]; then
    STDOUT=$OUT/lstopo.txt step lstopo "$LIMIT" "$LSTOPO" --of console --no-io
    { echo "## lstopo"; cat "$OUT/lstopo.txt"; } >> "$OUT/machine.txt"
fi

# --- infer with the default plugins -------------------------------------------------------
echo "== infer (default plugins)"
plan "$P_INFER" "$F_INFER"
export TOPOPROBE_FILE=$OUT/description.json
# The plan first (a dry run: nothing measured), to set beside what the run takes.
timeout 30 "$TP" infer --plan --json > "$OUT/infer-plan.json" 2> "$OUT/logs/infer-plan.err" < /dev/null || true
PLANNED=$(flat "$OUT/infer-plan.json" | awk -F= '/^steps\.[0-9]+\.seconds=/ { s += $2 } END { if (s) printf "%.1f", s }')
STDOUT=$OUT/infer.txt step infer "$LIMIT" "$TP" infer
fig="$(sed -n 's/^topoprobe: \(.*\) (measured on this machine)$/\1/p' "$OUT/infer.txt" | head -1)"
smt=$(sed -n 's/.*SMT: \([a-z]*\).*/\1/p' "$OUT/infer.txt" | head -1)
pairs=$(sed -n 's/^topoprobe: measured \(.* s\); description.*/\1/p' "$OUT/logs/infer.err" | head -1)
warn=$(sed -n '/^warnings$/,/^$/s/^  - \([a-z_]*\):.*/\1/p' "$OUT/infer.txt" | sort -u | paste -sd, - | sed 's/,/, /g')
[ -n "$fig" ] && fig="$fig, SMT ${smt:-?}; ${pairs:-?}; planned ${PLANNED:-?} s; warnings: ${warn:-none}" || fig="no description: $(tail -1 "$OUT/logs/infer.err")"
row "infer (default plugins)" "$RC" "$WALL" "$PEAK" "$fig"
INFER_OK=$([ -s "$OUT/description.json" ] && echo 1 || echo 0)
[ "$INFER_OK" = 1 ] && "$TP" show --topology "$OUT/description.json" --format tsv 2> /dev/null | grep -v '^#' > "$OUT/logs/infer-partition.tsv"

# --- 10 x infer --plugins none -------------------------------------------------------------
echo "== 10 x infer --plugins none"
plan "$P_STAB" "$F_STAB"
stab_end=$(($(date +%s) + LIMIT))
rcs=() walls=() peak="?" flagged=0 unstable=0 noisy=0
: > "$OUT/stability/partitions.txt"
for i in 01 02 03 04 05 06 07 08 09 10; do
    left=$((stab_end - $(date +%s)))
    lim=$((P_STAB_RUN < left ? P_STAB_RUN : left))
    [ "$lim" -ge 1 ] || lim=0
    TOPOPROBE_FILE=$OUT/stability/description.json step "stability-$i" "$lim" \
        "$TP" infer --plugins none --format tsv -o "$OUT/stability/run-$i.tsv"
    [ -e "$OUT/logs/stability-$i.err" ] && mv "$OUT/logs/stability-$i.err" "$OUT/stability/run-$i.err"
    rcs+=("$RC") walls+=("$WALL")
    peak=$(maxpeak "$peak" "$PEAK")
    f="$OUT/stability/run-$i.tsv" e="$OUT/stability/run-$i.err"
    u=0 z=0
    { grep -qs '^topoprobe: unstable topology' "$e" || grep -s '^#' "$f" | grep -qi unstable; } && u=1
    { grep -qsi noisy "$e" || grep -s '^#' "$f" | grep -qi noisy; } && z=1
    unstable=$((unstable + u)) noisy=$((noisy + z))
    [ $((u + z)) -gt 0 ] && flagged=$((flagged + 1))
    [ -s "$f" ] && grep -v '^#' "$f" | md5sum | cut -c1-12 >> "$OUT/stability/partitions.txt"
done
if [ "$INFER_OK" = 0 ] && [ -s "$OUT/stability/description.json" ]; then
    # the later steps read this machine's description: the last good run's
    mv "$OUT/stability/description.json" "$OUT/description.json"
    echo "  description.json: from infer --plugins none (the default infer gave none)"
fi
rm -f "$OUT/stability/description.json"
ok=0; for r in "${rcs[@]}"; do [ "$r" = 0 ] && ok=$((ok + 1)); done
distinct=$(sort -u "$OUT/stability/partitions.txt" 2> /dev/null | wc -l)
same=""
if [ "$INFER_OK" = 1 ] && [ "$distinct" -ge 1 ]; then
    ref=$(md5sum < "$OUT/logs/infer-partition.tsv" | cut -c1-12)
    agree=$(grep -c "^$ref" "$OUT/stability/partitions.txt")
    same="; $agree of them = the default infer's"
fi
wall=$(printf '%s\n' "${walls[@]}" | awk '{ s += $1 } END { printf "%.2f", s }')
maxw=$(printf '%s\n' "${walls[@]}" | sort -g | tail -1)
row "10 × infer --plugins none" "$(exits "${rcs[@]}")" "$wall" "$peak" \
    "$ok/10 exit 0 (slowest ${maxw:-?} s); $distinct distinct partition(s) among $(wc -l < "$OUT/stability/partitions.txt") written$same; flagged $flagged ($unstable unstable, $noisy noisy)"

# --- 3 x matrix --full, core-to-core-latency ------------------------------------------------
echo "== 3 x matrix --full"
plan "$P_MATRIX" "$F_MATRIX"
mat_end=$(($(date +%s) + LIMIT))
rcs=() walls=() peak="?" errs=""
for i in 1 2 3; do
    left=$((mat_end - $(date +%s)))
    lim=$((P_MATRIX_RUN < left ? P_MATRIX_RUN : left))
    [ "$lim" -ge 1 ] || lim=0
    step "matrix-$i" "$lim" "$TP" matrix --full -o "$OUT/logs/matrix-$i.csv"
    rcs+=("$RC") walls+=("$WALL")
    peak=$(maxpeak "$peak" "$PEAK")
    if [ "$RC" = 0 ] && [ -s "$OUT/logs/matrix-$i.csv" ] && [ ! -e "$OUT/matrix-full.csv" ]; then
        mv "$OUT/logs/matrix-$i.csv" "$OUT/matrix-full.csv"
    fi
    rm -f "$OUT/logs/matrix-$i.csv"
    [ "$RC" = 0 ] || errs="$errs; run $i: $(grep -s -m1 'error' "$OUT/logs/matrix-$i.err" | cut -c1-160)"
done
csv_stats() { # CSV of a latency matrix (empty cells skipped) -> "min–median–max ns"
    tr ',' '\n' < "$1" | awk 'NF && $1 + 0 > 0' | sort -g | awk '{ v[NR] = $1 } END {
        if (NR) printf "%.1f–%.1f–%.1f ns over %d cells", v[1], v[int((NR + 1) / 2)], v[NR], NR; else print "no values" }'
}
wall=$(printf '%s\n' "${walls[@]}" | awk '{ s += $1 } END { printf "%.2f", s }')
m=$([ -s "$OUT/matrix-full.csv" ] && echo "matrix-full.csv: min–median–max $(csv_stats "$OUT/matrix-full.csv")" || echo "no matrix")
row "3 × matrix --full" "$(exits "${rcs[@]}")" "$wall" "$peak" "$m$errs"
if [ -n "$C2C" ]; then
    plan "$P_C2C" "$F_C2C"
    STDOUT=$OUT/c2c.csv step c2c "$LIMIT" "$C2C" --csv
    row "core-to-core-latency --csv" "$RC" "$WALL" "$PEAK" "c2c.csv: min–median–max $(csv_stats "$OUT/c2c.csv")"
else
    row "core-to-core-latency" "-" "-" "-" "not on the PATH"
fi

# --- cache and memory ----------------------------------------------------------------------
echo "== cache"
plan "$P_CACHE" "$F_CACHE"
step cache "$LIMIT" "$TP" cache --json -o "$OUT/cache.json"
fig=$(flat "$OUT/cache.json" | objects levels | while IFS= read -r l; do
    kind=$(field kind <<< "$l"); lv=$(field level <<< "$l")
    [ "$kind" = instruction ] && continue
    name="L$lv$([ "$kind" = data ] && echo d)"
    echo "$name $(human "$(field size_bytes <<< "$l")") (OS $(human "$(field os_size_bytes <<< "$l")"))"
done | paste -sd, - | sed 's/,/, /g')
row "cache (measured, OS)" "$RC" "$WALL" "$PEAK" "${fig:-no result}"

echo "== mem"
plan "$P_MEM" "$F_MEM"
step mem "$LIMIT" "$TP" mem --json -o "$OUT/mem.json"
read -r MEM_LAT MEM_R1 MEM_RN MEM_TN MEM_WS < <(flat "$OUT/mem.json" | awk -F= '
    /^local_nodes\.0\.node=/ { home = $2 }
    /^bandwidth_working_set_bytes=/ { ws = $2 / 1048576 }
    /^results\./ { split($1, p, "."); r[p[2], p[3]] = $2; if (p[2] + 1 > n) n = p[2] + 1 }
    END {
        lat = "?"; r1 = "?"; rn = "?"; tn = "?"
        for (i = 0; i < n; i++) {
            if (r[i, "socket"] + 0 != 0 || (home != "" && r[i, "node"] + 0 != home + 0)) continue
            lat = sprintf("%.0f", r[i, "latency_ns"])
            if (r[i, "threads"] == 1) r1 = sprintf("%.1f", r[i, "read_gbps"])
            else if (r[i, "threads"] + 0 > tn + 0) { tn = r[i, "threads"]; rn = sprintf("%.1f", r[i, "read_gbps"]) }
        }
        print lat, r1, rn, tn, (ws ? sprintf("%.0f", ws) : "?")
    }')
row "mem (socket 0, local node)" "$RC" "$WALL" "$PEAK" \
    "latency ${MEM_LAT:-?} ns; read ${MEM_R1:-?} GB/s with 1 thread, ${MEM_RN:-?} GB/s with ${MEM_TN:-?} (bandwidth working set ${MEM_WS:-?} MiB)"
if [ "$F_LIKWID" -gt 0 ]; then
    plan $((2 * P_LIKWID)) "$F_LIKWID"
    lk_end=$(($(date +%s) + LIMIT))
    rcs=() wall=0 peak="?" lk=""
    for t in 1 $([ "$SOCKET0" -gt 1 ] && echo "$SOCKET0"); do
        left=$((lk_end - $(date +%s)))
        lim=$((P_LIKWID < left ? P_LIKWID : left))
        [ "$lim" -ge 1 ] || lim=0
        STDOUT=$OUT/likwid-$t.txt step "likwid-$t" "$lim" "$LIKWID" -t load_avx -w "S0:1GB:$t"
        rcs+=("$RC")
        wall=$(awk -v a="$wall" -v b="$WALL" 'BEGIN { printf "%.2f", a + b }')
        peak=$(maxpeak "$peak" "$PEAK")
        g=$(awk '/^MByte\/s/ { printf "%.1f", $2 / 1000 }' "$OUT/likwid-$t.txt")
        lk="$lk${lk:+, }${g:-?} GB/s with $t"
        if [ -z "$g" ]; then
            lk="$lk ($(cat "$OUT/likwid-$t.txt" "$OUT/logs/likwid-$t.err" 2> /dev/null | grep -m1 -iE 'error|fail|cannot' | cut -c1-140))"
        fi
        [ "$RC" = 0 ] || break # likwid-bench does not work here (e.g. it looks for its access daemon)
    done
    row "likwid-bench load_avx S0:1GB" "$(exits "${rcs[@]}")" "$wall" "$peak" "read $lk (topoprobe mem: ${MEM_R1:-?} and ${MEM_RN:-?}, with its widest vector loads)"
else
    row "likwid-bench" "-" "-" "-" "$([ -n "$LIKWID" ] && echo "not an x86-64 machine" || echo "not on the PATH")"
fi

# --- bench locks, bench sort ------------------------------------------------------------
echo "== bench locks ($N threads)"
plan "$P_LOCKS" "$F_LOCKS"
STDOUT=$OUT/locks.json step locks "$LIMIT" "$TP" bench locks --threads "$N" --duration "$LOCK_S" --runs 1 --json
fig=$(flat "$OUT/locks.json" | objects results | awk -F'\t' '
    { for (i = 1; i <= NF; i++) { j = index($i, "="); v[substr($i, 1, j - 1)] = substr($i, j + 1) }
      r = v["acquisitions_per_s"] + 0
      if (v["lock"] == "std") std = r
      else if (v["lock"] == "parking_lot") pl = r
      else if (v["lock"] == "spin") sp = r
      else if (r > best) { best = r; name = v["lock"] "/" v["backoff"] } }
    END {
        if (!best || !std) { print "no result"; exit }
        printf "best %s %.3f M/s = %.2f× std (%.3f M/s); parking_lot %.2f×, spin %.2f× std", name, best / 1e6, best / std, std / 1e6, pl / std, sp / std
    }')
row "bench locks -n $N (${LOCK_S} s each)" "$RC" "$WALL" "$PEAK" "$fig"

echo "== bench sort --size $SORT_SIZE ($N threads)"
plan "$P_SORT" "$F_SORT"
STDOUT=$OUT/sort.json step sort "$LIMIT" "$TP" bench sort --size "$SORT_SIZE" --threads "$N" --runs 1 --json
fig=$(flat "$OUT/sort.json" | objects results | awk -F'\t' '
    { for (i = 1; i <= NF; i++) { j = index($i, "="); v[substr($i, 1, j - 1)] = substr($i, j + 1) }
      s[v["keys"], v["algorithm"]] = v["seconds"]; if (!(v["keys"] in seen)) { seen[v["keys"]]; k[++n] = v["keys"] } }
    END {
        for (i = 1; i <= n; i++) {
            t = s[k[i], "topoprobe"]; r = s[k[i], "rayon_par_sort_unstable"]; d = s[k[i], "std_sort_unstable"]
            printf "%s%s %.3f / %.3f / %.3f s (%.2f× rayon, %.2f× std)", (i > 1 ? "; " : ""), k[i], t, r, d, (t ? r / t : 0), (t ? d / t : 0)
        }
        if (!n) print "no result"
    }')
row "bench sort --size $SORT_SIZE -n $N: topoprobe / rayon / std" "$RC" "$WALL" "$PEAK" "$fig"

# --- autopin on thread pairs -----------------------------------------------------------
echo "== autopin on $T threads in pairs (${PAIRS_S} s)"
plan "$P_AUTOPIN" "$F_AUTOPIN"
STDOUT=$OUT/autopin.out step autopin "$LIMIT" "$TP" autopin --json -o - -- "$PAIRS" "$T" "$PAIRS_S"
sed -n '/^{/,$p' "$OUT/autopin.out" > "$OUT/autopin.json"
AP_RC=$RC AP_WALL=$WALL AP_PEAK=$PEAK
read -r BEST BEST_CPUS GAIN NCAND < <(flat "$OUT/autopin.json" | awk -F= '
    /^best\.name=/ { best = $2 } /^best\.cpus\./ { cpus = cpus (cpus == "" ? "" : ",") $2 }
    /^candidates\.[0-9]+\.score=/ { n++; if ($2 != "null") { s = $2 + 0; if (!min || s < min) min = s; if (s > max) max = s } }
    END { printf "%s %s %s %d\n", (best == "" ? "-" : best), (cpus == "" ? "-" : cpus), (min ? sprintf("%.2f", max / min) : "?"), n }')
metric=$(flat "$OUT/autopin.json" | sed -n 's/^metric=//p')
rate=$(sed -n 's/.*, \([0-9]*\) round trips\/s$/\1/p' "$OUT/autopin.out")
fig="metric ${metric:-?}; best $BEST of $NCAND candidate(s), ${GAIN}× the worst; program: ${rate:-?} round trips/s under autopin"
plan "$P_ALONE" "$F_ALONE"
if [ "$BEST_CPUS" != "-" ]; then
    STDOUT=$OUT/pairs-pinned.txt PAIRS_CPUS=$BEST_CPUS step pairs-pinned $((LIMIT / 2)) "$PAIRS" "$T" "$PAIRS_ALONE_S"
    STDOUT=$OUT/pairs-unpinned.txt step pairs-unpinned $((LIMIT / 2)) "$PAIRS" "$T" "$PAIRS_ALONE_S"
    pin=$(sed -n 's/.*, \([0-9]*\) round trips\/s$/\1/p' "$OUT/pairs-pinned.txt")
    unpin=$(sed -n 's/.*, \([0-9]*\) round trips\/s$/\1/p' "$OUT/pairs-unpinned.txt")
    alone=$(awk -v a="$pin" -v b="$unpin" 'BEGIN { if (a && b) printf "%.2f×", a / b; else print "?" }')
    fig="$fig; alone ${PAIRS_ALONE_S} s: pinned as $BEST ${pin:-?}, unpinned ${unpin:-?} round trips/s ($alone)"
fi
row "autopin: thread_pairs $T $PAIRS_S" "$AP_RC" "$AP_WALL" "$AP_PEAK" "$fig"

# --- summary ------------------------------------------------------------------------------
TOTAL=$(($(date +%s) - START))
find "$OUT/logs" -type f -empty -delete
{
    echo "# machine-check $(date -u +%F)"
    echo
    echo "- machine: $MACHINE"
    echo "- topoprobe: commit $COMMIT; $VERSION ($TP)"
    echo "- load before: ${LOAD_BEFORE#*load average: }; after: $(uptime | sed 's/.*load average: //')"
    echo "- whole run: $TOTAL s (budget $BUDGET s); peak RSS of each step's processes; exit 124/137: the step's time limit (steps.tsv)"
    echo "- data/machines folder: $SLUG"
    echo
    echo "| step | exit | wall s | peak MiB | figures |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
} > "$OUT/summary.md"
echo
cat "$OUT/summary.md"
