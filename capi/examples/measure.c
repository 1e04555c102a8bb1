/* topoprobe C API example: measure this machine, then place two threads with the
   measured topology and check that each runs on exactly the context it was given.
   Build: gcc measure.c $(pkg-config --cflags --libs topoprobe) -pthread
   Run:   ./a.out [DESCRIPTION-FILE]   (where the description is saved; default: the
          default place, $TOPOPROBE_FILE or $XDG_DATA_HOME/topoprobe/<host>.json) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <topoprobe.h>

static TpPlacement *placement;
static int failures;
static pthread_barrier_t barrier;

static void *worker(void *arg) {
    (void)arg;
    TpThreadInfo info;
    int cpu = tp_placement_pin(placement, &info);
    if (cpu < 0) {
        fprintf(stderr, "pin: %s\n", tp_last_error());
        __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
    } else {
        cpu_set_t set;
        CPU_ZERO(&set);
        pthread_getaffinity_np(pthread_self(), sizeof set, &set);
        int exact = CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set);
        printf("thread %u on CPU %d%s\n", info.thread, cpu, exact ? "" : " NOT PINNED");
        if (!exact) __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
    }
    pthread_barrier_wait(&barrier);
    if (cpu >= 0) tp_placement_unpin(placement);
    return NULL;
}

int main(int argc, char **argv) {
    TpMeasureOptions opts = tp_measure_options_default();
    opts.plugins = "none";           /* latencies only: a second or two */
    if (argc > 1) opts.save_to = argv[1];
    TpTopology *topo = tp_topology_measure(&opts);
    if (!topo) { fprintf(stderr, "measure: %s\n", tp_last_error()); return 1; }
    int contexts = tp_topology_count(topo, TP_LEVEL_CONTEXT);
    printf("measured: %d contexts, %d cores, %d sockets\n", contexts,
           tp_topology_count(topo, TP_LEVEL_CORE), tp_topology_count(topo, TP_LEVEL_SOCKET));
    int threads = contexts < 2 ? contexts : 2;
    placement = tp_placement_create(topo, tp_policy_from_name("rr_core"), threads, 0);
    if (!placement) { fprintf(stderr, "placement: %s\n", tp_last_error()); return 1; }
    pthread_t t[2];
    pthread_barrier_init(&barrier, NULL, threads);
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    tp_placement_free(placement);
    tp_topology_free(topo);

    /* The saved description loads back as this machine's topology. */
    TpTopology *again = tp_topology_load(argc > 1 ? argv[1] : NULL);
    if (!again) { fprintf(stderr, "load: %s\n", tp_last_error()); return 1; }
    printf("loaded back: %d contexts\n", tp_topology_count(again, TP_LEVEL_CONTEXT));
    tp_topology_free(again);

    /* A bad option is an error with its reason, not a crash. */
    opts.plugins = "bogus";
    if (tp_topology_measure(&opts) != NULL) { fprintf(stderr, "bogus plugin accepted\n"); return 1; }
    printf("bad option: %s\n", tp_last_error());
    return failures ? 1 : 0;
}
