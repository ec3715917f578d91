/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Prometheus file of one executor run: a text-exposition file in node_exporter's
 * textfile directory (docs/sparkshim-report.5.md, PROMETHEUS), composed from each report
 * and renamed into place; removed when the run ends. Its first line names the sparkshim
 * that writes it, so that the next sparkshim to open the directory removes the files of
 * one that was killed before it could (the sweep of stale files).
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "monitor-internal.h"
#include "rolling.h"
#include "utf8.h"
#include "util.h"

/* ---------------------------------------------------------------- the Prometheus file */

/*
 * Who writes a Prometheus file, as its first line (a comment to Prometheus): the pid, its
 * start time (clock ticks after boot, /proc/PID/stat field 22), the pid namespace the pid
 * means something in, and the boot. A file whose writer is gone is stale (sweep_stale).
 */
#define OWNER_FORMAT "# sparkshim-owner pid=%d start=%llu pidns=%llu boot=%36s"

static void boot_id(char *buf, size_t size)
{
        char text[64] = "";
        int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
        ssize_t len = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;

        if (fd >= 0)
                close(fd);
        text[len > 0 ? len : 0] = '\0';
        text[strcspn(text, "\n")] = '\0';
        snprintf(buf, size, "%s", text[0] ? text : "unknown");
}

static unsigned long long pid_namespace(void)
{
        struct stat st;

        return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

static void owner_line(char *buf, size_t size)
{
        uint64_t start = 0;
        char boot[64];

        util_process_start_time(getpid(), &start);
        boot_id(boot, sizeof(boot));
        snprintf(buf, size, "# sparkshim-owner pid=%d start=%llu pidns=%llu boot=%s", (int)getpid(),
                 (unsigned long long)start, pid_namespace(), boot);
}

/*
 * Whether the file dirfd/name is a Prometheus file of a sparkshim that is gone: its first
 * line is an owner line (OWNER_FORMAT) of another boot, or of this boot and pid namespace
 * naming a pid that is not running or started at another time. Owners in another pid
 * namespace (another container) cannot be told from here: never stale.
 */
static bool stale(int dirfd, const char *name, uid_t uid, const char *our_boot,
                  unsigned long long our_pidns)
{
        char text[256], boot[40];
        unsigned long long start, pidns;
        uint64_t now;
        struct stat st;
        ssize_t len;
        int pid, fd, r;

        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return false;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid || st.st_nlink != 1) {
                close(fd);
                return false;
        }
        len = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (len <= 0)
                return false;
        text[len] = '\0';
        if (sscanf(text, OWNER_FORMAT, &pid, &start, &pidns, boot) != 4 || pid <= 0)
                return false;
        if (strcmp(boot, our_boot) != 0)
                return true;
        if (pidns != our_pidns)
                return false;
        r = util_process_start_time(pid, &now);
        return r == -ENOENT || (r == 0 && now != start);
}

/*
 * Remove the *.prom files of dirfd that a sparkshim which is gone left (it was killed before
 * it could remove its own): their series would otherwise stay on the node for good. Only
 * regular files of our user with one link and an owner line are looked at; bounded.
 */
static void sweep_stale(int dirfd, const char *dir, const char *own_name)
{
        unsigned long long pidns = pid_namespace();
        char boot[64];
        unsigned seen = 0;
        struct dirent *de;
        DIR *d;
        int fd;

        boot_id(boot, sizeof(boot));
        fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        while ((de = readdir(d)) && seen++ < 4096) {
                size_t len = strlen(de->d_name);

                if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".prom") != 0 ||
                    strcmp(de->d_name, own_name) == 0 ||
                    (de->d_type != DT_REG && de->d_type != DT_UNKNOWN))
                        continue;
                if (stale(dirfd, de->d_name, geteuid(), boot, pidns) &&
                    unlinkat(dirfd, de->d_name, 0) == 0)
                        log_info("removed %s/%s, the Prometheus file of a sparkshim that is gone",
                                 dir, de->d_name);
        }
        closedir(d);
}

/* The Prometheus file is written next to its final name and renamed: its directory is held now. */
int measure_prometheus_open(struct shim_monitor *m, struct util_error *err)
{
        _cleanup_close_ int dirfd = -1;
        const char *name;
        struct util_error why = {0};
        char dir[4096];

        assert(m);
        dirfd = util_open_dir_of(m->prometheus, &name, &why);
        if (dirfd < 0)
                return util_error_set(err, dirfd, "prometheus file %s: %s", m->prometheus,
                                      why.text);
        if (faccessat(dirfd, ".", W_OK, 0) < 0)
                return util_error_set(err, errno,
                                      "prometheus file %s: its directory is not writable: %s",
                                      m->prometheus, strerror(errno));
        snprintf(dir, sizeof(dir), "%.*s",
                 name > m->prometheus ? (int)(name - m->prometheus - 1) : 1,
                 name > m->prometheus ? m->prometheus : ".");
        sweep_stale(dirfd, dir[0] ? dir : "/", name);
        owner_line(m->owner, sizeof(m->owner));
        m->prometheus_name = name;
        m->prometheus_dirfd = dirfd;
        dirfd = -1;
        return 0;
}

/* The run is over (or never started): its series go with it, unless another run replaced the file.
 */
void measure_prometheus_remove(struct shim_monitor *m)
{
        int r;

        assert(m);
        if (!m->prometheus_written)
                return;
        m->prometheus_written = false;
        r = util_unlink_if_same(m->prometheus_dirfd, m->prometheus_name, &m->prometheus_st);
        if (r < 0 && r != -ENOENT && r != -ESTALE)
                log_warn("prometheus file %s: cannot remove it: %s", m->prometheus, strerror(-r));
}

/*
 * A label value in the exposition format: backslash, quote and newline escaped; other
 * control characters and bytes that are not UTF-8 (the job's ids may hold anything, and one
 * bad byte makes node_exporter drop the whole file) become '?'.
 */
static void label_value(const char *s, char *buf, size_t size)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t n = 0;

        while (*p && n + 5 < size) {
                size_t len = util_utf8_length(p);

                if (*p == '\\' || *p == '"' || *p == '\n') {
                        buf[n++] = '\\';
                        buf[n++] = *p == '\n' ? 'n' : (char)*p;
                } else if (len == 0 || *p < ' ' || *p == 0x7f) {
                        buf[n++] = '?';
                } else {
                        memcpy(buf + n, p, len);
                        n += len;
                        p += len;
                        continue;
                }
                p++;
        }
        buf[n] = '\0';
}

/* The agent's forced spills and released bytes, one series per operator type. */
static void write_agent_metrics(FILE *f, json_t *operators, const char *labels)
{
        static const struct {
                const char *name, *help, *field;
        } metrics[] = {
            {"sparkshim_agent_forced_spills_total",
             "Spills the JVM agent forced, per operator type.", "forced_spills"},
            {"sparkshim_agent_released_bytes_total",
             "Bytes released by the spills the JVM agent forced.", "released_bytes"},
        };
        size_t i;
        json_t *op;

        /* declared without samples when the agent made no operator spill (or is off) */
        for (size_t k = 0; k < ELEMENTSOF(metrics); k++) {
                fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", metrics[k].name, metrics[k].help,
                        metrics[k].name);
                json_array_foreach(operators, i, op)
                {
                        const char *name = json_string_value(json_object_get(op, "operator"));
                        json_t *v = json_object_get(op, metrics[k].field);
                        char escaped[256];

                        if (!name || !json_is_integer(v))
                                continue;
                        label_value(name, escaped, sizeof(escaped));
                        fprintf(f, "%s{%s,operator=\"%s\"} %" JSON_INTEGER_FORMAT "\n",
                                metrics[k].name, labels, escaped, json_integer_value(v));
                }
        }
}

/* The value of doc.a.b.c (c may be NULL), or NULL when absent. */
static json_t *at(json_t *doc, const char *a, const char *b, const char *c)
{
        json_t *v = json_object_get(json_object_get(doc, a), b);

        return c ? json_object_get(v, c) : v;
}

/* A PSI total in microseconds as seconds (a new reference), NULL when unknown. */
static json_t *psi_seconds(json_t *doc, const char *resource, const char *key)
{
        json_t *v = json_object_get(at(doc, "usage", resource, "psi"), key);

        return json_is_integer(v) ? json_real((double)json_integer_value(v) / 1e6) : NULL;
}

static json_t *real_if(bool known, double v)
{
        return known && isfinite(v) ? json_real(v) : NULL;
}

/* One series per trigger and action that occurred; declared without samples otherwise. */
static void write_rolling_metrics(FILE *f, const struct shim_monitor *m, const char *labels)
{
        static const char name[] = "sparkshim_executor_rolling_decisions_total";

        fprintf(f,
                "# HELP %s Executor rolling decisions: SIGPWR sent (decommission), not possible "
                "(unavailable), TERM after the rolling grace (terminate).\n# TYPE %s counter\n",
                name, name);
        if (!m->rolling)
                return;
        for (int t = ROLLING_TRIGGER_NONE + 1; t < ROLLING_TRIGGER_COUNT; t++)
                for (int a = ROLLING_DECOMMISSION; a <= ROLLING_TERMINATE; a++)
                        if (m->decided[t][a])
                                fprintf(f, "%s{%s,trigger=\"%s\",action=\"%s\"} %" PRIu64 "\n",
                                        name, labels, rolling_trigger_name((enum rolling_trigger)t),
                                        rolling_action_name((enum rolling_action)a),
                                        m->decided[t][a]);
}

/* A family of metrics, and its one series' value. */
struct metric {
        const char *name, *help, *type;
        json_t *value; /* a new reference, or NULL */
};

/* Write the families (each value's reference is dropped). */
static void write_metrics(FILE *f, struct metric *metrics, size_t n, const char *labels)
{
        for (size_t i = 0; i < n; i++) {
                /* every family is declared, with no sample when its value is unknown here */
                fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metrics[i].name, metrics[i].help,
                        metrics[i].name, metrics[i].type);
                if (json_is_number(metrics[i].value))
                        fprintf(f, "%s{%s} %.17g\n", metrics[i].name, labels,
                                json_number_value(metrics[i].value));
                json_decref(metrics[i].value);
        }
}

/* The executor's CPU, memory and disk: the report's figures, and its last memory sample. */
static void write_usage_metrics(FILE *f, const struct shim_monitor *m, json_t *doc,
                                const char *labels)
{
        const struct sample *last = m->nsamples ? &m->samples[m->nsamples - 1] : NULL;
        struct metric metrics[] = {
            {"sparkshim_container_cpu_usage_seconds_total", "CPU time of the executor's cgroup.",
             "counter", json_incref(at(doc, "usage", "cpu", "seconds"))},
            {"sparkshim_container_cpu_cfs_throttled_seconds_total",
             "Time the executor was throttled by cpu.max.", "counter",
             json_incref(at(doc, "usage", "cpu", "throttled_seconds"))},
            {"sparkshim_container_cpu_cfs_throttled_periods_total",
             "Periods in which the executor was throttled.", "counter",
             json_incref(at(doc, "usage", "cpu", "nr_throttled"))},
            {"sparkshim_container_memory_usage_bytes",
             "Memory of the executor now (memory.current, else the sum of its processes' VmRSS).",
             "gauge",
             last && last->mem_bytes != COLLECT_UNSET ? json_integer((json_int_t)last->mem_bytes)
                                                      : NULL},
            {"sparkshim_container_memory_max_usage_bytes", "Peak memory of the executor.", "gauge",
             json_incref(at(doc, "usage", "memory", "peak_bytes"))},
            {"sparkshim_container_memory_average_bytes", "Average memory of the executor.", "gauge",
             json_incref(at(doc, "usage", "memory", "average_bytes"))},
            {"sparkshim_container_oom_events_total", "OOM kills in the executor's cgroup.",
             "counter", json_incref(at(doc, "usage", "memory", "oom_kills"))},
            {"sparkshim_container_memory_high_events_total",
             "Times the executor's cgroup went over memory.high.", "counter",
             json_incref(at(doc, "usage", "memory", "high_events"))},
            {"sparkshim_container_fs_reads_bytes_total", "Bytes read from block devices.",
             "counter", json_incref(at(doc, "usage", "disk", "read_bytes"))},
            {"sparkshim_container_fs_writes_bytes_total", "Bytes written to block devices.",
             "counter", json_incref(at(doc, "usage", "disk", "write_bytes"))},
        };

        write_metrics(f, metrics, ELEMENTSOF(metrics), labels);
}

/* The executor's pressure stall totals (PSI), in seconds. */
static void write_pressure_metrics(FILE *f, json_t *doc, const char *labels)
{
        struct metric metrics[] = {
            {"sparkshim_container_pressure_cpu_waiting_seconds_total",
             "Time some tasks of the executor waited for a CPU (cpu.pressure some).", "counter",
             psi_seconds(doc, "cpu", "some_total_us")},
            {"sparkshim_container_pressure_cpu_stalled_seconds_total",
             "Time all tasks of the executor waited for a CPU (cpu.pressure full).", "counter",
             psi_seconds(doc, "cpu", "full_total_us")},
            {"sparkshim_container_pressure_memory_waiting_seconds_total",
             "Time some tasks of the executor waited for memory (memory.pressure some).", "counter",
             psi_seconds(doc, "memory", "some_total_us")},
            {"sparkshim_container_pressure_memory_stalled_seconds_total",
             "Time all tasks of the executor waited for memory (memory.pressure full).", "counter",
             psi_seconds(doc, "memory", "full_total_us")},
            {"sparkshim_container_pressure_io_waiting_seconds_total",
             "Time some tasks of the executor waited for I/O (io.pressure some).", "counter",
             psi_seconds(doc, "disk", "some_total_us")},
            {"sparkshim_container_pressure_io_stalled_seconds_total",
             "Time all tasks of the executor waited for I/O (io.pressure full).", "counter",
             psi_seconds(doc, "disk", "full_total_us")},
        };

        write_metrics(f, metrics, ELEMENTSOF(metrics), labels);
}

/* The plan: requests and limits. */
static void write_spec_metrics(FILE *f, const struct shim_monitor *m, const char *labels)
{
        struct metric metrics[] = {
            {"sparkshim_container_spec_cpu_request_cores", "Planned CPU request, in cores.",
             "gauge", real_if(m->has_plan, (double)m->plan.cpu_request_millicores / 1000.0)},
            {"sparkshim_container_spec_cpu_limit_cores",
             "Planned CPU limit (cpu.max), in cores; absent when unlimited.", "gauge",
             real_if(m->has_plan && m->plan.cpu_limit_millicores > 0,
                     (double)m->plan.cpu_limit_millicores / 1000.0)},
            {"sparkshim_container_spec_memory_limit_bytes", "Planned memory limit (memory.max).",
             "gauge", m->has_plan ? json_integer((json_int_t)m->plan.memory_limit_bytes) : NULL},
            {"sparkshim_container_spec_memory_request_bytes", "Planned memory request.", "gauge",
             m->has_plan ? json_integer((json_int_t)m->plan.memory_request_bytes) : NULL},
        };

        write_metrics(f, metrics, ELEMENTSOF(metrics), labels);
}

/* The run: how it used its plan, whether the plan is enforced, when it started, and now. */
static void write_run_metrics(FILE *f, const struct shim_monitor *m, json_t *doc,
                              const struct timespec *now, const char *labels)
{
        struct metric metrics[] = {
            {"sparkshim_cpu_utilization_ratio", "CPU seconds / (request cores x wall time).",
             "gauge", json_incref(json_object_get(json_object_get(doc, "utilization"), "cpu"))},
            {"sparkshim_memory_utilization_ratio", "Memory peak / memory request.", "gauge",
             json_incref(json_object_get(json_object_get(doc, "utilization"), "memory"))},
            {"sparkshim_enforced",
             "1 when the plan is enforced in the executor's cgroup, 0 when it runs unconstrained "
             "(fail_mode open).",
             "gauge", json_integer(m->enforced)},
            {"sparkshim_start_time_seconds",
             "When the executor started, in seconds since the epoch.", "gauge",
             json_real((double)m->start_rt.tv_sec + (double)m->start_rt.tv_nsec / 1e9)},
            {"sparkshim_last_update_timestamp_seconds",
             "When sparkshim wrote this file, in seconds since the epoch (older than a few "
             "intervals: the file is stale).",
             "gauge", json_real((double)now->tv_sec + (double)now->tv_nsec / 1e9)},
        };

        write_metrics(f, metrics, ELEMENTSOF(metrics), labels);
}

/* The labels of every series: every label value escaped, as the agent's operator label is. */
static void series_labels(const struct shim_monitor *m, char *labels, size_t size)
{
        char app[256], executor[256], name[256];

        label_value(m->app_id, app, sizeof(app));
        label_value(m->executor_id, executor, sizeof(executor));
        label_value(m->name, name, sizeof(name));
        snprintf(labels, size, "app_id=\"%s\",executor_id=\"%s\",name=\"%s\"", app, executor, name);
}

/*
 * The metrics of docs/sparkshim-report.5.md (PROMETHEUS), in Prometheus' conventions: base
 * units (seconds, bytes, cores), counters ending in _total, every series labelled app_id,
 * executor_id and name. Values that are unknown are left out, never written as 0.
 */
void measure_prometheus_write(struct shim_monitor *m, json_t *doc)
{
        struct timespec now;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct util_error why = {0};
        char labels[1024];
        FILE *f;
        struct util_error err = {0};
        int r;

        assert(m);
        clock_gettime(CLOCK_REALTIME, &now);
        if (m->prometheus_dirfd < 0 && measure_prometheus_open(m, &err) < 0) {
                m->prometheus_failed++;
                snprintf(m->prometheus_error, sizeof(m->prometheus_error), "%s", err.text);
                return;
        }
        /* composed in memory, then written under an exclusive random name and renamed */
        f = open_memstream(&text, &len);
        if (!f) {
                m->prometheus_failed++;
                snprintf(m->prometheus_error, sizeof(m->prometheus_error), "out of memory");
                return;
        }
        series_labels(m, labels, sizeof(labels));
        fprintf(f, "%s\n", m->owner);
        write_usage_metrics(f, m, doc, labels);
        write_pressure_metrics(f, doc, labels);
        write_spec_metrics(f, m, labels);
        write_run_metrics(f, m, doc, &now, labels);
        write_agent_metrics(f, json_object_get(json_object_get(doc, "agent"), "operators"), labels);
        write_rolling_metrics(f, m, labels);
        if (fclose(f) != 0) {
                m->prometheus_failed++;
                snprintf(m->prometheus_error, sizeof(m->prometheus_error), "out of memory");
                return;
        }
        r = util_write_file_atomic_at(m->prometheus_dirfd, m->prometheus_name, text, len, 0644,
                                      &m->prometheus_st, &why);
        if (r < 0) {
                m->prometheus_failed++;
                snprintf(m->prometheus_error, sizeof(m->prometheus_error), "%s: %s", m->prometheus,
                         why.text);
        } else {
                m->prometheus_written = true;
                m->prometheus_error[0] = '\0';
        }
}
