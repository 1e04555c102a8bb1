/* Two parallel regions, two placements, plain OpenMP: the places come from topoprobe
   (`topoprobe place --format omp`, one place per context in the policy's order) and each
   region picks how its threads use them with its own proc_bind clause.
   Build: gcc -fopenmp omp_regions.c   or   clang -fopenmp omp_regions.c
   Run:   env $(topoprobe place --policy con_hwc --format omp | grep OMP_PLACES) ./a.out */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>

static void show(const char *region) {
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &set)) first = c;
    #pragma omp critical
    printf("%s: thread %d of %d bound to %d CPU(s), first %d\n", region,
           omp_get_thread_num(), omp_get_num_threads(), CPU_COUNT(&set), first);
}

int main(void) {
    /* Compact: consecutive threads on consecutive places (the policy's order). */
    #pragma omp parallel proc_bind(close) num_threads(2)
    show("close");
    /* Spread: threads as far apart in the place list as it allows. */
    #pragma omp parallel proc_bind(spread) num_threads(2)
    show("spread");
    return 0;
}
