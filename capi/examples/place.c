/* topoprobe C API example: load a topology, make a placement, pin two threads and check
   that each runs on exactly the context it was given.
   Build: gcc place.c $(pkg-config --cflags --libs topoprobe) -pthread
   Run:   ./a.out [TOPOLOGY-FILE]   (default: this machine's description) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
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
        pthread_barrier_wait(&barrier);
        return NULL;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    pthread_getaffinity_np(pthread_self(), sizeof set, &set);
    int exact = CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set);
    printf("thread %u on CPU %d (core %u, socket %u, index in socket %u, leads node %u)%s\n",
           info.thread, cpu, info.core, info.socket, info.index_in_socket, info.leads_node,
           exact ? "" : " NOT PINNED");
    if (!exact) __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
    /* Keep the context until both threads have one; then give it back. */
    pthread_barrier_wait(&barrier);
    tp_placement_unpin(placement);
    return NULL;
}

int main(int argc, char **argv) {
    TpTopology *topo = tp_topology_load(argc > 1 ? argv[1] : NULL);
    if (!topo) { fprintf(stderr, "load: %s\n", tp_last_error()); return 1; }
    printf("library %s, header %d.%d.%d (TOPOPROBE_VERSION %d)\n", tp_version(),
           TOPOPROBE_VERSION_MAJOR, TOPOPROBE_VERSION_MINOR, TOPOPROBE_VERSION_PATCH,
           TOPOPROBE_VERSION);
    printf("%d contexts, %d cores, %d sockets, %d nodes\n",
           tp_topology_count(topo, TP_LEVEL_CONTEXT), tp_topology_count(topo, TP_LEVEL_CORE),
           tp_topology_count(topo, TP_LEVEL_SOCKET), tp_topology_count(topo, TP_LEVEL_NODE));
    if (tp_topology_count(topo, (TpLevel)4) != -1) {
        fprintf(stderr, "an unknown level was accepted\n");
        return 1;
    }
    if (tp_placement_create(topo, TP_POLICY_CON_HWC, 1000000, 0) != NULL ||
        tp_policy_from_name("compact") != -1) {
        fprintf(stderr, "invalid requests were accepted\n");
        return 1;
    }
    placement = tp_placement_create(topo, tp_policy_from_name("rr_core"), 2, 0);
    if (!placement) { fprintf(stderr, "placement: %s\n", tp_last_error()); return 1; }
    char *summary = tp_placement_summary(placement, 0);
    fputs(summary, stdout);
    tp_string_free(summary);
    pthread_t t[2];
    pthread_barrier_init(&barrier, NULL, 2);
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    tp_placement_free(placement);
    tp_topology_free(topo);
    return failures ? 1 : 0;
}
