#!/usr/bin/env bash
# Boots a virtual server of a given shape under QEMU (software emulation, TCG; KVM where
# /dev/kvm works and the CPU has vmx/svm), runs one command of this machine inside it and
# returns that command's output and exit status. The guest sees this machine's root file
# system read-only at the same paths (so target/release/topoprobe, python3, hwloc... run
# there), with throw-away tmpfs on /tmp, /run, /var/tmp and /dev/shm. It boots this
# machine's Debian kernel (/boot/vmlinuz-*, package linux-image-amd64) with a small busybox
# initramfs (scripts/vm/initramfs.sh, cached); about 5-10 s for 16-64 vCPUs.
#
#   scripts/vm/guest.sh [SHAPE OPTIONS] [--offline LIST] [--cpuset CPUS[:MEMS]]
#                       [--timeout S] [--out DIR] [--env NAME=VALUE]... -- COMMAND ARGS...
#   scripts/vm/guest.sh --check          can guests run here? (exit 0 yes, 77 no, and why)
#   scripts/vm/guest.sh SHAPE --dry-run  print the QEMU command line, boot nothing
#
# Shape (defaults in brackets):
#   --sockets S [2]  --dies D [1]  --cores C [2] (per die)  --threads T [1] (per core)
#   --nodes-per-socket K [1]   NUMA nodes with CPUs per socket; D*C must be a multiple of K.
#                              Node s*K+k holds the k-th K-th part of socket s's cores.
#   --memory-only M [0]        memory-only nodes (CXL-like), numbered after the CPU nodes;
#                              memory-only node j belongs to socket j mod S and has the
#                              first node of that socket as its initiator.
#   --hmat on|off [off]        ACPI HMAT: latency and bandwidth of every initiator/target
#                              pair, and a 16 MiB memory-side cache on every memory-only node.
#   --mem-per-node MiB [128]   memory of every node (the first node gets at least 256).
# Distances (ACPI SLIT): 10 local; 11 between neighbouring nodes of a socket, 12 between
# other nodes of a socket; 21 between sockets of the same group of four, 32 between groups;
# memory-only nodes: 17 to their initiator, 18 to the other nodes of its socket, socket
# distance + 7 elsewhere, 25 between memory-only nodes of a socket, socket distance + 14
# elsewhere. HMAT latencies are 10 ns per distance unit; bandwidths fall with distance.
#
# Inside the guest:
#   --memory-tier MiB          a memory tier: one more memory-only node (the last) of MiB
#                              (rounded up to 128), hidden at boot (memmap=) and onlined
#                              through DAX/kmem (ndctl, daxctl) before the command, as CXL
#                              memory is: a node of a lower memory tier.
#   --offline LIST             CPUs (a list such as 3,5-7) taken offline before the command.
#   --cpuset CPUS[:MEMS]       the command runs in a cgroup-v2 cpuset of these CPUs (and nodes).
#   --env NAME=VALUE           set in the command's environment (which is otherwise only PATH,
#                              HOME=/tmp/vm-home, LANG=C.UTF-8 and TOPOPROBE_VM_OUT).
# The command runs in the current directory (or / when that is under /tmp, which the guest
# does not see), with TOPOPROBE_VM_OUT naming the output directory: files it writes there
# are on this machine afterwards.
#
# Output: without --out, the command's standard output and error are copied to this
# script's; with --out DIR (created if needed, at the same path inside the guest), they are
# left in DIR/stdout, DIR/stderr and its exit status in DIR/status; DIR/.vm/ keeps the
# console log (console.log), QEMU's messages (qemu.log), the times (times: boot_s, run_s,
# total_s, attempts) and the outcome (result: ok, stalled, timeout, crashed).
#
# Exit status: the command's, or one of this script's own (with a "guest.sh:" message on
# standard error; DIR/.vm/result tells them apart from a command's status):
#   2    usage error (a bad option or shape)
#   77   guests cannot run here: QEMU, the kernel, its modules, busybox or cpio is missing
#   75   the boot stalled: the guest did not mount its shares within --boot-timeout (60 s),
#        twice (one boot in about 45 hangs under TCG, so one retry is made)
#   124  the command did not finish within --timeout seconds (600); the guest was killed
#   70   the guest ended without an exit status (kernel panic, init failure, QEMU error)
# Every wait is bounded: a guest never outlives --boot-timeout x 2 + --timeout.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() { echo "guest.sh: $*" >&2; echo "guest.sh: see the header of $0 for its options" >&2; exit 2; }
cannot() { echo "guest.sh: guests cannot run here: $*" >&2; exit 77; }

sockets=2 dies=1 cores=2 threads=1 nps=1 memonly=0 hmat=off mem=128
tier=0 offline="" cpuset="" timeout=600 boot_timeout=60 out="" check=0 dry=0 accel=auto
envs=()
num() { [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge "${3:-1}" ] || usage "$1 needs an integer >= ${3:-1}, not '$2'"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --sockets) num "$1" "${2-}"; sockets=$2; shift 2 ;;
        --dies) num "$1" "${2-}"; dies=$2; shift 2 ;;
        --cores) num "$1" "${2-}"; cores=$2; shift 2 ;;
        --threads) num "$1" "${2-}"; threads=$2; shift 2 ;;
        --nodes-per-socket) num "$1" "${2-}"; nps=$2; shift 2 ;;
        --memory-only) num "$1" "${2-}" 0; memonly=$2; shift 2 ;;
        --hmat) case "${2-}" in on|off) hmat=$2 ;; *) usage "--hmat takes on or off" ;; esac; shift 2 ;;
        --mem-per-node) num "$1" "${2-}" 64; mem=$2; shift 2 ;;
        --memory-tier) num "$1" "${2-}" 64; tier=$2; shift 2 ;;
        --offline) [[ "${2-}" =~ ^[0-9,-]+$ ]] || usage "--offline takes a CPU list such as 3,5-7"; offline=$2; shift 2 ;;
        --cpuset) [[ "${2-}" =~ ^[0-9,-]+(:[0-9,-]+)?$ ]] || usage "--cpuset takes CPUS[:MEMS] such as 0-7:0"; cpuset=$2; shift 2 ;;
        --timeout) num "$1" "${2-}"; timeout=$2; shift 2 ;;
        --boot-timeout) num "$1" "${2-}"; boot_timeout=$2; shift 2 ;;
        --out) [ -n "${2-}" ] || usage "--out needs a directory"; out=$2; shift 2 ;;
        --env) [[ "${2-}" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage "--env takes NAME=VALUE"; envs+=("$2"); shift 2 ;;
        --accel) case "${2-}" in auto|tcg|kvm) accel=$2 ;; *) usage "--accel takes auto, tcg or kvm" ;; esac; shift 2 ;;
        --check) check=1; shift ;;
        --dry-run) dry=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) usage "unknown option $1 (the command comes after --)" ;;
    esac
done
[ $check = 1 ] || [ $dry = 1 ] || [ $# -gt 0 ] || usage "no command given (scripts/vm/guest.sh [OPTIONS] -- COMMAND ARGS...)"

per_socket=$((dies * cores * threads))
ncpus=$((sockets * per_socket))
cpu_nodes=$((sockets * nps))
if [ "$tier" -gt 0 ]; then
    # The tier is one more memory-only node, the last, whose memory is hidden at boot.
    tier=$(((tier + 127) / 128 * 128))
    memonly=$((memonly + 1))
fi
nodes=$((cpu_nodes + memonly))
[ $(((dies * cores) % nps)) = 0 ] || usage "--nodes-per-socket $nps does not divide the $((dies * cores)) cores of a socket"
[ "$ncpus" -le 255 ] || usage "$ncpus vCPUs: at most 255 are supported"
[ "$nodes" -le 64 ] || usage "$nodes nodes: at most 64 are supported"
per_node=$((per_socket / nps))

# --- what this machine has
qemu=$(command -v qemu-system-x86_64 || true)
use_kvm=0
if [ "$accel" != tcg ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
    use_kvm=1
fi
[ "$accel" = kvm ] && [ $use_kvm = 0 ] && cannot "--accel kvm: /dev/kvm is not usable or the CPU has no vmx/svm"
if [ $check = 1 ]; then
    ok=1
    if [ -n "$qemu" ]; then echo "qemu: $qemu ($("$qemu" --version | head -1))"; else echo "qemu: missing (install qemu-system-x86)"; ok=0; fi
    if files=$("$here/initramfs.sh" 2>/tmp/guest-check.$$); then
        echo "kernel: $(echo "$files" | sed -n 1p)"
        echo "initramfs: $(echo "$files" | sed -n 2p)"
    else
        echo "kernel/initramfs: $(cat /tmp/guest-check.$$)"; ok=0
    fi
    rm -f /tmp/guest-check.$$
    if [ $use_kvm = 1 ]; then echo "accelerator: kvm"; else echo "accelerator: tcg (software emulation; /dev/kvm unusable or no vmx/svm)"; fi
    if [ $ok = 1 ]; then echo "guests can run here"; exit 0; fi
    echo "guests cannot run here"; exit 77
fi
[ -n "$qemu" ] || [ $dry = 1 ] || cannot "qemu-system-x86_64 is missing (install qemu-system-x86)"
if [ $dry = 1 ]; then
    kernel=VMLINUX initrd=INITRAMFS
else
    files=$("$here/initramfs.sh") || exit $?
    kernel=$(echo "$files" | sed -n 1p)
    initrd=$(echo "$files" | sed -n 2p)
fi

# --- the shape as QEMU options (no subshells: 64 nodes make 4096 pairs)
sock=() init=()
for ((n = 0; n < nodes; n++)); do
    if [ $n -lt $cpu_nodes ]; then
        sock[n]=$((n / nps)); init[n]=$n
    else
        sock[n]=$(((n - cpu_nodes) % sockets)); init[n]=$((sock[n] * nps))
    fi
done
dist=0 # distance a b -> $dist
distance() {
    local a=$1 b=$2 t sd
    if [ "$a" = "$b" ]; then dist=10; return; fi
    if [ "$a" -ge $cpu_nodes ] && [ "$b" -lt $cpu_nodes ]; then t=$a; a=$b; b=$t; fi
    if [ "${sock[a]}" = "${sock[b]}" ]; then sd=10
    elif [ $((sock[a] / 4)) = $((sock[b] / 4)) ]; then sd=21
    else sd=32; fi
    if [ "$b" -lt $cpu_nodes ]; then # two CPU nodes
        if [ $sd != 10 ]; then dist=$sd
        elif [ $(((a - b) * (a - b))) = 1 ]; then dist=11
        else dist=12; fi
    elif [ "$a" -lt $cpu_nodes ]; then # CPU node a, memory-only node b
        if [ "${init[b]}" = "$a" ]; then dist=17
        elif [ $sd = 10 ]; then dist=18
        else dist=$((sd + 7)); fi
    else # two memory-only nodes
        if [ $sd = 10 ]; then dist=25; else dist=$((sd + 14)); fi
    fi
}
bw=0 # bandwidth DISTANCE -> $bw GiB/s (QEMU wants every value within 16 bits of the others)
bandwidth() {
    case $1 in 10) bw=32 ;; 11) bw=28 ;; 12) bw=24 ;; 17) bw=16 ;; 18) bw=12 ;;
        21) bw=12 ;; 28) bw=6 ;; 32) bw=8 ;; *) bw=4 ;; esac
}
first_mem=$mem
[ "$first_mem" -ge 256 ] || first_mem=256
total_mem=$((first_mem + (nodes - 1) * mem))
if [ "$tier" -gt 0 ]; then
    # Node 0 grows until the guest has 2.75 GiB, so that q35 puts the last node's memory
    # above 4 GiB, where no firmware range cuts into it.
    rest=$(((nodes - 2) * mem + tier))
    [ $((first_mem + rest)) -ge 2816 ] || first_mem=$((2816 - rest))
    total_mem=$((first_mem + rest))
fi
machine=q35
[ "$hmat" = on ] && machine+=,hmat=on
args=(-machine "$machine" -nodefaults -no-user-config
      -display none -vga none -no-reboot
      -smp "cpus=$ncpus,sockets=$sockets,dies=$dies,cores=$cores,threads=$threads"
      -m "${total_mem}M")
if [ $use_kvm = 1 ]; then
    args+=(-accel kvm -cpu host)
else
    args+=(-accel tcg,thread=single -cpu max,vendor=GenuineIntel,family=6,model=85)
fi
for ((n = 0; n < nodes; n++)); do
    size=$mem; [ $n = 0 ] && size=$first_mem
    [ "$tier" -gt 0 ] && [ $n = $((nodes - 1)) ] && size=$tier
    args+=(-object "memory-backend-ram,id=m$n,size=${size}M")
    spec="node,nodeid=$n,memdev=m$n"
    if [ $n -lt $cpu_nodes ]; then
        lo=$((n * per_node)); spec+=",cpus=$lo-$((lo + per_node - 1))"
    fi
    [ "$hmat" = on ] && spec+=",initiator=${init[n]}"
    args+=(-numa "$spec")
done
if [ "$nodes" -gt 1 ]; then
    for ((a = 0; a < nodes; a++)); do
        for ((b = 0; b < nodes; b++)); do
            [ $a = $b ] || { distance $a $b; args+=(-numa "dist,src=$a,dst=$b,val=$dist"); }
        done
    done
fi
if [ "$hmat" = on ]; then
    for ((i = 0; i < cpu_nodes; i++)); do
        for ((t = 0; t < nodes; t++)); do
            distance $i $t; bandwidth $dist
            args+=(-numa "hmat-lb,initiator=$i,target=$t,hierarchy=memory,data-type=access-latency,latency=$((dist * 10))"
                   -numa "hmat-lb,initiator=$i,target=$t,hierarchy=memory,data-type=access-bandwidth,bandwidth=${bw}G")
        done
    done
    for ((t = cpu_nodes; t < nodes; t++)); do
        args+=(-numa "hmat-cache,node-id=$t,size=16M,level=1,associativity=direct,policy=write-back,line=64")
    done
fi
# no_timer_check: on a loaded host the emulated timer can miss the kernel's IO-APIC timer
# check, which then panics ("IO-APIC + timer doesn't work") before the guest boots.
cmdline="console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init lpj=10000000 cpu_init_udelay=0 mitigations=off nokaslr tsc=reliable no_timer_check"
if [ "$tier" -gt 0 ]; then
    # The tier node's memory is hidden from the kernel at boot (a legacy persistent-memory
    # range), then onlined through DAX/kmem as slower memory: a node of a lower tier.
    # q35 keeps 2 GiB below 4 GiB and the rest above: the last node ends the high part.
    cmdline+=" memmap=${tier}M!$((4096 + total_mem - 2048 - tier))M"
fi
args+=(-kernel "$kernel" -initrd "$initrd" -append "$cmdline")

if [ $dry = 1 ]; then
    words=()
    for a in qemu-system-x86_64 "${args[@]}" -fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
        -device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
        -fsdev local,id=out,path=OUTDIR,security_model=none -device virtio-9p-pci,fsdev=out,mount_tag=out \
        -serial file:OUTDIR/.vm/console.log; do
        if [[ "$a" =~ ^[A-Za-z0-9_,.:=/+@%-]+$ ]]; then words+=("$a"); else words+=("$(printf '%q' "$a")"); fi
    done
    echo "${words[*]}"
    exit 0
fi

# --- the output directory and the job
tmp_out=""
if [ -z "$out" ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/topoprobe-vm.XXXXXX")
    tmp_out=$out
else
    mkdir -p "$out"
fi
out=$(cd "$out" && pwd -P)
[[ "$out" =~ ^[A-Za-z0-9_./+@-]+$ ]] || usage "the output directory's path '$out' has characters the guest's init cannot quote"
qpid=""
cleanup() {
    [ -n "$qpid" ] && kill -9 "$qpid" 2>/dev/null || true
    [ -n "$tmp_out" ] && rm -rf "$tmp_out"
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$out/.vm" "$out/stdout" "$out/stderr" "$out/status"
mkdir -p "$out/.vm"

expand() { # 3,5-7 -> "3 5 6 7"
    local part lo hi r=()
    IFS=, read -ra parts <<< "$1"
    for part in "${parts[@]}"; do
        lo=${part%-*}; hi=${part#*-}
        for ((c = lo; c <= hi; c++)); do r+=("$c"); done
    done
    echo "${r[*]}"
}
for c in $(expand "$offline"); do
    [ "$c" -lt "$ncpus" ] || usage "--offline $offline: the guest has CPUs 0-$((ncpus - 1))"
done
cwd=$(pwd -P)
case "$cwd" in /tmp|/tmp/*|/run|/run/*|/var/tmp|/var/tmp/*) cwd=/ ;; esac
{
    echo "TP_OUT='$out'"
    echo "TP_OFFLINE='$(expand "$offline")'"
    echo "TP_TIER='$tier'"
    echo "TP_CPUSET='${cpuset%%:*}'"
    if [[ "$cpuset" == *:* ]]; then echo "TP_CPUSET_MEMS='${cpuset#*:}'"; else echo "TP_CPUSET_MEMS=''"; fi
} > "$out/.vm/job.env"
{
    echo "cd $(printf '%q' "$cwd") || exit 126"
    echo "export PATH=$(printf '%q' "$PATH") HOME=/tmp/vm-home LANG=C.UTF-8 TOPOPROBE_VM_OUT=$(printf '%q' "$out")"
    for e in "${envs[@]}"; do echo "export $(printf '%q' "$e")"; done
    echo 'mkdir -p "$HOME"'
    printf 'exec'; printf ' %q' "$@"; echo
} > "$out/.vm/run.sh"

args+=(-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
       -device virtio-9p-pci,fsdev=root,mount_tag=hostroot
       -fsdev "local,id=out,path=$out,security_model=none"
       -device virtio-9p-pci,fsdev=out,mount_tag=out
       -serial "file:$out/.vm/console.log")

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
result() { echo "$1" > "$out/.vm/result"; }
start=$(now)
attempt=0
booted_at=""
while [ $attempt -lt 2 ]; do
    attempt=$((attempt + 1))
    rm -f "$out/.vm/booted" "$out/.vm/init-error"
    t0=$(now)
    "$qemu" "${args[@]}" > "$out/.vm/qemu.log" 2>&1 &
    qpid=$!
    deadline=$(($(date +%s) + boot_timeout))
    while [ ! -e "$out/.vm/booted" ] && kill -0 "$qpid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do
        sleep 0.1
    done
    if [ -e "$out/.vm/booted" ]; then booted_at=$(now); break; fi
    if ! kill -0 "$qpid" 2>/dev/null; then
        wait "$qpid" || true; qpid=""
        result crashed
        echo "guest.sh: QEMU ended before the guest booted:" >&2
        sed 's/^/  /' "$out/.vm/qemu.log" >&2
        tail -20 "$out/.vm/console.log" 2>/dev/null | sed 's/^/  console: /' >&2
        exit 70
    fi
    kill -9 "$qpid" 2>/dev/null || true; wait "$qpid" 2>/dev/null || true; qpid=""
    echo "guest.sh: boot $attempt stalled (no share mounted after ${boot_timeout} s)$(if [ $attempt -lt 2 ]; then echo ', retrying'; fi)" >&2
    cp "$out/.vm/console.log" "$out/.vm/console-stalled-$attempt.log" 2>/dev/null || true
done
if [ -z "$booted_at" ]; then
    result stalled
    echo "guest.sh: the boot stalled twice; console of the last one:" >&2
    tail -20 "$out/.vm/console.log" 2>/dev/null | sed 's/^/  /' >&2
    exit 75
fi
deadline=$(($(date +%s) + timeout))
while kill -0 "$qpid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.1
done
end=$(now)
if kill -0 "$qpid" 2>/dev/null; then
    kill -9 "$qpid" 2>/dev/null || true; wait "$qpid" 2>/dev/null || true; qpid=""
    result timeout
    printf 'boot_s %s\nrun_s %s\ntotal_s %s\nattempts %s\n' "$(elapsed "$t0" "$booted_at")" \
        "$(elapsed "$booted_at" "$end")" "$(elapsed "$start" "$end")" "$attempt" > "$out/.vm/times"
    echo "guest.sh: the command did not finish within $timeout s; the guest was killed" >&2
    if [ -n "$tmp_out" ]; then cat "$out/stdout" 2>/dev/null || true; cat "$out/stderr" >&2 2>/dev/null || true; fi
    exit 124
fi
wait "$qpid" || true
qpid=""
printf 'boot_s %s\nrun_s %s\ntotal_s %s\nattempts %s\n' "$(elapsed "$t0" "$booted_at")" \
    "$(elapsed "$booted_at" "$end")" "$(elapsed "$start" "$end")" "$attempt" > "$out/.vm/times"
if [ -n "$tmp_out" ]; then
    cat "$out/stdout" 2>/dev/null || true
    cat "$out/stderr" >&2 2>/dev/null || true
fi
if [ ! -s "$out/status" ]; then
    result crashed
    echo "guest.sh: the guest ended without the command's exit status$(if [ -s "$out/.vm/init-error" ]; then echo ": $(cat "$out/.vm/init-error")"; fi)" >&2
    tail -20 "$out/.vm/console.log" 2>/dev/null | sed 's/^/  console: /' >&2
    exit 70
fi
result ok
exit "$(cat "$out/status")"
