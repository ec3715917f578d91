/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The assembly of a struct tuner_run from a run's rows (tuner_store_assemble(),
 * store-internal.h): the figures of the executors' reports and of the event log, what the
 * run asked for, and the run's failure class (docs/tuner-store.md). Domain logic, no SQL:
 * store.c reads the rows and hands them here.
 *
 * Unknown values are NAN doubles and TUNER_UNKNOWN counts.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "policy.h"
#include "publish.h"
#include "store-internal.h"
#include "util.h"

/*
 * A size of whole MiB as Spark reads spark.executor.memory and .memoryOverhead
 * (bytesConf(ByteUnit.MiB): a byte string, MiB without a suffix, truncated to whole MiB:
 * "1500k" is 1 MiB, the executor's -Xmx1m), with the shim's parser of Spark byte strings
 * (policy_parse_spark_bytes); 0 MiB is no size.
 */
static uint64_t spark_mib_size(const char *v)
{
        uint64_t b;

        if (!v || policy_parse_spark_bytes(v, POLICY_UNIT_MIB, &b) < 0 || b < (UINT64_C(1) << 20))
                return TUNER_UNKNOWN;
        return b >> 20 << 20;
}

/* spark.executor.millicores as the shim reads it (policy_parse_millicores) */
static uint64_t conf_millicores(const char *v)
{
        uint64_t m;

        return v && policy_parse_millicores(v, &m) == 0 ? m : TUNER_UNKNOWN;
}

static const char *conf_get(json_t *conf, const char *key)
{
        return json_string_value(json_object_get(conf, key));
}

static bool known(uint64_t v)
{
        return v != TUNER_UNKNOWN;
}

static void add_known(uint64_t *sum, uint64_t v)
{
        if (!known(v))
                return;
        if (!known(*sum))
                *sum = 0;
        *sum = __builtin_add_overflow(*sum, v, sum) ? TUNER_UNKNOWN - 1 : *sum;
}

static void max_known(uint64_t *max, uint64_t v)
{
        if (known(v) && (!known(*max) || v > *max))
                *max = v;
}

static bool terminated(const struct tuner_executor *e)
{
        return e->exit_signal == 15 || e->exit_signal == 9 || e->exit_status == 143 ||
               e->exit_status == 137;
}

static bool report_oom(const struct tuner_executor *e)
{
        return e->oom_killed || (known(e->oom_kills) && e->oom_kills > 0);
}

static void exit_text(const struct tuner_executor *e, char *buf, size_t size)
{
        if (e->exit_signal)
                snprintf(buf, size, "signal %d", e->exit_signal);
        else
                snprintf(buf, size, "exit %d", e->exit_status);
}

static const struct tuner_app_executor *app_executor(const struct tuner_app *app, const char *id)
{
        for (size_t i = 0; i < app->n_executors; i++)
                if (strcmp(app->executors[i].executor_id, id) == 0)
                        return &app->executors[i];
        return NULL;
}

static bool reason_says_oom(const char *reason)
{
        return strstr(reason, "OutOfMemoryError") || strstr(reason, "OOMKilled");
}

/* ---------------------------------------------------------------- the failure class */

/* the executors lost: how many, and what to say of the first */
struct lost {
        unsigned n;
        const char *first, *first_why; /* the event log's first lost executor, or NULL */
        char detail[TUNER_REASON_MAX]; /* else the first report that shows one */
};

/* the application's end: the event log's, else the last report's */
static int64_t app_end_ms(const struct tuner_app *app, bool has_eventlog,
                          const struct tuner_executor *ex, size_t n)
{
        int64_t app_end = 0;

        if (has_eventlog && app->ended && app->end_ms > 0)
                app_end = app->end_ms;
        else
                for (size_t i = 0; i < n; i++)
                        if (ex[i].end_ms > app_end)
                                app_end = ex[i].end_ms;
        return app_end;
}

/* executors lost (counted whatever the class): the event log says so, or a report
   ended other than by the application's end */
static void count_lost(const struct tuner_app *app, bool has_eventlog,
                       const struct tuner_executor *ex, size_t n, struct lost *lost)
{
        int64_t app_end = app_end_ms(app, has_eventlog, ex, n);
        char what[64];

        for (size_t i = 0; has_eventlog && i < app->n_executors; i++)
                if (app->executors[i].lost) {
                        if (!lost->n++) {
                                lost->first = app->executors[i].executor_id;
                                lost->first_why = app->executors[i].removed_reason;
                        }
                }
        for (size_t i = 0; i < n; i++) {
                const struct tuner_app_executor *ae =
                    has_eventlog ? app_executor(app, ex[i].executor_id) : NULL;
                bool at_end = app_end > 0 && ex[i].end_ms >= app_end - TUNER_STORE_END_GRACE_MS;

                if (ex[i].exit_status == 0 && ex[i].exit_signal == 0)
                        continue;
                if (ae && ae->lost)
                        continue; /* counted above */
                /* stopped: by the application's end, or mid-run by the driver (dynamic
                   allocation) when the event log says it was not lost */
                if (terminated(&ex[i]) && (at_end || (ae && !ae->lost)))
                        continue;
                if (!lost->n++) {
                        exit_text(&ex[i], what, sizeof(what));
                        snprintf(lost->detail, sizeof(lost->detail), "executor %s ended with %s %s",
                                 ex[i].executor_id, what,
                                 at_end ? "at the application's end"
                                        : "before the application's end");
                }
        }
}

/*
 * Each of these is one class of enum tuner_failure: true when the run is of it, with
 * run->failure and run->failure_detail set.
 */

/* OOM: the kernel's kill in a report, an OutOfMemoryError task, an executor removed
   for one */
static bool classify_oom(const struct tuner_app *app, bool has_eventlog,
                         const struct tuner_executor *ex, size_t n, struct tuner_run *run)
{
        char what[64];

        for (size_t i = 0; i < n; i++)
                if (report_oom(&ex[i])) {
                        exit_text(&ex[i], what, sizeof(what));
                        run->failure = TUNER_FAIL_OOM;
                        snprintf(run->failure_detail, sizeof(run->failure_detail),
                                 "executor %s OOM-killed (oom_kills %" PRIu64 ", %s)",
                                 ex[i].executor_id, known(ex[i].oom_kills) ? ex[i].oom_kills : 0,
                                 what);
                        return true;
                }
        if (has_eventlog && app->oom_task_failures > 0) {
                run->failure = TUNER_FAIL_OOM;
                snprintf(run->failure_detail, sizeof(run->failure_detail),
                         "%u task attempts failed with java.lang.OutOfMemoryError",
                         app->oom_task_failures);
                return true;
        }
        for (size_t i = 0; has_eventlog && i < app->n_executors; i++)
                if (reason_says_oom(app->executors[i].removed_reason)) {
                        run->failure = TUNER_FAIL_OOM;
                        snprintf(run->failure_detail, sizeof(run->failure_detail),
                                 "executor %s removed: %s", app->executors[i].executor_id,
                                 app->executors[i].removed_reason);
                        return true;
                }
        return false;
}

static bool classify_executor_lost(const struct tuner_app *app, bool has_eventlog,
                                   const struct lost *lost, struct tuner_run *run)
{
        if (lost->n) {
                run->failure = TUNER_FAIL_EXECUTOR_LOST;
                if (lost->first)
                        snprintf(run->failure_detail, sizeof(run->failure_detail),
                                 "%u executors lost; executor %s: %s", lost->n, lost->first,
                                 *lost->first_why ? lost->first_why : "lost");
                else
                        snprintf(run->failure_detail, sizeof(run->failure_detail),
                                 "%u executors lost; %s", lost->n, lost->detail);
                return true;
        }
        if (has_eventlog && app->lost_task_failures > 0) {
                run->failure = TUNER_FAIL_EXECUTOR_LOST;
                snprintf(run->failure_detail, sizeof(run->failure_detail),
                         "%u task attempts failed with ExecutorLostFailure",
                         app->lost_task_failures);
                return true;
        }
        return false;
}

static bool classify_tasks(const struct tuner_app *app, bool has_eventlog, struct tuner_run *run)
{
        if (has_eventlog && app->failed_tasks > 0) {
                run->failure = TUNER_FAIL_TASKS;
                snprintf(run->failure_detail, sizeof(run->failure_detail),
                         "%u failed task attempts", app->failed_tasks);
                return true;
        }
        for (size_t i = 0; has_eventlog && i < app->n_stages; i++)
                if (app->stages[i].failed) {
                        run->failure = TUNER_FAIL_TASKS;
                        snprintf(run->failure_detail, sizeof(run->failure_detail),
                                 "stage %d attempt %d failed", app->stages[i].stage_id,
                                 app->stages[i].attempt);
                        return true;
                }
        return false;
}

static bool classify_app(const struct tuner_app *app, bool has_eventlog, struct tuner_run *run)
{
        if (has_eventlog && !app->ended) {
                run->failure = TUNER_FAIL_APP;
                snprintf(run->failure_detail, sizeof(run->failure_detail),
                         "the application did not end (no SparkListenerApplicationEnd)");
                return true;
        }
        if (has_eventlog && app->failed_jobs > 0) {
                run->failure = TUNER_FAIL_APP;
                snprintf(run->failure_detail, sizeof(run->failure_detail), "%u of %u jobs failed",
                         app->failed_jobs, app->jobs);
                return true;
        }
        return false;
}

/*
 * The run's failure, most severe first (enum tuner_failure). See docs/tuner-store.md for the
 * exact rules; TUNER_FAIL_RUNTIME is the caller's.
 */
static void classify(const struct tuner_app *app, bool has_eventlog,
                     const struct tuner_executor *ex, size_t n, struct tuner_run *run)
{
        struct lost lost = {0};

        count_lost(app, has_eventlog, ex, n, &lost);
        run->executors_lost = lost.n;
        if (classify_oom(app, has_eventlog, ex, n, run) ||
            classify_executor_lost(app, has_eventlog, &lost, run) ||
            classify_tasks(app, has_eventlog, run) || classify_app(app, has_eventlog, run))
                return;
        run->failure = TUNER_OK;
        run->failure_detail[0] = '\0';
}

/* ---------------------------------------------------------------- the run's figures */

static double ratio(double num, double den)
{
        return isfinite(num) && isfinite(den) && den > 0 ? num / den : NAN;
}

/* over the executors' reports: the sums the run's utilisations are ratios of, the first start
 * and the last end */
struct report_sums {
        double cpu, capacity, peak, request, throttled, wall, runq, runq_cpu;
        size_t cpu_reports; /* the reports in cpu and capacity */
        bool have_cpu, have_mem, have_throttled, have_runq;
        int64_t first_start, last_end;
};

/* the run's identity, every figure unknown until a report or the event log gives it */
static void init_run(const struct tuner_app *app, bool has_eventlog, size_t n,
                     struct tuner_run *run)
{
        snprintf(run->app_id, sizeof(run->app_id), "%s", app->app_id);
        run->has_eventlog = has_eventlog;
        run->has_reports = n > 0;
        run->executors = (uint32_t)n;
        run->enforced = n > 0;
        run->cpu_limit_ratio = NAN;
        run->owner_uid = has_eventlog ? app->owner_uid : 0;
        run->cpu_peak_util = NAN;
        run->cpu_seconds = NAN;
        run->memory_peak_bytes = run->heap_peak_bytes = run->offheap_peak_bytes = TUNER_UNKNOWN;
        run->heap_after_gc_peak_bytes = TUNER_UNKNOWN;
        run->high_events = run->oom_kills = TUNER_UNKNOWN;
        run->forced_spills = -1;
        run->max_stage_skew = NAN;
        run->duration_seconds = NAN;
        run->params = (struct tuner_params){
            .millicores = TUNER_UNKNOWN,
            .heap_bytes = TUNER_UNKNOWN,
            .overhead_bytes = TUNER_UNKNOWN,
            .burst_ratio = NAN,
            .spill_fraction = NAN,
        };
}

/* one executor's report into the sums and into the run's maxima and counts */
static void add_report(const struct tuner_executor *e, struct report_sums *sum,
                       struct tuner_run *run)
{
        double cap = e->wall_seconds * (double)e->request_millicores / 1000.0;

        run->enforced = run->enforced && e->enforced;
        if (!run->owner_uid)
                run->owner_uid = e->owner_uid;
        if (isnan(run->cpu_limit_ratio) && known(e->request_millicores) &&
            known(e->limit_millicores) && e->request_millicores > 0 && e->limit_millicores > 0)
                run->cpu_limit_ratio = (double)e->limit_millicores / (double)e->request_millicores;
        if (isfinite(e->cpu_seconds) && isfinite(cap) && known(e->request_millicores)) {
                sum->cpu += e->cpu_seconds;
                sum->capacity += cap;
                sum->cpu_reports++;
                sum->have_cpu = true;
        }
        if (known(e->memory_peak_bytes) && known(e->request_bytes)) {
                sum->peak += (double)e->memory_peak_bytes;
                sum->request += (double)e->request_bytes;
                sum->have_mem = true;
        }
        if (isfinite(e->throttled_seconds) && isfinite(e->wall_seconds)) {
                sum->throttled += e->throttled_seconds;
                sum->wall += e->wall_seconds;
                sum->have_throttled = true;
        }
        if (isfinite(e->runq_wait_seconds) && isfinite(e->cpu_seconds)) {
                sum->runq += e->runq_wait_seconds;
                sum->runq_cpu += e->cpu_seconds;
                sum->have_runq = true;
        }
        if (isfinite(e->cpu_peak_util) &&
            (isnan(run->cpu_peak_util) || e->cpu_peak_util > run->cpu_peak_util))
                run->cpu_peak_util = e->cpu_peak_util;
        max_known(&run->memory_peak_bytes, e->memory_peak_bytes);
        max_known(&run->heap_after_gc_peak_bytes, e->heap_after_gc_peak_bytes);
        add_known(&run->high_events, e->high_events);
        add_known(&run->oom_kills, e->oom_kills);
        if (e->forced_spills >= 0)
                run->forced_spills = run->forced_spills < 0 ? e->forced_spills
                                     : INT64_MAX - run->forced_spills < e->forced_spills
                                         ? INT64_MAX
                                         : run->forced_spills + e->forced_spills;
        if (e->start_ms > 0 && (!sum->first_start || e->start_ms < sum->first_start))
                sum->first_start = e->start_ms;
        if (e->end_ms > sum->last_end)
                sum->last_end = e->end_ms;
}

/* the utilisations and the objective, over the executors with a report */
static void assemble_reports(const struct tuner_executor *ex, size_t n, struct report_sums *sum,
                             struct tuner_run *run)
{
        for (size_t i = 0; i < n; i++)
                add_report(&ex[i], sum, run);
        run->cpu_util = sum->have_cpu ? ratio(sum->cpu, sum->capacity) : NAN;
        run->mem_util = sum->have_mem ? ratio(sum->peak, sum->request) : NAN;
        /* use beyond the request is borrowing from the overcommitted limit, not better
         * packing: the objective caps each utilisation at 1 (docs/tuner.md) */
        run->objective = run->cpu_util > 0 && run->mem_util > 0
                             ? 1.0 / (fmin(run->cpu_util, 1.0) * fmin(run->mem_util, 1.0))
                             : NAN;
        run->throttled_fraction = sum->have_throttled ? ratio(sum->throttled, sum->wall) : NAN;
        run->runq_wait_per_cpu = sum->have_runq ? ratio(sum->runq, sum->runq_cpu) : NAN;
}

/* what the run asked for, as the event log's conf (its JSON object) says */
static void params_from_conf(const char *conf_json, struct tuner_run *run)
{
        json_t *conf = json_loads(conf_json, 0, NULL);
        const char *v;
        uint64_t u;

        if (!conf)
                return;
        v = conf_get(conf, "spark.executor.cores");
        if (v && util_parse_u64(v, &u) == 0 && u <= UINT32_MAX)
                run->params.cores = (uint32_t)u;
        run->params.heap_bytes = spark_mib_size(conf_get(conf, "spark.executor.memory"));
        run->params.overhead_bytes =
            spark_mib_size(conf_get(conf, "spark.executor.memoryOverhead"));
        v = conf_get(conf, "spark.executor.memoryBurst.ratio");
        if (v && util_parse_double(v, &run->params.burst_ratio) < 0)
                run->params.burst_ratio = NAN;
        run->params.millicores = conf_millicores(conf_get(conf, "spark.executor.millicores"));
        v = conf_get(conf, "spark.executor.sparkshim.spillFraction");
        if (v && (util_parse_double(v, &run->params.spill_fraction) < 0 ||
                  !(run->params.spill_fraction >= 0 && run->params.spill_fraction <= 1)))
                run->params.spill_fraction = NAN;
        v = conf_get(conf, "spark.sql.shuffle.partitions");
        if (v && util_parse_u64(v, &u) == 0 && u <= UINT32_MAX)
                run->params.shuffle_partitions = (uint32_t)u;
        v = conf_get(conf, POLICY_CONFIG_PROPERTY);
        if (v && tuner_config_id_valid(v))
                snprintf(run->config, sizeof(run->config), "%s", v);
        json_decref(conf);
}

/* what the run asked for, as its first executor's report says (where it does) */
static void params_from_report(const struct tuner_executor *e, struct tuner_params *p)
{
        if (e->cores)
                p->cores = e->cores;
        if (known(e->request_millicores))
                p->millicores = e->request_millicores;
        if (known(e->heap_bytes))
                p->heap_bytes = e->heap_bytes;
        if (known(e->overhead_bytes))
                p->overhead_bytes = e->overhead_bytes;
        if (isfinite(e->burst_ratio))
                p->burst_ratio = e->burst_ratio;
        if (isfinite(e->spill_threshold_fraction))
                p->spill_fraction = e->spill_threshold_fraction;
}

/* one stage of the event log into the run's maxima and totals */
static void add_stage(const struct tuner_stage *g, struct tuner_run *run)
{
        /* a stage of short tasks has no skew worth keeping partitions for:
         * its spread is scheduling and JIT warm-up (Dr. Elephant, too, judges
         * skew only where tasks run long) */
        double skew = g->task_max_seconds >= TUNER_STORE_SKEW_MIN_SECONDS
                          ? ratio(g->task_max_seconds, g->task_median_seconds)
                          : NAN;

        if (g->tasks > run->max_stage_tasks)
                run->max_stage_tasks = g->tasks;
        if (isfinite(skew) && (isnan(run->max_stage_skew) || skew > run->max_stage_skew))
                run->max_stage_skew = skew;
        add_known(&run->memory_spill_bytes, g->memory_spill_bytes);
        add_known(&run->disk_spill_bytes, g->disk_spill_bytes);
        add_known(&run->shuffle_read_bytes, g->shuffle_read_bytes);
        add_known(&run->shuffle_write_bytes, g->shuffle_write_bytes);
        if (isfinite(g->run_seconds))
                run->executor_run_seconds += g->run_seconds;
}

/* the figures of the event log */
static void assemble_eventlog(const struct tuner_app *app, struct tuner_run *run)
{
        run->start_ms = app->start_ms;
        run->duration_seconds = app->ended && app->end_ms >= app->start_ms
                                    ? (double)(app->end_ms - app->start_ms) / 1000.0
                                    : NAN;
        run->stages = (uint32_t)(app->n_stages > UINT32_MAX ? UINT32_MAX : app->n_stages);
        run->tasks = app->tasks;
        run->failed_tasks = app->failed_tasks;
        run->oom_task_failures = app->oom_task_failures;
        run->gc_seconds = app->gc_seconds;
        for (size_t i = 0; i < app->n_stages; i++)
                add_stage(&app->stages[i], run);
        for (size_t i = 0; i < app->n_executors; i++) {
                max_known(&run->heap_peak_bytes, app->executors[i].jvm_heap_peak);
                max_known(&run->offheap_peak_bytes, app->executors[i].jvm_offheap_peak);
        }
}

void tuner_store_assemble(const struct tuner_app *app, bool has_eventlog,
                          const struct tuner_executor *ex, size_t n, struct tuner_run *run)
{
        struct report_sums sum = {0};

        init_run(app, has_eventlog, n, run);
        assemble_reports(ex, n, &sum, run);
        /* the job's CPU seconds only when every executor is in the sum: each report counted
           and, with an event log, a report for every executor it added (a missing one, no
           cpu controller, a plan without a request, a report not ingested yet, would make
           the run look leaner); a ratio over the others is still cpu_util */
        run->cpu_seconds =
            sum.have_cpu && sum.cpu_reports == n && (!has_eventlog || n >= app->n_executors)
                ? sum.cpu
                : NAN;

        /* what the run asked for: its first executor's report, else the event log's conf */
        if (has_eventlog && app->conf_json)
                params_from_conf(app->conf_json, run);
        if (n > 0)
                params_from_report(&ex[0], &run->params);

        /* the event log */
        if (has_eventlog)
                assemble_eventlog(app, run);
        if (!has_eventlog || !run->start_ms)
                run->start_ms = sum.first_start;
        if (isnan(run->duration_seconds) && sum.first_start && sum.last_end >= sum.first_start)
                run->duration_seconds = (double)(sum.last_end - sum.first_start) / 1000.0;

        classify(app, has_eventlog, ex, n, run);
}
