/* An idle main thread and two compute-bound workers: the main thread creates the workers
 * and waits for them; they spin for S seconds (default 5), or until standard input closes
 * when S is "stdin" (the main thread blocks reading it, idle), then each prints the CPUs
 * it may run on ("thread<i> <list>", i = 1, 2) and the program exits 0. Python threads
 * would not spin in parallel (the GIL), hence C. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double deadline;
static int until_input_closes;
static atomic_int input_closed;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *spin(void *arg) {
    int i = (int)(long)arg;
    volatile unsigned long x = 0;
    while (until_input_closes ? !atomic_load(&input_closed) : now() < deadline)
        for (int k = 0; k < 100000; k++) x += k;
    char buf[4096];
    FILE *f = fopen("/proc/thread-self/status", "r");
    if (!f) return NULL;
    while (fgets(buf, sizeof buf, f)) {
        if (strncmp(buf, "Cpus_allowed_list:", 18) == 0) {
            char *v = buf + 18;
            while (*v == ' ' || *v == '\t') v++;
            pthread_mutex_lock(&out);
            printf("thread%d %s", i, v);
            fflush(stdout);
            pthread_mutex_unlock(&out);
        }
    }
    fclose(f);
    return NULL;
}

int main(int argc, char **argv) {
    until_input_closes = argc > 1 && strcmp(argv[1], "stdin") == 0;
    double secs = argc > 1 && !until_input_closes ? atof(argv[1]) : 5;
    deadline = now() + secs;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, spin, (void *)(long)(i + 1));
    printf("started\n");
    fflush(stdout);
    if (until_input_closes) {
        char buf[256];
        while (read(0, buf, sizeof buf) > 0) {
        }
        atomic_store(&input_closed, 1);
    }
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}
