/* An OpenMP program: every thread of a parallel region prints the CPUs it may run on,
   and the place OpenMP gave it. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    #pragma omp parallel
    {
        char line[512], out[600] = "";
        FILE *f = fopen("/proc/thread-self/status", "r");
        if (f) {
            while (fgets(line, sizeof line, f))
                if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
                    char *v = line + 18;
                    while (*v == ' ' || *v == '\t') v++;
                    snprintf(out, sizeof out, "%s", v);
                }
            fclose(f);
        }
        #pragma omp critical
        {
            printf("thread%d %s", omp_get_thread_num(), out);
            fflush(stdout);
        }
    }
    printf("places %d threads %d\n", omp_get_num_places(), omp_get_max_threads());
    return 0;
}
