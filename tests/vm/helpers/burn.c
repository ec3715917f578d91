/* SPDX-License-Identifier: Apache-2.0 */
/*
 * burn THREADS SECONDS: spin THREADS threads for SECONDS of wall time.
 * burn THREADS SECONDSc: each thread spins until it has used SECONDS of CPU time, so the
 * total CPU time is THREADS x SECONDS however loaded the machine is.
 * With BURN_SCHEDSTAT set, each thread (and then the main thread) adds its own
 * /proc/thread-self/schedstat just before it ends, and burn prints the sums on stderr:
 *   schedstat oncpu_ns=N run_delay_ns=N pcount=N
 * the scheduler's own on-CPU time, run-queue wait and number of waits, for the bpf tests.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds;
static int cpu_time;
static int schedstat;
static pthread_mutex_t sums_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long sums[3]; /* on-CPU ns, run-queue wait ns, waits */

static void add_schedstat(void)
{
        unsigned long long v[3];
        FILE *f = fopen("/proc/thread-self/schedstat", "r");

        if (!f)
                return;
        if (fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]) == 3) {
                pthread_mutex_lock(&sums_lock);
                for (int i = 0; i < 3; i++)
                        sums[i] += v[i];
                pthread_mutex_unlock(&sums_lock);
        }
        fclose(f);
}

static double now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double thread_cpu(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *spin(void *arg)
{
        volatile unsigned long x = 0;
        double (*clock)(void) = cpu_time ? thread_cpu : now;
        double end = clock() + seconds;
        (void)arg;
        while (clock() < end)
                for (int i = 0; i < 100000; i++)
                        x++;
        if (schedstat)
                add_schedstat();
        return NULL;
}

int main(int argc, char **argv)
{
        pthread_t t[64];
        int n;

        if (argc == 3)
                cpu_time = argv[2][0] && argv[2][strlen(argv[2]) - 1] == 'c';
        if (argc != 3 || (n = atoi(argv[1])) < 1 || n > 64 || (seconds = atof(argv[2])) <= 0) {
                fprintf(stderr, "usage: burn THREADS(1-64) SECONDS[c]\n");
                return 2;
        }
        schedstat = getenv("BURN_SCHEDSTAT") != NULL;
        for (int i = 0; i < n; i++)
                pthread_create(&t[i], NULL, spin, NULL);
        for (int i = 0; i < n; i++)
                pthread_join(t[i], NULL);
        if (schedstat) {
                add_schedstat();
                fprintf(stderr, "schedstat oncpu_ns=%llu run_delay_ns=%llu pcount=%llu\n", sums[0],
                        sums[1], sums[2]);
        }
        return 0;
}
