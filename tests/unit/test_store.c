/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history store (tuner/store.h): put/runs round trips, the utilisation formulas and the
 * failure classification of tuner.h, idempotence, rollback; and report lines into executors.
 *
 * Each test opens a SQLite file in its own temporary directory; with TUNER_TEST_DB set (a
 * postgresql:// URL, tests/tuner/history.sh sets it) every test runs against that database
 * instead, so that both backends are held to the same assertions. Tests use job names and
 * application ids of their own, so they can share one database.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "store.h"
#include "util.h"
#include "test_helpers.h"

static char tmpdir[64];
static char db[256];
static struct tuner_store *store;

static void open_store(void)
{
        const char *url = getenv("TUNER_TEST_DB");
        struct util_error err = {0};

        if (url && *url) {
                snprintf(db, sizeof(db), "%s", url);
        } else {
                snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-store.XXXXXX");
                cr_assert(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
                snprintf(db, sizeof(db), "%s/history.db", tmpdir);
        }
        cr_assert_eq(tuner_store_open(db, &store, &err), 0, "open %s: %s", db, err.text);
}

static void close_store(void)
{
        char cmd[300];

        tuner_store_close(store);
        store = NULL;
        if (tmpdir[0]) {
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
                cr_assert_eq(system(cmd), 0);
        }
}

TestSuite(store, .init = open_store, .fini = close_store);

/* a test's own names: "<test>-<what>" */
#define NAME(buf, what) snprintf(buf, sizeof(buf), "%s-%s", __func__, what)

static struct tuner_executor executor(const char *app, const char *id, int64_t start_ms,
                                      double wall, double cpu, uint64_t peak)
{
        struct tuner_executor e = {
            .start_ms = start_ms,
            .end_ms = start_ms + (int64_t)(wall * 1000),
            .wall_seconds = wall,
            .cores = 4,
            .request_millicores = 2000,
            .limit_millicores = 4000,
            .heap_bytes = UINT64_C(1) << 30,
            .offheap_bytes = 0,
            .pyspark_bytes = 0,
            .overhead_bytes = UINT64_C(384) << 20,
            .burst_ratio = 0.5,
            .request_bytes = UINT64_C(2) << 30,
            .limit_bytes = UINT64_C(3) << 30,
            .enforced = true,
            .cpu_seconds = cpu,
            .throttled_seconds = 1.0,
            .runq_wait_seconds = 0.5,
            .memory_peak_bytes = peak,
            .memory_average_bytes = peak / 2,
            .memory_p95_bytes = peak,
            .anon_peak_bytes = peak,
            .oom_kills = 0,
            .high_events = 2,
            .exit_status = 0,
            .exit_signal = 0,
            .cpu_peak_util = 0.9,
            .forced_spills = 3,
            .spill_threshold_fraction = 0.8,
            .heap_after_gc_peak_bytes = TUNER_UNKNOWN,
        };
        snprintf(e.app_id, sizeof(e.app_id), "%s", app);
        snprintf(e.executor_id, sizeof(e.executor_id), "%s", id);
        snprintf(e.host, sizeof(e.host), "node-%s", id);
        return e;
}

/* an application that ran from start_ms for 100 s with two executors and two stages */
static void app_of(struct tuner_app *app, const char *app_id, int64_t start_ms)
{
        *app = (struct tuner_app){
            .start_ms = start_ms,
            .end_ms = start_ms + 100000,
            .ended = true,
            .jobs = 2,
            .tasks = 300,
            .gc_seconds = 4.5,
        };
        snprintf(app->app_id, sizeof(app->app_id), "%s", app_id);
        snprintf(app->app_name, sizeof(app->app_name), "nightly");
        snprintf(app->spark_version, sizeof(app->spark_version), "3.5.1");
        app->conf_json =
            strdup("{\"spark.app.name\": \"nightly\", \"spark.executor.memory\": \"4g\", "
                   "\"spark.executor.cores\": \"2\", \"spark.sql.shuffle.partitions\": "
                   "\"64\", \"spark.executor.memoryOverhead\": \"512\", "
                   "\"spark.executor.millicores\": \"1.5\", "
                   "\"spark.executor.sparkshim.spillFraction\": \"0.75\"}");
        app->n_stages = 2;
        app->stages = calloc(2, sizeof(*app->stages));
        app->n_executors = 2;
        app->executors = calloc(2, sizeof(*app->executors));
        cr_assert(app->conf_json && app->stages && app->executors);
        for (int i = 0; i < 2; i++) {
                app->stages[i] = (struct tuner_stage){
                    .stage_id = i,
                    .tasks = 100u + 100u * (unsigned)i,
                    .input_bytes = 1000,
                    .shuffle_read_bytes = 10,
                    .shuffle_write_bytes = 20,
                    .memory_spill_bytes = 30,
                    .disk_spill_bytes = 40,
                    .run_seconds = 50,
                    .cpu_seconds = 40,
                    .gc_seconds = 2,
                    .task_max_seconds = 4.0 * (i + 1),
                    .task_median_seconds = 1.0,
                    .submit_ms = start_ms + 1000,
                    .complete_ms = start_ms + 2000,
                };
                app->executors[i] = (struct tuner_app_executor){
                    .cores = 4,
                    .added_ms = start_ms + 500,
                    .jvm_heap_peak = (UINT64_C(500) + 100 * (uint64_t)i) << 20,
                    .jvm_offheap_peak = UINT64_C(10) << 20,
                    .rss_peak = TUNER_UNKNOWN,
                };
                snprintf(app->executors[i].executor_id, sizeof(app->executors[i].executor_id), "%d",
                         i + 1);
        }
}

static void put_executor(const struct tuner_executor *e)
{
        struct util_error err = {0};

        cr_assert_eq(tuner_store_put_executor(store, e, &err), 0, "put_executor: %s", err.text);
}

static void put_app(const char *job, const struct tuner_app *app)
{
        struct util_error err = {0};

        cr_assert_eq(tuner_store_put_app(store, job, app, &err), 0, "put_app: %s", err.text);
}

static void set_job(const char *app_id, const char *job)
{
        struct util_error err = {0};

        cr_assert_eq(tuner_store_set_job(store, app_id, 0, job, &err), 0, "set_job: %s", err.text);
}

static size_t runs_of(const char *job, unsigned max, struct tuner_run **ret)
{
        struct util_error err = {0};
        size_t n = 99;

        cr_assert_eq(tuner_store_runs(store, job, TUNER_ANY_OWNER, max, ret, &n, &err), 0,
                     "runs: %s", err.text);
        return n;
}

/* one run of job, with its failure */
static struct tuner_run one_run(const char *job)
{
        struct tuner_run *runs = NULL, run;
        size_t n = runs_of(job, 0, &runs);

        cr_assert_eq(n, 1, "%s: %zu runs, not 1", job, n);
        run = runs[0];
        free(runs);
        return run;
}

#define assert_near(a, b, what)                                                                    \
        cr_assert(fabs((a) - (b)) <= 1e-9 * fmax(1.0, fabs(b)), "%s: %.17g, expected %.17g", what, \
                  (double)(a), (double)(b))

Test(store, round_trip_and_formulas)
{
        char app_id[128], job[128];
        struct tuner_app app;
        struct tuner_executor e1, e2;
        struct tuner_run run;

        NAME(app_id, "app");
        NAME(job, "job");
        app_of(&app, app_id, 1700000000000);
        e1 = executor(app_id, "1", 1700000000500, 100, 150, UINT64_C(1) << 30);
        e2 = executor(app_id, "2", 1700000000600, 50, 25, UINT64_C(512) << 20);
        e2.cpu_peak_util = 1.5;
        e2.forced_spills = -1;
        e1.heap_after_gc_peak_bytes = UINT64_C(700) << 20;
        e2.heap_after_gc_peak_bytes = UINT64_C(900) << 20;
        put_executor(&e1);
        put_executor(&e2);
        put_app(job, &app);
        run = one_run(job);

        cr_assert_str_eq(run.app_id, app_id);
        cr_assert_str_eq(run.job, job);
        cr_assert(run.has_eventlog && run.has_reports);
        cr_assert_eq(run.executors, 2);
        cr_assert_eq(run.start_ms, 1700000000000);
        assert_near(run.duration_seconds, 100.0, "duration");
        /* cpu = (150 + 25) / (100 x 2 + 50 x 2) */
        assert_near(run.cpu_util, 175.0 / 300.0, "cpu_util");
        assert_near(run.cpu_seconds, 175.0, "cpu_seconds"); /* the job's, every executor's */
        /* memory = (1 GiB + 512 MiB) / (2 GiB + 2 GiB) */
        assert_near(run.mem_util, 1.5 / 4.0, "mem_util");
        assert_near(run.objective, 1.0 / (175.0 / 300.0 * 1.5 / 4.0), "objective");
        assert_near(run.cpu_peak_util, 1.5, "cpu_peak_util");
        assert_near(run.throttled_fraction, 2.0 / 150.0, "throttled_fraction");
        assert_near(run.runq_wait_per_cpu, 1.0 / 175.0, "runq_wait_per_cpu");
        cr_assert_eq(run.memory_peak_bytes, UINT64_C(1) << 30);
        cr_assert_eq(run.heap_peak_bytes, UINT64_C(600) << 20);
        cr_assert_eq(run.offheap_peak_bytes, UINT64_C(10) << 20);
        cr_assert_eq(run.heap_after_gc_peak_bytes, UINT64_C(900) << 20); /* the larger one */
        cr_assert_eq(run.high_events, 4);
        cr_assert_eq(run.oom_kills, 0);
        cr_assert_eq(run.forced_spills, 3);
        /* the params: the first executor's report, the partitions from the conf */
        cr_assert_eq(run.params.cores, 4);
        cr_assert_eq(run.params.millicores, 2000);
        cr_assert_eq(run.params.heap_bytes, UINT64_C(1) << 30);
        cr_assert_eq(run.params.overhead_bytes, UINT64_C(384) << 20);
        assert_near(run.params.burst_ratio, 0.5, "burst_ratio");
        assert_near(run.params.spill_fraction, 0.8, "spill_fraction");
        cr_assert_eq(run.params.shuffle_partitions, 64);
        /* the event log */
        cr_assert_eq(run.stages, 2);
        cr_assert_eq(run.tasks, 300);
        cr_assert_eq(run.max_stage_tasks, 200);
        assert_near(run.max_stage_skew, 8.0, "max_stage_skew");
        cr_assert_eq(run.memory_spill_bytes, 60);
        cr_assert_eq(run.disk_spill_bytes, 80);
        cr_assert_eq(run.shuffle_read_bytes, 20);
        cr_assert_eq(run.shuffle_write_bytes, 40);
        assert_near(run.gc_seconds, 4.5, "gc_seconds");
        assert_near(run.executor_run_seconds, 100.0, "executor_run_seconds");
        cr_assert_eq(run.failure, TUNER_OK, "failure %s: %s", tuner_failure_name(run.failure),
                     run.failure_detail);
        tuner_app_free(&app);
}

/*
 * cpu_seconds is the job's only when every executor is in it: one of two reports without its
 * CPU (no cpu controller) leaves cpu_util the other's ratio and the job's CPU seconds
 * unknown, not the half of them that would make the run look lean (stage 2's work bound)
 */
Test(store, cpu_seconds_only_with_every_executor)
{
        char app_id[128], job[128];
        struct tuner_executor e1, e2;
        struct tuner_run run;

        NAME(app_id, "app");
        NAME(job, "job");
        e1 = executor(app_id, "1", 1700000000000, 100, 150, UINT64_C(1) << 30);
        e2 = executor(app_id, "2", 1700000000000, 100, NAN, UINT64_C(1) << 30);
        put_executor(&e1);
        put_executor(&e2);
        set_job(app_id, job);
        run = one_run(job);
        cr_assert_eq(run.executors, 2);
        assert_near(run.cpu_util, 150.0 / 200.0, "cpu_util");
        cr_assert(isnan(run.cpu_seconds), "cpu_seconds %g of one executor", run.cpu_seconds);
        e2.cpu_seconds = 25;
        put_executor(&e2);
        run = one_run(job);
        assert_near(run.cpu_seconds, 175.0, "cpu_seconds");
}

Test(store, unknown_figures_stay_unknown)
{
        char app_id[128], job[128];
        struct tuner_executor e;
        struct tuner_run run;

        NAME(app_id, "app");
        NAME(job, "job");
        e = executor(app_id, "1", 1700000000000, 10, NAN, TUNER_UNKNOWN);
        e.throttled_seconds = e.runq_wait_seconds = e.cpu_peak_util = NAN;
        e.oom_kills = e.high_events = e.heap_bytes = TUNER_UNKNOWN;
        e.forced_spills = -1;
        e.spill_threshold_fraction = NAN;
        put_executor(&e);
        set_job(app_id, job);
        run = one_run(job);
        cr_assert(isnan(run.cpu_util) && isnan(run.mem_util) && isnan(run.objective));
        cr_assert(isnan(run.cpu_seconds), "cpu_seconds %g", run.cpu_seconds);
        cr_assert(isnan(run.cpu_peak_util) && isnan(run.throttled_fraction) &&
                  isnan(run.runq_wait_per_cpu));
        cr_assert_eq(run.memory_peak_bytes, TUNER_UNKNOWN);
        cr_assert_eq(run.heap_peak_bytes, TUNER_UNKNOWN);
        cr_assert_eq(run.heap_after_gc_peak_bytes, TUNER_UNKNOWN);
        cr_assert_eq(run.oom_kills, TUNER_UNKNOWN);
        cr_assert_eq(run.forced_spills, -1);
        cr_assert_eq(run.params.heap_bytes, TUNER_UNKNOWN);
        cr_assert(isnan(run.params.spill_fraction));
        cr_assert(!run.has_eventlog && run.has_reports);
        /* without an event log, the run lasts from its first executor's start to its last end */
        cr_assert_eq(run.start_ms, 1700000000000);
        assert_near(run.duration_seconds, 10.0, "duration");
        cr_assert_eq(run.failure, TUNER_OK, "%s", run.failure_detail);
}

Test(store, params_from_conf_without_reports)
{
        char app_id[128], job[128];
        struct tuner_app app;
        struct tuner_run run;

        NAME(app_id, "app");
        NAME(job, "job");
        app_of(&app, app_id, 1700000000000);
        put_app(job, &app);
        run = one_run(job);
        cr_assert(run.has_eventlog && !run.has_reports);
        cr_assert_eq(run.executors, 0);
        cr_assert_eq(run.params.cores, 2);
        cr_assert_eq(run.params.heap_bytes, UINT64_C(4) << 30);
        cr_assert_eq(run.params.overhead_bytes, UINT64_C(512) << 20);
        cr_assert_eq(run.params.millicores, 1500);
        assert_near(run.params.spill_fraction, 0.75, "spill_fraction");
        cr_assert(isnan(run.cpu_util));
        tuner_app_free(&app);
}

/* Spark's own rules for the sizes a run asked for (issue 24, defect 5): spark.executor.memory
 * and .memoryOverhead are Spark byte strings of whole MiB (bytesConf(ByteUnit.MiB): "1500k"
 * is 1 MiB, the executor's -Xmx1m), as the shim reads them; millicores as the shim reads them */
Test(store, params_by_sparks_rules)
{
        static const struct {
                const char *memory, *overhead, *millicores;
                uint64_t heap, over, mc;
        } cases[] = {
            {"1500k", "384m", "1500m", UINT64_C(1) << 20, UINT64_C(384) << 20, 1500},
            {"2560kb", "1g", "0.75", UINT64_C(2) << 20, UINT64_C(1) << 30, 750},
            {"1536", " 512 ", "250", UINT64_C(1536) << 20, UINT64_C(512) << 20, 250},
            {"1.5g", "-1", "0", TUNER_UNKNOWN, TUNER_UNKNOWN, TUNER_UNKNOWN},
            {"1p", "1000b", "x", UINT64_C(1) << 50, TUNER_UNKNOWN, TUNER_UNKNOWN},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char app_id[64], job[64], conf[256];
                struct tuner_app app;
                struct tuner_run run;

                snprintf(app_id, sizeof(app_id), "%s-%zu", __func__, i);
                snprintf(job, sizeof(job), "%s-job-%zu", __func__, i);
                app_of(&app, app_id, 1700000000000);
                snprintf(conf, sizeof(conf),
                         "{\"spark.executor.memory\": \"%s\", \"spark.executor.memoryOverhead\": "
                         "\"%s\", \"spark.executor.millicores\": \"%s\"}",
                         cases[i].memory, cases[i].overhead, cases[i].millicores);
                free(app.conf_json);
                app.conf_json = strdup(conf);
                cr_assert(app.conf_json);
                put_app(job, &app);
                run = one_run(job);
                cr_expect_eq(run.params.heap_bytes, cases[i].heap, "memory %s: %" PRIu64,
                             cases[i].memory, run.params.heap_bytes);
                cr_expect_eq(run.params.overhead_bytes, cases[i].over, "overhead %s: %" PRIu64,
                             cases[i].overhead, run.params.overhead_bytes);
                cr_expect_eq(run.params.millicores, cases[i].mc, "millicores %s: %" PRIu64,
                             cases[i].millicores, (uint64_t)run.params.millicores);
                tuner_app_free(&app);
        }
}

Test(store, newest_first_and_max)
{
        char job[128];
        struct tuner_run *runs = NULL;
        size_t n;

        NAME(job, "job");
        for (int i = 0; i < 5; i++) {
                char app_id[128];
                struct tuner_executor e;

                snprintf(app_id, sizeof(app_id), "%s-app-%d", __func__, i);
                /* out of order on purpose */
                e = executor(app_id, "1", 1700000000000 + ((i * 3) % 5) * 1000000, 10, 5, 100);
                put_executor(&e);
                set_job(app_id, job);
        }
        n = runs_of(job, 0, &runs);
        cr_assert_eq(n, 5);
        for (size_t i = 1; i < n; i++)
                cr_assert_gt(runs[i - 1].start_ms, runs[i].start_ms, "runs[%zu] not newest first",
                             i);
        free(runs);
        n = runs_of(job, 2, &runs);
        cr_assert_eq(n, 2);
        cr_assert_eq(runs[0].start_ms, 1700000000000 + 4 * 1000000);
        free(runs);
        n = runs_of("no-such-job-of-store-tests", 0, &runs);
        cr_assert_eq(n, 0);
        free(runs);
}

/* ---- failure classification */

enum { APP_START = 1700000000, APP_END = 1700000000 + 100000 };

struct case_ {
        const char *name;
        bool eventlog;
        void (*edit)(struct tuner_app *app, struct tuner_executor *e);
        enum tuner_failure expect;
        unsigned lost; /* executors_lost */
};

static void sigterm_at_end(struct tuner_app *app, struct tuner_executor *e)
{
        e->exit_status = 143;
        e->end_ms = APP_END + 2000;
}

static void signal15_at_end(struct tuner_app *app, struct tuner_executor *e)
{
        e->exit_status = -1;
        e->exit_signal = 15;
        e->end_ms = APP_END + 2000;
}

static void sigterm_mid_run(struct tuner_app *app, struct tuner_executor *e)
{
        e->exit_status = 143;
        e->end_ms = APP_END - 60000;
        snprintf(e->executor_id, sizeof(e->executor_id), "77"); /* unknown to the event log */
}

static void sigterm_released(struct tuner_app *app, struct tuner_executor *e)
{
        /* dynamic allocation: the event log has it removed, not lost */
        e->exit_status = 143;
        e->end_ms = APP_END - 60000;
        app->executors[0].removed_ms = APP_END - 60000;
        snprintf(app->executors[0].removed_reason, sizeof(app->executors[0].removed_reason),
                 "Executor killed by driver.");
}

static void oom_killed_137(struct tuner_app *app, struct tuner_executor *e)
{
        e->exit_status = -1;
        e->exit_signal = 9;
        e->oom_killed = true;
        e->oom_kills = 1;
}

static void oom_kills_only(struct tuner_app *app, struct tuner_executor *e)
{
        e->oom_kills = 2;
}

static void sigkill_at_end_no_oom(struct tuner_app *app, struct tuner_executor *e)
{
        e->exit_status = 137;
        e->end_ms = APP_END + 5000;
}

static void exit_1_at_end(struct tuner_app *app, struct tuner_executor *e)
{
        e->exit_status = 1;
        e->end_ms = APP_END;
}

static void lost_in_eventlog(struct tuner_app *app, struct tuner_executor *e)
{
        app->executors[1].lost = true;
        app->executors[1].removed_ms = APP_END - 50000;
        snprintf(app->executors[1].removed_reason, sizeof(app->executors[1].removed_reason),
                 "Container marked as failed: exit code 1");
}

static void lost_tasks(struct tuner_app *app, struct tuner_executor *e)
{
        app->lost_task_failures = 3;
        app->failed_tasks = 3;
}

static void oom_tasks(struct tuner_app *app, struct tuner_executor *e)
{
        app->oom_task_failures = 2;
        app->failed_tasks = 2;
}

static void oom_and_lost(struct tuner_app *app, struct tuner_executor *e)
{
        lost_in_eventlog(app, e);
        oom_tasks(app, e);
}

static void oom_removed(struct tuner_app *app, struct tuner_executor *e)
{
        snprintf(app->executors[1].removed_reason, sizeof(app->executors[1].removed_reason),
                 "Executor exited: java.lang.OutOfMemoryError: Java heap space");
}

static void failed_tasks(struct tuner_app *app, struct tuner_executor *e)
{
        app->failed_tasks = 4;
}

static void failed_stage(struct tuner_app *app, struct tuner_executor *e)
{
        app->stages[1].failed = true;
}

static void not_ended(struct tuner_app *app, struct tuner_executor *e)
{
        app->ended = false;
        app->end_ms = 0;
}

static void failed_job(struct tuner_app *app, struct tuner_executor *e)
{
        app->failed_jobs = 1;
}

static void tasks_and_not_ended(struct tuner_app *app, struct tuner_executor *e)
{
        failed_tasks(app, e);
        not_ended(app, e);
}

static void nothing(struct tuner_app *app, struct tuner_executor *e)
{
}

static const struct case_ cases[] = {
    {"clean", true, nothing, TUNER_OK, 0},
    {"clean-reports-only", false, nothing, TUNER_OK, 0},
    {"exit-143-at-app-end", true, sigterm_at_end, TUNER_OK, 0},
    {"signal-15-at-app-end", true, signal15_at_end, TUNER_OK, 0},
    {"exit-143-at-end-reports-only", false, sigterm_at_end, TUNER_OK, 0},
    {"exit-143-mid-run", true, sigterm_mid_run, TUNER_FAIL_EXECUTOR_LOST, 1},
    {"exit-143-released-by-driver", true, sigterm_released, TUNER_OK, 0},
    {"oom-killed-137", true, oom_killed_137, TUNER_FAIL_OOM, 0},
    {"oom-killed-137-reports-only", false, oom_killed_137, TUNER_FAIL_OOM, 0},
    {"oom-kills-only", true, oom_kills_only, TUNER_FAIL_OOM, 0},
    {"exit-137-at-end-no-oom", true, sigkill_at_end_no_oom, TUNER_OK, 0},
    {"exit-1-at-end", true, exit_1_at_end, TUNER_FAIL_EXECUTOR_LOST, 1},
    {"lost-in-eventlog", true, lost_in_eventlog, TUNER_FAIL_EXECUTOR_LOST, 1},
    {"executor-lost-failure-tasks", true, lost_tasks, TUNER_FAIL_EXECUTOR_LOST, 0},
    {"oom-tasks", true, oom_tasks, TUNER_FAIL_OOM, 0},
    {"oom-before-lost", true, oom_and_lost, TUNER_FAIL_OOM, 1},
    {"removed-for-oom", true, oom_removed, TUNER_FAIL_OOM, 0},
    {"failed-tasks", true, failed_tasks, TUNER_FAIL_TASKS, 0},
    {"failed-stage", true, failed_stage, TUNER_FAIL_TASKS, 0},
    {"not-ended", true, not_ended, TUNER_FAIL_APP, 0},
    {"failed-job", true, failed_job, TUNER_FAIL_APP, 0},
    {"tasks-before-app", true, tasks_and_not_ended, TUNER_FAIL_TASKS, 0},
};

Test(store, failure_classification)
{
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const struct case_ *c = &cases[i];
                char app_id[128], job[128];
                struct tuner_app app;
                struct tuner_executor e;
                struct tuner_run run;

                snprintf(app_id, sizeof(app_id), "%s-%s", __func__, c->name);
                snprintf(job, sizeof(job), "%s-job-%s", __func__, c->name);
                app_of(&app, app_id, APP_START);
                e = executor(app_id, "1", APP_START + 1000, 90, 100, 1000);
                e.end_ms = APP_END + 1000;
                c->edit(&app, &e);
                put_executor(&e);
                if (c->eventlog)
                        put_app(job, &app);
                else
                        set_job(app_id, job);
                run = one_run(job);
                cr_expect_eq(run.failure, c->expect, "%s: %s (%s), expected %s", c->name,
                             tuner_failure_name(run.failure), run.failure_detail,
                             tuner_failure_name(c->expect));
                cr_expect_eq(run.executors_lost, c->lost, "%s: %u executors lost, expected %u",
                             c->name, run.executors_lost, c->lost);
                cr_expect_eq(run.failure == TUNER_OK, run.failure_detail[0] == '\0',
                             "%s: detail \"%s\" for %s", c->name, run.failure_detail,
                             tuner_failure_name(run.failure));
                tuner_app_free(&app);
        }
}

/* ---- idempotence, jobs, transactions */

static bool same_run(const struct tuner_run *a, const struct tuner_run *b)
{
        /* NAN != NAN: compare field by field where it matters, bytes elsewhere */
        struct tuner_run x = *a, y = *b;
        double *xd[] = {&x.duration_seconds,   &x.cpu_util,
                        &x.mem_util,           &x.objective,
                        &x.cpu_peak_util,      &x.throttled_fraction,
                        &x.runq_wait_per_cpu,  &x.max_stage_skew,
                        &x.params.burst_ratio, &x.params.spill_fraction,
                        &x.cpu_seconds};
        double *yd[] = {&y.duration_seconds,   &y.cpu_util,
                        &y.mem_util,           &y.objective,
                        &y.cpu_peak_util,      &y.throttled_fraction,
                        &y.runq_wait_per_cpu,  &y.max_stage_skew,
                        &y.params.burst_ratio, &y.params.spill_fraction,
                        &y.cpu_seconds};

        for (size_t i = 0; i < ELEMENTSOF(xd); i++) {
                if (isnan(*xd[i]) != isnan(*yd[i]) || (!isnan(*xd[i]) && *xd[i] != *yd[i]))
                        return false;
                *xd[i] = *yd[i] = 0;
        }
        return memcmp(&x, &y, sizeof(x)) == 0;
}

Test(store, idempotent)
{
        char app_id[128], job[128];
        struct tuner_app app;
        struct tuner_executor e = {0};
        struct tuner_run first, again;
        struct tuner_store_job *jobs = NULL;
        struct util_error err = {0};
        size_t n = 0;
        bool found = false;

        NAME(app_id, "app");
        NAME(job, "job");
        app_of(&app, app_id, 1700000000000);
        e = executor(app_id, "1", 1700000000500, 100, 150, 1000);
        memset(&first, 0, sizeof(first));
        memset(&again, 0, sizeof(again));
        put_executor(&e);
        put_app(job, &app);
        first = one_run(job);
        put_executor(&e);
        put_app(job, &app);
        put_executor(&e);
        again = one_run(job);
        cr_assert(same_run(&first, &again), "a second ingest changed the run");
        cr_assert_eq(again.executors, 1);
        cr_assert_eq(again.stages, 2);

        cr_assert_eq(tuner_store_jobs(store, &jobs, &n, &err), 0, "jobs: %s", err.text);
        for (size_t i = 0; i < n; i++)
                if (strcmp(jobs[i].job, job) == 0) {
                        found = true;
                        cr_assert_eq(jobs[i].runs, 1);
                        cr_assert_eq(jobs[i].last_start_ms, 1700000000000);
                }
        cr_assert(found, "%s not among %zu jobs", job, n);
        free(jobs);
        tuner_app_free(&app);
}

Test(store, job_flag_overrides_the_event_log)
{
        char app_id[128], job[128], other[128];
        struct tuner_app app;
        struct tuner_run *runs = NULL;

        NAME(app_id, "app");
        NAME(job, "flag");
        NAME(other, "conf");
        app_of(&app, app_id, 1700000000000);
        put_app(other, &app);
        set_job(app_id, job);
        put_app(other, &app); /* ingested again without --job: the flag's job stays */
        cr_assert_str_eq(one_run(job).app_id, app_id);
        cr_assert_eq(runs_of(other, 0, &runs), 0);
        free(runs);
        tuner_app_free(&app);
}

Test(store, a_job_alone_is_no_run)
{
        char app_id[128], job[128];
        struct tuner_run *runs = NULL;

        NAME(app_id, "app");
        NAME(job, "job");
        set_job(app_id, job);
        cr_assert_eq(runs_of(job, 0, &runs), 0, "a run without a report or an event log");
        free(runs);
}

Test(store, rollback_leaves_nothing)
{
        char app_id[128], job[128];
        struct tuner_app app;
        struct tuner_executor e;
        struct tuner_run *runs = NULL;
        struct util_error err = {0};

        NAME(app_id, "app");
        NAME(job, "job");
        app_of(&app, app_id, 1700000000000);
        e = executor(app_id, "1", 1700000000500, 100, 150, 1000);
        cr_assert_eq(tuner_store_begin(store, &err), 0, "begin: %s", err.text);
        put_executor(&e);
        put_app(job, &app);
        set_job(app_id, job);
        cr_assert_eq(tuner_store_rollback(store, &err), 0, "rollback: %s", err.text);
        cr_assert_eq(runs_of(job, 0, &runs), 0, "a rolled back run is in the store");
        free(runs);

        cr_assert_eq(tuner_store_begin(store, &err), 0, "begin: %s", err.text);
        put_executor(&e);
        set_job(app_id, job);
        cr_assert_eq(tuner_store_commit(store, &err), 0, "commit: %s", err.text);
        cr_assert_eq(one_run(job).executors, 1);
        tuner_app_free(&app);
}

/* PostgreSQL refuses bytes that are not UTF-8: both backends store them as '?' */
Test(store, text_that_is_not_utf8)
{
        char app_id[128], job[128];
        struct tuner_app app;
        struct tuner_executor e;
        struct tuner_run run;

        NAME(app_id, "app");
        NAME(job, "job\xff");
        app_of(&app, app_id, 1700000000000);
        app.executors[0].lost = true;
        /* a reason cut in the middle of a character (\xc3\xa9 is e-acute) */
        snprintf(app.executors[0].removed_reason, sizeof(app.executors[0].removed_reason),
                 "gone \xc3\xa9\xc3");
        e = executor(app_id, "1", 1700000000500, 100, 150, 1000);
        snprintf(e.host, sizeof(e.host), "node-\xed\xa0\x80-\xf0\x9f\x98\x80");
        put_executor(&e);
        put_app(job, &app);
        run = one_run(job); /* the lookup is cleaned the same way */
        cr_assert_eq(strcmp(run.job + strlen(run.job) - 5, "-job?"), 0, "%s", run.job);
        cr_assert_eq(run.failure, TUNER_FAIL_EXECUTOR_LOST);
        cr_assert(strstr(run.failure_detail, "gone \xc3\xa9?"), "%s", run.failure_detail);
        tuner_app_free(&app);
}

Test(store, bad_arguments)
{
        struct tuner_executor e = executor("", "1", 1, 1, 1, 1);
        struct util_error err = {0};

        cr_assert_eq(tuner_store_put_executor(store, &e, &err), -EINVAL);
        cr_assert_eq(tuner_store_set_job(store, "app", 0, "", &err), -EINVAL);
        cr_assert_eq(tuner_store_commit(store, &err), -EINVAL, "commit without a transaction");
}

Test(store_open, refuses_what_is_not_a_file)
{
        struct tuner_store *s = NULL;
        struct util_error err = {0};

        cr_assert_lt(tuner_store_open("/dev/null", &s, &err), 0);
        cr_assert_null(s);
        cr_assert_lt(tuner_store_open("/nonexistent-dir/h.db", &s, &err), 0);
        cr_assert_null(s);
        cr_assert_lt(tuner_store_open("", &s, &err), 0);
}

Test(store_open, creates_0600)
{
        char dir[] = "/tmp/test-store-mode.XXXXXX", path[128], cmd[160];
        struct tuner_store *s = NULL;
        struct util_error err = {0};
        struct stat st;

        cr_assert(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/h.db", dir);
        cr_assert_eq(tuner_store_open(path, &s, &err), 0, "%s", err.text);
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
        tuner_store_close(s);
        /* and again, over the existing schema */
        cr_assert_eq(tuner_store_open(path, &s, &err), 0, "%s", err.text);
        tuner_store_close(s);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        cr_assert_eq(system(cmd), 0);
}

/* ---- a db in messages: never a PostgreSQL password */

Test(store_describe, never_the_password)
{
        static const struct {
                const char *db, *want;
                bool postgresql;
        } dbs[] = {
            {"/var/lib/sparkshim/history.db", "/var/lib/sparkshim/history.db", false},
            {"h.db", "h.db", false},
            {"/var/lib/a=b/h.db", "/var/lib/a=b/h.db", false},
            {"./a=b.db", "./a=b.db", false},
            {"/tmp/a\nb.db", "/tmp/a?b.db", false},
            {"postgresql://u:s3cretpw@127.0.0.1:1/x", "postgresql://u:***@127.0.0.1:1/x", true},
            {"postgres://u:s3cretpw@db.example/x", "postgresql://u:***@db.example/x", true},
            {"postgresql://sparkshim@history.example/sparkshim",
             "postgresql://sparkshim@history.example/sparkshim", true},
            {"postgresql://127.0.0.1:1/x?user=u&password=s3cretpw",
             "postgresql://u:***@127.0.0.1:1/x", true},
            {"postgresql://:s3cretpw@[::1]:5433/x", "postgresql://:***@[::1]:5433/x", true},
            {"postgresql://tuner:s3cretpw@/history?host=/run/pg&port=5433",
             "postgresql://tuner:***@/history?host=/run/pg&port=5433", true},
            {"postgresql:///?dbname=host%3Dh%20password%3Ds3cretpw", "postgresql:///***", true},
            {"postgresql://u:s3cretpw@[::1/x", "postgresql://(a URI libpq cannot parse)", true},
            {"postgresql://u:s3cret%zzpw@h/x", "postgresql://(a URI libpq cannot parse)", true},
            {"host=127.0.0.1 port=1 dbname=x user=u password=s3cretpw",
             "host=127.0.0.1 port=1 dbname=x user=u password=***", true},
            {"password = 's3cret pw' host=h dbname='my db'", "host=h dbname='my db' password=***",
             true},
            {"host=h password=s3cretpw bogus", "(key=value pairs libpq cannot parse)", true},
            {"host=h password=s3cretpw nosuch=1", "(key=value pairs libpq cannot parse)", true},
        };
        char buf[256];

        for (size_t i = 0; i < ELEMENTSOF(dbs); i++) {
                cr_expect_eq(tuner_store_is_postgresql(dbs[i].db), dbs[i].postgresql,
                             "%s: PostgreSQL %d, want %d", dbs[i].db,
                             tuner_store_is_postgresql(dbs[i].db), dbs[i].postgresql);
                cr_expect_str_eq(tuner_store_describe(dbs[i].db, buf, sizeof(buf)), dbs[i].want,
                                 "%s: shown as '%s', want '%s'", dbs[i].db, buf, dbs[i].want);
                cr_expect(!strstr(buf, "s3cret"), "%s: shown as '%s'", dbs[i].db, buf);
        }
        /* cut to fit, still terminated */
        cr_expect_str_eq(tuner_store_describe("postgresql://u:s3cretpw@h/x", buf, 12),
                         "postgresql:");
}

Test(store_describe, no_password_in_a_connection_error)
{
        static const char *const dbs[] = {
            "postgresql://u:s3cretpw@127.0.0.1:1/x",
            "host=127.0.0.1 port=1 dbname=x user=u password=s3cretpw",
            "postgresql://u:s3cretpw@[::1/x",
            "postgresql://u:s3cret%zzpw@127.0.0.1:1/x",
            "host=127.0.0.1 password=s3cretpw bogus",
        };

        for (size_t i = 0; i < ELEMENTSOF(dbs); i++) {
                struct tuner_store *s = NULL;
                struct util_error err = {0};

                cr_expect_lt(tuner_store_open(dbs[i], &s, &err), 0, "%s: opened", dbs[i]);
                cr_expect_null(s);
                cr_expect(strstr(err.text, "PostgreSQL: "), "%s: %s", dbs[i], err.text);
                cr_expect(!strstr(err.text, "s3cret"), "%s: %s", dbs[i], err.text);
        }
}

/* ---- report lines */

static char *example_line(void)
{
        char path[512];
        _cleanup_free_ char *text = NULL;
        json_t *doc;
        char *line;

        snprintf(path, sizeof(path), "%s/../../../docs/report-example.json", getenv("FIXTURES"));
        text = read_text(path, NULL);
        cr_assert(text, "%s", path);
        doc = json_loads(text, 0, NULL);
        cr_assert(doc);
        line = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        return line;
}

Test(report_line, example_final_report)
{
        _cleanup_free_ char *line = example_line();
        struct tuner_executor e;
        struct util_error err = {0};

        cr_assert_eq(tuner_report_line(line, strlen(line), &e, &err), 1, "%s", err.text);
        cr_assert_str_eq(e.app_id, "application_1700000000000_0042");
        cr_assert_str_eq(e.executor_id, "3");
        cr_assert_str_eq(e.host, "sparkshim-vm");
        cr_assert_eq(e.cores, 4);
        cr_assert_eq(e.start_ms, INT64_C(1796208833000));
        cr_assert_eq(e.end_ms, INT64_C(1796208840000));
        cr_assert_eq(e.request_millicores, 500);
        cr_assert_eq(e.request_bytes, 1275068416);
        cr_assert_eq(e.memory_peak_bytes, 316915712);
        cr_assert_eq(e.exit_status, 0);
        cr_assert_eq(e.exit_signal, 0);
        cr_assert_eq(e.forced_spills, -1);
        assert_near(e.cpu_seconds, 6.044268, "cpu_seconds");
        assert_near(e.spill_threshold_fraction, 1.0, "spill_threshold_fraction");
        /* the steepest step of the samples: 1132562 us over 1.06953807 s at 0.5 cores */
        assert_near(e.cpu_peak_util,
                    (2132942.0 - 1008370.0) / 1e6 / (2.65755962 - 1.58802155) / 0.5,
                    "cpu_peak_util");
}

static json_t *example_doc(void)
{
        _cleanup_free_ char *line = example_line();
        json_t *doc = json_loads(line, 0, NULL);

        cr_assert(doc);
        return doc;
}

static int line_of(json_t *doc, struct tuner_executor *e, struct util_error *err)
{
        _cleanup_free_ char *line = json_dumps(doc, JSON_COMPACT);

        return tuner_report_line(line, strlen(line), e, err);
}

Test(report_line, samples_blank_and_no_app_are_nothing)
{
        json_t *doc = example_doc();
        struct tuner_executor e;
        struct util_error err = {0};

        cr_assert_eq(tuner_report_line("  \t", 3, &e, &err), 0);
        json_object_set_new(doc, "kind", json_string("sample"));
        cr_assert_eq(line_of(doc, &e, &err), 0);
        json_object_set_new(doc, "kind", json_string("final"));
        json_object_set_new(json_object_get(doc, "identity"), "app_id", json_string(""));
        cr_assert_eq(line_of(doc, &e, &err), 0);
        json_decref(doc);
}

Test(report_line, killed_by_signal)
{
        json_t *doc = example_doc();
        json_t *ex = json_object_get(doc, "exit");
        struct tuner_executor e;
        struct util_error err = {0};

        json_object_set_new(ex, "status", json_integer(137));
        json_object_set_new(ex, "signal", json_integer(9));
        json_object_set_new(ex, "oom_killed", json_true());
        cr_assert_eq(line_of(doc, &e, &err), 1, "%s", err.text);
        cr_assert_eq(e.exit_status, -1);
        cr_assert_eq(e.exit_signal, 9);
        cr_assert(e.oom_killed);
        json_decref(doc);
}

/*
 * The agent's heap after GC (agent.pressure.heap.peak_after_gc_bytes, only with the policy's
 * agent.heap_threshold): read when present, unknown when absent, null, or above the plan's
 * heap (no heap holds more than its maximum: the JVM's figure is not believed then, and the
 * rest of the line still counts); not an integer refuses the line as any other member does.
 */
Test(report_line, heap_after_gc)
{
        static const struct {
                const char *heap; /* JSON of agent.pressure.heap, NULL: pressure null */
                int ret;
                uint64_t want;
        } heaps[] = {
            {NULL, 1, TUNER_UNKNOWN},
            {"null", 1, TUNER_UNKNOWN},
            {"{\"after_gc_bytes\": 1, \"max_bytes\": 1073741824}", 1, TUNER_UNKNOWN},
            {"{\"peak_after_gc_bytes\": 805306368}", 1, UINT64_C(805306368)},
            {"{\"peak_after_gc_bytes\": 1073741824}", 1, UINT64_C(1073741824)},
            {"{\"peak_after_gc_bytes\": 1073741825}", 1, TUNER_UNKNOWN},
            {"{\"peak_after_gc_bytes\": null}", 1, TUNER_UNKNOWN},
            {"{\"peak_after_gc_bytes\": 0}", 1, TUNER_UNKNOWN}, /* no collection seen */
            {"{\"peak_after_gc_bytes\": -1}", -EINVAL, 0},
            {"{\"peak_after_gc_bytes\": \"805306368\"}", -EINVAL, 0},
        };
        struct util_error err = {0};

        for (size_t i = 0; i < ELEMENTSOF(heaps); i++) {
                json_t *doc = example_doc(), *pressure = json_object();
                struct tuner_executor e;
                int r;

                cr_assert(pressure);
                if (heaps[i].heap)
                        json_object_set_new(pressure, "heap",
                                            json_loads(heaps[i].heap, JSON_DECODE_ANY, NULL));
                json_object_set_new(json_object_get(doc, "agent"), "pressure", pressure);
                r = line_of(doc, &e, &err);
                cr_expect_eq(r, heaps[i].ret, "heap %s: %d (%s), expected %d",
                             heaps[i].heap ? heaps[i].heap : "(none)", r, err.text, heaps[i].ret);
                if (r == 1) {
                        cr_expect_eq(e.heap_after_gc_peak_bytes, heaps[i].want,
                                     "heap %s: %" PRIu64 ", expected %" PRIu64,
                                     heaps[i].heap ? heaps[i].heap : "(none)",
                                     e.heap_after_gc_peak_bytes, heaps[i].want);
                        cr_expect_eq(e.memory_peak_bytes, 316915712, "the rest of the line");
                } else {
                        cr_expect(strstr(err.text, "agent.pressure.heap.peak_after_gc_bytes"), "%s",
                                  err.text);
                }
                json_decref(doc);
        }
        /* without the plan's heap there is nothing to hold the figure to: unknown */
        {
                json_t *doc = example_doc();
                struct tuner_executor e;

                json_object_set_new(
                    json_object_get(doc, "agent"), "pressure",
                    json_pack("{s:{s:I}}", "heap", "peak_after_gc_bytes", (json_int_t)805306368));
                json_object_set_new(json_object_get(json_object_get(doc, "plan"), "memory"),
                                    "heap_bytes", json_null());
                cr_assert_eq(line_of(doc, &e, &err), 1, "%s", err.text);
                cr_expect_eq(e.heap_after_gc_peak_bytes, TUNER_UNKNOWN);
                json_decref(doc);
        }
}

Test(report_line, invalid_lines)
{
        static const struct {
                const char *path, *key;
                const char *value; /* JSON */
        } bad[] = {
            {NULL, "schema", "\"sparkshim.report/v2\""},
            {NULL, "kind", "\"other\""},
            {"identity", "app_id", "7"},
            {"identity", "start", "\"yesterday\""},
            {"identity", "wall_seconds", "-1"},
            {"usage", "cpu", "{\"seconds\": \"1\"}"},
            {"exit", "status", "300"},
            {"exit", "signal", "0"},
            {"plan", "memory", "{\"burst_ratio\": 2}"},
            {NULL, "samples", "[1]"},
            {NULL, "exit", "null"},
        };
        struct tuner_executor e;
        struct util_error err = {0};
        char too_long[200];

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *doc = example_doc();
                json_t *obj = bad[i].path ? json_object_get(doc, bad[i].path) : doc;

                json_object_set_new(obj, bad[i].key,
                                    json_loads(bad[i].value, JSON_DECODE_ANY, NULL));
                cr_expect_eq(line_of(doc, &e, &err), -EINVAL, "%s.%s = %s accepted",
                             bad[i].path ? bad[i].path : "", bad[i].key, bad[i].value);
                json_decref(doc);
        }
        cr_assert_eq(tuner_report_line("{\"schema\"", 9, &e, &err), -EINVAL);
        cr_assert(strstr(err.text, "not JSON"), "%s", err.text);
        cr_assert_eq(tuner_report_line("[]", 2, &e, &err), -EINVAL);
        cr_assert_eq(tuner_report_line("{\"a\":1}\0{}", 10, &e, &err), -EINVAL, "NUL in a line");
        memset(too_long, 'x', sizeof(too_long) - 1);
        too_long[sizeof(too_long) - 1] = '\0';
        {
                json_t *doc = example_doc();

                json_object_set_new(json_object_get(doc, "identity"), "app_id",
                                    json_string(too_long));
                cr_assert_eq(line_of(doc, &e, &err), -EINVAL);
                cr_assert(strstr(err.text, "identity.app_id"), "%s", err.text);
                json_decref(doc);
        }
}
