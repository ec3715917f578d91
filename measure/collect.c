/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collect: cgroup v2 usage files and /proc/<pid>/{io,status}. Each file is read once per
 * call into a stack buffer and parsed in place; this runs every sampling interval.
 */
#include "collect.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* memory.stat is ~2 KiB on 6.x; io.stat grows with the number of devices */
#define CGROUP_FILE_MAX (32 * 1024)
#define PROC_FILE_MAX   (8 * 1024)
/* cgroup.procs: start here, double on -EFBIG up to the limit */
#define PROCS_LIST_START (16 * 1024)
#define PROCS_LIST_MAX   (64 * 1024 * 1024)

static int number_error(struct util_error *err, int r, const char *name, unsigned line_no,
                        const char *value, const char *key)
{
        return util_error_set(err, r, "%s: line %u: '%s' is %s (%s)", name, line_no, value,
                              r == -ERANGE ? "out of range" : "not a number", key);
}

/* Cut the next line off *cursor; NULL at the end. */
static char *next_line(char **cursor)
{
        char *line = *cursor, *newline;

        if (!line)
                return NULL;
        newline = strchr(line, '\n');
        if (newline) {
                *newline = '\0';
                *cursor = newline + 1;
        } else
                *cursor = NULL;
        return line;
}

/*
 * Read name below dirfd into buf. 1 if read, 0 if absent (controller not enabled, or a
 * file of a newer kernel), -errno with err set otherwise.
 */
static int read_optional(int dirfd, const char *name, char *buf, size_t size,
                         struct util_error *err)
{
        ssize_t n = util_read_at(dirfd, name, buf, size);

        if (n == -ENOENT)
                return 0;
        if (n < 0)
                return util_error_set(err, (int)n, "%s: %s", name, strerror((int)-n));
        return 1;
}

struct key_field {
        const char *key;
        uint64_t *value;
};

/*
 * "key value" lines (cpu.stat, memory.stat, memory.events). Every line must have that
 * shape; only the keys asked for are parsed, so keys of newer kernels do not break this.
 */
static int parse_keyed(const char *name, char *text, const struct key_field *fields, size_t nfields,
                       struct util_error *err)
{
        unsigned line_no = 0;
        char *cursor = text, *line;

        while ((line = next_line(&cursor))) {
                char *space;

                line_no++;
                if (!*line)
                        continue;
                space = strchr(line, ' ');
                if (!space || space == line || !space[1])
                        return util_error_set(err, -EINVAL, "%s: line %u: '%s' is not 'key value'",
                                              name, line_no, line);
                *space = '\0';
                for (size_t i = 0; i < nfields; i++) {
                        int r;

                        if (strcmp(line, fields[i].key) != 0)
                                continue;
                        r = util_parse_u64(space + 1, fields[i].value);
                        if (r < 0)
                                return number_error(err, r, name, line_no, space + 1, line);
                        break;
                }
        }
        return 0;
}

static int parse_single(const char *name, const char *text, uint64_t *ret, struct util_error *err)
{
        int r = util_parse_u64(text, ret);

        if (r < 0)
                return util_error_set(err, r, "%s: '%s' is %s", name, text,
                                      r == -ERANGE ? "out of range" : "not a number");
        return 0;
}

/* "MAJ:MIN" */
static bool is_device(const char *s)
{
        const char *colon = strchr(s, ':');
        uint64_t major, minor;
        char part[32];
        size_t len;

        if (!colon)
                return false;
        len = (size_t)(colon - s);
        if (len == 0 || len >= sizeof(part))
                return false;
        memcpy(part, s, len);
        part[len] = '\0';
        return util_parse_u64(part, &major) == 0 && util_parse_u64(colon + 1, &minor) == 0;
}

/* io.stat: "MAJ:MIN rbytes=.. wbytes=.. rios=.. wios=.. dbytes=.. dios=.." per device. */
static int parse_io_stat(char *text, struct collect_cgroup *c, struct util_error *err)
{
        static const char *const name = "io.stat";
        uint64_t rbytes = 0, wbytes = 0, rios = 0, wios = 0, dbytes = 0, dios = 0;
        unsigned line_no = 0;
        char *cursor = text, *line;

        while ((line = next_line(&cursor))) {
                char *token, *save = NULL;

                line_no++;
                if (!*line)
                        continue;
                token = strtok_r(line, " ", &save);
                if (!token || !is_device(token))
                        return util_error_set(err, -EINVAL,
                                              "%s: line %u: '%s' is not a device (MAJ:MIN)", name,
                                              line_no, token ? token : "");
                while ((token = strtok_r(NULL, " ", &save))) {
                        /* io.cost and io.latency add keys with non-integer values: skipped */
                        static const char *const keys[] = {"rbytes", "wbytes", "rios",
                                                           "wios",   "dbytes", "dios"};
                        uint64_t *sums[] = {&rbytes, &wbytes, &rios, &wios, &dbytes, &dios};
                        char *equals = strchr(token, '=');

                        if (!equals || equals == token)
                                return util_error_set(err, -EINVAL,
                                                      "%s: line %u: '%s' is not 'key=value'", name,
                                                      line_no, token);
                        *equals = '\0';
                        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                                uint64_t v;
                                int r;

                                if (strcmp(token, keys[i]) != 0)
                                        continue;
                                r = util_parse_u64(equals + 1, &v);
                                if (r < 0)
                                        return number_error(err, r, name, line_no, equals + 1,
                                                            token);
                                if (__builtin_add_overflow(*sums[i], v, sums[i]))
                                        return util_error_set(
                                            err, -ERANGE, "%s: line %u: the sum of %s overflows",
                                            name, line_no, token);
                                break;
                        }
                }
        }
        c->io_rbytes = rbytes;
        c->io_wbytes = wbytes;
        c->io_rios = rios;
        c->io_wios = wios;
        return 0;
}

static void psi_unset(struct collect_psi *p)
{
        p->some_avg10 = p->some_avg60 = p->some_avg300 = NAN;
        p->full_avg10 = p->full_avg60 = p->full_avg300 = NAN;
        p->some_total_us = p->full_total_us = COLLECT_UNSET;
}

/* "some avg10=0.00 avg60=0.00 avg300=0.00 total=0", then "full ..." (not always there). */
static int parse_pressure(const char *name, char *text, struct collect_psi *ret,
                          struct util_error *err)
{
        struct collect_psi p;
        bool have_some = false;
        unsigned line_no = 0;
        char *cursor = text, *line;

        psi_unset(&p);
        while ((line = next_line(&cursor))) {
                double avg10 = NAN, avg60 = NAN, avg300 = NAN;
                uint64_t total = COLLECT_UNSET;
                char *token, *save = NULL;
                bool some;

                line_no++;
                if (!*line)
                        continue;
                token = strtok_r(line, " ", &save);
                if (!token || (strcmp(token, "some") != 0 && strcmp(token, "full") != 0))
                        return util_error_set(err, -EINVAL,
                                              "%s: line %u: '%s' is not 'some' or 'full'", name,
                                              line_no, token ? token : "");
                some = token[0] == 's';
                while ((token = strtok_r(NULL, " ", &save))) {
                        char *equals = strchr(token, '=');
                        double *avg = NULL;
                        int r = 0;

                        if (!equals || equals == token)
                                return util_error_set(err, -EINVAL,
                                                      "%s: line %u: '%s' is not 'key=value'", name,
                                                      line_no, token);
                        *equals = '\0';
                        if (strcmp(token, "avg10") == 0)
                                avg = &avg10;
                        else if (strcmp(token, "avg60") == 0)
                                avg = &avg60;
                        else if (strcmp(token, "avg300") == 0)
                                avg = &avg300;
                        else if (strcmp(token, "total") == 0)
                                r = util_parse_u64(equals + 1, &total);
                        else
                                continue;
                        if (avg)
                                r = util_parse_double(equals + 1, avg);
                        if (r < 0)
                                return number_error(err, r, name, line_no, equals + 1, token);
                }
                if (isnan(avg10) || isnan(avg60) || isnan(avg300) || total == COLLECT_UNSET)
                        return util_error_set(
                            err, -EINVAL, "%s: line %u: lacks one of avg10, avg60, avg300, total",
                            name, line_no);
                if (some) {
                        have_some = true;
                        p.some_avg10 = avg10;
                        p.some_avg60 = avg60;
                        p.some_avg300 = avg300;
                        p.some_total_us = total;
                } else {
                        p.full_avg10 = avg10;
                        p.full_avg60 = avg60;
                        p.full_avg300 = avg300;
                        p.full_total_us = total;
                }
        }
        if (!have_some)
                return util_error_set(err, -EINVAL, "%s: no 'some' line", name);
        *ret = p;
        return 0;
}

int collect_cgroup_read(int cgroup_fd, struct collect_cgroup *ret, struct util_error *err)
{
        static const char *const pressure_files[] = {"cpu.pressure", "memory.pressure",
                                                     "io.pressure"};
        char buf[CGROUP_FILE_MAX];
        struct collect_cgroup c = {
            .t_ns = util_now_ns(),
            .cpu_usage_us = COLLECT_UNSET,
            .cpu_user_us = COLLECT_UNSET,
            .cpu_system_us = COLLECT_UNSET,
            .cpu_nr_periods = COLLECT_UNSET,
            .cpu_nr_throttled = COLLECT_UNSET,
            .cpu_throttled_us = COLLECT_UNSET,
            .memory_current = COLLECT_UNSET,
            .memory_peak = COLLECT_UNSET,
            .memory_anon = COLLECT_UNSET,
            .memory_file = COLLECT_UNSET,
            .events_low = COLLECT_UNSET,
            .events_high = COLLECT_UNSET,
            .events_max = COLLECT_UNSET,
            .events_oom = COLLECT_UNSET,
            .events_oom_kill = COLLECT_UNSET,
            .io_rbytes = COLLECT_UNSET,
            .io_wbytes = COLLECT_UNSET,
            .io_rios = COLLECT_UNSET,
            .io_wios = COLLECT_UNSET,
        };
        struct collect_psi *psi[] = {&c.psi_cpu, &c.psi_memory, &c.psi_io};
        const struct key_field cpu_fields[] = {
            {"usage_usec", &c.cpu_usage_us},       {"user_usec", &c.cpu_user_us},
            {"system_usec", &c.cpu_system_us},     {"nr_periods", &c.cpu_nr_periods},
            {"nr_throttled", &c.cpu_nr_throttled}, {"throttled_usec", &c.cpu_throttled_us},
        };
        const struct key_field memory_fields[] = {
            {"anon", &c.memory_anon},
            {"file", &c.memory_file},
        };
        const struct key_field event_fields[] = {
            {"low", &c.events_low}, {"high", &c.events_high},         {"max", &c.events_max},
            {"oom", &c.events_oom}, {"oom_kill", &c.events_oom_kill},
        };
        int r;

        if (cgroup_fd < 0)
                return util_error_set(err, -EBADF, "cgroup directory fd %d is not valid",
                                      cgroup_fd);

        r = read_optional(cgroup_fd, "cpu.stat", buf, sizeof(buf), err);
        if (r < 0)
                return r;
        if (r > 0) {
                r = parse_keyed("cpu.stat", buf, cpu_fields, ELEMENTSOF(cpu_fields), err);
                if (r < 0)
                        return r;
                c.has_cpu = true;
        }

        r = read_optional(cgroup_fd, "memory.current", buf, sizeof(buf), err);
        if (r > 0)
                r = parse_single("memory.current", buf, &c.memory_current, err);
        if (r < 0)
                return r;
        c.has_memory = c.memory_current != COLLECT_UNSET;

        r = read_optional(cgroup_fd, "memory.peak", buf, sizeof(buf), err);
        if (r > 0)
                r = parse_single("memory.peak", buf, &c.memory_peak, err);
        if (r < 0)
                return r;

        r = read_optional(cgroup_fd, "memory.stat", buf, sizeof(buf), err);
        if (r > 0) {
                c.has_memory = true;
                r = parse_keyed("memory.stat", buf, memory_fields, ELEMENTSOF(memory_fields), err);
        }
        if (r < 0)
                return r;

        r = read_optional(cgroup_fd, "memory.events", buf, sizeof(buf), err);
        if (r > 0) {
                c.has_memory = true;
                r = parse_keyed("memory.events", buf, event_fields, ELEMENTSOF(event_fields), err);
        }
        if (r < 0)
                return r;

        r = read_optional(cgroup_fd, "io.stat", buf, sizeof(buf), err);
        if (r > 0) {
                c.has_io = true;
                r = parse_io_stat(buf, &c, err);
        }
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(pressure_files); i++) {
                psi_unset(psi[i]);
                r = read_optional(cgroup_fd, pressure_files[i], buf, sizeof(buf), err);
                if (r > 0) {
                        c.has_psi = true;
                        r = parse_pressure(pressure_files[i], buf, psi[i], err);
                }
                if (r < 0)
                        return r;
        }

        /* every cgroup v2 directory has cpu.stat and the pressure files: none means gone */
        if (!c.has_cpu && !c.has_memory && !c.has_io && !c.has_psi)
                return util_error_set(
                    err, -ENOENT,
                    "no cpu.stat, memory.*, io.stat or *.pressure: not a cgroup v2 "
                    "directory, or removed");
        *ret = c;
        return 0;
}

/* ---- /proc ---- */

static int compare_pids(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

        return (x > y) - (x < y);
}

/* cgroup.procs as a sorted array without duplicates. */
static int read_pids(int cgroup_fd, pid_t **ret, size_t *ret_count, struct util_error *err)
{
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        size_t size = PROCS_LIST_START, count = 0, lines = 0, unique = 0;
        unsigned line_no = 0;
        char *cursor, *line;
        ssize_t n;

        for (;;) {
                free(buf);
                buf = malloc(size);
                if (!buf)
                        return util_error_set(err, -ENOMEM, "cgroup.procs: out of memory");
                n = util_read_at(cgroup_fd, "cgroup.procs", buf, size);
                if (n != -EFBIG || size >= PROCS_LIST_MAX)
                        break;
                size *= 2;
        }
        if (n == -ENOENT)
                return util_error_set(err, -ENOENT, "cgroup.procs: no such file: cgroup removed?");
        if (n < 0)
                return util_error_set(err, (int)n, "cgroup.procs: %s", strerror((int)-n));

        for (const char *c = buf; *c; c++)
                lines += *c == '\n';
        pids = calloc(lines + 1, sizeof(*pids));
        if (!pids)
                return util_error_set(err, -ENOMEM, "cgroup.procs: out of memory");
        cursor = buf;
        while ((line = next_line(&cursor))) {
                int pid, r;

                line_no++;
                if (!*line)
                        continue;
                r = util_parse_int(line, &pid);
                if (r < 0 || pid <= 0)
                        return util_error_set(err, r < 0 ? r : -EINVAL,
                                              "cgroup.procs: line %u: '%s' is not a pid", line_no,
                                              line);
                pids[count++] = pid;
        }
        /* a process moved out and back in may be listed twice */
        qsort(pids, count, sizeof(*pids), compare_pids);
        for (size_t i = 0; i < count; i++)
                if (unique == 0 || pids[unique - 1] != pids[i])
                        pids[unique++] = pids[i];
        /* TAKE_PTR is a statement expression, which -Wpedantic rejects */
        *ret = pids;
        pids = NULL;
        *ret_count = unique;
        return 0;
}

/* The pid ended or cannot be read any more: not an error of the whole reading. */
static bool is_gone(int r)
{
        return r == -ENOENT || r == -ESRCH || r == -EACCES || r == -EPERM;
}

/* /proc/<pid>/io: "key: value" lines. */
static int parse_proc_io(pid_t pid, char *text, struct collect_procs *p, struct util_error *err)
{
        const struct key_field fields[] = {
            {"rchar", &p->rchar},
            {"wchar", &p->wchar},
            {"read_bytes", &p->read_bytes},
            {"write_bytes", &p->write_bytes},
        };
        unsigned line_no = 0;
        char *cursor = text, *line;

        while ((line = next_line(&cursor))) {
                char *colon;

                line_no++;
                if (!*line)
                        continue;
                colon = strstr(line, ": ");
                if (!colon || colon == line)
                        return util_error_set(err, -EINVAL,
                                              "/proc/%d/io: line %u: '%s' is not 'key: value'",
                                              (int)pid, line_no, line);
                *colon = '\0';
                for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                        int r;

                        if (strcmp(line, fields[i].key) != 0)
                                continue;
                        r = util_parse_u64(colon + 2, fields[i].value);
                        if (r < 0)
                                return util_error_set(
                                    err, r, "/proc/%d/io: line %u: '%s' is %s (%s)", (int)pid,
                                    line_no, colon + 2,
                                    r == -ERANGE ? "out of range" : "not a number", line);
                        break;
                }
        }
        return 0;
}

/* /proc/<pid>/status: "VmRSS:\t    1234 kB", "VmHWM: ...", "Threads:\t3"; the rest is skipped. */
static int parse_proc_status(pid_t pid, char *text, struct collect_procs *p, struct util_error *err)
{
        unsigned line_no = 0;
        char *cursor = text, *line;

        while ((line = next_line(&cursor))) {
                uint64_t *dst, v;
                bool kib;
                char *value, *end;
                size_t len;
                int r;

                line_no++;
                if (strncmp(line, "VmRSS:", 6) == 0) {
                        dst = &p->vm_rss;
                        kib = true;
                } else if (strncmp(line, "VmHWM:", 6) == 0) {
                        dst = &p->vm_hwm;
                        kib = true;
                } else if (strncmp(line, "Threads:", 8) == 0) {
                        dst = &p->threads;
                        kib = false;
                } else
                        continue;
                value = strchr(line, ':') + 1;
                value += strspn(value, " \t");
                len = strlen(value);
                end = value + len;
                if (kib) {
                        if (len < 3 || strcmp(end - 3, " kB") != 0)
                                return util_error_set(
                                    err, -EINVAL, "/proc/%d/status: line %u: '%s' is not 'N kB'",
                                    (int)pid, line_no, value);
                        end[-3] = '\0';
                }
                r = util_parse_u64(value, &v);
                if (r == 0 && kib && __builtin_mul_overflow(v, 1024, &v))
                        r = -ERANGE;
                if (r < 0)
                        return util_error_set(err, r, "/proc/%d/status: line %u: '%s' is %s",
                                              (int)pid, line_no, value,
                                              r == -ERANGE ? "out of range" : "not a number");
                *dst = v;
        }
        return 0;
}

static int add_u64(uint64_t *sum, uint64_t v)
{
        return __builtin_add_overflow(*sum, v, sum) ? -ERANGE : 0;
}

int collect_procs_read_at(int cgroup_fd, int proc_fd, struct collect_procs *ret,
                          struct util_error *err)
{
        _cleanup_free_ pid_t *pids = NULL;
        struct collect_procs sum = {0};
        size_t count = 0;
        int r;

        if (cgroup_fd < 0 || proc_fd < 0)
                return util_error_set(err, -EBADF, "invalid directory fd (cgroup %d, proc %d)",
                                      cgroup_fd, proc_fd);
        r = read_pids(cgroup_fd, &pids, &count, err);
        if (r < 0)
                return r;

        for (size_t i = 0; i < count; i++) {
                struct collect_procs one = {0};
                char name[64], buf[PROC_FILE_MAX];
                ssize_t n;

                snprintf(name, sizeof(name), "%d/io", (int)pids[i]);
                n = util_read_at(proc_fd, name, buf, sizeof(buf));
                if (is_gone((int)n))
                        continue;
                if (n < 0)
                        return util_error_set(err, (int)n, "/proc/%s: %s", name, strerror((int)-n));
                r = parse_proc_io(pids[i], buf, &one, err);
                if (r < 0)
                        return r;

                snprintf(name, sizeof(name), "%d/status", (int)pids[i]);
                n = util_read_at(proc_fd, name, buf, sizeof(buf));
                if (is_gone((int)n))
                        continue;
                if (n < 0)
                        return util_error_set(err, (int)n, "/proc/%s: %s", name, strerror((int)-n));
                r = parse_proc_status(pids[i], buf, &one, err);
                if (r < 0)
                        return r;

                if (add_u64(&sum.read_bytes, one.read_bytes) < 0 ||
                    add_u64(&sum.write_bytes, one.write_bytes) < 0 ||
                    add_u64(&sum.rchar, one.rchar) < 0 || add_u64(&sum.wchar, one.wchar) < 0 ||
                    add_u64(&sum.vm_rss, one.vm_rss) < 0 || add_u64(&sum.vm_hwm, one.vm_hwm) < 0 ||
                    add_u64(&sum.threads, one.threads) < 0)
                        return util_error_set(err, -ERANGE, "/proc/%d: the sums overflow",
                                              (int)pids[i]);
                sum.nprocs++;
        }
        *ret = sum;
        return 0;
}

int collect_procs_read(int cgroup_fd, struct collect_procs *ret, struct util_error *err)
{
        _cleanup_close_ int proc_fd = -1;

        proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0)
                return util_error_set(err, -errno, "/proc: %s", strerror(errno));
        return collect_procs_read_at(cgroup_fd, proc_fd, ret, err);
}
