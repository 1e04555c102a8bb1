/* Heartbeats from C: two threads each do 1000 units of work and call tp_heartbeat(1)
 * after each, in phase 1 then phase 2. Run under `topoprobe autopin -- ./heartbeat`
 * (which sets TOPOPROBE_HEARTBEAT), autopin scores pinnings by beats per second.
 *
 *   gcc -O2 -o heartbeat heartbeat.c -I../include -L<libdir> -ltopoprobe -pthread
 */
#include <pthread.h>
#include <stdio.h>
#include "topoprobe.h"

#define UNITS 1000

static void *worker(void *arg) {
    volatile unsigned long x = (unsigned long)arg;
    for (int u = 0; u < UNITS; u++) {
        for (int k = 0; k < 10000; k++) x = x * 6364136223846793005UL + (unsigned long)k;
        tp_heartbeat(1);
    }
    return NULL;
}

int main(void) {
    tp_heartbeat_phase(1);
    pthread_t t;
    pthread_create(&t, NULL, worker, (void *)1);
    worker((void *)2);
    pthread_join(t, NULL);
    tp_heartbeat_phase(2);
    printf("heartbeats %s, %d beats\n", tp_heartbeat_enabled() ? "on" : "off", 2 * UNITS);
    return 0;
}
