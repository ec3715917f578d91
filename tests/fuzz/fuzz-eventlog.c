/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness: the event-log reader (tuner/eventlog.c) on untrusted event logs (the
 * job's user writes them): the input is split at newlines, every line goes through
 * tuner_eventlog_line() (errors are expected and skipped, as a caller that keeps going
 * would), then tuner_eventlog_finish() and tuner_app_free(). Checks the promises: counts
 * saturate consistently (a failed or killed attempt is an attempt), executors have ids.
 * Seeds in tests/fuzz/corpus/eventlog/: lines of real Spark 3.5/4.0 logs and hand-made ones.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "eventlog.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct tuner_eventlog *el = tuner_eventlog_new();
        struct util_error err;
        struct tuner_app app;
        size_t start = 0;

        if (!el)
                return 0;
        for (size_t i = 0; i <= size; i++) {
                if (i < size && data[i] != '\n')
                        continue;
                if (i > start)
                        tuner_eventlog_line(el, (const char *)data + start, i - start, &err);
                start = i + 1;
        }
        if (tuner_eventlog_finish(el, &app, &err) == 0) {
                if (app.failed_tasks > app.tasks || app.killed_tasks > app.tasks ||
                    app.oom_task_failures > app.failed_tasks ||
                    app.lost_task_failures > app.failed_tasks)
                        __builtin_trap();
                for (size_t i = 0; i < app.n_executors; i++)
                        if (!app.executors[i].executor_id[0])
                                __builtin_trap();
                for (size_t i = 0; i < app.n_stages; i++)
                        if (app.stages[i].failed_tasks > app.tasks)
                                __builtin_trap();
                tuner_app_free(&app);
        }
        tuner_eventlog_free(el);
        return 0;
}
