/* SPDX-License-Identifier: Apache-2.0 */
/* A recommendation as the Spark properties that carry it (properties.h). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "policy.h"
#include "properties.h"

/* Spark's memory strings take whole MiB ("1536m"); round up, never below what was asked. */
static uint64_t mib_up(uint64_t bytes)
{
        return (bytes + (UINT64_C(1) << 20) - 1) >> 20;
}

/*
 * The values as printed, rounded towards the inside of the bounds (a rounding must not take
 * a value the clamp let through outside them: sparkshim would refuse the next executor):
 * sizes in whole MiB, up unless that passes memory.limit_max or a maximum; ratios and
 * fractions to 0.01, down unless that passes a minimum.
 */
struct printed {
        uint64_t heap_mib, overhead_mib;
        double burst_ratio, spill_fraction;
};

static struct printed printed_values(const struct tuner_params *p, const struct tuner_bounds *b)
{
        struct printed v = {
            .heap_mib = mib_up(p->heap_bytes),
            .overhead_mib = mib_up(p->overhead_bytes),
            .burst_ratio = floor(p->burst_ratio * 100.0) / 100.0,
            .spill_fraction = floor(p->spill_fraction * 100.0) / 100.0,
        };

        if (v.heap_mib << 20 > b->heap_max_bytes)
                v.heap_mib = p->heap_bytes >> 20;
        if (v.overhead_mib << 20 > b->overhead_max_bytes)
                v.overhead_mib = p->overhead_bytes >> 20;
        if (b->memory_limit_max && (v.heap_mib + v.overhead_mib) << 20 > b->memory_limit_max)
                v.overhead_mib = p->overhead_bytes >> 20;
        if (b->memory_limit_max && (v.heap_mib + v.overhead_mib) << 20 > b->memory_limit_max)
                v.heap_mib = p->heap_bytes >> 20;
        if (isfinite(v.spill_fraction) && v.spill_fraction < b->spill_fraction_min)
                v.spill_fraction = ceil(p->spill_fraction * 100.0) / 100.0;
        if (!(v.burst_ratio >= 0))
                v.burst_ratio = 0;
        return v;
}

/* One property, when what it sets is the policy's to allow and it allows it. */
static void add(struct tuner_property out[TUNER_PROPERTIES_MAX], size_t *n, const char *key,
                enum tuner_param_index param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add(struct tuner_property out[TUNER_PROPERTIES_MAX], size_t *n, const char *key,
                enum tuner_param_index param, const char *fmt, ...)
{
        va_list ap;

        if (*n == TUNER_PROPERTIES_MAX)
                return;
        out[*n] = (struct tuner_property){key, "", param};
        va_start(ap, fmt);
        vsnprintf(out[*n].value, sizeof(out[0].value), fmt, ap);
        va_end(ap);
        (*n)++;
}

/*
 * The recommendation as Spark properties. What sparkshim takes as an executor input (the
 * CPU request, the overhead for sparkshim, the burst ratio, the agent's fraction) is left out
 * when the policy does not let users set it: the next executor would be refused. Cores are
 * printed only when known.
 */
size_t tuner_properties(const struct tuner_params *p, const struct tuner_bounds *b,
                        unsigned overrides, struct tuner_property out[TUNER_PROPERTIES_MAX])
{
        struct printed v = printed_values(p, b);
        bool millicores = overrides & POLICY_OVERRIDE_MILLICORES;
        bool memory = overrides & POLICY_OVERRIDE_MEMORY;
        bool burst = overrides & POLICY_OVERRIDE_BURST_RATIO;
        bool agent = (overrides & POLICY_OVERRIDE_AGENT) && isfinite(p->spill_fraction);
        size_t n = 0;

        if (p->cores)
                add(out, &n, "spark.executor.cores", TUNER_P_CORES, "%" PRIu32, p->cores);
        add(out, &n, "spark.executor.memory", TUNER_P_HEAP, "%" PRIu64 "m", v.heap_mib);
        add(out, &n, "spark.executor.memoryOverhead", TUNER_P_OVERHEAD, "%" PRIu64 "m",
            v.overhead_mib);
        if (millicores) {
                add(out, &n, "spark.executor.millicores", TUNER_P_MILLICORES, "%" PRIu64,
                    p->millicores);
                add(out, &n, "spark.kubernetes.executor.request.cores", TUNER_P_MILLICORES,
                    "%" PRIu64 "m", p->millicores);
        }
        if (burst)
                add(out, &n, "spark.executor.memoryBurst.ratio", TUNER_P_BURST_RATIO, "%.2f",
                    v.burst_ratio);
        if (agent)
                add(out, &n, "spark.executor.sparkshim.spillFraction", TUNER_P_SPILL_FRACTION,
                    "%.2f", v.spill_fraction);
        if (p->shuffle_partitions)
                add(out, &n, "spark.sql.shuffle.partitions", TUNER_P_PARTITIONS, "%" PRIu32,
                    p->shuffle_partitions);
        /* YARN and standalone give the executor's command line none of these, and Spark
         * refuses -Dspark.* in extraJavaOptions: the executor's environment carries them to
         * sparkshim (sparkshim(1), ENVIRONMENT) */
        if (millicores)
                add(out, &n, "spark.executorEnv.SPARKSHIM_MILLICORES", TUNER_P_MILLICORES,
                    "%" PRIu64, p->millicores);
        if (memory)
                add(out, &n, "spark.executorEnv.SPARKSHIM_MEMORY_OVERHEAD", TUNER_P_OVERHEAD,
                    "%" PRIu64 "m", v.overhead_mib);
        if (burst)
                add(out, &n, "spark.executorEnv.SPARKSHIM_BURST_RATIO", TUNER_P_BURST_RATIO, "%.2f",
                    v.burst_ratio);
        if (agent)
                add(out, &n, "spark.executorEnv.SPARKSHIM_SPILL_FRACTION", TUNER_P_SPILL_FRACTION,
                    "%.2f", v.spill_fraction);
        return n;
}
