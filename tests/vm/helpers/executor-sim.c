/* SPDX-License-Identifier: Apache-2.0 */
/*
 * executor-sim: a stand-in for a Spark executor JVM, for the demo and the guest (where a
 * JVM runs ~100x slower). It takes a real executor command line, runs --cores task threads
 * that burn CPU for SPARKSHIM_DEMO_SECONDS (default 5) while touching SPARKSHIM_DEMO_MIB of
 * memory (default 256), and prints what its own cgroup enforced and counted.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds = 5;

static double now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *task(void *arg)
{
        volatile unsigned long x = 0;
        double end = now() + seconds;
        (void)arg;
        while (now() < end)
                for (int i = 0; i < 100000; i++)
                        x++;
        return NULL;
}

/* read "<cgroup>/<file>" into buf, or "-" */
static const char *cgroup_file(const char *cg, const char *file, char *buf, size_t size)
{
        char path[512];
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/sys/fs/cgroup%s/%s", cg, file);
        f = fopen(path, "re");
        if (!f)
                return "-";
        n = fread(buf, 1, size - 1, f);
        fclose(f);
        buf[n] = '\0';
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        return buf;
}

static unsigned long long keyed(const char *cg, const char *file, const char *key)
{
        char buf[4096], *p;
        size_t len = strlen(key);

        cgroup_file(cg, file, buf, sizeof(buf));
        for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, key, len) == 0 && p[len] == ' ')
                        return strtoull(p + len + 1, NULL, 10);
        return 0;
}

int main(int argc, char **argv)
{
        char cg[256] = "", buf[256], a[64], b[64], c[64];
        unsigned long long usage0, usage1;
        int cores = 1;
        long mib = 256;
        pthread_t threads[64];
        FILE *f;
        double t0, t1;

        for (int i = 1; i < argc - 1; i++)
                if (strcmp(argv[i], "--cores") == 0)
                        cores = atoi(argv[i + 1]);
        if (cores < 1 || cores > 64)
                cores = 1;
        if (getenv("SPARKSHIM_DEMO_SECONDS"))
                seconds = atof(getenv("SPARKSHIM_DEMO_SECONDS"));
        if (getenv("SPARKSHIM_DEMO_MIB"))
                mib = atol(getenv("SPARKSHIM_DEMO_MIB"));
        f = fopen("/proc/self/cgroup", "re");
        if (f) {
                if (fgets(buf, sizeof(buf), f) && strncmp(buf, "0::", 3) == 0)
                        snprintf(cg, sizeof(cg), "%s", buf + 3);
                cg[strcspn(cg, "\n")] = '\0';
                fclose(f);
        }
        printf("executor-sim: in cgroup %s with %d task threads for %.0f s, touching %ld MiB\n", cg,
               cores, seconds, mib);
        fflush(stdout);

        /* the memory first, so the CPU phase below measures only the task threads */
        for (long i = 0; i < mib; i++) {
                char *p = malloc(1 << 20);
                if (p)
                        memset(p, 1, 1 << 20);
        }
        usage0 = keyed(cg, "cpu.stat", "usage_usec");
        t0 = now();
        for (int i = 0; i < cores; i++)
                pthread_create(&threads[i], NULL, task, NULL);
        for (int i = 0; i < cores; i++)
                pthread_join(threads[i], NULL);
        t1 = now();
        usage1 = keyed(cg, "cpu.stat", "usage_usec");

        printf("executor-sim: cpu.max %s, cpu.weight %s\n",
               cgroup_file(cg, "cpu.max", a, sizeof(a)),
               cgroup_file(cg, "cpu.weight", b, sizeof(b)));
        printf("executor-sim: used %.2f CPUs over %.1f s with %d runnable threads; throttled %llu "
               "times for %.1f s\n",
               (double)(usage1 - usage0) / 1e6 / (t1 - t0), t1 - t0, cores,
               keyed(cg, "cpu.stat", "nr_throttled"),
               (double)keyed(cg, "cpu.stat", "throttled_usec") / 1e6);
        printf("executor-sim: memory.max %s, memory.high %s, memory.low %s\n",
               cgroup_file(cg, "memory.max", a, sizeof(a)),
               cgroup_file(cg, "memory.high", b, sizeof(b)),
               cgroup_file(cg, "memory.low", c, sizeof(c)));
        printf("executor-sim: memory.peak %s bytes, memory.events high %llu max %llu\n",
               cgroup_file(cg, "memory.peak", a, sizeof(a)), keyed(cg, "memory.events", "high"),
               keyed(cg, "memory.events", "max"));
        return 0;
}
