/* SPDX-License-Identifier: Apache-2.0 */
/*
 * burn THREADS SECONDS: spin THREADS threads for SECONDS of wall time.
 * burn THREADS SECONDSc: each thread spins until it has used SECONDS of CPU time, so the
 * total CPU time is THREADS x SECONDS however loaded the machine is.
 * With BURN_STOP set, the threads wait (asleep, not runnable) once they are done, and the
 * process stops itself (SIGSTOP) before any of them exits: `probe-dump --snapshot-at-stop`
 * then reads the probes and every thread's /proc/PID/task/TID/schedstat at that moment,
 * the scheduler's own on-CPU time, run-queue wait and number of waits over the same
 * window as the probes' (the bpf tests compare the two).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds;
static int cpu_time;
static int stop;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int done;     /* threads that have spun their time */
static int released; /* set once the process was continued */

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
        if (stop) {
                pthread_mutex_lock(&lock);
                done++;
                pthread_cond_broadcast(&changed);
                while (!released)
                        pthread_cond_wait(&changed, &lock);
                pthread_mutex_unlock(&lock);
        }
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
        stop = getenv("BURN_STOP") != NULL;
        for (int i = 0; i < n; i++)
                pthread_create(&t[i], NULL, spin, NULL);
        if (stop) {
                pthread_mutex_lock(&lock);
                while (done < n)
                        pthread_cond_wait(&changed, &lock);
                pthread_mutex_unlock(&lock);
                /* every thread asleep: stopped here, the accounts hold still for the reader */
                raise(SIGSTOP);
                pthread_mutex_lock(&lock);
                released = 1;
                pthread_cond_broadcast(&changed);
                pthread_mutex_unlock(&lock);
        }
        for (int i = 0; i < n; i++)
                pthread_join(t[i], NULL);
        return 0;
}
