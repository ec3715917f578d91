/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test tool (not installed): read an event log with tuner_eventlog_read() and print the
 * struct tuner_app as one JSON object on stdout, for tests/tuner/eventlog-spark.sh.
 * Unknown figures (NAN, TUNER_UNKNOWN) are null. `--detect PATH` prints true or false.
 * Usage: eventlog-dump [--detect] PATH
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eventlog.h"

static json_t *real(double v)
{
        return isnan(v) ? json_null() : json_real(v);
}

static json_t *u64(uint64_t v)
{
        return v == TUNER_UNKNOWN || v > INT64_MAX ? json_null() : json_integer((json_int_t)v);
}

static json_t *stage_json(const struct tuner_stage *s)
{
        return json_pack("{si si si si so so so so so so so so so so sI sI sb}", "stage_id",
                         s->stage_id, "attempt", s->attempt, "tasks", (int)s->tasks, "failed_tasks",
                         (int)s->failed_tasks, "input_bytes", u64(s->input_bytes),
                         "shuffle_read_bytes", u64(s->shuffle_read_bytes), "shuffle_write_bytes",
                         u64(s->shuffle_write_bytes), "memory_spill_bytes",
                         u64(s->memory_spill_bytes), "disk_spill_bytes", u64(s->disk_spill_bytes),
                         "run_seconds", real(s->run_seconds), "cpu_seconds", real(s->cpu_seconds),
                         "gc_seconds", real(s->gc_seconds), "task_max_seconds",
                         real(s->task_max_seconds), "task_median_seconds",
                         real(s->task_median_seconds), "submit_ms", (json_int_t)s->submit_ms,
                         "complete_ms", (json_int_t)s->complete_ms, "failed", s->failed);
}

static json_t *executor_json(const struct tuner_app_executor *e)
{
        return json_pack("{ss si sI sI ss sb so so so}", "executor_id", e->executor_id, "cores",
                         (int)e->cores, "added_ms", (json_int_t)e->added_ms, "removed_ms",
                         (json_int_t)e->removed_ms, "removed_reason", e->removed_reason, "lost",
                         e->lost, "jvm_heap_peak", u64(e->jvm_heap_peak), "jvm_offheap_peak",
                         u64(e->jvm_offheap_peak), "rss_peak", u64(e->rss_peak));
}

int main(int argc, char **argv)
{
        struct tuner_app app;
        struct util_error err = {0};
        json_t *out, *stages, *executors, *conf;
        int r;

        if (argc == 3 && strcmp(argv[1], "--detect") == 0) {
                puts(tuner_eventlog_detect(argv[2]) ? "true" : "false");
                return 0;
        }
        if (argc != 2) {
                fprintf(stderr, "usage: eventlog-dump [--detect] PATH\n");
                return 2;
        }
        r = tuner_eventlog_read(argv[1], &app, &err);
        if (r < 0) {
                fprintf(stderr, "eventlog-dump: %s\n", err.text);
                return 1;
        }
        stages = json_array();
        for (size_t i = 0; i < app.n_stages; i++)
                json_array_append_new(stages, stage_json(&app.stages[i]));
        executors = json_array();
        for (size_t i = 0; i < app.n_executors; i++)
                json_array_append_new(executors, executor_json(&app.executors[i]));
        conf = app.conf_json ? json_loads(app.conf_json, 0, NULL) : json_null();
        out = json_pack("{ss ss ss sI sI sb so so so si si si si si si si so}", "app_id",
                        app.app_id, "app_name", app.app_name, "spark_version", app.spark_version,
                        "start_ms", (json_int_t)app.start_ms, "end_ms", (json_int_t)app.end_ms,
                        "ended", app.ended, "conf", conf ? conf : json_null(), "stages", stages,
                        "executors", executors, "jobs", (int)app.jobs, "failed_jobs",
                        (int)app.failed_jobs, "tasks", (int)app.tasks, "failed_tasks",
                        (int)app.failed_tasks, "killed_tasks", (int)app.killed_tasks,
                        "oom_task_failures", (int)app.oom_task_failures, "lost_task_failures",
                        (int)app.lost_task_failures, "gc_seconds", real(app.gc_seconds));
        if (!out) {
                fprintf(stderr, "eventlog-dump: out of memory\n");
                return 1;
        }
        json_dumpf(out, stdout, JSON_INDENT(1) | JSON_SORT_KEYS);
        putchar('\n');
        json_decref(out);
        tuner_app_free(&app);
        return 0;
}
