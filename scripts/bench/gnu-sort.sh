#!/usr/bin/env bash
# GNU parallel mode sort (g++ -fopenmp -D_GLIBCXX_PARALLEL, __gnu_parallel::sort) on the
# inputs of `topoprobe bench sort` (same generator and seed), at 64 MiB and 1 GiB, u32 and
# u64, threads pinned one per CPU (OMP_PROC_BIND=close, OMP_PLACES=cores).
#
#   scripts/bench/gnu-sort.sh [THREADS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")"
THREADS=${1:-2}
RUNS=${2:-5}
BIN=$(mktemp -d)/gnu_parallel_sort
g++ -O3 -march=native -fopenmp -D_GLIBCXX_PARALLEL -o "$BIN" gnu_parallel_sort.cpp
for bytes in $((64 << 20)) $((1 << 30)); do
    for keys in u32 u64; do
        OMP_NUM_THREADS=$THREADS OMP_PROC_BIND=close OMP_PLACES=cores "$BIN" "$bytes" "$keys" "$RUNS" 42
    done
done
