/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event-log reader (tuner/eventlog.h): the line parser on small hand-written events
 * (task failures by reason, lost executors against those the application's end removed,
 * saturation, malformed lines, unknown events, an in-progress log's cut last line), and the
 * readers on real logs that Spark 3.5.9 wrote (tests/unit/fixtures/eventlog: the job of
 * tests/tuner/EventLogJob.java; in the plain one the environment's "Classpath Entries" and
 * "System Properties" were emptied to keep it small), plain and compressed with each codec,
 * one from local-cluster with a lost executor, and a rolling directory made here by cutting
 * the plain one into three files.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <lz4.h>
#include <malloc.h>
#include <unistd.h>
#include <zstd.h>

#include "decompress.h"
#include "eventlog.h"
#include "test_helpers.h"
#include "util.h"

static const char *const app_start =
    "{\"Event\":\"SparkListenerApplicationStart\",\"App Name\":\"job\",\"App ID\":\"app-1\","
    "\"Timestamp\":1000,\"User\":\"u\"}";

static struct tuner_eventlog *el;

static void setup(void)
{
        el = tuner_eventlog_new();
        cr_assert(el);
}

static void teardown(void)
{
        tuner_eventlog_free(el);
}

static void feed(const char *line)
{
        struct util_error err = {0};
        int r = tuner_eventlog_line(el, line, strlen(line), &err);

        cr_assert_eq(r, 0, "line %s: %d (%s)", line, r, err.text);
}

static void feed_fails(const char *line, const char *want)
{
        struct util_error err = {0};
        int r = tuner_eventlog_line(el, line, strlen(line), &err);

        cr_assert_eq(r, -EINVAL, "line %s: %d, want -EINVAL", line, r);
        cr_assert(strstr(err.text, want), "line %s: error \"%s\" does not say \"%s\"", line,
                  err.text, want);
}

static void finish(struct tuner_app *app)
{
        struct util_error err = {0};
        int r = tuner_eventlog_finish(el, app, &err);

        cr_assert_eq(r, 0, "finish: %d (%s)", r, err.text);
}

static void task_end(int stage, const char *reason, const char *extra)
{
        char line[1024];

        snprintf(line, sizeof(line),
                 "{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":%d,\"Stage Attempt ID\":0,"
                 "\"Task End Reason\":{\"Reason\":\"%s\"%s},\"Task Info\":{\"Launch Time\":1000,"
                 "\"Finish Time\":3000,\"Executor ID\":\"1\"},\"Task Metrics\":{\"Executor Run "
                 "Time\":2000,\"JVM GC Time\":100,\"Memory Bytes Spilled\":10}}",
                 stage, reason, extra);
        feed(line);
}

TestSuite(eventlog_line, .init = setup, .fini = teardown);

Test(eventlog_line, task_failures_by_reason)
{
        struct tuner_app app;

        feed(app_start);
        task_end(0, "Success", "");
        task_end(0, "ExceptionFailure", ",\"Class Name\":\"java.lang.OutOfMemoryError\"");
        task_end(0, "ExceptionFailure",
                 ",\"Class Name\":\"org.apache.spark.memory.SparkOutOfMemoryError\"");
        task_end(0, "ExceptionFailure", ",\"Class Name\":\"java.lang.IllegalStateException\"");
        task_end(1, "ExecutorLostFailure", ",\"Executor ID\":\"1\",\"Exit Caused By App\":true");
        task_end(1, "FetchFailed", "");
        task_end(1, "TaskKilled", ",\"Kill Reason\":\"another attempt succeeded\"");
        task_end(1, "TaskCommitDenied", "");
        task_end(1, "Resubmitted", ""); /* counted when it succeeded: not again */
        task_end(1, "SomeFutureReason", "");
        finish(&app);

        cr_expect_eq(app.tasks, 9, "tasks %" PRIu32 ", want 9 (Resubmitted not counted)",
                     app.tasks);
        cr_expect_eq(app.failed_tasks, 6, "failed_tasks %" PRIu32 ", want 6", app.failed_tasks);
        cr_expect_eq(app.killed_tasks, 2, "killed_tasks %" PRIu32 ", want 2", app.killed_tasks);
        cr_expect_eq(app.oom_task_failures, 2, "oom_task_failures %" PRIu32 ", want 2",
                     app.oom_task_failures);
        cr_expect_eq(app.lost_task_failures, 1, "lost_task_failures %" PRIu32 ", want 1",
                     app.lost_task_failures);
        cr_assert_eq(app.n_stages, 2, "n_stages %zu", app.n_stages);
        cr_expect_eq(app.stages[0].failed_tasks, 3, "stage 0 failed %" PRIu32,
                     app.stages[0].failed_tasks);
        cr_expect_eq(app.stages[1].failed_tasks, 3, "stage 1 failed %" PRIu32,
                     app.stages[1].failed_tasks);
        /* metrics of every attempt count (the work was done); durations of successes only */
        cr_expect_eq(app.stages[0].memory_spill_bytes, 40, "stage 0 spill %" PRIu64,
                     app.stages[0].memory_spill_bytes);
        cr_expect_float_eq(app.stages[0].run_seconds, 8.0, 1e-9, "run %g",
                           app.stages[0].run_seconds);
        cr_expect_float_eq(app.gc_seconds, 0.9, 1e-9, "gc %g", app.gc_seconds);
        cr_expect_float_eq(app.stages[0].task_median_seconds, 2.0, 1e-9, "median %g",
                           app.stages[0].task_median_seconds);
        cr_expect(isnan(app.stages[1].task_median_seconds), "stage 1 had no success: median %g",
                  app.stages[1].task_median_seconds);
        cr_expect_str_eq(app.app_id, "app-1");
        cr_expect_str_eq(app.app_name, "job");
        cr_expect_eq(app.start_ms, 1000);
        cr_expect(!app.ended);
        tuner_app_free(&app);
}

Test(eventlog_line, stages_median_and_failure)
{
        struct tuner_app app;
        char line[512];

        feed(app_start);
        feed("{\"Event\":\"SparkListenerStageSubmitted\",\"Stage Info\":{\"Stage ID\":4,"
             "\"Stage Attempt ID\":1,\"Number of Tasks\":200,\"Submission Time\":1500}}");
        for (int d = 1; d <= 4; d++) { /* durations 0.1, 0.2, 0.3, 4 s */
                snprintf(
                    line, sizeof(line),
                    "{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":4,\"Stage Attempt ID\":1,"
                    "\"Task End Reason\":{\"Reason\":\"Success\"},\"Task Info\":{"
                    "\"Launch Time\":1000,\"Finish Time\":%d}}",
                    1000 + (d == 4 ? 4000 : d * 100));
                feed(line);
        }
        feed("{\"Event\":\"SparkListenerStageCompleted\",\"Stage Info\":{\"Stage ID\":4,"
             "\"Stage Attempt ID\":1,\"Number of Tasks\":200,\"Submission Time\":1500,"
             "\"Completion Time\":9000,\"Failure Reason\":\"Job aborted\"}}");
        feed("{\"Event\":\"SparkListenerJobStart\",\"Job ID\":0}");
        feed("{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":0,\"Job Result\":{\"Result\":"
             "\"JobFailed\",\"Exception\":{\"Message\":\"x\"}}}");
        finish(&app);
        cr_assert_eq(app.n_stages, 1);
        cr_expect_eq(app.stages[0].stage_id, 4);
        cr_expect_eq(app.stages[0].attempt, 1);
        cr_expect_eq(app.stages[0].tasks, 200);
        cr_expect(app.stages[0].failed, "a stage with a Failure Reason failed");
        cr_expect_eq(app.stages[0].submit_ms, 1500);
        cr_expect_eq(app.stages[0].complete_ms, 9000);
        cr_expect_float_eq(app.stages[0].task_median_seconds, 0.25, 1e-9, "median %g",
                           app.stages[0].task_median_seconds);
        cr_expect_float_eq(app.stages[0].task_max_seconds, 4.0, 1e-9, "max %g",
                           app.stages[0].task_max_seconds);
        cr_expect_eq(app.jobs, 1);
        cr_expect_eq(app.failed_jobs, 1);
        tuner_app_free(&app);
}

static const struct tuner_app_executor *executor(const struct tuner_app *app, const char *id)
{
        for (size_t i = 0; i < app->n_executors; i++)
                if (strcmp(app->executors[i].executor_id, id) == 0)
                        return &app->executors[i];
        cr_assert_fail("no executor %s", id);
        return NULL;
}

Test(eventlog_line, lost_executors_and_the_end)
{
        struct tuner_app app;
        const struct tuner_app_executor *e;

        feed(app_start);
        for (int i = 1; i <= 4; i++) {
                char line[256];

                snprintf(line, sizeof(line),
                         "{\"Event\":\"SparkListenerExecutorAdded\",\"Timestamp\":%d,\"Executor "
                         "ID\":\"%d\",\"Executor Info\":{\"Host\":\"h\",\"Total Cores\":4}}",
                         1000 + i, i);
                feed(line);
        }
        /* 1: lost mid-application (the container was OOM-killed) */
        feed("{\"Event\":\"SparkListenerExecutorRemoved\",\"Timestamp\":2000,\"Executor ID\":\"1\","
             "\"Removed Reason\":\"Container killed by YARN for exceeding physical memory "
             "limits. 137\"}");
        /* 2: dynamic allocation's idle release */
        feed("{\"Event\":\"SparkListenerExecutorRemoved\",\"Timestamp\":2100,\"Executor ID\":\"2\","
             "\"Removed Reason\":\"Executor killed by driver.\"}");
        /* 3: graceful decommission */
        feed("{\"Event\":\"SparkListenerExecutorRemoved\",\"Timestamp\":2200,\"Executor ID\":\"3\","
             "\"Removed Reason\":\"Executor decommission: scaling down\"}");
        feed(
            "{\"Event\":\"SparkListenerStageExecutorMetrics\",\"Executor ID\":\"4\",\"Stage ID\":0,"
            "\"Stage Attempt ID\":0,\"Executor Metrics\":{\"JVMHeapMemory\":500,"
            "\"JVMOffHeapMemory\":70,\"ProcessTreeJVMRSSMemory\":900,"
            "\"ProcessTreeOtherRSSMemory\":100}}");
        feed(
            "{\"Event\":\"SparkListenerStageExecutorMetrics\",\"Executor ID\":\"4\",\"Stage ID\":1,"
            "\"Stage Attempt ID\":0,\"Executor Metrics\":{\"JVMHeapMemory\":300,"
            "\"JVMOffHeapMemory\":80,\"ProcessTreeJVMRSSMemory\":0}}");
        /* the driver of a cluster-mode application: metrics, but no executor */
        feed("{\"Event\":\"SparkListenerStageExecutorMetrics\",\"Executor ID\":\"driver\","
             "\"Stage ID\":1,\"Stage Attempt ID\":0,\"Executor Metrics\":{\"JVMHeapMemory\":300}}");
        feed("{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":5000}");
        /* 4: ended by the application's end (a standalone executor's exit 143 after TERM) */
        feed("{\"Event\":\"SparkListenerExecutorRemoved\",\"Timestamp\":5001,\"Executor ID\":\"4\","
             "\"Removed Reason\":\"Command exited with code 143\"}");
        finish(&app);

        cr_assert_eq(app.n_executors, 4);
        e = executor(&app, "1");
        cr_expect(e->lost, "executor 1: not lost");
        cr_expect_eq(e->removed_ms, 2000);
        cr_expect_eq(e->cores, 4);
        cr_expect_eq(e->added_ms, 1001);
        cr_expect(strstr(e->removed_reason, "physical memory"), "reason %s", e->removed_reason);
        cr_expect_eq(e->jvm_heap_peak, TUNER_UNKNOWN, "no metrics: unknown, not 0");
        e = executor(&app, "2");
        cr_expect(!e->lost, "executor 2 (idle release) lost");
        cr_expect_eq(e->removed_ms, 2100);
        e = executor(&app, "3");
        cr_expect(!e->lost, "executor 3 (decommission) lost");
        e = executor(&app, "4");
        cr_expect(!e->lost, "executor 4 (the app's end) lost");
        cr_expect_eq(e->removed_ms, 0, "removed after the end: removed_ms %" PRId64, e->removed_ms);
        cr_expect_eq(e->jvm_heap_peak, 500);
        cr_expect_eq(e->jvm_offheap_peak, 80);
        cr_expect_eq(e->rss_peak, 1000);
        cr_expect(app.ended);
        cr_expect_eq(app.end_ms, 5000);
        tuner_app_free(&app);
}

Test(eventlog_line, counters_saturate)
{
        struct tuner_app app;
        char line[512];

        feed(app_start);
        for (int i = 0; i < 3; i++) {
                snprintf(
                    line, sizeof(line),
                    "{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":0,\"Stage Attempt ID\":0,"
                    "\"Task End Reason\":{\"Reason\":\"Success\"},\"Task Metrics\":{"
                    "\"Disk Bytes Spilled\":%" PRId64 ",\"Memory Bytes Spilled\":-1,"
                    "\"Shuffle Write Metrics\":{\"Shuffle Bytes Written\":%" PRId64 "}}}",
                    INT64_MAX, INT64_MAX);
                feed(line);
        }
        feed("{\"Event\":\"SparkListenerStageSubmitted\",\"Stage Info\":{\"Stage ID\":0,"
             "\"Number of Tasks\":99999999999}}");
        finish(&app);
        cr_assert_eq(app.n_stages, 1);
        cr_expect_eq(app.stages[0].disk_spill_bytes, UINT64_MAX, "disk spill %" PRIu64,
                     app.stages[0].disk_spill_bytes);
        cr_expect_eq(app.stages[0].shuffle_write_bytes, UINT64_MAX);
        cr_expect_eq(app.stages[0].memory_spill_bytes, 0, "a negative figure adds nothing");
        cr_expect_eq(app.stages[0].tasks, UINT32_MAX);
        tuner_app_free(&app);
}

Test(eventlog_line, malformed_lines)
{
        feed_fails("not json", "not JSON");
        feed_fails("[1,2]", "not a JSON object");
        feed_fails("{\"Event\":3}", "no \"Event\" string");
        feed_fails("{\"event\":\"SparkListenerTaskEnd\"}", "no \"Event\" string");
        feed_fails("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":\"0\"}",
                   "SparkListenerTaskEnd: \"Stage ID\" is a string; want an integer");
        feed_fails("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":0}",
                   "SparkListenerTaskEnd: no \"Task End Reason\"");
        feed_fails("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":-2,\"Task End Reason\":{}}",
                   "\"Stage ID\" -2");
        feed_fails("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":0,\"Task End Reason\":"
                   "{\"Reason\":\"Success\"},\"Task Metrics\":{\"JVM GC Time\":1.5}}",
                   "\"JVM GC Time\" is a real number; want an integer");
        feed_fails("{\"Event\":\"SparkListenerApplicationStart\",\"App ID\":\"\"}",
                   "\"App ID\" of 0 bytes");
        feed_fails("{\"Event\":\"SparkListenerEnvironmentUpdate\",\"Spark Properties\":"
                   "{\"spark.x\":1}}",
                   "\"Spark Properties\".\"spark.x\" is not a string");
        feed_fails("{\"Event\":\"SparkListenerExecutorAdded\",\"Executor ID\":"
                   "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}",
                   "\"Executor ID\" of 70 bytes");
        feed_fails("{\"Event\":\"SparkListenerJobEnd\",\"Job Result\":[]}",
                   "\"Job Result\" is an array; want an object");
        feed_fails("{\"Event\":\"SparkListenerLogStart\"} trailing", "not JSON");
}

Test(eventlog_line, unknown_events_and_fields_ignored)
{
        struct util_error err = {0};
        struct tuner_app app;

        feed("{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"4.0.4\"}");
        feed("{\"Event\":\"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart\","
             "\"executionId\":0,\"Stage ID\":\"not ours\"}");
        feed("{\"Event\":\"SparkListenerSomethingNew\",\"x\":[1,2,3]}");
        cr_expect_eq(tuner_eventlog_finish(el, &app, &err), -EINVAL,
                     "no ApplicationStart: not an application's log");
        cr_expect(strstr(err.text, "SparkListenerApplicationStart"), "%s", err.text);
        feed(app_start);
        feed("{\"Event\":\"SparkListenerEnvironmentUpdate\",\"Spark Properties\":{\"spark.b\":"
             "\"2\",\"spark.a\":\"1\"},\"Unknown Section\":{}}");
        feed("{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":2000,\"ExitCode\":0}");
        finish(&app);
        cr_expect_str_eq(app.spark_version, "4.0.4");
        cr_expect_str_eq(app.conf_json, "{\"spark.a\":\"1\",\"spark.b\":\"2\"}");
        cr_expect_eq(app.n_stages, 0);
        cr_expect_eq(app.tasks, 0);
        tuner_app_free(&app);
}

Test(eventlog_line, properties_as_pairs_and_app_id_from_conf)
{
        struct tuner_app app;

        feed("{\"Event\":\"SparkListenerApplicationStart\",\"App Name\":\"n\",\"Timestamp\":1}");
        feed("{\"Event\":\"SparkListenerEnvironmentUpdate\",\"Spark Properties\":"
             "[[\"spark.app.id\",\"app-from-conf\"]]}");
        finish(&app);
        cr_expect_str_eq(app.app_id, "app-from-conf");
        cr_expect_str_eq(app.conf_json, "{\"spark.app.id\":\"app-from-conf\"}");
        tuner_app_free(&app);
}

/* ---- only the members read become a tree ---- */

/* Every field a handler reads survives the copy of the members read, in any order, escaped
 * keys as jansson reads them, the last of duplicates; what is not read is not parsed. */
Test(eventlog_line, members_read_wherever_they_are)
{
        struct tuner_app app;

        feed(app_start);
        feed(
            "{\"Accumulables\":[{\"ID\":1,\"Value\":1e999,\"Big\":123456789012345678901234567890}],"
            "\"Task Metrics\":{\"Updated Blocks\":[[[[{}]]]],\"Executor Run Time\":2000,"
            "\"Shuffle Read Metrics\":{\"Fetch Wait Time\":[],\"Remote Bytes Read\":7}},"
            "\"Stage Attempt ID\":0,\"Stage ID\":9,\"Stage\\u0020ID\":3,"
            "\"Task End Reason\":{\"Reason\":\"Success\",\"Stack Trace\":[{\"x\":\"\\u0000\"}]},"
            "\"Task Info\":{\"Accumulables\":[{},{},{}],\"Launch Time\":1000,"
            "\"Finish Time\":2500,\"Executor ID\":\"1\"},\"Event\":\"SparkListenerTaskEnd\"}");
        feed("{\"Event\":\"SparkListenerEnvironmentUpdate\",\"JVM Information\":{\"a\":[1,2]},"
             "\"Spark Properties\":[[\"spark.b\",\"1\"],[\"spark.a\",\"0\"],[\"spark.b\",\"2\"]]}");
        finish(&app);
        cr_assert_eq(app.n_stages, 1, "n_stages %zu", app.n_stages);
        cr_expect_eq(app.stages[0].stage_id, 3, "stage %" PRId32 ": the escaped duplicate is last",
                     app.stages[0].stage_id);
        cr_expect_eq(app.stages[0].shuffle_read_bytes, 7);
        cr_expect_float_eq(app.stages[0].run_seconds, 2.0, 1e-9, "run %g",
                           app.stages[0].run_seconds);
        cr_expect_float_eq(app.stages[0].task_median_seconds, 1.5, 1e-9, "median %g",
                           app.stages[0].task_median_seconds);
        cr_expect_str_eq(app.conf_json, "{\"spark.a\":\"0\",\"spark.b\":\"2\"}");
        tuner_app_free(&app);
}

/* A container where a scalar (or an array where an object) is read is still reported by its
 * type; a pair of three is still no pair. */
Test(eventlog_line, types_of_what_is_read_survive)
{
        feed_fails("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":{\"a\":[1]}}",
                   "\"Stage ID\" is an object; want an integer");
        feed_fails("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":0,\"Task End Reason\":"
                   "{\"Reason\":[\"Success\"]}}",
                   "\"Reason\" is an array; want a string");
        feed_fails("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":0,\"Task End Reason\":"
                   "{\"Reason\":\"Success\"},\"Task Info\":[{\"Launch Time\":1}]}",
                   "\"Task Info\" is an array; want an object");
        feed_fails("{\"Event\":\"SparkListenerEnvironmentUpdate\",\"Spark Properties\":"
                   "[[\"spark.a\",\"1\",\"x\"]]}",
                   "\"Spark Properties\"[0] is not a [key, value] pair");
        feed_fails("{\"Event\":\"SparkListenerEnvironmentUpdate\",\"Spark Properties\":"
                   "[[\"spark.a\",[\"1\"]]]}",
                   "\"Spark Properties\"[0] is not a [key, value] pair");
        feed_fails("{\"Event\":\"SparkListenerEnvironmentUpdate\",\"Spark Properties\":"
                   "{\"spark.x\":{\"y\":\"1\"}}}",
                   "\"Spark Properties\".\"spark.x\" is not a string");
        feed_fails("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":99999999999999999999}",
                   "not JSON");
}

/* jansson's bytes, live at most at once */
static size_t jansson_live, jansson_peak;

static void *counting_malloc(size_t size)
{
        void *p = malloc(size);

        if (p) {
                jansson_live += malloc_usable_size(p);
                if (jansson_live > jansson_peak)
                        jansson_peak = jansson_live;
        }
        return p;
}

static void counting_free(void *p)
{
        if (p)
                jansson_live -= malloc_usable_size(p);
        free(p);
}

/* An event of just under 8 MiB whose unread members are 8 MiB of {} (jansson: 650 MB for a
 * tree of the whole line), then of [] in an object read: the tree is of what is read. */
Test(eventlog_line, a_line_of_8_mib_costs_no_tree_of_it)
{
        static const char *const forms[][3] = {
            {"{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":0,\"Task End Reason\":{\"Reason\":"
             "\"Success\"},\"Task Info\":{\"Launch Time\":1,\"Accumulables\":[",
             "{}", "]}}"},
            {"{\"Event\":\"SparkListenerStageCompleted\",\"Stage Info\":{\"Stage ID\":1,"
             "\"RDD Info\":[",
             "[]", "]}}"},
        };
        const size_t size = (8 << 20) - 4096;
        char *line = malloc(size + 1);
        struct tuner_app app;

        cr_assert(line);
        json_set_alloc_funcs(counting_malloc, counting_free);
        feed(app_start);
        for (size_t f = 0; f < ELEMENTSOF(forms); f++) {
                size_t n = strlen(forms[f][0]), tail = strlen(forms[f][2]);
                struct util_error err = {0};
                int r;

                memcpy(line, forms[f][0], n);
                while (n + 3 + tail < size) {
                        memcpy(line + n, forms[f][1], 2);
                        line[n + 2] = ',';
                        n += 3;
                }
                memcpy(line + n - 1, forms[f][2], tail); /* over the last ',' */
                n += tail - 1;
                jansson_live = jansson_peak = 0;
                r = tuner_eventlog_line(el, line, n, &err);
                cr_expect_eq(r, 0, "a line of %zu bytes: %d (%s)", n, r, err.text);
                cr_expect_lt(jansson_peak, (size_t)1 << 20,
                             "a line of %zu bytes: jansson held %zu bytes at once", n,
                             jansson_peak);
        }
        json_set_alloc_funcs(malloc, free);
        free(line);
        finish(&app);
        cr_expect_eq(app.tasks, 1);
        cr_expect_eq(app.n_stages, 2);
        tuner_app_free(&app);
}

Test(eventlog_line, spark_properties_bounded)
{
        size_t entries = 16385, cap = entries * 16 + 128, n;
        char *line = malloc(cap);
        struct util_error err = {0};
        int r;

        cr_assert(line);
        n = (size_t)snprintf(
            line, cap, "{\"Event\":\"SparkListenerEnvironmentUpdate\",\"Spark Properties\":{");
        for (size_t i = 0; i < entries; i++)
                n += (size_t)snprintf(line + n, cap - n, "%s\"k%zu\":\"\"", i ? "," : "", i);
        n += (size_t)snprintf(line + n, cap - n, "}}");
        r = tuner_eventlog_line(el, line, n, &err);
        cr_expect_eq(r, -EFBIG, "%d (%s)", r, err.text);
        cr_expect(strstr(err.text, "\"Spark Properties\" of more than 16384 entries; allowed: up "
                                   "to 16384"),
                  "%s", err.text);
        /* one fewer is read */
        n = (size_t)snprintf(
            line, cap, "{\"Event\":\"SparkListenerEnvironmentUpdate\",\"Spark Properties\":[");
        for (size_t i = 0; i + 1 < entries; i++)
                n += (size_t)snprintf(line + n, cap - n, "%s[\"k%zu\",\"\"]", i ? "," : "", i);
        n += (size_t)snprintf(line + n, cap - n, "]}");
        r = tuner_eventlog_line(el, line, n, &err);
        cr_expect_eq(r, 0, "%d (%s)", r, err.text);
        free(line);
}

/* ---- files ---- */

static char tmpdir[] = "/tmp/test-eventlog.XXXXXX";

static void files_setup(void)
{
        cr_assert(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void files_teardown(void)
{
        char cmd[256];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        cr_expect_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *data, size_t len)
{
        FILE *f = fopen(path, "we");

        cr_assert(f, "%s: %s", path, strerror(errno));
        cr_assert_eq(fwrite(data, 1, len, f), len);
        cr_assert_eq(fclose(f), 0);
}

static void read_ok(const char *path, struct tuner_app *app)
{
        struct util_error err = {0};
        int r = tuner_eventlog_read(path, app, &err);

        cr_assert_eq(r, 0, "%s: %d (%s)", path, r, err.text);
}

TestSuite(eventlog_file, .init = files_setup, .fini = files_teardown);

Test(eventlog_file, in_progress_cut_last_line)
{
        char path[512], text[2048];
        struct tuner_app app;
        struct util_error err = {0};
        int n;

        n = snprintf(text, sizeof(text),
                     "{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"3.5.9\"}\n%s\n"
                     "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":0}\n"
                     "{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":0,\"Sta",
                     app_start);
        snprintf(path, sizeof(path), "%s/app-1.inprogress", tmpdir);
        write_file(path, text, (size_t)n);
        read_ok(path, &app);
        cr_expect_eq(app.jobs, 1);
        cr_expect_eq(app.tasks, 0);
        cr_expect(!app.ended);
        cr_expect(tuner_eventlog_detect(path), "detect %s", path);
        tuner_app_free(&app);

        /* the same text as a finished log: the cut line is an error naming file and line */
        snprintf(path, sizeof(path), "%s/app-1", tmpdir);
        write_file(path, text, (size_t)n);
        cr_expect_eq(tuner_eventlog_read(path, &app, &err), -EINVAL);
        cr_expect(strstr(err.text, "/app-1:4: not JSON"), "%s", err.text);

        /* a bad line in the middle of an in-progress log is an error all the same */
        n = snprintf(text, sizeof(text), "%s\n{oops\n%s\n", app_start, app_start);
        snprintf(path, sizeof(path), "%s/app-2.inprogress", tmpdir);
        write_file(path, text, (size_t)n);
        cr_expect_eq(tuner_eventlog_read(path, &app, &err), -EINVAL);
        cr_expect(strstr(err.text, "app-2.inprogress:2: not JSON"), "%s", err.text);
}

Test(eventlog_file, errors)
{
        char path[512];
        struct tuner_app app;
        struct util_error err = {0};

        snprintf(path, sizeof(path), "%s/missing", tmpdir);
        cr_expect_eq(tuner_eventlog_read(path, &app, &err), -ENOENT);
        cr_expect(strstr(err.text, "missing: No such file"), "%s", err.text);
        cr_expect(!tuner_eventlog_detect(path));

        snprintf(path, sizeof(path), "%s/app.lz4", tmpdir);
        write_file(path, "LZ4Blocc\x25\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00x", 22);
        cr_expect_eq(tuner_eventlog_read(path, &app, &err), -EINVAL);
        cr_expect(strstr(err.text, "app.lz4: not lz4-java block data"), "%s", err.text);

        snprintf(path, sizeof(path), "%s/app.snappy", tmpdir);
        write_file(path, "\x82SNAPPY\0\0\0\0\1\0\0\0\1\xff\xff\xff\xff", 20);
        cr_expect_eq(tuner_eventlog_read(path, &app, &err), -EINVAL);
        cr_expect(strstr(err.text, "app.snappy: snappy chunk of 4294967295 bytes"), "%s", err.text);

        snprintf(path, sizeof(path), "%s/app.zstd", tmpdir);
        write_file(path, "not zstd at all", 15);
        cr_expect_eq(tuner_eventlog_read(path, &app, &err), -EINVAL);
        cr_expect(strstr(err.text, "app.zstd: corrupt zstd data"), "%s", err.text);
        cr_expect(!tuner_eventlog_detect(path));

        snprintf(path, sizeof(path), "%s/empty", tmpdir);
        write_file(path, "", 0);
        cr_expect_eq(tuner_eventlog_read(path, &app, &err), -EINVAL);
        cr_expect(strstr(err.text, "no SparkListenerApplicationStart"), "%s", err.text);
}

Test(eventlog_file, line_bound)
{
        struct tuner_stream *s;
        struct util_error err = {0};
        const char *line;
        size_t len;
        bool terminated;
        int fd = memfd_create("lines", MFD_CLOEXEC);

        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, "short\n0123456789abcdef\n", 23), 23);
        cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
        cr_assert_eq(tuner_stream_open_fd(fd, "mem", TUNER_CODEC_PLAIN, false, &s, &err), 0);
        tuner_stream_set_limits(s, 8, 1 << 20);
        cr_expect_eq(tuner_stream_line(s, &line, &len, &terminated, &err), 1);
        cr_expect_str_eq(line, "short");
        cr_expect_eq(tuner_stream_line(s, &line, &len, &terminated, &err), -EFBIG);
        cr_expect(strstr(err.text, "mem:2: a line longer than 8 bytes"), "%s", err.text);
        tuner_stream_free(s);
}

Test(eventlog_file, total_bound)
{
        struct tuner_stream *s;
        struct util_error err = {0};
        const char *line;
        size_t len;
        bool terminated;
        char path[512];
        int r;

        fixture_path("eventlog/spark-3.5.9-zstd.zstd", path, sizeof(path));
        cr_assert_eq(tuner_stream_open(path, false, &s, &err), 0, "%s", err.text);
        tuner_stream_set_limits(s, 1 << 20, 100000); /* the log is ~156 KB decompressed */
        while ((r = tuner_stream_line(s, &line, &len, &terminated, &err)) > 0)
                ;
        cr_expect_eq(r, -EFBIG, "%d (%s)", r, err.text);
        cr_expect(strstr(err.text, "spark-3.5.9-zstd.zstd: more than 100000 bytes once "
                                   "decompressed"),
                  "%s", err.text);
        tuner_stream_free(s);
}

/* ---- compression bombs: the expansion bound counts what was read, never st_size ---- */

static const char log_start[] =
    "{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"3.5.9\"}\n";

/* Append to fd one zstd frame of the log's first two lines (unless !head) and then `blank`
 * newlines. */
static void zstd_blank(int fd, bool head_too, uint64_t blank)
{
        static char newlines[1 << 20];
        ZSTD_CCtx *cctx = ZSTD_createCCtx();
        size_t out_size = ZSTD_CStreamOutSize();
        char *out = malloc(out_size);
        char head[512];
        int n = head_too ? snprintf(head, sizeof(head), "%s%s\n", log_start, app_start) : 0;

        cr_assert(cctx && out);
        memset(newlines, '\n', sizeof(newlines));
        for (uint64_t left = blank + 1;;) {
                ZSTD_inBuffer in;
                bool last = left == 0;
                size_t z;

                if (left == blank + 1) {
                        in = (ZSTD_inBuffer){head, (size_t)n, 0};
                        left--;
                } else {
                        size_t chunk = left < sizeof(newlines) ? (size_t)left : sizeof(newlines);

                        in = (ZSTD_inBuffer){newlines, chunk, 0};
                        left -= chunk;
                        last = left == 0;
                }
                do {
                        ZSTD_outBuffer o = {out, out_size, 0};

                        z = ZSTD_compressStream2(cctx, &o, &in,
                                                 last ? ZSTD_e_end : ZSTD_e_continue);
                        cr_assert(!ZSTD_isError(z), "zstd: %s", ZSTD_getErrorName(z));
                        cr_assert_eq(write(fd, out, o.pos), (ssize_t)o.pos);
                } while (last ? z != 0 : in.pos < in.size);
                if (last)
                        break;
        }
        free(out);
        ZSTD_freeCCtx(cctx);
}

static void zstd_bomb(int fd, uint64_t blank)
{
        zstd_blank(fd, true, blank);
}

static void put_le32(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

/* "<n> bytes decompressed from <m> compressed bytes" of the refusal */
static void expansion_figures(const char *text, uint64_t *ret_out, uint64_t *ret_in)
{
        const char *p = strstr(text, " bytes decompressed from ");

        cr_assert(p, "not the expansion refusal: %s", text);
        while (p > text && p[-1] >= '0' && p[-1] <= '9')
                p--;
        cr_assert_eq(sscanf(p, "%" SCNu64 " bytes decompressed from %" SCNu64, ret_out, ret_in), 2,
                     "%s", text);
}

static uint64_t allocated(const char *path)
{
        struct stat st;

        cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
        return (uint64_t)st.st_blocks * 512;
}

/* A 1 GiB bomb of blank lines (~40 KB of zstd) made 1 GiB longer by a hole (truncate -s): its
 * size would allow 1 TB; what was read allows a few MB. */
Test(eventlog_file, zstd_bomb_with_a_sparse_tail)
{
        char path[512];
        struct tuner_app app;
        struct util_error err = {0};
        uint64_t out, in, on_disk;
        struct stat st;
        int fd, r;

        snprintf(path, sizeof(path), "%s/bomb.zstd", tmpdir);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
        zstd_bomb(fd, UINT64_C(1) << 30);
        cr_assert_eq(fstat(fd, &st), 0);
        cr_assert_eq(ftruncate(fd, st.st_size + (INT64_C(1) << 30)), 0);
        cr_assert_eq(close(fd), 0);
        on_disk = allocated(path);

        r = tuner_eventlog_read(path, &app, &err);
        cr_assert_eq(r, -EFBIG, "%s: %d (%s), want -EFBIG (the expansion bound)", path, r,
                     err.text);
        cr_expect(strstr(err.text, "bomb.zstd: ") &&
                      strstr(err.text, " x); allowed: up to 1000 x the compressed bytes + 64 MiB"),
                  "%s", err.text);
        expansion_figures(err.text, &out, &in);
        cr_expect_leq(in, on_disk, "%" PRIu64 " compressed bytes counted, %" PRIu64 " on disk", in,
                      on_disk);
        /* refused at the bound, within one output chunk of zstd's */
        cr_expect_leq(out, 1000 * in + (UINT64_C(64) << 20) + ZSTD_DStreamOutSize(),
                      "%" PRIu64 " bytes decompressed from %" PRIu64, out, in);
        cr_expect_lt(out, UINT64_C(128) << 20, "%" PRIu64 " bytes decompressed", out);
}

/* A skippable frame whose 256 MiB are a hole, then a bomb: the decoder reads (and skips) the
 * hole's zeros, but the file holds a few KB; only those count. */
Test(eventlog_file, zstd_bomb_after_a_hole)
{
        char path[512];
        struct tuner_app app;
        struct util_error err = {0};
        uint32_t hole = UINT32_C(256) << 20;
        uint8_t skippable[8];
        uint64_t out, in;
        int fd, r;

        put_le32(skippable, 0x184d2a50); /* a skippable frame's magic, then its length */
        put_le32(skippable + 4, hole);
        snprintf(path, sizeof(path), "%s/hole.zstd", tmpdir);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
        cr_assert_eq(write(fd, skippable, sizeof(skippable)), (ssize_t)sizeof(skippable));
        cr_assert_eq(lseek(fd, hole, SEEK_CUR), (off_t)sizeof(skippable) + hole);
        zstd_bomb(fd, UINT64_C(1) << 30);
        cr_assert_eq(close(fd), 0);

        r = tuner_eventlog_read(path, &app, &err);
        cr_assert_eq(r, -EFBIG, "%s: %d (%s), want -EFBIG (the expansion bound)", path, r,
                     err.text);
        expansion_figures(err.text, &out, &in);
        cr_expect_leq(in, allocated(path),
                      "%" PRIu64 " compressed bytes counted of %" PRIu64 " on disk", in,
                      allocated(path));
        cr_expect_lt(out, UINT64_C(128) << 20, "%" PRIu64 " bytes decompressed", out);
}

/* lz4-java blocks expand at most ~255 times, under the default ratio: the bound, set lower,
 * is checked block by block, against the bytes read and not the file's (sparse) size. */
Test(eventlog_file, lz4_bomb_bound_by_bytes_read)
{
        static char block[1 << 20];
        char path[512], packed[LZ4_COMPRESSBOUND(1 << 20) + 21];
        struct tuner_stream *s;
        struct util_error err = {0};
        const char *line;
        size_t len;
        bool terminated;
        uint64_t out, in;
        int fd, clen, r;

        memset(block, '\n', sizeof(block));
        clen = LZ4_compress_default(block, packed + 21, sizeof(block), sizeof(packed) - 21);
        cr_assert_gt(clen, 0);
        memcpy(packed, "LZ4Block", 8);
        packed[8] = 0x20 | 9;
        put_le32((uint8_t *)packed + 9, (uint32_t)clen);
        put_le32((uint8_t *)packed + 13, sizeof(block));
        put_le32((uint8_t *)packed + 17, tuner_xxh32(block, sizeof(block), 0x9747b28c) & 0xfffffff);
        snprintf(path, sizeof(path), "%s/bomb.lz4", tmpdir);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
        for (int i = 0; i < 64; i++)
                cr_assert_eq(write(fd, packed, (size_t)clen + 21), clen + 21);
        cr_assert_eq(ftruncate(fd, INT64_C(1) << 30), 0);
        cr_assert_eq(close(fd), 0);

        cr_assert_eq(tuner_stream_open(path, false, &s, &err), 0, "%s", err.text);
        tuner_stream_set_expansion(s, 100, UINT64_C(1) << 20);
        while ((r = tuner_stream_line(s, &line, &len, &terminated, &err)) > 0)
                ;
        tuner_stream_free(s);
        cr_assert_eq(r, -EFBIG, "%d (%s)", r, err.text);
        cr_expect(strstr(err.text, "allowed: up to 100 x the compressed bytes + 1 MiB"), "%s",
                  err.text);
        expansion_figures(err.text, &out, &in);
        /* the second block passes 100 x two blocks + 1 MiB */
        cr_expect_eq(out, UINT64_C(2) << 20, "%" PRIu64 " bytes decompressed, want 2 MiB", out);
        cr_expect_eq(in, 2 * (uint64_t)(clen + 21), "%" PRIu64 " compressed bytes counted", in);
}

/* The figures every fixture must give: the job of tests/tuner/EventLogJob.java. */
static void expect_job(const struct tuner_app *app, const char *name)
{
        cr_expect_str_eq(app->app_name, name);
        cr_expect_str_eq(app->spark_version, "3.5.9");
        cr_expect(strncmp(app->app_id, "local-", 6) == 0, "app_id %s", app->app_id);
        cr_expect_eq(app->jobs, 2, "%s: jobs %" PRIu32, name, app->jobs);
        cr_expect_eq(app->tasks, 10, "%s: tasks %" PRIu32, name, app->tasks);
        cr_expect_eq(app->failed_tasks, 1, "%s: failed %" PRIu32, name, app->failed_tasks);
        cr_expect(app->ended);
        cr_assert_eq(app->n_stages, 3, "%s: %zu stages", name, app->n_stages);
        cr_expect_eq(app->stages[0].tasks, 4);
        cr_expect_eq(app->stages[1].tasks, 3);
        cr_expect_eq(app->stages[2].tasks, 2);
        cr_expect_eq(app->stages[0].failed_tasks, 1);
        /* the same job, the same bytes: every run of it spills and shuffles these */
        cr_expect_eq(app->stages[0].memory_spill_bytes, 1346816, "%s: %" PRIu64, name,
                     app->stages[0].memory_spill_bytes);
        cr_expect_eq(app->stages[1].memory_spill_bytes, 1052540, "%s: %" PRIu64, name,
                     app->stages[1].memory_spill_bytes);
        cr_expect_eq(app->stages[0].shuffle_write_bytes, 238182);
        cr_expect_eq(app->stages[1].shuffle_read_bytes, 238182);
        cr_expect(strstr(app->conf_json, "\"spark.shuffle.spill.numElementsForceSpillThreshold\":"
                                         "\"500\""),
                  "%s: conf %.200s", name, app->conf_json);
        cr_assert_eq(app->n_executors, 1);
        cr_expect_str_eq(app->executors[0].executor_id, "driver");
        cr_expect(!app->executors[0].lost);
}

/* A file of dir: path into path (size 600). */
static int create_in(const char *dir, const char *name, char *path)
{
        int fd;

        snprintf(path, 600, "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
        return fd;
}

/*
 * The reviewer's rolling directory: four files of 60 MB of blank lines in ~1.9 KB of zstd
 * each. Each file alone is under 1000 x + 64 MiB; the directory is one input with one slack,
 * so it is refused (naming the directory) after about 64 MiB, not read whole (240 MB; ~270
 * such files reached 16 GiB).
 */
Test(eventlog_file, rolling_directory_of_small_bombs)
{
        char dir[512], path[600], name[64];
        struct tuner_app app;
        struct util_error err = {0};
        uint64_t out, in, on_disk = 0;
        int r;

        snprintf(dir, sizeof(dir), "%s/eventlog_v2_app-1", tmpdir);
        cr_assert_eq(mkdir(dir, 0755), 0);
        for (int i = 1; i <= 4; i++) {
                int fd;

                snprintf(name, sizeof(name), "events_%d_app-1.zstd", i);
                fd = create_in(dir, name, path);
                zstd_blank(fd, i == 1, 60000000);
                cr_assert_eq(close(fd), 0);
                on_disk += allocated(path);
        }

        r = tuner_eventlog_read(dir, &app, &err);
        if (r == 0)
                tuner_app_free(&app);
        cr_assert_eq(r, -EFBIG, "%s: %d (%s), want -EFBIG (one expansion bound for the directory)",
                     dir, r, err.text);
        cr_expect(strncmp(err.text, dir, strlen(dir)) == 0 && err.text[strlen(dir)] == ':' &&
                      strstr(err.text, " compressed bytes of its files, up to ") &&
                      strstr(err.text, "/events_2_app-1.zstd (") &&
                      strstr(err.text, " x); allowed: up to 1000 x the compressed bytes + 64 MiB"),
                  "%s", err.text);
        expansion_figures(err.text, &out, &in);
        cr_expect_leq(in, on_disk, "%" PRIu64 " compressed bytes counted, %" PRIu64 " on disk", in,
                      on_disk);
        cr_expect_leq(out, 1000 * in + (UINT64_C(64) << 20) + ZSTD_DStreamOutSize(),
                      "%" PRIu64 " bytes decompressed from %" PRIu64, out, in);
        cr_expect_lt(out, UINT64_C(80) << 20, "%" PRIu64 " bytes decompressed of 240 MB", out);
}

/* A legitimate rolling directory of six highly compressible files (~13 MB each, ~36 x; the
 * fixture's events then ticks of an unknown event): more than one slack in all, well under
 * the ratio over the directory's compressed bytes, so it is read whole. */
Test(eventlog_file, rolling_directory_highly_compressible)
{
        enum { FILES = 6, TICKS = 200000 };
        char fixture[512], dir[512], path[600], name[64];
        size_t fixture_len, len, cap = 0, packed_cap;
        char *text = NULL, *packed, *real;
        struct tuner_app app;
        struct util_error err = {0};
        uint64_t decompressed = 0, compressed = 0;
        int r;

        fixture_path("eventlog/spark-3.5.9-plain", fixture, sizeof(fixture));
        real = read_text(fixture, &fixture_len);
        cr_assert(real, "%s", fixture);
        snprintf(dir, sizeof(dir), "%s/eventlog_v2_local-1", tmpdir);
        cr_assert_eq(mkdir(dir, 0755), 0);
        cap = fixture_len + (size_t)TICKS * 96;
        text = malloc(cap);
        packed_cap = ZSTD_compressBound(cap);
        packed = malloc(packed_cap);
        cr_assert(text && packed);
        for (int f = 1; f <= FILES; f++) {
                size_t z;
                int fd;

                len = 0;
                if (f == 1) {
                        memcpy(text, real, fixture_len);
                        len = fixture_len;
                }
                for (int i = 0; i < TICKS; i++)
                        len += (size_t)snprintf(text + len, cap - len,
                                                "{\"Event\":\"org.example.Tick\",\"file\":%d,"
                                                "\"tick\":%d,\"time\":%d}\n",
                                                f, i, 1000000 + 7 * i);
                z = ZSTD_compress(packed, packed_cap, text, len, 3);
                cr_assert(!ZSTD_isError(z), "zstd: %s", ZSTD_getErrorName(z));
                snprintf(name, sizeof(name), "events_%d_local-1.zstd", f);
                fd = create_in(dir, name, path);
                cr_assert_eq(write(fd, packed, z), (ssize_t)z);
                cr_assert_eq(close(fd), 0);
                decompressed += len;
                compressed += z;
        }
        free(text);
        free(packed);
        free(real);
        cr_assert_gt(decompressed, TUNER_STREAM_EXPANSION_SLACK, "%" PRIu64 " bytes in all",
                     decompressed);

        r = tuner_eventlog_read(dir, &app, &err);
        cr_assert_eq(r, 0,
                     "%s: %d (%s); %" PRIu64 " bytes from %" PRIu64 " compressed (%" PRIu64 " x)",
                     dir, r, err.text, decompressed, compressed, decompressed / compressed);
        expect_job(&app, "el-default");
        tuner_app_free(&app);
}

/* One ingest run shares one slack (and one total) over its inputs: a glob of single-file bombs
 * gets what the first left, the refusal says to ingest the rest in another run, and a
 * legitimate log after them is still read. Small run figures keep it quick. */
Test(eventlog_file, ingest_run_shares_one_slack)
{
        struct tuner_eventlog_run run = {.slack_max = UINT64_C(16) << 20};
        char a[600], b[600], real[512];
        struct tuner_app app;
        struct util_error err = {0};
        uint64_t spent;
        int fd, r;

        fd = create_in(tmpdir, "a.zstd", a);
        zstd_bomb(fd, UINT64_C(12) << 20);
        cr_assert_eq(close(fd), 0);
        fd = create_in(tmpdir, "b.zstd", b);
        zstd_bomb(fd, UINT64_C(12) << 20);
        cr_assert_eq(close(fd), 0);
        fixture_path("eventlog/spark-3.5.9-zstd.zstd", real, sizeof(real));

        r = tuner_eventlog_read_run(a, &run, &app, &err);
        cr_assert_eq(r, 0, "%s: %d (%s)", a, r, err.text);
        tuner_app_free(&app);
        cr_expect(run.slack > (UINT64_C(11) << 20) && run.slack <= (UINT64_C(12) << 20),
                  "%" PRIu64 " bytes of the run's slack used", run.slack);
        /* alone, b would be read (test above): in this run it has ~4 MiB of slack left */
        r = tuner_eventlog_read_run(b, &run, &app, &err);
        if (r == 0)
                tuner_app_free(&app);
        cr_assert_eq(r, -EFBIG, "%s: %d (%s)", b, r, err.text);
        cr_expect(strstr(err.text, "b.zstd: ") && strstr(err.text, "x the compressed bytes + ") &&
                      strstr(err.text, "what this ingest run's other inputs left of its 16 MiB: "
                                       "ingest it in another run"),
                  "%s", err.text);
        cr_expect_leq(run.slack, UINT64_C(16) << 20, "%" PRIu64, run.slack);
        r = tuner_eventlog_read_run(real, &run, &app, &err);
        cr_assert_eq(r, 0, "%s: %d (%s)", real, r, err.text);
        expect_job(&app, "el-zstd");
        tuner_app_free(&app);

        /* the run's total: past it, an input is refused whole, naming the run's figure */
        spent = run.total;
        run.total_max = spent + 1000;
        r = tuner_eventlog_read_run(real, &run, &app, &err);
        if (r == 0)
                tuner_app_free(&app);
        cr_assert_eq(r, -EFBIG, "%s: %d (%s)", real, r, err.text);
        cr_expect(strstr(err.text, "spark-3.5.9-zstd.zstd: more than the 1000 bytes this ingest "
                                   "run has left of its ") &&
                      strstr(err.text, " decompressed bytes; ingest it in another run"),
                  "%s", err.text);
}

Test(eventlog_file, real_logs_every_codec)
{
        static const char *const codecs[] = {"zstd", "lz4", "snappy", "lzf"};
        char path[512], name[64];
        struct tuner_app app;

        fixture_path("eventlog/spark-3.5.9-plain", path, sizeof(path));
        read_ok(path, &app);
        expect_job(&app, "el-default");
        cr_expect(tuner_eventlog_detect(path));
        tuner_app_free(&app);
        for (size_t i = 0; i < ELEMENTSOF(codecs); i++) {
                snprintf(name, sizeof(name), "eventlog/spark-3.5.9-%s.%s", codecs[i], codecs[i]);
                fixture_path(name, path, sizeof(path));
                read_ok(path, &app);
                snprintf(name, sizeof(name), "el-%s", codecs[i]);
                expect_job(&app, name);
                cr_expect(tuner_eventlog_detect(path), "detect %s", path);
                tuner_app_free(&app);
        }
}

/* The plain fixture cut at event boundaries into a rolling directory of 3 files. */
Test(eventlog_file, rolling_directory_of_a_real_log)
{
        char path[512], dir[512], file[600];
        char *text, *cut[2] = {NULL, NULL};
        size_t len, lines = 0, seen = 0;
        struct tuner_app one, rolled;

        fixture_path("eventlog/spark-3.5.9-plain", path, sizeof(path));
        text = read_text(path, &len);
        cr_assert(text, "%s", path);
        for (size_t i = 0; i < len; i++)
                lines += text[i] == '\n';
        for (size_t i = 0; i < len; i++)
                if (text[i] == '\n') {
                        seen++;
                        if (seen == lines / 3)
                                cut[0] = text + i + 1;
                        if (seen == 2 * lines / 3)
                                cut[1] = text + i + 1;
                }
        cr_assert(cut[0] && cut[1], "%s: %zu lines", path, lines);
        snprintf(dir, sizeof(dir), "%s/eventlog_v2_local-1", tmpdir);
        cr_assert_eq(mkdir(dir, 0755), 0);
        /* out of order on purpose: events_10 after events_2, by number not by name */
        snprintf(file, sizeof(file), "%s/events_1_local-1", dir);
        write_file(file, text, (size_t)(cut[0] - text));
        snprintf(file, sizeof(file), "%s/events_2_local-1", dir);
        write_file(file, cut[0], (size_t)(cut[1] - cut[0]));
        snprintf(file, sizeof(file), "%s/events_10_local-1", dir);
        write_file(file, cut[1], len - (size_t)(cut[1] - text));
        snprintf(file, sizeof(file), "%s/appstatus_local-1", dir);
        write_file(file, "", 0);

        read_ok(path, &one);
        read_ok(dir, &rolled);
        cr_expect(tuner_eventlog_detect(dir));
        cr_expect_str_eq(rolled.app_id, one.app_id);
        cr_expect_eq(rolled.tasks, one.tasks);
        cr_expect_eq(rolled.jobs, one.jobs);
        cr_expect(rolled.ended);
        cr_expect_str_eq(rolled.conf_json, one.conf_json);
        cr_assert_eq(rolled.n_stages, one.n_stages);
        for (size_t i = 0; i < one.n_stages; i++) {
                const struct tuner_stage *a = &rolled.stages[i], *b = &one.stages[i];

                cr_expect(a->stage_id == b->stage_id && a->tasks == b->tasks &&
                              a->failed_tasks == b->failed_tasks &&
                              a->memory_spill_bytes == b->memory_spill_bytes &&
                              a->disk_spill_bytes == b->disk_spill_bytes &&
                              a->shuffle_read_bytes == b->shuffle_read_bytes &&
                              a->shuffle_write_bytes == b->shuffle_write_bytes &&
                              a->run_seconds == b->run_seconds &&
                              a->task_median_seconds == b->task_median_seconds &&
                              a->complete_ms == b->complete_ms,
                          "stage %zu differs between the file and the rolling directory", i);
        }
        tuner_app_free(&rolled);

        /* in progress (appstatus_<id>.inprogress): the last file's cut line is ignored */
        snprintf(file, sizeof(file), "%s/appstatus_local-1", dir);
        cr_assert_eq(unlink(file), 0);
        snprintf(file, sizeof(file), "%s/appstatus_local-1.inprogress", dir);
        write_file(file, "", 0);
        snprintf(file, sizeof(file), "%s/events_10_local-1", dir);
        write_file(file, cut[1], (size_t)(strchr(cut[1], '\n') - cut[1]) / 2);
        read_ok(dir, &rolled);
        cr_expect(!rolled.ended);
        cr_expect_str_eq(rolled.app_id, one.app_id);
        tuner_app_free(&rolled);
        tuner_app_free(&one);
        free(text);
}

/*
 * A real lost executor: EventLogJob on local-cluster[2,1,1024] with "lose-executor" (one
 * executor's JVM halts in job 1), lzf-compressed, executor memory polled every 50 ms with
 * the process tree (tests/tuner/eventlog-spark.sh's lzf form).
 */
Test(eventlog_file, real_lost_executor)
{
        char path[512];
        struct tuner_app app;
        unsigned lost = 0;

        fixture_path("eventlog/spark-3.5.9-local-cluster-lost.lzf", path, sizeof(path));
        read_ok(path, &app);
        cr_expect_str_eq(app.app_id, "app-20261203172559-0000");
        cr_expect_eq(app.tasks, 11, "tasks %" PRIu32, app.tasks);
        cr_expect_eq(app.failed_tasks, 2, "failed %" PRIu32, app.failed_tasks);
        cr_expect_eq(app.lost_task_failures, 1, "lost task failures %" PRIu32,
                     app.lost_task_failures);
        cr_expect_eq(app.oom_task_failures, 0);
        cr_assert_eq(app.n_stages, 3);
        cr_expect_eq(app.stages[2].failed_tasks, 1);
        cr_assert_eq(app.n_executors, 2, "%zu executors", app.n_executors);
        for (size_t i = 0; i < app.n_executors; i++) {
                const struct tuner_app_executor *e = &app.executors[i];

                cr_expect_eq(e->cores, 1);
                cr_expect(e->jvm_heap_peak != TUNER_UNKNOWN && e->jvm_heap_peak > 0,
                          "executor %s: no heap peak", e->executor_id);
                cr_expect(e->rss_peak != TUNER_UNKNOWN && e->rss_peak > e->jvm_heap_peak,
                          "executor %s: RSS peak %" PRIu64 ", heap %" PRIu64, e->executor_id,
                          e->rss_peak, e->jvm_heap_peak);
                if (e->lost) {
                        lost++;
                        cr_expect_str_eq(e->removed_reason, "Command exited with code 1");
                        cr_expect(e->removed_ms > e->added_ms);
                } else {
                        cr_expect_eq(e->removed_ms, 0);
                }
        }
        cr_expect_eq(lost, 1, "%u executors lost, want 1", lost);
        tuner_app_free(&app);
}
