/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf-api: the probe.h contract. The pure parts (argument checks, histogram percentiles,
 * cgroup ids) always run; opening real probes needs root, kernel BTF and a BPF build, and
 * the test exits 77 naming what is missing only after the pure parts passed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "probe.h"
#include "util.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        failures++;                                                                \
                        printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                     \
                        printf(__VA_ARGS__);                                                       \
                        printf("\n");                                                              \
                }                                                                                  \
        } while (0)

static void test_percentiles(void)
{
        uint64_t hist[PROBE_HIST_SLOTS] = {0};
        uint64_t v;

        CHECK(probe_hist_percentile_us(hist, 50) == 0, "empty histogram");
        hist[0] = 1;  /* [0, 2) us */
        hist[3] = 8;  /* [8, 16) */
        hist[10] = 1; /* [1024, 2048) */
        v = probe_hist_percentile_us(hist, 0);
        CHECK(v == 2, "p0 = %llu, want 2", (unsigned long long)v);
        v = probe_hist_percentile_us(hist, 50);
        CHECK(v == 16, "p50 = %llu, want 16", (unsigned long long)v);
        v = probe_hist_percentile_us(hist, 90);
        CHECK(v == 16, "p90 = %llu, want 16 (9 of 10 samples)", (unsigned long long)v);
        v = probe_hist_percentile_us(hist, 91);
        CHECK(v == 2048, "p91 = %llu, want 2048", (unsigned long long)v);
        v = probe_hist_percentile_us(hist, 100);
        CHECK(v == 2048, "p100 = %llu, want 2048", (unsigned long long)v);
        v = probe_hist_percentile_us(hist, 250);
        CHECK(v == 2048, "p250 clamps to p100, got %llu", (unsigned long long)v);
}

static void test_arguments(void)
{
        struct util_error err;

        memset(&err, 0, sizeof(err));
        CHECK(!probe_open(NULL, 0, PROBE_ALL, &err), "no ids");
        CHECK(err.error == EINVAL || err.error == EOPNOTSUPP, "error %d", err.error);
#if SPARKSHIM_HAVE_BPF
        uint64_t ids[PROBE_CGROUPS_MAX + 1];

        for (size_t i = 0; i < PROBE_CGROUPS_MAX + 1; i++)
                ids[i] = 1000 + i;
        CHECK(err.error == EINVAL && err.text[0], "error %d text '%s'", err.error, err.text);
        memset(&err, 0, sizeof(err));
        CHECK(!probe_open(ids, PROBE_CGROUPS_MAX + 1, PROBE_ALL, &err), "too many ids");
        CHECK(err.error == EINVAL, "error %d", err.error);
        ids[1] = ids[0];
        memset(&err, 0, sizeof(err));
        CHECK(!probe_open(ids, 2, PROBE_ALL, &err), "duplicate ids");
        CHECK(err.error == EINVAL && strstr(err.text, "twice"), "error %d '%s'", err.error,
              err.text);
        memset(&err, 0, sizeof(err));
        CHECK(!probe_open(ids, 1, 0, &err), "no kinds");
        CHECK(err.error == EINVAL, "error %d", err.error);
        memset(&err, 0, sizeof(err));
        CHECK(!probe_open(ids, 1, 1u << 7, &err), "unknown kind");
        CHECK(err.error == EINVAL, "error %d", err.error);
#else
        CHECK(strncmp(err.text, "built without BPF", 17) == 0, "stub text '%s'", err.text);
#endif
        probe_close(NULL);
        CHECK(probe_attached(NULL) == 0, "NULL probe has nothing attached");
        CHECK(strcmp(probe_kind_name(PROBE_MEMORY), "memory") == 0, "kind name");
        CHECK(probe_kind_name(PROBE_ALL) == NULL, "PROBE_ALL is not one kind");
}

static const char *cgroup2_root(void)
{
        static const char *const roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
        struct statfs sfs;

        for (size_t i = 0; i < ELEMENTSOF(roots); i++)
                if (statfs(roots[i], &sfs) == 0 && sfs.f_type == 0x63677270)
                        return roots[i];
        return NULL;
}

static void test_cgroup_id(const char *root)
{
        uint64_t id = 0;
        int r;

        r = probe_cgroup_id("/proc/self/status", &id);
        CHECK(r == -ENOTDIR, "a file: %d", r);
        r = probe_cgroup_id("/nonexistent-sparkshim", &id);
        CHECK(r == -ENOENT, "missing: %d", r);
        r = probe_cgroup_id("/proc", &id);
        CHECK(r == -EMEDIUMTYPE, "not cgroup2: %d", r);
        if (root) {
                r = probe_cgroup_id(root, &id);
                CHECK(r == 0 && id > 0, "%s: %d, id %llu", root, r, (unsigned long long)id);
        }
}

static int count_oom(const struct probe_oom_event *event, void *userdata)
{
        (*(int *)userdata)++;
        return 0;
}

/* Needs root and BPF: only the cpu kind, so memory and disk say "not requested". */
static int test_open(const char *root)
{
        struct util_error err = {0};
        struct probe_usage usage;
        uint64_t id;
        struct probe *p;
        int events = 0, r;

        if (!SPARKSHIM_HAVE_BPF) {
                printf("SKIP: attach checks: built without BPF\n");
                return 77;
        }
        if (geteuid() != 0) {
                printf("SKIP: attach checks: needs root\n");
                return 77;
        }
        if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
                printf("SKIP: attach checks: no kernel BTF\n");
                return 77;
        }
        if (!root) {
                printf("SKIP: attach checks: no cgroup v2 hierarchy\n");
                return 77;
        }
        if (probe_cgroup_id(root, &id) < 0)
                return 1;
        p = probe_open(&id, 1, PROBE_CPU, &err);
        CHECK(p, "probe_open(cpu): %d %s", err.error, err.text);
        if (!p)
                return 0;
        CHECK(probe_attached(p) == PROBE_CPU, "attached 0x%x", probe_attached(p));
        CHECK(probe_missing_reason(p, PROBE_CPU) == NULL, "cpu is attached");
        CHECK(probe_kind_detail(p, PROBE_CPU) &&
                  strstr(probe_kind_detail(p, PROBE_CPU), "sched_switch"),
              "cpu detail '%s'", probe_kind_detail(p, PROBE_CPU));
        CHECK(probe_missing_reason(p, PROBE_DISK) &&
                  strcmp(probe_missing_reason(p, PROBE_DISK), "not requested") == 0,
              "disk reason '%s'", probe_missing_reason(p, PROBE_DISK));
        CHECK(probe_kind_detail(p, PROBE_DISK) == NULL, "disk has no detail");
        r = probe_read(p, id + 1, &usage);
        CHECK(r == -ENOENT, "unwatched id: %d", r);
        r = probe_read(p, id, &usage);
        CHECK(r == 0, "watched id: %d", r);
        r = probe_consume_oom(p, count_oom, &events);
        CHECK(r == -EOPNOTSUPP, "oom events without the memory kind: %d", r);
        CHECK(probe_oom_fd(p) == -EOPNOTSUPP, "oom fd without the memory kind");
        r = probe_program_stats(p, NULL, 0);
        CHECK(r >= 2, "cpu programs: %d", r);
        probe_close(p);

        memset(&err, 0, sizeof(err));
        p = probe_open(&id, 1, PROBE_MEMORY, &err);
        CHECK(p, "probe_open(memory): %d %s", err.error, err.text);
        if (p) {
                CHECK(probe_oom_fd(p) >= 0, "oom fd");
                r = probe_consume_oom(p, count_oom, &events);
                CHECK(r == 0 && events == 0, "no OOM events yet: %d, %d", r, events);
                probe_close(p);
        }
        return 0;
}

int main(void)
{
        const char *root = cgroup2_root();
        int r;

        test_percentiles();
        test_arguments();
        test_cgroup_id(root);
        r = test_open(root);
        if (failures) {
                printf("%d check(s) failed\n", failures);
                return 1;
        }
        if (r == 77)
                return 77;
        printf("ok: probe.h contract\n");
        return r;
}
