/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One line of a sparkshim.report/v1 file (sparkshim-report(5)) into a struct tuner_executor
 * for the history store. The files are written by runs of the job's user: every member read
 * is checked for its type and range, every string for its length, and a line that fails any
 * check is refused whole (the caller refuses its file).
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "store.h"
#include "util.h"

#define SCHEMA "sparkshim.report/v1"

static json_t *at(json_t *doc, const char *a, const char *b, const char *c)
{
        json_t *v = json_object_get(doc, a);

        if (b)
                v = json_object_get(v, b);
        if (c)
                v = json_object_get(v, c);
        return v;
}

/* a string member that must be present and fit size (with its NUL) */
static int get_string(json_t *v, const char *name, char *buf, size_t size, struct shim_error *err)
{
        const char *s = json_string_value(v);
        size_t len;

        if (!s)
                return shim_error_set(err, EINVAL, "%s is missing or not a string", name);
        len = json_string_length(v);
        if (len >= size || strlen(s) != len)
                return shim_error_set(err, EINVAL, "%s is longer than %zu bytes or holds a NUL",
                                      name, size - 1);
        memcpy(buf, s, len + 1);
        return 0;
}

/* a non-negative number or null (NAN); absent is null too */
static int get_seconds(json_t *v, const char *name, double *ret, struct shim_error *err)
{
        if (!v || json_is_null(v)) {
                *ret = NAN;
                return 0;
        }
        if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
            json_number_value(v) > 1e12)
                return shim_error_set(err, EINVAL, "%s is not a number in [0, 1e12] or null", name);
        *ret = json_number_value(v);
        return 0;
}

/* a non-negative integer or null (TUNER_UNKNOWN) */
static int get_count(json_t *v, const char *name, uint64_t *ret, struct shim_error *err)
{
        if (!v || json_is_null(v)) {
                *ret = TUNER_UNKNOWN;
                return 0;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return shim_error_set(err, EINVAL, "%s is not a non-negative integer or null",
                                      name);
        *ret = (uint64_t)json_integer_value(v);
        return 0;
}

/* RFC 3339 UTC as the shim writes it: 2026-12-02T10:53:53Z, optionally with a fraction */
static int get_time(json_t *v, const char *name, int64_t *ret, struct shim_error *err)
{
        const char *s = json_string_value(v), *end;
        struct tm tm = {0};
        double fraction = 0;
        time_t t;

        if (!s)
                return shim_error_set(err, EINVAL, "%s is missing or not a string", name);
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
                return shim_error_set(err, EINVAL, "%s is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)",
                                      name);
        t = timegm(&tm);
        *ret = (int64_t)t * 1000 + (int64_t)(fraction * 1000);
        return 0;
}

/* --cores N of the executor's command line; 0 when absent or not a count */
static uint32_t argv_cores(json_t *argv)
{
        size_t n = json_array_size(argv);

        for (size_t i = 0; i + 1 < n; i++) {
                const char *a = json_string_value(json_array_get(argv, i));
                const char *b = json_string_value(json_array_get(argv, i + 1));
                uint64_t v;

                if (a && b && strcmp(a, "--cores") == 0 && util_parse_u64(b, &v) == 0 &&
                    v <= 1u << 20)
                        return (uint32_t)v;
        }
        return 0;
}

/* the highest sample-to-sample CPU use over the request; NAN with fewer than two samples */
static int peak_cpu(json_t *samples, uint64_t request_millicores, double *ret,
                    struct shim_error *err)
{
        double best = NAN, last_t = NAN, last_cpu = NAN;
        json_t *s;
        size_t i;

        json_array_foreach(samples, i, s)
        {
                json_t *t = json_object_get(s, "t_seconds"),
                       *c = json_object_get(s, "cpu_usage_us");
                double tv, cv;

                if (!json_is_object(s))
                        return shim_error_set(err, EINVAL, "samples[%zu] is not an object", i);
                if (get_seconds(t, "samples[].t_seconds", &tv, err) < 0)
                        return -EINVAL;
                if (c && !json_is_null(c) && (!json_is_integer(c) || json_integer_value(c) < 0))
                        return shim_error_set(err, EINVAL,
                                              "samples[%zu].cpu_usage_us is not a non-negative "
                                              "integer or null",
                                              i);
                cv = json_is_integer(c) ? (double)json_integer_value(c) : NAN;
                if (isfinite(tv) && isfinite(cv) && isfinite(last_t) && isfinite(last_cpu) &&
                    tv > last_t && cv >= last_cpu && request_millicores != TUNER_UNKNOWN &&
                    request_millicores > 0) {
                        double use = (cv - last_cpu) / 1e6 / (tv - last_t) /
                                     ((double)request_millicores / 1000.0);

                        if (isnan(best) || use > best)
                                best = use;
                }
                if (isfinite(tv) && isfinite(cv)) {
                        last_t = tv;
                        last_cpu = cv;
                }
        }
        *ret = best;
        return 0;
}

static int executor_of(json_t *doc, struct tuner_executor *e, struct shim_error *err)
{
        json_t *id = json_object_get(doc, "identity");
        json_t *plan = json_object_get(doc, "plan"), *v;
        json_t *exit_ = json_object_get(doc, "exit");
        uint64_t u;
        int r;

        if (!json_is_object(id))
                return shim_error_set(err, EINVAL, "identity is missing or not an object");
        if ((r = get_string(json_object_get(id, "app_id"), "identity.app_id", e->app_id,
                            sizeof(e->app_id), err)) < 0 ||
            (r = get_string(json_object_get(id, "executor_id"), "identity.executor_id",
                            e->executor_id, sizeof(e->executor_id), err)) < 0 ||
            (r = get_string(json_object_get(id, "host"), "identity.host", e->host, sizeof(e->host),
                            err)) < 0 ||
            (r = get_time(json_object_get(id, "start"), "identity.start", &e->start_ms, err)) < 0 ||
            (r = get_time(json_object_get(id, "end"), "identity.end", &e->end_ms, err)) < 0 ||
            (r = get_seconds(json_object_get(id, "wall_seconds"), "identity.wall_seconds",
                             &e->wall_seconds, err)) < 0)
                return r;
        if (isnan(e->wall_seconds))
                return shim_error_set(err, EINVAL, "identity.wall_seconds is missing");
        v = json_object_get(id, "argv");
        if (v && !json_is_array(v))
                return shim_error_set(err, EINVAL, "identity.argv is not an array");
        e->cores = argv_cores(v);

        if (plan && !json_is_null(plan) && !json_is_object(plan))
                return shim_error_set(err, EINVAL, "plan is not an object or null");
        if ((r = get_count(at(plan, "cpu", "request_millicores", NULL),
                           "plan.cpu.request_millicores", &e->request_millicores, err)) < 0 ||
            (r = get_count(at(plan, "cpu", "limit_millicores", NULL), "plan.cpu.limit_millicores",
                           &e->limit_millicores, err)) < 0 ||
            (r = get_count(at(plan, "memory", "heap_bytes", NULL), "plan.memory.heap_bytes",
                           &e->heap_bytes, err)) < 0 ||
            (r = get_count(at(plan, "memory", "offheap_bytes", NULL), "plan.memory.offheap_bytes",
                           &e->offheap_bytes, err)) < 0 ||
            (r = get_count(at(plan, "memory", "pyspark_bytes", NULL), "plan.memory.pyspark_bytes",
                           &e->pyspark_bytes, err)) < 0 ||
            (r = get_count(at(plan, "memory", "overhead_bytes", NULL), "plan.memory.overhead_bytes",
                           &e->overhead_bytes, err)) < 0 ||
            (r = get_seconds(at(plan, "memory", "burst_ratio", NULL), "plan.memory.burst_ratio",
                             &e->burst_ratio, err)) < 0 ||
            (r = get_count(at(plan, "memory", "request_bytes", NULL), "plan.memory.request_bytes",
                           &e->request_bytes, err)) < 0 ||
            (r = get_count(at(plan, "memory", "limit_bytes", NULL), "plan.memory.limit_bytes",
                           &e->limit_bytes, err)) < 0)
                return r;
        if (isfinite(e->burst_ratio) && e->burst_ratio > 1)
                return shim_error_set(err, EINVAL, "plan.memory.burst_ratio is not in [0, 1]");
        v = at(doc, "enforcement", "enforced", NULL);
        if (!json_is_boolean(v))
                return shim_error_set(err, EINVAL,
                                      "enforcement.enforced is missing or not a boolean");
        e->enforced = json_is_true(v);

        if ((r = get_seconds(at(doc, "usage", "cpu", "seconds"), "usage.cpu.seconds",
                             &e->cpu_seconds, err)) < 0 ||
            (r = get_seconds(at(doc, "usage", "cpu", "throttled_seconds"),
                             "usage.cpu.throttled_seconds", &e->throttled_seconds, err)) < 0 ||
            (r = get_seconds(json_object_get(at(doc, "usage", "cpu", "runq_wait"), "seconds"),
                             "usage.cpu.runq_wait.seconds", &e->runq_wait_seconds, err)) < 0 ||
            (r = get_count(at(doc, "usage", "memory", "peak_bytes"), "usage.memory.peak_bytes",
                           &e->memory_peak_bytes, err)) < 0 ||
            (r = get_count(at(doc, "usage", "memory", "average_bytes"),
                           "usage.memory.average_bytes", &e->memory_average_bytes, err)) < 0 ||
            (r = get_count(at(doc, "usage", "memory", "p95_bytes"), "usage.memory.p95_bytes",
                           &e->memory_p95_bytes, err)) < 0 ||
            (r = get_count(at(doc, "usage", "memory", "anon_peak_bytes"),
                           "usage.memory.anon_peak_bytes", &e->anon_peak_bytes, err)) < 0 ||
            (r = get_count(at(doc, "usage", "memory", "oom_kills"), "usage.memory.oom_kills",
                           &e->oom_kills, err)) < 0 ||
            (r = get_count(at(doc, "usage", "memory", "high_events"), "usage.memory.high_events",
                           &e->high_events, err)) < 0)
                return r;

        /* exit: status 128+N and signal N when killed; tuner.h keeps -1 and N */
        if (!json_is_object(exit_))
                return shim_error_set(err, EINVAL,
                                      "exit is missing or not an object in a final report");
        v = json_object_get(exit_, "signal");
        if (v && !json_is_null(v)) {
                if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 64)
                        return shim_error_set(err, EINVAL,
                                              "exit.signal is not a signal number or null");
                e->exit_status = -1;
                e->exit_signal = (int)json_integer_value(v);
        } else {
                v = json_object_get(exit_, "status");
                if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 255)
                        return shim_error_set(err, EINVAL,
                                              "exit.status is not an exit status (0-255)");
                e->exit_status = (int)json_integer_value(v);
                e->exit_signal = 0;
        }
        v = json_object_get(exit_, "oom_killed");
        if (v && !json_is_boolean(v))
                return shim_error_set(err, EINVAL, "exit.oom_killed is not a boolean");
        e->oom_killed = json_is_true(v);

        v = json_object_get(doc, "samples");
        if (v && !json_is_array(v))
                return shim_error_set(err, EINVAL, "samples is not an array");
        if ((r = peak_cpu(v, e->request_millicores, &e->cpu_peak_util, err)) < 0)
                return r;

        e->forced_spills = -1;
        v = at(doc, "spills", "forced_spills", NULL);
        if ((r = get_count(v, "spills.forced_spills", &u, err)) < 0)
                return r;
        if (u != TUNER_UNKNOWN)
                e->forced_spills = u > INT64_MAX ? INT64_MAX : (int64_t)u;
        e->spill_threshold_fraction = NAN;
        if ((r = get_count(at(doc, "agent", "threshold_bytes", NULL), "agent.threshold_bytes", &u,
                           err)) < 0)
                return r;
        if (u != TUNER_UNKNOWN && e->request_bytes != TUNER_UNKNOWN && e->request_bytes > 0)
                e->spill_threshold_fraction = (double)u / (double)e->request_bytes;
        return 0;
}

int tuner_report_line(const char *line, size_t len, struct tuner_executor *ret,
                      struct shim_error *err)
{
        struct tuner_executor e = {0};
        json_error_t jerr;
        json_t *doc;
        const char *s;
        size_t blank = 0;
        int r;

        while (blank < len && (line[blank] == ' ' || line[blank] == '\t' || line[blank] == '\r'))
                blank++;
        if (blank == len)
                return 0;
        if (len > TUNER_REPORT_LINE_MAX)
                return shim_error_set(err, EINVAL, "line longer than %zu bytes",
                                      TUNER_REPORT_LINE_MAX);
        /* json_loadb: a NUL byte in the line is an error, not the end of the text */
        doc = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!doc)
                return shim_error_set(err, EINVAL, "not JSON: %s (column %d)", jerr.text,
                                      jerr.column);
        if (!json_is_object(doc)) {
                r = shim_error_set(err, EINVAL, "not a JSON object");
                goto out;
        }
        s = json_string_value(json_object_get(doc, "schema"));
        if (!s || strcmp(s, SCHEMA) != 0) {
                r = shim_error_set(err, EINVAL, "schema is not %s", SCHEMA);
                goto out;
        }
        s = json_string_value(json_object_get(doc, "kind"));
        if (!s || (strcmp(s, "sample") != 0 && strcmp(s, "final") != 0)) {
                r = shim_error_set(err, EINVAL, "kind is not sample or final");
                goto out;
        }
        r = 0;
        if (strcmp(s, "final") != 0)
                goto out;
        if ((r = executor_of(doc, &e, err)) < 0)
                goto out;
        /* not an executor of a Spark application: nothing to key a run by */
        if (!*e.app_id)
                goto out;
        *ret = e;
        r = 1;
out:
        json_decref(doc);
        return r;
}
