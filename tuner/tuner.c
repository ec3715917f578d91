/* SPDX-License-Identifier: Apache-2.0 */
/* The tuner's shared model (tuner.h): names, defaults, and freeing an event log's app. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
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

void tuner_bounds_from_policy(const struct policy *p, struct tuner_bounds *b)
{
        const struct policy_tuner *t = &p->tuner;

        tuner_bounds_default(b);
        b->millicores_min = p->millicores_min;
        b->millicores_max = p->millicores_max;
        b->heap_min_bytes = t->heap_min;
        b->heap_max_bytes = t->heap_max;
        b->overhead_min_bytes = p->overhead_min_bytes;
        b->overhead_max_bytes = t->overhead_max > p->overhead_min_bytes ? t->overhead_max
                                                                        : p->overhead_min_bytes;
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
        snprintf(what, sizeof(what), "%s %" PRIu64 " clamped into the policy's [%" PRIu64
                 ", %" PRIu64 "]", name, *v, lo, hi);
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
                params->burst_ratio = params->burst_ratio > b->burst_ratio_max ? b->burst_ratio_max
                                                                                : 0.0;
                clamped(&reasons[TUNER_P_BURST_RATIO], what);
                n++;
        }
        if (isfinite(params->spill_fraction) &&
            (params->spill_fraction < b->spill_fraction_min ||
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
        if (b->memory_limit_max && params->heap_bytes + params->overhead_bytes > b->memory_limit_max) {
                uint64_t room = b->memory_limit_max > params->heap_bytes
                                        ? b->memory_limit_max - params->heap_bytes
                                        : 0;
                snprintf(what, sizeof(what), "heap + overhead %" PRIu64 " above the policy's memory.limit_max %" PRIu64,
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
