/* N compute-bound threads (the main thread and N-1 created ones) spin for S seconds, or
 * until standard input closes when S is "stdin" (the main thread looks between units of
 * work), then each prints the CPUs it may run on ("thread<i> <list>") and the program
 * exits 0. SIGINT or SIGTERM end the spinning early (after 0.3 s more work): the program
 * then finishes normally, as a program that handles Ctrl-C does. */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;
static double deadline;
static int until_input_closes;
static atomic_int input_closed;
static pthread_barrier_t done;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void show(int i) {
    char buf[4096];
    FILE *f = fopen("/proc/thread-self/status", "r");
    if (!f) return;
    while (fgets(buf, sizeof buf, f)) {
        if (strncmp(buf, "Cpus_allowed_list:", 18) == 0) {
            char *v = buf + 18;
            while (*v == ' ' || *v == '\t') v++;
            printf("thread%d %s", i, v);
        }
    }
    fclose(f);
}

/* Whether standard input has closed (read without blocking; what it carries is dropped). */
static int input_ended(void) {
    struct pollfd p = {0, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    char buf[256];
    return read(0, buf, sizeof buf) <= 0;
}

static void *spin(void *arg) {
    int i = (int)(long)arg;
    volatile unsigned long x = 0;
    double extra = -1;
    for (;;) {
        for (int k = 0; k < 100000; k++) x += k;
        double t = now();
        if (stop_requested && extra < 0) extra = t + 0.3;
        if (i == 0 && until_input_closes && input_ended()) atomic_store(&input_closed, 1);
        if (until_input_closes ? atomic_load(&input_closed) : t >= deadline) break;
        if (extra >= 0 && t >= extra) break;
    }
    pthread_barrier_wait(&done);
    show(i);
    fflush(stdout);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    until_input_closes = argc > 2 && strcmp(argv[2], "stdin") == 0;
    double secs = argc > 2 && !until_input_closes ? atof(argv[2]) : 5;
    if (n < 1 || n > 256) return 2;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    deadline = now() + secs;
    pthread_barrier_init(&done, NULL, (unsigned)n);
    pthread_t t[256];
    for (int i = 1; i < n; i++) pthread_create(&t[i], NULL, spin, (void *)(long)i);
    printf("started\n");
    fflush(stdout);
    spin((void *)0);
    for (int i = 1; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
