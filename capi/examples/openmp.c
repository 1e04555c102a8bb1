/* topoprobe C API example with OpenMP: a pool whose policy is switched between two
   parallel regions (the paper's omp_set_binding_policy idea). Every thread calls
   tp_pool_pin_slot with its OpenMP thread number at the start of a region: thread i runs
   on exactly the i-th context of the region's policy, whatever order the threads arrive
   in (tp_pool_pin would give contexts in arrival order: thread 0 could get slot 1).
   Build: gcc -fopenmp openmp.c $(pkg-config --cflags --libs topoprobe)
   Run:   ./a.out [TOPOLOGY-FILE] */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <topoprobe.h>

static int region(TpPool *pool, const char *name) {
    int failures = 0;
    #pragma omp parallel reduction(+ : failures)
    {
        TpThreadInfo info = {0};
        int me = omp_get_thread_num();
        int cpu = tp_pool_pin_slot(pool, (unsigned)me, &info);
        if (cpu < 0) {
            #pragma omp critical
            fprintf(stderr, "%s: thread %d: %s\n", name, me, tp_last_error());
        }
        cpu_set_t set;
        CPU_ZERO(&set);
        pthread_getaffinity_np(pthread_self(), sizeof set, &set);
        int exact = cpu >= 0 && CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set) &&
                    info.thread == (unsigned)me;
        #pragma omp critical
        printf("%s: OpenMP thread %d on CPU %d (slot %u)%s\n", name, me, cpu, info.thread,
               exact ? "" : " NOT PINNED");
        failures += !exact;
    }
    return failures;
}

int main(int argc, char **argv) {
    TpTopology *topo = tp_topology_load(argc > 1 ? argv[1] : NULL);
    if (!topo) { fprintf(stderr, "load: %s\n", tp_last_error()); return 1; }
    int threads = omp_get_max_threads();
    TpPool *pool = tp_pool_create(topo, TP_POLICY_CON_HWC, threads, 0);
    if (!pool) { fprintf(stderr, "pool: %s\n", tp_last_error()); return 1; }
    int failures = region(pool, "CON_HWC");
    if (tp_pool_set_policy(pool, TP_POLICY_RR_CORE) != 0) {
        fprintf(stderr, "switch: %s\n", tp_last_error());
        return 1;
    }
    failures += region(pool, "RR_CORE");
    tp_pool_free(pool);
    tp_topology_free(topo);
    return failures ? 1 : 0;
}
