/* SPDX-License-Identifier: Apache-2.0 */
/* The tuner's shared model (tuner.h): names, defaults, and freeing an event log's app. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "rules.h"
#include "tuner.h"
#include "util.h"

const char *tuner_failure_name(enum tuner_failure f)
{
        switch (f) {
        case TUNER_OK:
                return "ok";
        case TUNER_FAIL_OOM:
                return "oom";
        case TUNER_FAIL_EXECUTOR_LOST:
                return "executor_lost";
        case TUNER_FAIL_TASKS:
                return "failed_tasks";
        case TUNER_FAIL_APP:
                return "app_failed";
        case TUNER_FAIL_RUNTIME:
                return "runtime";
        }
        return "unknown";
}

const char *tuner_param_name(enum tuner_param_index p)
{
        static const char *const names[TUNER_P_COUNT] = {
            [TUNER_P_CORES] = "cores",
            [TUNER_P_MILLICORES] = "millicores",
            [TUNER_P_HEAP] = "heap",
            [TUNER_P_OVERHEAD] = "overhead",
            [TUNER_P_BURST_RATIO] = "burst_ratio",
            [TUNER_P_SPILL_FRACTION] = "spill_fraction",
            [TUNER_P_PARTITIONS] = "shuffle_partitions",
        };

        return (unsigned)p < TUNER_P_COUNT ? names[p] : "?";
}

void tuner_app_free(struct tuner_app *app)
{
        if (!app)
                return;
        free(app->conf_json);
        free(app->stages);
        free(app->executors);
        app->conf_json = NULL;
        app->stages = NULL;
        app->executors = NULL;
        app->n_stages = app->n_executors = 0;
}

void tuner_bounds_default(struct tuner_bounds *b)
{
        *b = (struct tuner_bounds){
            .millicores_min = 100,
            .millicores_max = 256000,
            .heap_min_bytes = UINT64_C(512) << 20,
            .heap_max_bytes = UINT64_C(64) << 30,
            .overhead_min_bytes = UINT64_C(384) << 20,
            .overhead_max_bytes = UINT64_C(16) << 30,
            .memory_limit_max = 0,
            .burst_ratio_max = 1.0,
            .spill_fraction_min = 0.5,
            .spill_fraction_max = 1.0,
            .partitions_min = 1,
            .partitions_max = 100000,
            .failure_bound = 0.1,
            .runtime_allowance = 1.5,
            .cpu_target = 0.85,
            .mem_target = 0.7,
            .history_runs = 20,
            .seed = 1,
            .runtime_target = 1.1,
        };
}

void tuner_bounds_from_policy(const struct policy *p, struct tuner_bounds *b)
{
        const struct policy_tuner *t = &p->tuner;

        tuner_bounds_default(b);
        b->millicores_min = p->millicores_min;
        b->millicores_max = p->millicores_max;
        b->heap_min_bytes = t->heap_min;
        b->heap_max_bytes = t->heap_max;
        b->overhead_min_bytes = p->overhead_min_bytes;
        b->overhead_max_bytes =
            t->overhead_max > p->overhead_min_bytes ? t->overhead_max : p->overhead_min_bytes;
        b->memory_limit_max = p->memory_limit_max;
        b->burst_ratio_max = p->burst_ratio_max;
        b->spill_fraction_min = t->spill_fraction_min;
        b->spill_fraction_max = t->spill_fraction_max;
        b->partitions_min = (uint32_t)t->partitions_min;
        b->partitions_max = (uint32_t)t->partitions_max;
        b->failure_bound = t->failure_bound;
        b->runtime_allowance = t->runtime_allowance;
        b->cpu_target = t->cpu_target;
        b->mem_target = t->memory_target;
        b->history_runs = t->history_runs;
        b->seed = t->seed;
        b->runtime_target = t->runtime_target;
        b->work_target = t->work_target;
}

void tuner_mark_runtime(struct tuner_run *runs, size_t n, double allowance)
{
        double base = NAN;

        for (size_t i = n; i-- > 0;)
                if (runs[i].failure == TUNER_OK && isfinite(runs[i].duration_seconds) &&
                    runs[i].duration_seconds > 0) {
                        base = runs[i].duration_seconds;
                        break;
                }
        if (!isfinite(base))
                return;
        for (size_t i = 0; i < n; i++) {
                struct tuner_run *r = &runs[i];

                if (r->failure != TUNER_OK || !isfinite(r->duration_seconds) ||
                    r->duration_seconds <= allowance * base)
                        continue;
                r->failure = TUNER_FAIL_RUNTIME;
                snprintf(r->failure_detail, sizeof(r->failure_detail),
                         "ran %.1f s, more than %.2f x the first good run's %.1f s",
                         r->duration_seconds, allowance, base);
        }
}

uint32_t tuner_partitions(const struct tuner_params *p)
{
        return p->shuffle_partitions ? p->shuffle_partitions : TUNER_RULES_SPARK_PARTITIONS;
}

uint32_t tuner_executors_at_once(const struct tuner_run *r)
{
        uint32_t lost = r->executors_lost != UINT32_MAX ? r->executors_lost : 0;

        return r->executors > lost ? r->executors - lost : r->executors;
}

static bool close_to(double a, double b, double relative, double absolute)
{
        return fabs(a - b) <= relative * fmax(fabs(a), fabs(b)) + absolute;
}

bool tuner_params_close(const struct tuner_params *a, const struct tuner_params *b)
{
        const double db = TUNER_RULES_DEAD_BAND;

        return a->cores == b->cores &&
               close_to((double)a->millicores, (double)b->millicores, db, 0) &&
               close_to((double)a->heap_bytes, (double)b->heap_bytes, db, 0) &&
               close_to((double)a->overhead_bytes, (double)b->overhead_bytes, db, 0) &&
               close_to(isfinite(a->burst_ratio) ? a->burst_ratio : 0,
                        isfinite(b->burst_ratio) ? b->burst_ratio : 0, 0, db) &&
               ((!isfinite(a->spill_fraction) && !isfinite(b->spill_fraction)) ||
                close_to(a->spill_fraction, b->spill_fraction, 0, db)) &&
               close_to(tuner_partitions(a), tuner_partitions(b), db, 0);
}

static int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

double tuner_median(double *v, size_t n)
{
        if (n == 0)
                return NAN;
        qsort(v, n, sizeof(*v), compare_double);
        return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;
}

static bool timed_success(const struct tuner_run *r)
{
        return r->failure == TUNER_OK && isfinite(r->duration_seconds) && r->duration_seconds > 0;
}

double tuner_fastest_duration(const struct tuner_run *runs, size_t n)
{
        double best = NAN, d[TUNER_FASTEST_RUNS];

        for (size_t i = 0; i < n && i < TUNER_FASTEST_RUNS; i++) {
                size_t m = 0;
                bool seen = false;

                if (!timed_success(&runs[i]))
                        continue;
                /* each configuration once: at its newest run */
                for (size_t j = 0; j < i && !seen; j++)
                        seen = timed_success(&runs[j]) &&
                               tuner_params_close(&runs[j].params, &runs[i].params);
                if (seen)
                        continue;
                for (size_t j = i; j < n && j < TUNER_FASTEST_RUNS; j++)
                        if (timed_success(&runs[j]) &&
                            tuner_params_close(&runs[j].params, &runs[i].params))
                                d[m++] = runs[j].duration_seconds;
                {
                        double median = tuner_median(d, m);
                        if (isnan(best) || median < best)
                                best = median;
                }
        }
        return best;
}

void tuner_reserved(const struct tuner_run *r, double *ret_core_seconds, double *ret_gib_seconds)
{
        const struct tuner_params *p = &r->params;
        double executors = tuner_executors_at_once(r);
        double burst = isfinite(p->burst_ratio) ? p->burst_ratio : 0.0;
        double held = executors * r->duration_seconds;

        *ret_core_seconds = *ret_gib_seconds = NAN;
        if (!(held > 0) || !isfinite(held))
                return;
        if (p->millicores && p->millicores != TUNER_UNKNOWN)
                *ret_core_seconds = (double)p->millicores / 1000.0 * held;
        if (p->heap_bytes != TUNER_UNKNOWN && p->overhead_bytes != TUNER_UNKNOWN)
                *ret_gib_seconds =
                    ((double)p->heap_bytes + (double)p->overhead_bytes * (1 - burst)) /
                    (double)(UINT64_C(1) << 30) * held;
}

static void clamped(struct tuner_reason *reason, const char *what)
{
        char text[TUNER_REASON_MAX];

        snprintf(text, sizeof(text), "%s (was: %s)", what, reason->text);
        snprintf(reason->source, sizeof(reason->source), "bound");
        snprintf(reason->text, sizeof(reason->text), "%s", text);
}

static bool clamp_u64(uint64_t *v, uint64_t lo, uint64_t hi, struct tuner_reason *reason,
                      const char *name)
{
        char what[160];

        if (*v >= lo && *v <= hi)
                return false;
        snprintf(what, sizeof(what),
                 "%s %" PRIu64 " clamped into the policy's [%" PRIu64 ", %" PRIu64 "]", name, *v,
                 lo, hi);
        *v = *v < lo ? lo : hi;
        clamped(reason, what);
        return true;
}

unsigned tuner_clamp(struct tuner_params *params, struct tuner_reason reasons[TUNER_P_COUNT],
                     const struct tuner_bounds *b)
{
        unsigned n = 0;
        uint64_t u;
        char what[200];

        /* cores come from the job's conf as they are: 1 .. what the CPU bounds allow */
        if (params->cores) {
                u = params->cores;
                n += clamp_u64(&u, 1, b->millicores_max / 1000 ? b->millicores_max / 1000 : 1,
                               &reasons[TUNER_P_CORES], "cores");
                params->cores = (uint32_t)u;
        }
        n += clamp_u64(&params->millicores, b->millicores_min, b->millicores_max,
                       &reasons[TUNER_P_MILLICORES], "millicores");
        n += clamp_u64(&params->heap_bytes, b->heap_min_bytes, b->heap_max_bytes,
                       &reasons[TUNER_P_HEAP], "heap bytes");
        n += clamp_u64(&params->overhead_bytes, b->overhead_min_bytes, b->overhead_max_bytes,
                       &reasons[TUNER_P_OVERHEAD], "overhead bytes");
        if (params->shuffle_partitions) {
                u = params->shuffle_partitions;
                n += clamp_u64(&u, b->partitions_min, b->partitions_max,
                               &reasons[TUNER_P_PARTITIONS], "shuffle partitions");
                params->shuffle_partitions = (uint32_t)u;
        }
        if (!(params->burst_ratio >= 0.0) || params->burst_ratio > b->burst_ratio_max) {
                snprintf(what, sizeof(what), "burst ratio %g clamped into the policy's [0, %g]",
                         params->burst_ratio, b->burst_ratio_max);
                params->burst_ratio =
                    params->burst_ratio > b->burst_ratio_max ? b->burst_ratio_max : 0.0;
                clamped(&reasons[TUNER_P_BURST_RATIO], what);
                n++;
        }
        if (isfinite(params->spill_fraction) && (params->spill_fraction < b->spill_fraction_min ||
                                                 params->spill_fraction > b->spill_fraction_max)) {
                snprintf(what, sizeof(what), "spill fraction %g clamped into the policy's [%g, %g]",
                         params->spill_fraction, b->spill_fraction_min, b->spill_fraction_max);
                params->spill_fraction = params->spill_fraction < b->spill_fraction_min
                                             ? b->spill_fraction_min
                                             : b->spill_fraction_max;
                clamped(&reasons[TUNER_P_SPILL_FRACTION], what);
                n++;
        }
        /* the limit (heap + overhead) last: the overhead gives way, then the heap */
        if (b->memory_limit_max &&
            params->heap_bytes + params->overhead_bytes > b->memory_limit_max) {
                uint64_t room = b->memory_limit_max > params->heap_bytes
                                    ? b->memory_limit_max - params->heap_bytes
                                    : 0;
                snprintf(what, sizeof(what),
                         "heap + overhead %" PRIu64 " above the policy's memory.limit_max %" PRIu64,
                         params->heap_bytes + params->overhead_bytes, b->memory_limit_max);
                if (room >= b->overhead_min_bytes) {
                        params->overhead_bytes = room;
                        clamped(&reasons[TUNER_P_OVERHEAD], what);
                } else {
                        params->overhead_bytes = b->overhead_min_bytes;
                        params->heap_bytes = b->memory_limit_max > b->overhead_min_bytes
                                                 ? b->memory_limit_max - b->overhead_min_bytes
                                                 : 0;
                        clamped(&reasons[TUNER_P_OVERHEAD], what);
                        clamped(&reasons[TUNER_P_HEAP], what);
                }
                n++;
        }
        return n;
}

/* ---- a run as JSON ---- */

enum field_kind { F_U32, F_U64, F_I64, F_DOUBLE, F_BOOL };

static const struct run_field {
        const char *name;
        enum field_kind kind;
        size_t offset;
        bool optional; /* a record written before the field was: unknown (NAN, TUNER_UNKNOWN) */
} run_fields[] = {
#define RF(name, kind, member)                                                                     \
        {                                                                                          \
                name, kind, offsetof(struct tuner_run, member), false                              \
        }
#define RF_OPTIONAL(name, kind, member)                                                            \
        {                                                                                          \
                name, kind, offsetof(struct tuner_run, member), true                               \
        }
    RF("start_ms", F_I64, start_ms),
    RF("duration_seconds", F_DOUBLE, duration_seconds),
    RF("cores", F_U32, params.cores),
    RF("millicores", F_U64, params.millicores),
    RF("heap_bytes", F_U64, params.heap_bytes),
    RF("overhead_bytes", F_U64, params.overhead_bytes),
    RF("burst_ratio", F_DOUBLE, params.burst_ratio),
    RF("spill_fraction", F_DOUBLE, params.spill_fraction),
    RF("shuffle_partitions", F_U32, params.shuffle_partitions),
    RF("executors", F_U32, executors),
    RF("cpu_util", F_DOUBLE, cpu_util),
    RF("mem_util", F_DOUBLE, mem_util),
    RF("objective", F_DOUBLE, objective),
    RF("cpu_peak_util", F_DOUBLE, cpu_peak_util),
    RF_OPTIONAL("cpu_seconds", F_DOUBLE, cpu_seconds),
    RF("throttled_fraction", F_DOUBLE, throttled_fraction),
    RF("runq_wait_per_cpu", F_DOUBLE, runq_wait_per_cpu),
    RF("memory_peak_bytes", F_U64, memory_peak_bytes),
    RF("heap_peak_bytes", F_U64, heap_peak_bytes),
    RF("offheap_peak_bytes", F_U64, offheap_peak_bytes),
    RF_OPTIONAL("heap_after_gc_peak_bytes", F_U64, heap_after_gc_peak_bytes),
    RF("high_events", F_U64, high_events),
    RF("oom_kills", F_U64, oom_kills),
    RF("forced_spills", F_I64, forced_spills),
    RF("has_eventlog", F_BOOL, has_eventlog),
    RF("has_reports", F_BOOL, has_reports),
    RF("stages", F_U32, stages),
    RF("tasks", F_U32, tasks),
    RF("failed_tasks", F_U32, failed_tasks),
    RF("oom_task_failures", F_U32, oom_task_failures),
    RF("executors_lost", F_U32, executors_lost),
    RF("max_stage_tasks", F_U32, max_stage_tasks),
    RF("max_stage_skew", F_DOUBLE, max_stage_skew),
    RF("memory_spill_bytes", F_U64, memory_spill_bytes),
    RF("disk_spill_bytes", F_U64, disk_spill_bytes),
    RF("shuffle_read_bytes", F_U64, shuffle_read_bytes),
    RF("shuffle_write_bytes", F_U64, shuffle_write_bytes),
    RF("gc_seconds", F_DOUBLE, gc_seconds),
    RF("executor_run_seconds", F_DOUBLE, executor_run_seconds),
    RF("enforced", F_BOOL, enforced),
    RF("owner_uid", F_U32, owner_uid),
    RF("cpu_limit_ratio", F_DOUBLE, cpu_limit_ratio),
#undef RF
#undef RF_OPTIONAL
};

json_t *tuner_run_to_json(const struct tuner_run *run)
{
        json_t *doc = json_object();
        bool ok = doc != NULL;

        if (ok)
                ok = json_object_set_new(doc, "app_id", json_string(run->app_id)) == 0 &&
                     json_object_set_new(doc, "job", json_string(run->job)) == 0;
        for (size_t i = 0; ok && i < ELEMENTSOF(run_fields); i++) {
                const void *at = (const char *)run + run_fields[i].offset;
                json_t *v = NULL;
                uint64_t u;
                double d;

                switch (run_fields[i].kind) {
                case F_U32:
                        v = json_integer(*(const uint32_t *)at);
                        break;
                case F_U64:
                        u = *(const uint64_t *)at;
                        v = u == TUNER_UNKNOWN || u > (uint64_t)INT64_MAX
                                ? json_null()
                                : json_integer((json_int_t)u);
                        break;
                case F_I64:
                        v = json_integer(*(const int64_t *)at);
                        break;
                case F_DOUBLE:
                        d = *(const double *)at;
                        v = isfinite(d) ? json_real(d) : json_null();
                        break;
                case F_BOOL:
                        v = json_boolean(*(const bool *)at);
                        break;
                }
                ok = json_object_set_new(doc, run_fields[i].name, v) == 0;
        }
        if (ok)
                ok = json_object_set_new(doc, "failure",
                                         json_string(tuner_failure_name(run->failure))) == 0 &&
                     json_object_set_new(doc, "failure_detail", json_string(run->failure_detail)) ==
                         0;
        if (!ok) {
                json_decref(doc);
                return NULL;
        }
        return doc;
}

static int copy_string(const json_t *doc, const char *key, char *dest, size_t size,
                       struct util_error *err)
{
        const char *s = json_string_value(json_object_get(doc, key));

        if (!s || strlen(s) >= size)
                return util_error_set(err, EINVAL, "%s: not a string of at most %zu bytes", key,
                                      size - 1);
        memcpy(dest, s, strlen(s) + 1);
        return 0;
}

int tuner_run_from_json(const json_t *doc, struct tuner_run *ret, struct util_error *err)
{
        struct tuner_run run = {0};
        const char *failure;
        int r;

        if (!json_is_object(doc))
                return util_error_set(err, EINVAL, "a run is a JSON object");
        if ((r = copy_string(doc, "app_id", run.app_id, sizeof(run.app_id), err)) < 0 ||
            (r = copy_string(doc, "job", run.job, sizeof(run.job), err)) < 0 ||
            (r = copy_string(doc, "failure_detail", run.failure_detail, sizeof(run.failure_detail),
                             err)) < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(run_fields); i++) {
                const json_t *v = json_object_get(doc, run_fields[i].name);
                void *at = (char *)&run + run_fields[i].offset;
                bool null_ok = run_fields[i].kind == F_U64 || run_fields[i].kind == F_DOUBLE;
                json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;

                if (!v && run_fields[i].optional) {
                        if (run_fields[i].kind == F_U64)
                                *(uint64_t *)at = TUNER_UNKNOWN;
                        else
                                *(double *)at = NAN;
                        continue;
                }
                if (!v || (json_is_null(v) && !null_ok))
                        return util_error_set(err, EINVAL, "%s: missing", run_fields[i].name);
                switch (run_fields[i].kind) {
                case F_U32:
                        if (!json_is_integer(v) || n < 0 || n > UINT32_MAX)
                                return util_error_set(err, EINVAL, "%s: not a 32-bit count",
                                                      run_fields[i].name);
                        *(uint32_t *)at = (uint32_t)n;
                        break;
                case F_U64:
                        if (json_is_null(v))
                                *(uint64_t *)at = TUNER_UNKNOWN;
                        else if (!json_is_integer(v) || n < 0)
                                return util_error_set(err, EINVAL, "%s: not a count",
                                                      run_fields[i].name);
                        else
                                *(uint64_t *)at = (uint64_t)n;
                        break;
                case F_I64:
                        if (!json_is_integer(v))
                                return util_error_set(err, EINVAL, "%s: not an integer",
                                                      run_fields[i].name);
                        *(int64_t *)at = (int64_t)n;
                        break;
                case F_DOUBLE:
                        if (json_is_null(v))
                                *(double *)at = NAN;
                        else if (!json_is_number(v))
                                return util_error_set(err, EINVAL, "%s: not a number",
                                                      run_fields[i].name);
                        else
                                *(double *)at = json_number_value(v);
                        break;
                case F_BOOL:
                        if (!json_is_boolean(v))
                                return util_error_set(err, EINVAL, "%s: not a boolean",
                                                      run_fields[i].name);
                        *(bool *)at = json_is_true(v);
                        break;
                }
        }
        failure = json_string_value(json_object_get(doc, "failure"));
        for (int f = TUNER_OK; failure && f <= TUNER_FAIL_RUNTIME; f++)
                if (strcmp(failure, tuner_failure_name((enum tuner_failure)f)) == 0) {
                        run.failure = (enum tuner_failure)f;
                        *ret = run;
                        return 0;
                }
        return util_error_set(
            err, EINVAL,
            "failure: not one of ok, oom, executor_lost, failed_tasks, app_failed, runtime");
}
