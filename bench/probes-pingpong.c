/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probes-pingpong [-n ROUNDTRIPS] [--work-us US] [--cgroup DIR] [--cpu N]: two processes
 * bounce one byte over two pipes ROUNDTRIPS times (default 200000) and print the round trips
 * per second. --work-us: each side spins US microseconds on every message before answering
 * (a workload that computes between scheduler events; default 0, the densest stream).
 * Every round trip is two wakeups and two context switches or more: the scheduler events the
 * cpu probe hooks, as densely as a workload can produce them. --cgroup moves the process
 * (and so its child) into a cgroup v2 directory first; --cpu pins both to one CPU (default
 * 0; -1 leaves placement to the scheduler), which makes every round trip exactly two
 * switches and the figure steadier. Used by bench/probes.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int join_cgroup(const char *dir)
{
        char path[4096];
        int fd, ok;

        if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ok = write(fd, "0\n", 2) == 2;
        close(fd);
        return ok ? 0 : -errno;
}

static void spin(double seconds)
{
        double end;

        if (seconds <= 0)
                return;
        end = now_s() + seconds;
        while (now_s() < end)
                ;
}

static void bounce(int in, int out, long n, int first, double work)
{
        char c = 'x';

        for (long i = 0; i < n; i++) {
                if (first && write(out, &c, 1) != 1)
                        _exit(3);
                if (read(in, &c, 1) != 1)
                        _exit(3);
                spin(work);
                if (!first && write(out, &c, 1) != 1)
                        _exit(3);
        }
}

int main(int argc, char **argv)
{
        long n = 200000;
        int cpu = 0, to_child[2], to_parent[2], status;
        const char *cgroup = NULL;
        double start, elapsed, work = 0;
        pid_t child;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
                        n = atol(argv[++i]);
                else if (strcmp(argv[i], "--work-us") == 0 && i + 1 < argc)
                        work = atof(argv[++i]) / 1e6;
                else if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc)
                        cgroup = argv[++i];
                else if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc)
                        cpu = atoi(argv[++i]);
                else {
                        fprintf(stderr, "usage: probes-pingpong [-n ROUNDTRIPS] [--work-us US] "
                                        "[--cgroup DIR] [--cpu N|-1]\n");
                        return 2;
                }
        }
        if (n <= 0) {
                fprintf(stderr, "probes-pingpong: -n must be positive\n");
                return 2;
        }
        if (cgroup && join_cgroup(cgroup) < 0) {
                fprintf(stderr, "probes-pingpong: cannot join %s: %s\n", cgroup, strerror(errno));
                return 1;
        }
        if (cpu >= 0) {
                cpu_set_t set;

                CPU_ZERO(&set);
                CPU_SET(cpu, &set);
                if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                        fprintf(stderr, "probes-pingpong: cannot pin to CPU %d: %s\n", cpu,
                                strerror(errno));
                        return 1;
                }
        }
        if (pipe2(to_child, O_CLOEXEC) < 0 || pipe2(to_parent, O_CLOEXEC) < 0) {
                perror("probes-pingpong: pipe");
                return 1;
        }
        child = fork();
        if (child < 0) {
                perror("probes-pingpong: fork");
                return 1;
        }
        if (child == 0) {
                bounce(to_child[0], to_parent[1], n, 0, work);
                _exit(0);
        }
        start = now_s();
        bounce(to_parent[0], to_child[1], n, 1, work);
        elapsed = now_s() - start;
        if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "probes-pingpong: the child failed\n");
                return 1;
        }
        printf("roundtrips %ld seconds %.6f roundtrips_per_s %.1f\n", n, elapsed,
               (double)n / elapsed);
        return 0;
}
