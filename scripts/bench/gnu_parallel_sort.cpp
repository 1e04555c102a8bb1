// GNU parallel mode sort (libstdc++'s __gnu_parallel::sort, a multiway mergesort over
// OpenMP) on the same random keys as `topoprobe bench sort` (xorshift64 from the same seed,
// u32 keys as the low 32 bits), for scripts/bench/gnu-sort.sh.
// Build: g++ -O3 -fopenmp -D_GLIBCXX_PARALLEL gnu_parallel_sort.cpp
// Usage: ./a.out BYTES u32|u64 RUNS SEED   (threads: OMP_NUM_THREADS)
#include <parallel/algorithm>
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

template <typename K> static int run(std::size_t bytes, int runs, std::uint64_t seed) {
    std::size_t n = bytes / sizeof(K);
    std::vector<K> input(n), work(n);
    std::uint64_t x = seed | 1;
    for (auto &k : input) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        k = static_cast<K>(x);
    }
    std::vector<double> t;
    for (int r = 0; r < runs; r++) {
        std::copy(input.begin(), input.end(), work.begin());
        auto a = std::chrono::steady_clock::now();
        __gnu_parallel::sort(work.begin(), work.end(), __gnu_parallel::multiway_mergesort_tag());
        auto b = std::chrono::steady_clock::now();
        if (!std::is_sorted(work.begin(), work.end())) { std::fprintf(stderr, "not sorted\n"); return 1; }
        t.push_back(std::chrono::duration<double>(b - a).count());
    }
    std::sort(t.begin(), t.end());
    std::printf("gnu_parallel_sort %s %zu bytes %d threads: median %.3f s of %d runs\n",
                sizeof(K) == 4 ? "u32" : "u64", bytes, omp_get_max_threads(), t[t.size() / 2], runs);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) { std::fprintf(stderr, "usage: %s BYTES u32|u64 RUNS SEED\n", argv[0]); return 2; }
    std::size_t bytes = std::strtoull(argv[1], nullptr, 10);
    int runs = std::atoi(argv[3]);
    std::uint64_t seed = std::strtoull(argv[4], nullptr, 10);
    if (bytes < 8 || runs < 1) { std::fprintf(stderr, "bad size or runs\n"); return 2; }
    return std::strcmp(argv[2], "u64") == 0 ? run<std::uint64_t>(bytes, runs, seed)
                                            : run<std::uint32_t>(bytes, runs, seed);
}
