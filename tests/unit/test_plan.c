/* SPDX-License-Identifier: Apache-2.0 */
/* The plan: CPU and memory formulas, bounds, overrides, cgroup writes, JSON. */
#include <criterion/criterion.h>
#include <math.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"
#include "util.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* Inputs with a heap, so the memory part of the plan can be computed. */
static void inputs_with_heap(struct policy_inputs *in, uint64_t heap)
{
        policy_inputs_init(in);
        policy_input_set_u64(&in->heap_bytes, heap, POLICY_SOURCE_COMMAND, "-Xmx");
}

static struct policy_plan compute_ok(const struct policy *p, const struct policy_inputs *in)
{
        struct util_error err = {0};
        struct policy_plan plan;
        int r;

        r = policy_plan_compute(p, in, &plan, &err);
        cr_assert_eq(r, 0, "plan: rc %d: %s", r, err.text);
        return plan;
}

/* policy_plan_compute refuses in with exactly want, one line naming the input. */
static void expect_refused(const struct policy *p, const struct policy_inputs *in, const char *want)
{
        struct util_error err = {0};
        struct policy_plan plan;
        int r = policy_plan_compute(p, in, &plan, &err);

        cr_expect_eq(r, -EINVAL, "rc %d where \"%s\" was wanted", r, want);
        cr_expect_str_eq(err.text, want, "error \"%s\"", err.text);
}

/* With out_of_bounds clamp the same inputs make a plan whose clamped line is want. */
static struct policy_plan expect_clamped(struct policy *p, const struct policy_inputs *in,
                                         const char *want)
{
        struct policy_plan plan;

        p->out_of_bounds = POLICY_BOUNDS_CLAMP;
        plan = compute_ok(p, in);
        cr_expect_str_eq(plan.clamped, want, "clamped \"%s\"", plan.clamped);
        return plan;
}

static const char *write_value(const struct policy_plan *plan, const char *file)
{
        static struct policy_write writes[POLICY_WRITES_MAX];
        size_t n = policy_plan_writes(plan, writes);

        for (size_t i = 0; i < n; i++)
                if (strcmp(writes[i].file, file) == 0)
                        return writes[i].value;
        return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* CPU                                                                                 */

Test(plan, shares_to_weight_fixed_points)
{
        static const struct {
                uint64_t shares, weight;
        } cases[] = {
            {0, 0},
            {1, 1},
            {2, 1},
            {1024, 100},
            {262144, 10000},
            {262145, 10000},
            {UINT64_MAX, 10000},
            /* the formula evaluated independently (Python math.log2/ceil) */
            {3, 2},
            {512, 59},
            {2048, 174},
            {4096, 303},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint64_t w = policy_shares_to_weight(cases[i].shares);
                cr_expect_eq(w, cases[i].weight,
                             "shares %" PRIu64 " -> weight %" PRIu64 ", expected %" PRIu64,
                             cases[i].shares, w, cases[i].weight);
        }
}

Test(plan, shares_to_weight_monotonic)
{
        uint64_t prev = policy_shares_to_weight(2);

        for (uint64_t s = 3; s <= 262144; s++) {
                uint64_t w = policy_shares_to_weight(s);
                cr_assert_geq(w, prev,
                              "not monotonic: shares %" PRIu64 " -> %" PRIu64 ", shares %" PRIu64
                              " -> %" PRIu64,
                              s - 1, prev, s, w);
                cr_assert(w >= 1 && w <= 10000,
                          "shares %" PRIu64 " -> %" PRIu64 " out of [1, 10000]", s, w);
                prev = w;
        }
        cr_expect_eq(prev, 10000, "ends at %" PRIu64, prev);
}

Test(plan, cpu_max_250m_overcommit_2)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        policy_init_defaults(&p);
        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.millicores, 250, POLICY_SOURCE_FLAG, "--millicores");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_request_millicores, 250, "request %" PRIu64,
                     plan.cpu_request_millicores);
        cr_expect_eq(plan.cpu_limit_millicores, 500, "limit %" PRIu64, plan.cpu_limit_millicores);
        cr_expect_eq(plan.cpu_quota_us, 50000, "quota %" PRIu64, plan.cpu_quota_us);
        cr_expect_eq(plan.cpu_period_us, 100000, "period %" PRIu64, plan.cpu_period_us);
        cr_expect_str_eq(write_value(&plan, "cpu.max"), "50000 100000", "cpu.max \"%s\"",
                         write_value(&plan, "cpu.max"));
        /* shares 250 x 1024 / 1000 = 256 */
        cr_expect_eq(plan.cpu_shares, 256, "shares %" PRIu64, plan.cpu_shares);
        cr_expect_eq(plan.cpu_weight, policy_shares_to_weight(256), "weight %" PRIu64,
                     plan.cpu_weight);
}

Test(plan, cpu_max_1m_is_clamped_to_the_minimum_quota)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        policy_init_defaults(&p);
        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.millicores, 1, POLICY_SOURCE_ENV, "SPARKSHIM_MILLICORES");
        plan = compute_ok(&p, &in);
        /* limit 2m -> 200 us, below the kernel's 1 ms minimum */
        cr_expect_eq(plan.cpu_limit_millicores, 2, "limit %" PRIu64, plan.cpu_limit_millicores);
        cr_expect_str_eq(write_value(&plan, "cpu.max"), "1000 100000", "cpu.max \"%s\"",
                         write_value(&plan, "cpu.max"));
        cr_expect_eq(plan.cpu_shares, 2, "shares floor 2: %" PRIu64, plan.cpu_shares);
        cr_expect_eq(plan.cpu_weight, 1, "weight %" PRIu64, plan.cpu_weight);
}

Test(plan, cpu_unlimited)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;
        json_t *j;

        policy_init_defaults(&p);
        p.cpu_unlimited = true;
        inputs_with_heap(&in, GiB);
        plan = compute_ok(&p, &in);
        cr_expect(plan.cpu_unlimited, "unlimited");
        cr_expect_eq(plan.cpu_limit_millicores, 0, "limit %" PRIu64, plan.cpu_limit_millicores);
        cr_expect_eq(plan.cpu_quota_us, 0, "quota %" PRIu64, plan.cpu_quota_us);
        cr_expect_str_eq(write_value(&plan, "cpu.max"), "max 100000", "cpu.max \"%s\"",
                         write_value(&plan, "cpu.max"));
        j = policy_plan_to_json(&plan);
        cr_assert(j, "json");
        cr_expect(json_is_null(json_object_get(json_object_get(j, "cpu"), "limit_millicores")),
                  "limit_millicores is null when unlimited");
        cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "cpu"), "max")),
                         "max 100000", "cpu.max in JSON");
        json_decref(j);

        /* an explicit limit still applies: the user restricts only themselves */
        policy_input_set_u64(&in.limit_millicores, 1500, POLICY_SOURCE_FLAG, "--limit-millicores");
        plan = compute_ok(&p, &in);
        cr_expect(!plan.cpu_unlimited, "limited by the user");
        cr_expect_str_eq(write_value(&plan, "cpu.max"), "150000 100000", "cpu.max \"%s\"",
                         write_value(&plan, "cpu.max"));
}

Test(plan, cpu_defaults_from_cores)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        policy_init_defaults(&p);
        inputs_with_heap(&in, GiB);
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_request_millicores, 1000, "1 core by default: %" PRIu64,
                     plan.cpu_request_millicores);
        cr_expect_eq(plan.cpu_weight, 100, "1 core = weight 100: %" PRIu64, plan.cpu_weight);
        cr_expect_str_eq(write_value(&plan, "cpu.max"), "200000 100000", "cpu.max");

        policy_input_set_u64(&in.cores, 4, POLICY_SOURCE_COMMAND, "--cores");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_request_millicores, 4000, "4 cores: %" PRIu64,
                     plan.cpu_request_millicores);
        cr_expect_eq(plan.cpu_limit_millicores, 8000, "limit %" PRIu64, plan.cpu_limit_millicores);

        /* millicores, when given, replace cores x 1000 */
        policy_input_set_u64(&in.millicores, 1500, POLICY_SOURCE_COMMAND,
                             "-Dspark.executor.millicores");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_request_millicores, 1500, "request %" PRIu64,
                     plan.cpu_request_millicores);

        /* an overcommit that is not a binary fraction: 1000 x 1.1 is 1100, not 1101 */
        p.overcommit = 1.1;
        policy_input_set_u64(&in.millicores, 1000, POLICY_SOURCE_FLAG, "--millicores");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_limit_millicores, 1100, "1000 x 1.1 = %" PRIu64,
                     plan.cpu_limit_millicores);
        p.overcommit = 1.5;
        policy_input_set_u64(&in.millicores, 333, POLICY_SOURCE_FLAG, "--millicores");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_limit_millicores, 500, "ceil(333 x 1.5 = 499.5) = %" PRIu64,
                     plan.cpu_limit_millicores);
}

Test(plan, cpu_bounds_reject_or_clamp)
{
        struct util_error err = {0};
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;
        int r;

        policy_init_defaults(&p);
        p.millicores_min = 100;
        p.millicores_max = 64000;
        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.millicores, 100000, POLICY_SOURCE_COMMAND,
                             "-Dspark.executor.millicores");
        expect_refused(&p, &in,
                       "-Dspark.executor.millicores: cpu.request_millicores 100000 millicores "
                       "is out of range; allowed: >= 100 and <= 64000 millicores "
                       "(cpu.millicores in the policy)");

        plan = expect_clamped(&p, &in, "cpu.request_millicores: 100000 -> 64000");
        cr_expect_eq(plan.cpu_request_millicores, 64000, "clamped to %" PRIu64,
                     plan.cpu_request_millicores);

        policy_input_set_u64(&in.millicores, 50, POLICY_SOURCE_FLAG, "--millicores");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_request_millicores, 100, "clamped up to %" PRIu64,
                     plan.cpu_request_millicores);

        /* a default nobody gave is clamped, never an error: 1 core below a 2000m minimum */
        p.out_of_bounds = POLICY_BOUNDS_REJECT;
        p.millicores_min = 2000;
        inputs_with_heap(&in, GiB);
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_request_millicores, 2000, "default clamped to %" PRIu64,
                     plan.cpu_request_millicores);
        cr_expect_str_eq(plan.clamped, "cpu.request_millicores: 1000 -> 2000", "clamped \"%s\"",
                         plan.clamped);

        /* cores are bounded through the request they make */
        policy_input_set_u64(&in.cores, 100, POLICY_SOURCE_ENV, "SPARKSHIM_CORES");
        r = policy_plan_compute(&p, &in, &plan, &err);
        cr_expect_eq(r, -EINVAL, "100 cores: rc %d", r);
        cr_expect(
            strncmp(err.text, "SPARKSHIM_CORES: cpu.request_millicores 100000 millicores", 56) == 0,
            "error \"%s\"", err.text);
}

Test(plan, cpu_explicit_limit)
{
        struct util_error err = {0};
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;
        int r;

        policy_init_defaults(&p);
        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.millicores, 1000, POLICY_SOURCE_FLAG, "--millicores");
        policy_input_set_u64(&in.limit_millicores, 1500, POLICY_SOURCE_COMMAND,
                             "-Dspark.kubernetes.executor.limit.cores");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_limit_millicores, 1500, "limit %" PRIu64, plan.cpu_limit_millicores);

        /* above request x overcommit */
        policy_input_set_u64(&in.limit_millicores, 3000, POLICY_SOURCE_COMMAND,
                             "-Dspark.kubernetes.executor.limit.cores");
        expect_refused(&p, &in,
                       "-Dspark.kubernetes.executor.limit.cores: cpu.limit_millicores 3000 "
                       "millicores is out of range; allowed: >= 1000 and <= 2000 millicores "
                       "(the request x cpu.overcommit 2 in the policy)");

        /* below the request */
        policy_input_set_u64(&in.limit_millicores, 500, POLICY_SOURCE_COMMAND,
                             "-Dspark.kubernetes.executor.limit.cores");
        r = policy_plan_compute(&p, &in, &plan, &err);
        cr_expect_eq(r, -EINVAL, "rc %d", r);

        plan = expect_clamped(&p, &in, "cpu.limit_millicores: 500 -> 1000");
        cr_expect_eq(plan.cpu_limit_millicores, 1000, "clamped up to the request: %" PRIu64,
                     plan.cpu_limit_millicores);
}

Test(plan, overrides_not_allowed)
{
        struct util_error err = {0};
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;
        int r;

        policy_init_defaults(&p);
        p.overrides = 0;

        /* the command's -Xmx and --cores are facts about the executor, not overrides */
        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.cores, 4, POLICY_SOURCE_COMMAND, "--cores");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.cpu_request_millicores, 4000, "request %" PRIu64,
                     plan.cpu_request_millicores);

        policy_input_set_u64(&in.millicores, 500, POLICY_SOURCE_FLAG, "--millicores");
        r = policy_plan_compute(&p, &in, &plan, &err);
        cr_expect_eq(r, -EPERM, "rc %d", r);
        cr_expect_str_eq(err.text,
                         "--millicores: set by the user, but the policy does not allow "
                         "overriding millicores",
                         "error \"%s\"", err.text);

        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.millicores, 500, POLICY_SOURCE_COMMAND,
                             "-Dspark.executor.millicores");
        r = policy_plan_compute(&p, &in, &plan, &err);
        cr_expect_eq(r, -EPERM, "rc %d", r);
        cr_expect_str_eq(err.text,
                         "-Dspark.executor.millicores: set by the user, but the policy does not "
                         "allow overriding millicores",
                         "error \"%s\"", err.text);

        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.cores, 8, POLICY_SOURCE_ENV, "SPARKSHIM_CORES");
        r = policy_plan_compute(&p, &in, &plan, &err);
        cr_expect_eq(r, -EPERM, "cores from env: rc %d", r);
        cr_expect(strstr(err.text, "overriding cores") != NULL, "error \"%s\"", err.text);

        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.heap_bytes, 2 * GiB, POLICY_SOURCE_FLAG, "--memory");
        r = policy_plan_compute(&p, &in, &plan, &err);
        cr_expect_eq(r, -EPERM, "heap from a flag: rc %d", r);
        cr_expect(strstr(err.text, "--memory: set by the user") != NULL, "error \"%s\"", err.text);

        inputs_with_heap(&in, GiB);
        policy_input_set_double(&in.burst_ratio, 0.5, POLICY_SOURCE_COMMAND,
                                "-Dspark.executor.memoryBurst.ratio");
        r = policy_plan_compute(&p, &in, &plan, &err);
        cr_expect_eq(r, -EPERM, "burst ratio: rc %d", r);
        cr_expect(strstr(err.text, "overriding burst_ratio") != NULL, "error \"%s\"", err.text);

        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.pyspark_bytes, GiB, POLICY_SOURCE_COMMAND,
                             "-Dspark.executor.pyspark.memory");
        r = policy_plan_compute(&p, &in, &plan, &err);
        cr_expect_eq(r, -EPERM, "pyspark: rc %d", r);

        /* allowed again */
        p.overrides = POLICY_OVERRIDE_MEMORY | POLICY_OVERRIDE_BURST_RATIO;
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.pyspark_bytes, GiB, "pyspark %" PRIu64, plan.pyspark_bytes);
}

/* ---------------------------------------------------------------------------------- */
/* Memory                                                                              */

struct memory_case {
        const char *name;
        uint64_t heap;
        bool offheap_enabled;
        uint64_t offheap, pyspark;
        double ratio;
        /* expected, computed by hand */
        uint64_t overhead, limit, request;
};

/*
 * heap 4096 MiB: overhead = max(384, (long)(0.10 x 4096) = 409) = 409 MiB.
 * limit = heap + offheap + pyspark + overhead; request = limit - overhead + floor(overhead x
 * (1 - ratio)): 409 MiB x 0.5 = 214433792 bytes.
 */
static const struct memory_case memory_cases[] = {
    {"ratio 0", 4096 * MiB, false, 0, 0, 0.0, 409 * MiB, 4505 * MiB, 4505 * MiB},
    {"ratio 0.5", 4096 * MiB, false, 0, 0, 0.5, 409 * MiB, 4505 * MiB, 4096 * MiB + 214433792},
    {"ratio 1", 4096 * MiB, false, 0, 0, 1.0, 409 * MiB, 4505 * MiB, 4096 * MiB},
    {"offheap, ratio 0", 4096 * MiB, true, 2048 * MiB, 512 * MiB, 0.0, 409 * MiB, 7065 * MiB,
     7065 * MiB},
    {"offheap, ratio 0.5", 4096 * MiB, true, 2048 * MiB, 512 * MiB, 0.5, 409 * MiB, 7065 * MiB,
     6656 * MiB + 214433792},
    {"offheap, ratio 1", 4096 * MiB, true, 2048 * MiB, 512 * MiB, 1.0, 409 * MiB, 7065 * MiB,
     6656 * MiB},
    /* off-heap size without spark.memory.offHeap.enabled does not count */
    {"offheap disabled", 4096 * MiB, false, 2048 * MiB, 0, 0.5, 409 * MiB, 4505 * MiB,
     4096 * MiB + 214433792},
    /* small heaps get the 384 MiB minimum: 2048 x 0.1 = 204 < 384 */
    {"minimum overhead", 2048 * MiB, false, 0, 0, 0.5, 384 * MiB, 2432 * MiB, 2240 * MiB},
    /* heap not a whole MiB: Spark works in MiB, 10000 MiB + 1 byte -> 1000 MiB */
    {"heap in bytes", 10000 * MiB + 1, false, 0, 0, 0.0, 1000 * MiB, 11000 * MiB + 1,
     11000 * MiB + 1},
};

Test(plan, memory_formulas)
{
        for (size_t i = 0; i < ELEMENTSOF(memory_cases); i++) {
                const struct memory_case *c = &memory_cases[i];
                struct policy_inputs in;
                struct policy_plan plan;
                struct policy p;

                policy_init_defaults(&p);
                inputs_with_heap(&in, c->heap);
                if (c->offheap_enabled)
                        policy_input_set_bool(&in.offheap_enabled, true, POLICY_SOURCE_COMMAND,
                                              "-Dspark.memory.offHeap.enabled");
                if (c->offheap)
                        policy_input_set_u64(&in.offheap_bytes, c->offheap, POLICY_SOURCE_COMMAND,
                                             "-Dspark.memory.offHeap.size");
                if (c->pyspark)
                        policy_input_set_u64(&in.pyspark_bytes, c->pyspark, POLICY_SOURCE_COMMAND,
                                             "-Dspark.executor.pyspark.memory");
                policy_input_set_double(&in.burst_ratio, c->ratio, POLICY_SOURCE_COMMAND,
                                        "-Dspark.executor.memoryBurst.ratio");
                plan = compute_ok(&p, &in);

                cr_expect_eq(plan.overhead_bytes, c->overhead,
                             "%s: overhead %" PRIu64 ", expected %" PRIu64, c->name,
                             plan.overhead_bytes, c->overhead);
                cr_expect_eq(plan.memory_limit_bytes, c->limit,
                             "%s: limit %" PRIu64 ", expected %" PRIu64, c->name,
                             plan.memory_limit_bytes, c->limit);
                cr_expect_eq(plan.memory_request_bytes, c->request,
                             "%s: request %" PRIu64 ", expected %" PRIu64, c->name,
                             plan.memory_request_bytes, c->request);
                cr_expect_eq(plan.burst_ratio, c->ratio, "%s: ratio %g", c->name, plan.burst_ratio);
                cr_expect_eq(plan.memory_high_bytes, 0, "%s: memory.high off by default", c->name);
        }
}

Test(plan, memory_overhead_sources)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        policy_init_defaults(&p);
        inputs_with_heap(&in, 4096 * MiB);
        /* an explicit overhead is used as given, even below the minimum (as Spark) */
        policy_input_set_u64(&in.overhead_bytes, 100 * MiB, POLICY_SOURCE_COMMAND,
                             "-Dspark.executor.memoryOverhead");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.overhead_bytes, 100 * MiB, "explicit %" PRIu64, plan.overhead_bytes);

        /* the command's factor replaces the policy's: 0.2 x 4096 = 819.2 -> 819 MiB */
        inputs_with_heap(&in, 4096 * MiB);
        policy_input_set_double(&in.overhead_factor, 0.2, POLICY_SOURCE_COMMAND,
                                "-Dspark.executor.memoryOverheadFactor");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.overhead_bytes, 819 * MiB, "factor 0.2: %" PRIu64, plan.overhead_bytes);

        /* the policy's minimum and factor */
        inputs_with_heap(&in, 4096 * MiB);
        p.overhead_min_bytes = 1024 * MiB;
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.overhead_bytes, 1024 * MiB, "policy minimum %" PRIu64,
                     plan.overhead_bytes);
        p.overhead_min_bytes = 0;
        p.overhead_factor = 0.0;
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.overhead_bytes, 0, "no overhead %" PRIu64, plan.overhead_bytes);
}

Test(plan, burst_ratio_bounds)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        policy_init_defaults(&p);
        p.burst_ratio_max = 0.5;
        p.burst_ratio_default = 0.25;
        inputs_with_heap(&in, 4096 * MiB);
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.burst_ratio, 0.25, "policy default %g", plan.burst_ratio);

        policy_input_set_double(&in.burst_ratio, 0.8, POLICY_SOURCE_ENV, "SPARKSHIM_BURST_RATIO");
        expect_refused(&p, &in,
                       "SPARKSHIM_BURST_RATIO: 0.8 is out of range; allowed: >= 0 and <= 0.5 "
                       "(memory.burst_ratio.max in the policy)");

        plan = expect_clamped(&p, &in, "memory.burst_ratio: 0.8 -> 0.5");
        cr_expect_eq(plan.burst_ratio, 0.5, "clamped %g", plan.burst_ratio);
}

Test(plan, memory_high_rounded_down_to_pages)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        policy_init_defaults(&p);
        p.memory_high_enabled = true;
        p.memory_high_factor = 0.9;
        /* limit = 1 GiB + 10000, request = 1 GiB (ratio 1):
         * high = 1073741824 + floor(0.9 x 10000) = 1073750824 -> 262146 pages = 1073750016 */
        inputs_with_heap(&in, GiB);
        policy_input_set_u64(&in.overhead_bytes, 10000, POLICY_SOURCE_FLAG, "--memory-overhead");
        policy_input_set_double(&in.burst_ratio, 1.0, POLICY_SOURCE_FLAG, "--burst-ratio");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.memory_request_bytes, 1073741824, "request %" PRIu64,
                     plan.memory_request_bytes);
        cr_expect_eq(plan.memory_limit_bytes, 1073751824, "limit %" PRIu64,
                     plan.memory_limit_bytes);
        cr_expect_eq(plan.memory_high_bytes, 1073750016, "high %" PRIu64, plan.memory_high_bytes);
        cr_expect_eq(plan.memory_high_bytes % 4096, 0, "high is whole pages");
        cr_expect_str_eq(write_value(&plan, "memory.high"), "1073750016", "memory.high \"%s\"",
                         write_value(&plan, "memory.high"));

        /* f = 1: the limit, rounded down, never above it */
        p.memory_high_factor = 1.0;
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.memory_high_bytes, 1073750016, "high %" PRIu64, plan.memory_high_bytes);
        cr_expect_leq(plan.memory_high_bytes, plan.memory_limit_bytes, "high <= limit");

        /* f = 0.9 with ratio 0.5 on 4 GiB: request 4096 MiB + 214433792 = 4509401088,
         * limit 4505 MiB: high = request + floor(0.9 x 214433792 = 192990412.8) = 4702391500,
         * 1148044 whole pages = 4702388224 */
        inputs_with_heap(&in, 4096 * MiB);
        policy_input_set_double(&in.burst_ratio, 0.5, POLICY_SOURCE_FLAG, "--burst-ratio");
        p.memory_high_factor = 0.9;
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.memory_high_bytes, 4702388224, "high %" PRIu64, plan.memory_high_bytes);

        /* off: no memory.high write */
        p.memory_high_enabled = false;
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.memory_high_bytes, 0, "off");
        cr_expect_null(write_value(&plan, "memory.high"), "no memory.high write");
}

Test(plan, memory_limit_max)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        policy_init_defaults(&p);
        p.memory_limit_max = 4 * GiB;
        inputs_with_heap(&in, 4096 * MiB);
        expect_refused(&p, &in,
                       "-Xmx: memory limit 4723834880 bytes (heap + off-heap + pyspark + "
                       "overhead) is out of range; allowed: <= 4294967296 bytes "
                       "(memory.limit_max in the policy)");

        p.out_of_bounds = POLICY_BOUNDS_CLAMP;
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.memory_limit_bytes, 4 * GiB, "limit %" PRIu64, plan.memory_limit_bytes);
        cr_expect_eq(plan.memory_request_bytes, 4 * GiB, "request %" PRIu64,
                     plan.memory_request_bytes);
        cr_expect_str_eq(plan.clamped,
                         "memory.limit_bytes: 4723834880 -> 4294967296; "
                         "memory.request_bytes: 4723834880 -> 4294967296",
                         "clamped \"%s\"", plan.clamped);
}

Test(plan, missing_heap)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        policy_init_defaults(&p);
        policy_inputs_init(&in);
        memset(&plan, 0x5a, sizeof(plan));
        expect_refused(&p, &in,
                       "no executor memory: give --memory, SPARKSHIM_MEMORY or -Xmx in the "
                       "command");
        cr_expect_eq(plan.cpu_weight, 0x5a5a5a5a5a5a5a5aull, "output changed on error");
}

/* ---------------------------------------------------------------------------------- */
/* Writes and JSON                                                                     */

Test(plan, writes_in_order)
{
        static const char *const files[] = {"cpu.max",     "cpu.weight", "memory.max", "memory.min",
                                            "memory.high", "pids.max",   "io.weight"};
        static const char *const controllers[] = {"cpu",    "cpu",  "memory", "memory",
                                                  "memory", "pids", "io"};
        struct policy_write writes[POLICY_WRITES_MAX];
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;
        size_t n;

        policy_init_defaults(&p);
        p.protection = POLICY_PROTECTION_MIN;
        p.memory_high_enabled = true;
        p.pids_max = 32768;
        p.io_weight = 100;
        inputs_with_heap(&in, 4096 * MiB);
        policy_input_set_u64(&in.millicores, 1500, POLICY_SOURCE_COMMAND,
                             "-Dspark.executor.millicores");
        plan = compute_ok(&p, &in);
        n = policy_plan_writes(&plan, writes);
        cr_assert_eq(n, 7, "%zu writes", n);
        for (size_t i = 0; i < n; i++) {
                cr_expect_str_eq(writes[i].file, files[i], "write %zu is %s, expected %s", i,
                                 writes[i].file, files[i]);
                cr_expect_str_eq(writes[i].controller, controllers[i],
                                 "write %zu controller %s, expected %s", i, writes[i].controller,
                                 controllers[i]);
        }
        cr_expect_str_eq(writes[0].value, "300000 100000", "cpu.max \"%s\"", writes[0].value);
        cr_expect_str_eq(writes[1].value, "138", "cpu.weight \"%s\"", writes[1].value);
        cr_expect_str_eq(writes[2].value, "4723834880", "memory.max \"%s\"", writes[2].value);
        cr_expect_str_eq(writes[3].value, "4723834880", "memory.min \"%s\"", writes[3].value);
        cr_expect_str_eq(writes[4].value, "4723834880", "memory.high \"%s\"", writes[4].value);
        cr_expect_str_eq(writes[5].value, "32768", "pids.max \"%s\"", writes[5].value);
        cr_expect_str_eq(writes[6].value, "default 100", "io.weight \"%s\"", writes[6].value);

        /* protection none: no memory.low/min; low by default */
        p.protection = POLICY_PROTECTION_NONE;
        p.memory_high_enabled = false;
        p.pids_max = 0;
        p.io_weight = 0;
        plan = compute_ok(&p, &in);
        n = policy_plan_writes(&plan, writes);
        cr_expect_eq(n, 3, "%zu writes without protection", n);
        p.protection = POLICY_PROTECTION_LOW;
        plan = compute_ok(&p, &in);
        n = policy_plan_writes(&plan, writes);
        cr_expect_eq(n, 4, "%zu writes", n);
        cr_expect_str_eq(writes[3].file, "memory.low", "file %s", writes[3].file);
}

Test(plan, json)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;
        json_t *j, *cpu, *memory, *clamped;

        policy_init_defaults(&p);
        p.out_of_bounds = POLICY_BOUNDS_CLAMP;
        p.millicores_max = 2000;
        p.memory_high_enabled = true;
        p.io_weight = 500;
        inputs_with_heap(&in, 2048 * MiB);
        policy_input_set_u64(&in.millicores, 2500, POLICY_SOURCE_FLAG, "--millicores");
        policy_input_set_double(&in.burst_ratio, 0.5, POLICY_SOURCE_FLAG, "--burst-ratio");
        plan = compute_ok(&p, &in);

        j = policy_plan_to_json(&plan);
        cr_assert(j, "json");
        cpu = json_object_get(j, "cpu");
        memory = json_object_get(j, "memory");
        cr_expect_eq(json_integer_value(json_object_get(cpu, "request_millicores")), 2000,
                     "request_millicores");
        cr_expect_eq(json_integer_value(json_object_get(cpu, "limit_millicores")), 4000,
                     "limit_millicores");
        cr_expect_str_eq(json_string_value(json_object_get(cpu, "max")), "400000 100000",
                         "cpu max");
        cr_expect_str_eq(json_string_value(json_object_get(cpu, "weight")), "174", "cpu weight");
        cr_expect_eq(json_integer_value(json_object_get(memory, "heap_bytes")), 2048 * MiB, "heap");
        cr_expect_eq(json_integer_value(json_object_get(memory, "overhead_bytes")), 384 * MiB,
                     "overhead");
        cr_expect_eq(json_integer_value(json_object_get(memory, "limit_bytes")), 2432 * MiB,
                     "limit");
        cr_expect_eq(json_integer_value(json_object_get(memory, "request_bytes")), 2240 * MiB,
                     "request");
        cr_expect_eq(json_real_value(json_object_get(memory, "burst_ratio")), 0.5, "ratio");
        cr_expect_str_eq(json_string_value(json_object_get(memory, "max")), "2550136832",
                         "memory max");
        cr_expect_str_eq(json_string_value(json_object_get(memory, "low")), "2348810240",
                         "memory low");
        cr_expect_null(json_object_get(memory, "min"), "no min with protection low");
        /* high = 2240 MiB + floor(0.9 x 192 MiB) = 2348810240 + 181193932 -> whole pages */
        cr_expect_str_eq(json_string_value(json_object_get(memory, "high")), "2530000896",
                         "memory high %s", json_string_value(json_object_get(memory, "high")));
        cr_expect(json_is_null(json_object_get(json_object_get(j, "pids"), "max")),
                  "pids.max null when not written");
        cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "io"), "weight")),
                         "default 500", "io weight");
        clamped = json_object_get(j, "clamped");
        cr_assert(json_is_array(clamped), "clamped is an array");
        cr_expect_eq(json_array_size(clamped), 1, "one clamp");
        cr_expect_str_eq(json_string_value(json_array_get(clamped, 0)),
                         "cpu.request_millicores: 2500 -> 2000", "clamp text");
        json_decref(j);
}

/* flag > env > command > policy, end to end */
Test(plan, precedence)
{
        char *argv[] = {"java", "-Xmx4g", "-Dspark.executor.memoryBurst.ratio=0.2",
                        "-Dspark.executor.millicores=1000", NULL};
        char *env[] = {"SPARKSHIM_BURST_RATIO=0.3", "SPARKSHIM_MILLICORES=2000", NULL};
        struct util_error err = {0};
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        policy_init_defaults(&p);
        p.burst_ratio_default = 0.1;

        inputs_with_heap(&in, 4 * GiB);
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.burst_ratio, 0.1, "policy: %g", plan.burst_ratio);

        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_from_command(&in, 4, argv, &err), 0, "%s", err.text);
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.burst_ratio, 0.2, "command: %g", plan.burst_ratio);
        cr_expect_eq(plan.cpu_request_millicores, 1000, "command: %" PRIu64,
                     plan.cpu_request_millicores);

        cr_assert_eq(policy_inputs_from_env(&in, env, &err), 0, "%s", err.text);
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.burst_ratio, 0.3, "env: %g", plan.burst_ratio);
        cr_expect_eq(plan.cpu_request_millicores, 2000, "env: %" PRIu64,
                     plan.cpu_request_millicores);

        policy_input_set_double(&in.burst_ratio, 0.4, POLICY_SOURCE_FLAG, "--burst-ratio");
        policy_input_set_u64(&in.millicores, 3000, POLICY_SOURCE_FLAG, "--millicores");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.burst_ratio, 0.4, "flag: %g", plan.burst_ratio);
        cr_expect_eq(plan.cpu_request_millicores, 3000, "flag: %" PRIu64,
                     plan.cpu_request_millicores);

        /* a later, lower source changes nothing */
        cr_assert_eq(policy_inputs_from_command(&in, 4, argv, &err), 0, "%s", err.text);
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.burst_ratio, 0.4, "flag still: %g", plan.burst_ratio);
}

/* A run of 2 request cores for 100 s that used 50 CPU seconds and peaked at half its
 * 4 GiB request: cpu 0.25, memory 0.5, objective 1 / 0.125 = 8. */
Test(plan, utilization)
{
        struct policy_plan plan = {.cpu_request_millicores = 2000,
                                   .memory_request_bytes = 4ULL << 30};
        struct policy_utilization u;

        policy_utilization(&plan, 50.0, 100.0, (double)(2ULL << 30), &u);
        cr_assert_float_eq(u.cpu, 0.25, 1e-12, "cpu %g", u.cpu);
        cr_assert_float_eq(u.memory, 0.5, 1e-12, "memory %g", u.memory);
        cr_assert_float_eq(u.objective, 8.0, 1e-9, "objective %g", u.objective);

        policy_utilization(&plan, NAN, 100.0, (double)(2ULL << 30), &u);
        cr_assert(isnan(u.cpu) && isnan(u.objective), "unknown CPU: cpu %g objective %g", u.cpu,
                  u.objective);
        cr_assert_float_eq(u.memory, 0.5, 1e-12, "memory %g", u.memory);

        policy_utilization(&plan, 0.0, 100.0, (double)(2ULL << 30), &u);
        cr_assert(u.cpu == 0 && isnan(u.objective), "idle: cpu %g objective %g", u.cpu,
                  u.objective);

        policy_utilization(&plan, 10.0, 0.0, NAN, &u);
        cr_assert(isnan(u.cpu) && isnan(u.memory), "no wall time, no peak: %g %g", u.cpu, u.memory);
}

/* ---------------------------------------------------------------------------------- */
/* The agent's pressure threshold                                                      */

Test(plan, agent_threshold_from_the_plan)
{
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;

        /* -Xmx4g, overhead max(384m, 409m) = 409 MiB, burst ratio 0.5: request = 4g + 204.5m */
        policy_init_defaults(&p);
        inputs_with_heap(&in, 4 * GiB);
        policy_input_set_double(&in.burst_ratio, 0.5, POLICY_SOURCE_COMMAND,
                                "-Dspark.executor.memoryBurst.ratio");
        plan = compute_ok(&p, &in);
        cr_assert_eq(plan.memory_limit_bytes, 4 * GiB + 409 * MiB, "limit %" PRIu64,
                     plan.memory_limit_bytes);
        cr_assert_eq(plan.memory_request_bytes, 4 * GiB + 409 * MiB / 2, "request %" PRIu64,
                     plan.memory_request_bytes);

        /* the default: 1.0 x the request, the design's main use with memoryBurst */
        cr_expect_eq(p.agent.threshold, POLICY_AGENT_THRESHOLD_REQUEST, "default threshold %d",
                     (int)p.agent.threshold);
        cr_expect_eq(policy_agent_threshold_bytes(&p.agent, &plan), plan.memory_request_bytes,
                     "default threshold %" PRIu64 ", request %" PRIu64,
                     policy_agent_threshold_bytes(&p.agent, &plan), plan.memory_request_bytes);

        /* fractions round down: 0.9 x 4509401088 = 4058460979.2 */
        p.agent.threshold_fraction = 0.9;
        cr_expect_eq(policy_agent_threshold_bytes(&p.agent, &plan), UINT64_C(4058460979),
                     "0.9 x request = %" PRIu64, policy_agent_threshold_bytes(&p.agent, &plan));
        p.agent.threshold = POLICY_AGENT_THRESHOLD_LIMIT;
        cr_expect_eq(policy_agent_threshold_bytes(&p.agent, &plan),
                     (uint64_t)(0.9 * (double)(4 * GiB + 409 * MiB)), "0.9 x limit = %" PRIu64,
                     policy_agent_threshold_bytes(&p.agent, &plan));
        p.agent.threshold_fraction = 1.0;
        cr_expect_eq(policy_agent_threshold_bytes(&p.agent, &plan), plan.memory_limit_bytes,
                     "1.0 x limit = %" PRIu64, policy_agent_threshold_bytes(&p.agent, &plan));

        /* bytes are taken as they are, above the limit too (the shim warns) */
        p.agent.threshold = POLICY_AGENT_THRESHOLD_BYTES;
        p.agent.threshold_bytes = 6 * GiB;
        cr_expect_eq(policy_agent_threshold_bytes(&p.agent, &plan), 6 * GiB, "bytes %" PRIu64,
                     policy_agent_threshold_bytes(&p.agent, &plan));
        p.agent.threshold = POLICY_AGENT_THRESHOLD_NONE;
        cr_expect_eq(policy_agent_threshold_bytes(&p.agent, &plan), 0, "none %" PRIu64,
                     policy_agent_threshold_bytes(&p.agent, &plan));

        /* a tiny fraction of a tiny request still gives a threshold, never 0 (= none) */
        p.agent.threshold = POLICY_AGENT_THRESHOLD_REQUEST;
        p.agent.threshold_fraction = 1e-12;
        cr_expect_eq(policy_agent_threshold_bytes(&p.agent, &plan), 1, "tiny %" PRIu64,
                     policy_agent_threshold_bytes(&p.agent, &plan));
}

/* spark.executor.sparkshim.spillFraction, what `sparkshim tune` recommends: within the policy's
 * tuner.spill_fraction, only with the "agent" override, and only for fraction thresholds. */
Test(plan, agent_spill_fraction)
{
        struct util_error err = {0};
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;
        int r;

        policy_init_defaults(&p);
        inputs_with_heap(&in, 4 * GiB);
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.agent_spill_fraction, 0.0, "unset %g", plan.agent_spill_fraction);

        policy_input_set_double(&in.spill_fraction, 0.8, POLICY_SOURCE_COMMAND,
                                "-Dspark.executor.sparkshim.spillFraction");
        plan = compute_ok(&p, &in);
        cr_expect_eq(plan.agent_spill_fraction, 0.8, "taken %g", plan.agent_spill_fraction);
        cr_expect_eq(policy_agent_threshold_bytes(&p.agent, &plan),
                     (uint64_t)(0.8 * (double)plan.memory_request_bytes),
                     "0.8 x request = %" PRIu64, policy_agent_threshold_bytes(&p.agent, &plan));
        p.agent.threshold = POLICY_AGENT_THRESHOLD_BYTES;
        p.agent.threshold_bytes = GiB;
        cr_expect_eq(policy_agent_threshold_bytes(&p.agent, &plan), GiB,
                     "bytes thresholds ignore it: %" PRIu64,
                     policy_agent_threshold_bytes(&p.agent, &plan));
        p.agent.threshold = POLICY_AGENT_THRESHOLD_REQUEST;

        /* below the policy's range: refused, or clamped */
        policy_input_set_double(&in.spill_fraction, 0.2, POLICY_SOURCE_COMMAND,
                                "-Dspark.executor.sparkshim.spillFraction");
        expect_refused(&p, &in,
                       "-Dspark.executor.sparkshim.spillFraction: 0.2 is out of range; allowed: "
                       ">= 0.5 and <= 1 (tuner.spill_fraction in the policy)");
        plan = expect_clamped(&p, &in, "agent.spill_fraction: 0.2 -> 0.5");
        cr_expect_eq(plan.agent_spill_fraction, 0.5, "clamped %g", plan.agent_spill_fraction);

        /* the job may not touch the agent when the policy says so */
        p.overrides &= ~(unsigned)POLICY_OVERRIDE_AGENT;
        r = policy_plan_compute(&p, &in, &plan, &err);
        cr_expect_eq(r, -EPERM, "rc %d", r);
        cr_expect(strstr(err.text, "overriding agent") != NULL, "error \"%s\"", err.text);
}
