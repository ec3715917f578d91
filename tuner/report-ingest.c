/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One line of a sparkshim.report/v1 file (sparkshim-report(5)) into a struct tuner_executor
 * for the history store. The files are written by runs of the job's user: every member read
 * is checked for its type and range, every string for its length, and a line that fails any
 * check is refused whole (the caller refuses its file).
 *
 * One pass of the validating scanner (util_jscan.h) per line: every line is checked as JSON, and
 * only the members a final report's executor needs are looked at, by their paths. A member
 * read twice is an error (jansson's JSON_REJECT_DUPLICATES, for what is read).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jscan.h"
#include "store.h"
#include "util.h"

#define SCHEMA "sparkshim.report/v1"

/* sample intervals kept for the CPU percentile: a day at 1 s; later ones are not counted */
#define USES_MAX 86400

static int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

/* the nearest-rank index of percentile q of n sorted values */
static size_t percentile_rank(size_t n, double q)
{
        size_t rank = (size_t)ceil(q * (double)n);

        return rank == 0 ? 0 : rank - 1;
}

enum field {
        F_SCHEMA,
        F_KIND,
        F_IDENTITY, /* a scalar where the object should be */
        F_APP_ID,
        F_EXECUTOR_ID,
        F_HOST,
        F_START,
        F_END,
        F_WALL,
        F_RUN_AS,
        F_ARGV, /* a scalar where the array should be */
        F_PLAN,
        F_REQUEST_MILLICORES,
        F_LIMIT_MILLICORES,
        F_HEAP,
        F_OFFHEAP,
        F_PYSPARK,
        F_OVERHEAD,
        F_BURST_RATIO,
        F_REQUEST_BYTES,
        F_LIMIT_BYTES,
        F_ENFORCED,
        F_CPU_SECONDS,
        F_THROTTLED,
        F_RUNQ_WAIT,
        F_PEAK,
        F_AVERAGE,
        F_P95,
        F_ANON_PEAK,
        F_OOM_KILLS,
        F_HIGH_EVENTS,
        F_EXIT,
        F_EXIT_SIGNAL,
        F_EXIT_STATUS,
        F_OOM_KILLED,
        F_SAMPLES,
        F_FORCED_SPILLS,
        F_THRESHOLD,
        F_HEAP_AFTER_GC,
        F_COUNT,
};

static const char *const paths[F_COUNT] = {
    [F_SCHEMA] = "schema",
    [F_KIND] = "kind",
    [F_IDENTITY] = "identity",
    [F_APP_ID] = "identity.app_id",
    [F_EXECUTOR_ID] = "identity.executor_id",
    [F_HOST] = "identity.host",
    [F_START] = "identity.start",
    [F_END] = "identity.end",
    [F_WALL] = "identity.wall_seconds",
    [F_RUN_AS] = "identity.run_as_uid",
    [F_ARGV] = "identity.argv",
    [F_PLAN] = "plan",
    [F_REQUEST_MILLICORES] = "plan.cpu.request_millicores",
    [F_LIMIT_MILLICORES] = "plan.cpu.limit_millicores",
    [F_HEAP] = "plan.memory.heap_bytes",
    [F_OFFHEAP] = "plan.memory.offheap_bytes",
    [F_PYSPARK] = "plan.memory.pyspark_bytes",
    [F_OVERHEAD] = "plan.memory.overhead_bytes",
    [F_BURST_RATIO] = "plan.memory.burst_ratio",
    [F_REQUEST_BYTES] = "plan.memory.request_bytes",
    [F_LIMIT_BYTES] = "plan.memory.limit_bytes",
    [F_ENFORCED] = "enforcement.enforced",
    [F_CPU_SECONDS] = "usage.cpu.seconds",
    [F_THROTTLED] = "usage.cpu.throttled_seconds",
    [F_RUNQ_WAIT] = "usage.cpu.runq_wait.seconds",
    [F_PEAK] = "usage.memory.peak_bytes",
    [F_AVERAGE] = "usage.memory.average_bytes",
    [F_P95] = "usage.memory.p95_bytes",
    [F_ANON_PEAK] = "usage.memory.anon_peak_bytes",
    [F_OOM_KILLS] = "usage.memory.oom_kills",
    [F_HIGH_EVENTS] = "usage.memory.high_events",
    [F_EXIT] = "exit",
    [F_EXIT_SIGNAL] = "exit.signal",
    [F_EXIT_STATUS] = "exit.status",
    [F_OOM_KILLED] = "exit.oom_killed",
    [F_SAMPLES] = "samples",
    [F_FORCED_SPILLS] = "spills.forced_spills",
    [F_THRESHOLD] = "agent.threshold_bytes",
    [F_HEAP_AFTER_GC] = "agent.pressure.heap.peak_after_gc_bytes",
};

struct line_state {
        struct util_jscan_value values[F_COUNT];
        bool seen[F_COUNT];
        const char *duplicate; /* the first path read twice */
        const char *problem;   /* a shape error found while scanning */
        char problem_text[96];
        /* identity.argv[]: --cores N */
        bool after_cores;
        uint32_t cores;
        /* samples[]: the current element and the series so far */
        size_t sample;
        double t, cpu; /* this element's; NAN when absent or null */
        bool t_seen, cpu_seen;
        double last_t, last_cpu; /* the last element with both */
        double *uses; /* cpu_usage_us per second between samples (malloc), at most USES_MAX */
        size_t n_uses;
};

static int on_scalar(void *userdata, const char *path, size_t path_len,
                     const struct util_jscan_value *v)
{
        struct line_state *st = userdata;

        /* the two series first: they are most of a report's values */
        if (path_len > 10 && memcmp(path, "samples[].", 10) == 0) {
                const char *member = path + 10;
                bool is_t = strcmp(member, "t_seconds") == 0;

                if (!is_t && strcmp(member, "cpu_usage_us") != 0)
                        return 0;
                if (is_t ? st->t_seen : st->cpu_seen) {
                        snprintf(st->problem_text, sizeof(st->problem_text),
                                 "samples[%zu].%s appears twice", st->sample, member);
                        st->problem = st->problem_text;
                        return -EINVAL;
                }
                if (is_t) {
                        st->t_seen = true;
                        if (v->type == UTIL_JSCAN_NULL)
                                return 0;
                        if (util_jscan_double(v, &st->t) < 0 || !isfinite(st->t) || st->t < 0 ||
                            st->t > 1e12) {
                                st->problem =
                                    "samples[].t_seconds is not a number in [0, 1e12] or null";
                                return -EINVAL;
                        }
                } else {
                        int64_t c;

                        st->cpu_seen = true;
                        if (v->type == UTIL_JSCAN_NULL)
                                return 0;
                        if (util_jscan_int64(v, &c) < 0 || c < 0) {
                                snprintf(st->problem_text, sizeof(st->problem_text),
                                         "samples[%zu].cpu_usage_us is not a non-negative integer "
                                         "or null",
                                         st->sample);
                                st->problem = st->problem_text;
                                return -EINVAL;
                        }
                        st->cpu = (double)c;
                }
                return 0;
        }
        if (path_len == 9 && memcmp(path, "samples[]", 9) == 0) {
                snprintf(st->problem_text, sizeof(st->problem_text),
                         "samples[%zu] is not an object", st->sample);
                st->problem = st->problem_text;
                return -EINVAL;
        }
        if (path_len == 15 && memcmp(path, "identity.argv[]", 15) == 0) {
                uint64_t n;
                char arg[32];

                if (st->after_cores && !st->cores && v->type == UTIL_JSCAN_STRING &&
                    util_jscan_string(v, arg, sizeof(arg)) == 0 && util_parse_u64(arg, &n) == 0 &&
                    n <= 1u << 20)
                        st->cores = (uint32_t)n;
                st->after_cores =
                    v->type == UTIL_JSCAN_STRING && util_jscan_string_eq(v, "--cores");
                return 0;
        }
        for (int f = 0; f < F_COUNT; f++) {
                if (strlen(paths[f]) != path_len || memcmp(paths[f], path, path_len) != 0)
                        continue;
                if (st->seen[f]) {
                        st->duplicate = paths[f];
                        return -EINVAL;
                }
                st->seen[f] = true;
                st->values[f] = *v;
                return 0;
        }
        return 0;
}

static int on_end(void *userdata, const char *path, size_t path_len, bool object)
{
        struct line_state *st = userdata;

        if (!object || path_len != 9 || memcmp(path, "samples[]", 9) != 0)
                return 0;
        /* one sample ends: its use since the last one */
        if (isfinite(st->t) && isfinite(st->cpu) && isfinite(st->last_t) &&
            isfinite(st->last_cpu) && st->t > st->last_t && st->cpu >= st->last_cpu) {
                double use = (st->cpu - st->last_cpu) / (st->t - st->last_t);

                if (st->n_uses < USES_MAX) {
                        if (st->n_uses % 64 == 0) {
                                double *u = realloc(st->uses, (st->n_uses + 64) * sizeof(*u));

                                if (!u)
                                        return -ENOMEM;
                                st->uses = u;
                        }
                        st->uses[st->n_uses++] = use;
                }
        }
        if (isfinite(st->t) && isfinite(st->cpu)) {
                st->last_t = st->t;
                st->last_cpu = st->cpu;
        }
        st->t = st->cpu = NAN;
        st->t_seen = st->cpu_seen = false;
        st->sample++;
        return 0;
}

static const struct util_jscan_value *get(const struct line_state *st, enum field f)
{
        return st->seen[f] ? &st->values[f] : NULL;
}

/* a string member that must be present and fit size (with its NUL) */
static int get_string(const struct line_state *st, enum field f, char *buf, size_t size,
                      struct util_error *err)
{
        const struct util_jscan_value *v = get(st, f);
        int r;

        if (!v || v->type != UTIL_JSCAN_STRING)
                return util_error_set(err, EINVAL, "%s is missing or not a string", paths[f]);
        r = util_jscan_string(v, buf, size);
        if (r < 0)
                return util_error_set(err, EINVAL, "%s is longer than %zu bytes or holds a NUL",
                                      paths[f], size - 1);
        return 0;
}

/* a non-negative number or null (NAN); absent is null too */
static int get_seconds(const struct line_state *st, enum field f, double *ret,
                       struct util_error *err)
{
        const struct util_jscan_value *v = get(st, f);
        double d;

        if (!v || v->type == UTIL_JSCAN_NULL) {
                *ret = NAN;
                return 0;
        }
        if (util_jscan_double(v, &d) < 0 || !isfinite(d) || d < 0 || d > 1e12)
                return util_error_set(err, EINVAL, "%s is not a number in [0, 1e12] or null",
                                      paths[f]);
        *ret = d;
        return 0;
}

/* a non-negative integer or null (TUNER_UNKNOWN) */
static int get_count(const struct line_state *st, enum field f, uint64_t *ret,
                     struct util_error *err)
{
        const struct util_jscan_value *v = get(st, f);
        int64_t i;

        if (!v || v->type == UTIL_JSCAN_NULL) {
                *ret = TUNER_UNKNOWN;
                return 0;
        }
        if (util_jscan_int64(v, &i) < 0 || i < 0)
                return util_error_set(err, EINVAL, "%s is not a non-negative integer or null",
                                      paths[f]);
        *ret = (uint64_t)i;
        return 0;
}

/* RFC 3339 UTC as the shim writes it: 2026-12-02T10:53:53Z, optionally with a fraction */
static int get_time(const struct line_state *st, enum field f, int64_t *ret, struct util_error *err)
{
        char s[64];
        const char *end;
        struct tm tm = {0};
        double fraction = 0;
        time_t t;

        if (get_string(st, f, s, sizeof(s), NULL) < 0)
                return util_error_set(err, EINVAL, "%s is missing or not a string", paths[f]);
        end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (end && *end == '.') {
                const char *p = end + 1;
                double scale = 0.1;

                if (*p < '0' || *p > '9')
                        end = NULL;
                for (; end && *p >= '0' && *p <= '9' && scale > 1e-10; p++, scale /= 10)
                        fraction += (*p - '0') * scale;
                if (end)
                        end = p;
        }
        if (!end || strcmp(end, "Z") != 0 || tm.tm_year < 70 || tm.tm_year > 1100)
                return util_error_set(err, EINVAL, "%s is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)",
                                      paths[f]);
        t = timegm(&tm);
        *ret = (int64_t)t * 1000 + (int64_t)(fraction * 1000);
        return 0;
}

static int executor_of(const struct line_state *st, struct tuner_executor *e,
                       struct util_error *err)
{
        const struct util_jscan_value *v;
        uint64_t u;
        int64_t i;
        int r;

        if (get(st, F_IDENTITY))
                return util_error_set(err, EINVAL, "identity is missing or not an object");
        if ((r = get_string(st, F_APP_ID, e->app_id, sizeof(e->app_id), err)) < 0 ||
            (r = get_string(st, F_EXECUTOR_ID, e->executor_id, sizeof(e->executor_id), err)) < 0 ||
            (r = get_string(st, F_HOST, e->host, sizeof(e->host), err)) < 0 ||
            (r = get_time(st, F_START, &e->start_ms, err)) < 0 ||
            (r = get_time(st, F_END, &e->end_ms, err)) < 0 ||
            (r = get_seconds(st, F_WALL, &e->wall_seconds, err)) < 0)
                return r;
        if (isnan(e->wall_seconds))
                return util_error_set(err, EINVAL, "identity.wall_seconds is missing");
        /* the uid the executor ran as (reports before it have none) */
        e->run_as_uid = -1;
        v = get(st, F_RUN_AS);
        if (v && v->type != UTIL_JSCAN_NULL) {
                if (util_jscan_int64(v, &i) < 0 || i < 0 || i > (int64_t)UINT32_MAX)
                        return util_error_set(err, EINVAL,
                                              "identity.run_as_uid is not a user id or null");
                e->run_as_uid = i;
        }
        if (get(st, F_ARGV) && get(st, F_ARGV)->type != UTIL_JSCAN_NULL)
                return util_error_set(err, EINVAL, "identity.argv is not an array");
        e->cores = st->cores;

        v = get(st, F_PLAN);
        if (v && v->type != UTIL_JSCAN_NULL)
                return util_error_set(err, EINVAL, "plan is not an object or null");
        if ((r = get_count(st, F_REQUEST_MILLICORES, &e->request_millicores, err)) < 0 ||
            (r = get_count(st, F_LIMIT_MILLICORES, &e->limit_millicores, err)) < 0 ||
            (r = get_count(st, F_HEAP, &e->heap_bytes, err)) < 0 ||
            (r = get_count(st, F_OFFHEAP, &e->offheap_bytes, err)) < 0 ||
            (r = get_count(st, F_PYSPARK, &e->pyspark_bytes, err)) < 0 ||
            (r = get_count(st, F_OVERHEAD, &e->overhead_bytes, err)) < 0 ||
            (r = get_seconds(st, F_BURST_RATIO, &e->burst_ratio, err)) < 0 ||
            (r = get_count(st, F_REQUEST_BYTES, &e->request_bytes, err)) < 0 ||
            (r = get_count(st, F_LIMIT_BYTES, &e->limit_bytes, err)) < 0)
                return r;
        if (isfinite(e->burst_ratio) && e->burst_ratio > 1)
                return util_error_set(err, EINVAL, "plan.memory.burst_ratio is not in [0, 1]");
        v = get(st, F_ENFORCED);
        if (!v || (v->type != UTIL_JSCAN_TRUE && v->type != UTIL_JSCAN_FALSE))
                return util_error_set(err, EINVAL,
                                      "enforcement.enforced is missing or not a boolean");
        e->enforced = v->type == UTIL_JSCAN_TRUE;

        if ((r = get_seconds(st, F_CPU_SECONDS, &e->cpu_seconds, err)) < 0 ||
            (r = get_seconds(st, F_THROTTLED, &e->throttled_seconds, err)) < 0 ||
            (r = get_seconds(st, F_RUNQ_WAIT, &e->runq_wait_seconds, err)) < 0 ||
            (r = get_count(st, F_PEAK, &e->memory_peak_bytes, err)) < 0 ||
            (r = get_count(st, F_AVERAGE, &e->memory_average_bytes, err)) < 0 ||
            (r = get_count(st, F_P95, &e->memory_p95_bytes, err)) < 0 ||
            (r = get_count(st, F_ANON_PEAK, &e->anon_peak_bytes, err)) < 0 ||
            (r = get_count(st, F_OOM_KILLS, &e->oom_kills, err)) < 0 ||
            (r = get_count(st, F_HIGH_EVENTS, &e->high_events, err)) < 0)
                return r;

        /* exit: status 128+N and signal N when killed; tuner.h keeps -1 and N */
        if (get(st, F_EXIT) || (!get(st, F_EXIT_STATUS) && !get(st, F_EXIT_SIGNAL)))
                return util_error_set(err, EINVAL,
                                      "exit is missing or not an object in a final report");
        v = get(st, F_EXIT_SIGNAL);
        if (v && v->type != UTIL_JSCAN_NULL) {
                if (util_jscan_int64(v, &i) < 0 || i < 1 || i > 64)
                        return util_error_set(err, EINVAL,
                                              "exit.signal is not a signal number or null");
                e->exit_status = -1;
                e->exit_signal = (int)i;
        } else {
                v = get(st, F_EXIT_STATUS);
                if (!v || util_jscan_int64(v, &i) < 0 || i < 0 || i > 255)
                        return util_error_set(err, EINVAL,
                                              "exit.status is not an exit status (0-255)");
                e->exit_status = (int)i;
                e->exit_signal = 0;
        }
        v = get(st, F_OOM_KILLED);
        if (v && v->type != UTIL_JSCAN_TRUE && v->type != UTIL_JSCAN_FALSE)
                return util_error_set(err, EINVAL, "exit.oom_killed is not a boolean");
        e->oom_killed = v && v->type == UTIL_JSCAN_TRUE;

        if (get(st, F_SAMPLES))
                return util_error_set(err, EINVAL, "samples is not an array");
        e->cpu_peak_util = NAN;
        if (st->n_uses > 0 && e->request_millicores != TUNER_UNKNOWN && e->request_millicores > 0) {
                qsort(st->uses, st->n_uses, sizeof(*st->uses), compare_double);
                e->cpu_peak_util = st->uses[percentile_rank(st->n_uses, 0.9)] / 1e6 /
                                   ((double)e->request_millicores / 1000.0);
        }

        e->forced_spills = -1;
        if ((r = get_count(st, F_FORCED_SPILLS, &u, err)) < 0)
                return r;
        if (u != TUNER_UNKNOWN)
                e->forced_spills = u > INT64_MAX ? INT64_MAX : (int64_t)u;
        e->spill_threshold_fraction = NAN;
        if ((r = get_count(st, F_THRESHOLD, &u, err)) < 0)
                return r;
        if (u != TUNER_UNKNOWN && e->request_bytes != TUNER_UNKNOWN && e->request_bytes > 0)
                e->spill_threshold_fraction = (double)u / (double)e->request_bytes;
        /* the heap after GC: the JVM's agent wrote it, and no heap holds more than its
         * maximum, so a figure above the plan's heap is not believed (unknown), while the
         * rest of the line still counts; 0 is the agent's "no collection seen yet" */
        if ((r = get_count(st, F_HEAP_AFTER_GC, &e->heap_after_gc_peak_bytes, err)) < 0)
                return r;
        if (e->heap_bytes == TUNER_UNKNOWN || e->heap_after_gc_peak_bytes == 0 ||
            e->heap_after_gc_peak_bytes > e->heap_bytes)
                e->heap_after_gc_peak_bytes = TUNER_UNKNOWN;
        return 0;
}

static int report_line(struct line_state *stp, const char *line, size_t len,
                       struct tuner_executor *ret, struct util_error *err)
{
        struct tuner_executor e = {0};
        const struct util_jscan_visitor visitor = {on_scalar, on_end, stp};
        const char *what = NULL;
        size_t blank = 0, offset = 0;
        int r;

        while (blank < len && (line[blank] == ' ' || line[blank] == '\t' || line[blank] == '\r'))
                blank++;
        if (blank == len)
                return 0;
        if (len > TUNER_REPORT_LINE_MAX)
                return util_error_set(err, EINVAL, "line longer than %zu bytes",
                                      TUNER_REPORT_LINE_MAX);
        r = util_jscan(line, len, &visitor, &offset, &what);
        if (r == -ENOMEM)
                return util_error_set(err, ENOMEM, "out of memory");
        if (r < 0) {
                if (stp->duplicate)
                        return util_error_set(err, EINVAL, "%s appears twice", stp->duplicate);
                if (stp->problem)
                        return util_error_set(err, EINVAL, "%s", stp->problem);
                return util_error_set(err, EINVAL, "not JSON: %s (column %zu)",
                                      what ? what : "invalid", offset + 1);
        }
        if (line[blank] != '{')
                return util_error_set(err, EINVAL, "not a JSON object");
        if (!get(stp, F_SCHEMA) || !util_jscan_string_eq(get(stp, F_SCHEMA), SCHEMA))
                return util_error_set(err, EINVAL, "schema is not %s", SCHEMA);
        if (!get(stp, F_KIND) || (!util_jscan_string_eq(get(stp, F_KIND), "sample") &&
                                  !util_jscan_string_eq(get(stp, F_KIND), "final")))
                return util_error_set(err, EINVAL, "kind is not sample or final");
        if (!util_jscan_string_eq(get(stp, F_KIND), "final"))
                return 0;
        if ((r = executor_of(stp, &e, err)) < 0)
                return r;
        /* not an executor of a Spark application: nothing to key a run by */
        if (!*e.app_id)
                return 0;
        *ret = e;
        return 1;
}

int tuner_report_line(const char *line, size_t len, struct tuner_executor *ret,
                      struct util_error *err)
{
        struct line_state st = {
            .t = NAN,
            .cpu = NAN,
            .last_t = NAN,
            .last_cpu = NAN,
        };
        int r = report_line(&st, line, len, ret, err);

        free(st.uses);
        return r;
}
