/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collect.h parsers from fixture directories ($FIXTURES = tests/collect/fixtures):
 *   cgroup/<case>/          cgroup files + EXPECT ("field value" for every field)
 *   cgroup-invalid/<case>/  cgroup files + EXPECT-ERROR ("ERRNO message")
 *   procs/<case>/           cgroup/cgroup.procs, proc/<pid>/{io,status} + EXPECT
 *   procs-invalid/<case>/   the same + EXPECT-ERROR
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"
#include "util.h"

#define CASES_MAX 64
#define NAME_MAX_ 256

static void fixture_path(const char *rel, char *buf, size_t size)
{
        const char *dir = getenv("FIXTURES");

        cr_assert(dir && dir[0], "FIXTURES is not set: run the suite through meson test");
        snprintf(buf, size, "%s/%s", dir, rel);
}

/* The whole file, NUL-terminated (malloc'd), or NULL if it does not exist. */
static char *read_text(const char *path)
{
        FILE *f = fopen(path, "re");
        char *buf;
        long len;

        if (!f)
                return NULL;
        cr_assert(fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0,
                  "%s: cannot size", path);
        buf = malloc((size_t)len + 1);
        cr_assert(buf, "out of memory");
        cr_assert(fread(buf, 1, (size_t)len, f) == (size_t)len, "%s: short read", path);
        buf[len] = '\0';
        fclose(f);
        return buf;
}

static int compare_names(const void *a, const void *b)
{
        return strcmp((const char *)a, (const char *)b);
}

/* Subdirectories of $FIXTURES/rel, sorted. */
static size_t list_cases(const char *rel, char names[][NAME_MAX_])
{
        char path[4096];
        DIR *d;
        size_t n = 0;

        fixture_path(rel, path, sizeof(path));
        d = opendir(path);
        cr_assert(d, "cannot open %s: %s", path, strerror(errno));
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.' || de->d_type != DT_DIR)
                        continue;
                cr_assert(n < CASES_MAX, "%s: too many cases", path);
                snprintf(names[n++], NAME_MAX_, "%s", de->d_name);
        }
        closedir(d);
        qsort(names, n, NAME_MAX_, compare_names);
        cr_assert(n > 0, "%s: no cases", path);
        return n;
}

static int open_dir(const char *path)
{
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        cr_assert(fd >= 0, "cannot open %s: %s", path, strerror(errno));
        return fd;
}

static const char *errno_name(int e)
{
        switch (e) {
        case EINVAL:
                return "EINVAL";
        case ERANGE:
                return "ERANGE";
        case ENOENT:
                return "ENOENT";
        case EFBIG:
                return "EFBIG";
        case EBADF:
                return "EBADF";
        default:
                return "E?";
        }
}

/* ---- the fields an EXPECT file names ---- */

enum kind { K_U64, K_DOUBLE, K_BOOL };

struct field {
        const char *name;
        enum kind kind;
        size_t offset;
};

#define U(s, f)                                                                                    \
        {                                                                                          \
#f, K_U64, offsetof(struct s, f)                                                   \
        }
#define D(s, f)                                                                                    \
        {                                                                                          \
#f, K_DOUBLE, offsetof(struct s, f)                                                \
        }
#define B(s, f)                                                                                    \
        {                                                                                          \
#f, K_BOOL, offsetof(struct s, f)                                                  \
        }
#define PSI(p)                                                                                     \
        D(collect_cgroup, p.some_avg10), D(collect_cgroup, p.some_avg60),                          \
            D(collect_cgroup, p.some_avg300), U(collect_cgroup, p.some_total_us),                  \
            D(collect_cgroup, p.full_avg10), D(collect_cgroup, p.full_avg60),                      \
            D(collect_cgroup, p.full_avg300), U(collect_cgroup, p.full_total_us)

static const struct field cgroup_fields[] = {
    U(collect_cgroup, cpu_usage_us),
    U(collect_cgroup, cpu_user_us),
    U(collect_cgroup, cpu_system_us),
    U(collect_cgroup, cpu_nr_periods),
    U(collect_cgroup, cpu_nr_throttled),
    U(collect_cgroup, cpu_throttled_us),
    U(collect_cgroup, memory_current),
    U(collect_cgroup, memory_peak),
    U(collect_cgroup, memory_anon),
    U(collect_cgroup, memory_file),
    U(collect_cgroup, events_low),
    U(collect_cgroup, events_high),
    U(collect_cgroup, events_max),
    U(collect_cgroup, events_oom),
    U(collect_cgroup, events_oom_kill),
    U(collect_cgroup, io_rbytes),
    U(collect_cgroup, io_wbytes),
    U(collect_cgroup, io_rios),
    U(collect_cgroup, io_wios),
    PSI(psi_cpu),
    PSI(psi_memory),
    PSI(psi_io),
    B(collect_cgroup, has_cpu),
    B(collect_cgroup, has_memory),
    B(collect_cgroup, has_io),
    B(collect_cgroup, has_psi),
};

static const struct field procs_fields[] = {
    U(collect_procs, read_bytes), U(collect_procs, write_bytes), U(collect_procs, rchar),
    U(collect_procs, wchar),      U(collect_procs, vm_rss),      U(collect_procs, vm_hwm),
    U(collect_procs, threads),
};

/*
 * Compare every field of the table against an EXPECT file: each field must be named
 * exactly once ("unset" = COLLECT_UNSET, "nan" = NAN).
 */
static void check_expect(const char *path, const void *got, const struct field *fields,
                         size_t nfields, const char *extra_name, uint64_t extra_value)
{
        char *text = read_text(path), *save = NULL;
        bool seen[64] = {false}, seen_extra = extra_name == NULL;

        cr_assert(text, "missing %s", path);
        cr_assert(nfields <= ELEMENTSOF(seen));
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *value = strchr(line, ' ');
                size_t i;

                cr_assert(value, "%s: '%s' is not 'field value'", path, line);
                *value++ = '\0';
                if (extra_name && strcmp(line, extra_name) == 0) {
                        cr_expect(strtoull(value, NULL, 10) == extra_value,
                                  "%s: %s is %" PRIu64 ", expected %s", path, line, extra_value,
                                  value);
                        seen_extra = true;
                        continue;
                }
                for (i = 0; i < nfields && strcmp(fields[i].name, line) != 0; i++)
                        ;
                cr_assert(i < nfields, "%s: unknown field %s", path, line);
                cr_assert(!seen[i], "%s: %s named twice", path, line);
                seen[i] = true;
                switch (fields[i].kind) {
                case K_U64: {
                        uint64_t v = *(const uint64_t *)((const char *)got + fields[i].offset);
                        uint64_t want =
                            strcmp(value, "unset") == 0 ? COLLECT_UNSET : strtoull(value, NULL, 10);
                        cr_expect(v == want, "%s: %s is %" PRIu64 ", expected %s", path, line, v,
                                  value);
                        break;
                }
                case K_DOUBLE: {
                        double v = *(const double *)((const char *)got + fields[i].offset);
                        if (strcmp(value, "nan") == 0)
                                cr_expect(isnan(v), "%s: %s is %g, expected nan", path, line, v);
                        else
                                cr_expect(fabs(v - strtod(value, NULL)) < 1e-9,
                                          "%s: %s is %g, expected %s", path, line, v, value);
                        break;
                }
                case K_BOOL: {
                        bool v = *(const bool *)((const char *)got + fields[i].offset);
                        cr_expect(v == (strcmp(value, "true") == 0), "%s: %s is %s, expected %s",
                                  path, line, v ? "true" : "false", value);
                        break;
                }
                }
        }
        for (size_t i = 0; i < nfields; i++)
                cr_expect(seen[i], "%s does not name %s", path, fields[i].name);
        cr_expect(seen_extra, "%s does not name %s", path, extra_name ? extra_name : "-");
        free(text);
}

/* "ERRNO message" */
static void check_error(const char *path, int r, const struct util_error *err)
{
        char *text = read_text(path), *message;
        size_t len;

        cr_assert(text, "missing %s", path);
        len = strlen(text);
        if (len && text[len - 1] == '\n')
                text[len - 1] = '\0';
        message = strchr(text, ' ');
        cr_assert(message, "%s: not 'ERRNO message'", path);
        *message++ = '\0';
        cr_expect(r < 0, "%s: returned %d, expected an error", path, r);
        cr_expect_str_eq(errno_name(-r), text, "%s: returned %s (%d), expected %s", path,
                         errno_name(-r), r, text);
        cr_expect(err->error == -r, "%s: err->error %d, return %d", path, err->error, r);
        cr_expect_str_eq(err->text, message, "%s: message\n  '%s'\nexpected\n  '%s'", path,
                         err->text, message);
        free(text);
}

Test(collect, cgroup_cases)
{
        char names[CASES_MAX][NAME_MAX_];
        size_t n = list_cases("cgroup", names);

        for (size_t i = 0; i < n; i++) {
                char rel[NAME_MAX_ + 32], dir[4096], expect[4200];
                struct collect_cgroup c;
                struct util_error err = {0};
                int fd, r;

                snprintf(rel, sizeof(rel), "cgroup/%s", names[i]);
                fixture_path(rel, dir, sizeof(dir));
                snprintf(expect, sizeof(expect), "%s/EXPECT", dir);
                fd = open_dir(dir);
                r = collect_cgroup_read(fd, &c, &err);
                close(fd);
                cr_assert(r == 0, "%s: %d %s", names[i], r, err.text);
                cr_expect(c.t_ns > 0, "%s: t_ns not set", names[i]);
                check_expect(expect, &c, cgroup_fields, ELEMENTSOF(cgroup_fields), NULL, 0);
        }
}

Test(collect, cgroup_invalid_cases)
{
        char names[CASES_MAX][NAME_MAX_];
        size_t n = list_cases("cgroup-invalid", names);

        for (size_t i = 0; i < n; i++) {
                char rel[NAME_MAX_ + 32], dir[4096], expect[4200];
                struct collect_cgroup c, untouched;
                struct util_error err = {0};
                int fd, r;

                snprintf(rel, sizeof(rel), "cgroup-invalid/%s", names[i]);
                fixture_path(rel, dir, sizeof(dir));
                snprintf(expect, sizeof(expect), "%s/EXPECT-ERROR", dir);
                memset(&c, 0xab, sizeof(c));
                untouched = c;
                fd = open_dir(dir);
                r = collect_cgroup_read(fd, &c, &err);
                check_error(expect, r, &err);
                cr_expect(memcmp(&c, &untouched, sizeof(c)) == 0, "%s: *ret changed on error",
                          names[i]);
                /* err is optional */
                cr_expect(collect_cgroup_read(fd, &c, NULL) == r, "%s: differs without err",
                          names[i]);
                close(fd);
        }
}

Test(collect, procs_cases)
{
        char names[CASES_MAX][NAME_MAX_];
        size_t n = list_cases("procs", names);

        for (size_t i = 0; i < n; i++) {
                char rel[NAME_MAX_ + 32], dir[4096], path[4200];
                struct collect_procs p;
                struct util_error err = {0};
                int cgroup_fd, proc_fd, r;

                snprintf(rel, sizeof(rel), "procs/%s", names[i]);
                fixture_path(rel, dir, sizeof(dir));
                snprintf(path, sizeof(path), "%s/cgroup", dir);
                cgroup_fd = open_dir(path);
                snprintf(path, sizeof(path), "%s/proc", dir);
                proc_fd = open_dir(path);
                r = collect_procs_read_at(cgroup_fd, proc_fd, &p, &err);
                close(cgroup_fd);
                close(proc_fd);
                cr_assert(r == 0, "%s: %d %s", names[i], r, err.text);
                snprintf(path, sizeof(path), "%s/EXPECT", dir);
                check_expect(path, &p, procs_fields, ELEMENTSOF(procs_fields), "nprocs", p.nprocs);
        }
}

Test(collect, procs_invalid_cases)
{
        char names[CASES_MAX][NAME_MAX_];
        size_t n = list_cases("procs-invalid", names);

        for (size_t i = 0; i < n; i++) {
                char rel[NAME_MAX_ + 32], dir[4096], path[4200];
                struct collect_procs p, untouched;
                struct util_error err = {0};
                int cgroup_fd, proc_fd, r;

                snprintf(rel, sizeof(rel), "procs-invalid/%s", names[i]);
                fixture_path(rel, dir, sizeof(dir));
                snprintf(path, sizeof(path), "%s/cgroup", dir);
                cgroup_fd = open_dir(path);
                snprintf(path, sizeof(path), "%s/proc", dir);
                proc_fd = open_dir(path);
                memset(&p, 0xab, sizeof(p));
                untouched = p;
                r = collect_procs_read_at(cgroup_fd, proc_fd, &p, &err);
                close(cgroup_fd);
                close(proc_fd);
                snprintf(path, sizeof(path), "%s/EXPECT-ERROR", dir);
                check_error(path, r, &err);
                cr_expect(memcmp(&p, &untouched, sizeof(p)) == 0, "%s: *ret changed on error",
                          names[i]);
        }
}

/* A directory that was removed while we held its fd: the cgroup went away. */
Test(collect, removed_directory)
{
        char dir[] = "/tmp/collect-removed.XXXXXX";
        struct collect_cgroup c;
        struct collect_procs p;
        struct util_error err = {0};
        int fd, r;

        cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
        fd = open_dir(dir);
        cr_assert(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
        r = collect_cgroup_read(fd, &c, &err);
        cr_expect(r == -ENOENT, "collect_cgroup_read: %d (%s), expected -ENOENT", r, err.text);
        r = collect_procs_read(fd, &p, &err);
        cr_expect(r == -ENOENT, "collect_procs_read: %d (%s), expected -ENOENT", r, err.text);
        close(fd);
}

Test(collect, bad_fd)
{
        struct collect_cgroup c;
        struct collect_procs p;
        struct util_error err = {0};

        cr_expect(collect_cgroup_read(-1, &c, &err) == -EBADF);
        cr_expect(err.error == EBADF, "err.error %d", err.error);
        cr_expect(collect_procs_read(-1, &p, &err) == -EBADF);
}

static void write_file(const char *dir, const char *name, const char *text)
{
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        cr_assert(f, "%s: %s", path, strerror(errno));
        cr_assert(fputs(text, f) >= 0);
        cr_assert(fclose(f) == 0);
}

static void remove_tree(const char *dir)
{
        char cmd[4200];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        cr_expect(system(cmd) == 0, "%s", cmd);
}

/* io.stat of a host with many devices: summed; past the read buffer an error naming it. */
Test(collect, io_stat_many_devices)
{
        char dir[] = "/tmp/collect-io.XXXXXX";
        struct collect_cgroup c;
        struct util_error err = {0};
        char *text;
        size_t size = 0, len = 0;
        FILE *f;
        int fd, r;

        cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
        write_file(dir, "cpu.stat", "usage_usec 1\nuser_usec 1\nsystem_usec 0\n");
        f = open_memstream(&text, &size);
        cr_assert(f);
        for (unsigned i = 0; i < 300; i++)
                fprintf(f, "259:%u rbytes=%u wbytes=%u rios=1 wios=2 dbytes=0 dios=0\n", i, i,
                        2 * i);
        fclose(f);
        write_file(dir, "io.stat", text);
        fd = open_dir(dir);
        r = collect_cgroup_read(fd, &c, &err);
        cr_assert(r == 0, "%d %s", r, err.text);
        cr_expect(c.io_rbytes == 299 * 300 / 2, "io_rbytes %" PRIu64, c.io_rbytes);
        cr_expect(c.io_wbytes == 299 * 300, "io_wbytes %" PRIu64, c.io_wbytes);
        cr_expect(c.io_rios == 300 && c.io_wios == 600, "rios %" PRIu64 " wios %" PRIu64, c.io_rios,
                  c.io_wios);
        free(text);

        f = open_memstream(&text, &size);
        cr_assert(f);
        while (len < 40 * 1024) {
                int n = fprintf(f, "8:%zu rbytes=1 wbytes=1 rios=1 wios=1 dbytes=0 dios=0\n", len);
                len += (size_t)n;
        }
        fclose(f);
        write_file(dir, "io.stat", text);
        free(text);
        r = collect_cgroup_read(fd, &c, &err);
        cr_expect(r == -EFBIG, "%d %s", r, err.text);
        cr_expect(strncmp(err.text, "io.stat: ", 9) == 0, "message '%s' does not name io.stat",
                  err.text);
        close(fd);
        remove_tree(dir);
}

/* The live /proc: our own cgroup v2 directory lists us. */
Test(collect, procs_of_this_process)
{
        char line[4096], path[4200];
        struct collect_procs p;
        struct util_error err = {0};
        FILE *f = fopen("/proc/self/cgroup", "re");
        bool found = false;
        int fd, r;

        cr_assert(f);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        found = true;
                        break;
                }
        fclose(f);
        if (!found)
                cr_skip_test("no cgroup v2 membership in /proc/self/cgroup");
        snprintf(path, sizeof(path), "/sys/fs/cgroup/unified%s", line + 3);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                snprintf(path, sizeof(path), "/sys/fs/cgroup%s", line + 3);
                fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        if (fd < 0)
                cr_skip_test("cgroup v2 directory of this process not found");
        r = collect_procs_read(fd, &p, &err);
        close(fd);
        cr_assert(r == 0, "%s: %d %s", path, r, err.text);
        cr_expect(p.nprocs >= 1, "%s: nprocs %u", path, p.nprocs);
        cr_expect(p.vm_rss > 0 && p.vm_hwm >= p.vm_rss / 2, "vm_rss %" PRIu64 " vm_hwm %" PRIu64,
                  p.vm_rss, p.vm_hwm);
        cr_expect(p.threads >= p.nprocs, "threads %" PRIu64 " < nprocs %u", p.threads, p.nprocs);
}

Test(collect, taskstats_null_safe)
{
        collect_taskstats_close(NULL);
        cr_expect(collect_taskstats_fd(NULL) == -1);
        cr_expect(collect_taskstats_overflows(NULL) == 0);
}
