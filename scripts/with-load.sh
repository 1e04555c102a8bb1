#!/usr/bin/env bash
# Runs a command while the machine is kept busy, as a user's laptop or a shared CI runner
# is: one busy loop pinned to each CPU this process may use, and an anonymous allocation
# (4 GiB by default, TOPOPROBE_LOAD_MEMORY_MIB to change it) touched page by page in a
# loop. The load generators stop when the command ends, however it ends; the command's
# exit status is this script's.
#
#   scripts/with-load.sh cargo test --workspace
set -euo pipefail
if [ $# -eq 0 ]; then
    echo "usage: $0 COMMAND [ARG...]" >&2
    exit 2
fi
memory_mib="${TOPOPROBE_LOAD_MEMORY_MIB:-4096}"
case "$memory_mib" in
    '' | *[!0-9]*)
        echo "$0: TOPOPROBE_LOAD_MEMORY_MIB must be a number of MiB, not '$memory_mib'" >&2
        exit 2
        ;;
esac

pids=()
stop_load() {
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    wait "${pids[@]}" 2>/dev/null || true
}
trap stop_load EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One busy loop per allowed CPU, each pinned to its CPU (a load generator, not a wait).
for cpu in $(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))'); do
    taskset -c "$cpu" sh -c 'while :; do :; done' &
    pids+=("$!")
done
# Memory under pressure: every page of the allocation written again and again.
if [ "$memory_mib" -gt 0 ]; then
    python3 - "$memory_mib" <<'EOF' &
import mmap, sys
size = int(sys.argv[1]) << 20
buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
page = mmap.PAGESIZE
value = 0
while True:
    value = (value + 1) & 0xFF
    for offset in range(0, size, page):
        buf[offset] = value
EOF
    pids+=("$!")
fi
echo "with-load: ${#pids[@]} load generators (busy loop per CPU, ${memory_mib} MiB touched)" >&2

"$@"
