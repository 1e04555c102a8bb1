/* Counts the SIGINTs it receives. Prints "ready" once its handler is installed, waits
 * for the first SIGINT (at most 20 s), then 300 ms more for any duplicate, prints
 * "sigint N" and exits with status 3 (a program that handles Ctrl-C and ends on its own
 * terms). With the argument "default" it keeps the default action: SIGINT ends it. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t count;

static void on_sigint(int sig) {
    (void)sig;
    count++;
}

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "default") != 0) {
        struct sigaction a;
        memset(&a, 0, sizeof a);
        a.sa_handler = on_sigint;
        sigemptyset(&a.sa_mask);
        sigaction(SIGINT, &a, NULL);
    }
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 2000 && count == 0; i++) {
        pause_ms(10);
    }
    pause_ms(300);
    printf("sigint %d\n", (int)count);
    fflush(stdout);
    return 3;
}
