/* topoprobe C API example: one thread per CPU (2 to 4) increments a counter under each
   lock kind with educated backoff (waits derived from the topology's measured latencies).
   More spinning threads than CPUs would measure the scheduler: a queue lock hands over to
   a waiter that is not running, once per time slice.
   Build: gcc -pthread locks.c $(pkg-config --cflags --libs topoprobe)
   Run:   ./a.out [TOPOLOGY-FILE] */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <topoprobe.h>

#define MAX_THREADS 4
#define ROUNDS 20000

static TpLock *lock;
static long counter;

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        tp_lock_acquire(lock);
        counter++;
        tp_lock_release(lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    TpTopology *topo = tp_topology_load(argc > 1 ? argv[1] : NULL);
    if (!topo) { fprintf(stderr, "load: %s\n", tp_last_error()); return 1; }
    static const char *names[] = {"tas", "ttas", "ticket", "mcs", "clh", "cohort"};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cpus < 2 ? 2 : cpus > MAX_THREADS ? MAX_THREADS : (int)cpus;
    int failures = 0;
    for (int kind = TP_LOCK_TAS; kind <= TP_LOCK_COHORT; kind++) {
        lock = tp_lock_create(kind, TP_BACKOFF_EDUCATED, topo);
        if (!lock) { fprintf(stderr, "create: %s\n", tp_last_error()); return 1; }
        counter = 0;
        pthread_t t[MAX_THREADS];
        for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, work, NULL);
        for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
        int held_by_other = tp_lock_try_acquire(lock);
        if (held_by_other == 1) tp_lock_release(lock);
        printf("%s: %ld of %d\n", names[kind], counter, threads * ROUNDS);
        failures += counter != (long)threads * ROUNDS || held_by_other != 1;
        tp_lock_free(lock);
    }
    if (tp_lock_create(TP_LOCK_COHORT, TP_BACKOFF_NONE, NULL) == NULL)
        printf("no topology: %s\n", tp_last_error());
    tp_topology_free(topo);
    return failures ? 1 : 0;
}
