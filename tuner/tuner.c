/* SPDX-License-Identifier: Apache-2.0 */
/* The tuner's shared model (tuner.h): names, defaults, and freeing an event log's app. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner.h"

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
                .heap_min_bytes = UINT64_C(256) << 20,
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
        };
}
