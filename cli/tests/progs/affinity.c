/* Starts a thread and prints, for the main thread and for it, the CPUs it may run on. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void show(const char *who) {
    char line[512];
    FILE *f = fopen("/proc/thread-self/status", "r");
    if (!f) { perror("status"); return; }
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
            char *v = line + 18;
            while (*v == ' ' || *v == '\t') v++;
            printf("%s %s", who, v);
        }
    fclose(f);
    fflush(stdout);
}

static void *thread(void *arg) { (void)arg; show("thread1"); return NULL; }

int main(void) {
    pthread_t t;
    show("main");
    if (pthread_create(&t, NULL, thread, NULL) != 0) return 1;
    pthread_join(t, NULL);
    return 0;
}
