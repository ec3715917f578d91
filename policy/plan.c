/* SPDX-License-Identifier: Apache-2.0 */
/* The plan: CPU and memory request/limit, the cgroup v2 values, the plan as JSON. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policy-internal.h"
#include "util.h"

#define SHARES_MIN 2u
#define SHARES_MAX 262144u
#define WEIGHT_MAX 10000u

uint64_t policy_shares_to_weight(uint64_t shares)
{
        double l, exponent;

        if (shares == 0)
                return 0;
        if (shares <= SHARES_MIN)
                return 1;
        if (shares >= SHARES_MAX)
                return WEIGHT_MAX;
        /* A quadratic in log2(shares) through (2, 1), (1024, 100) and (262144, 10000), in
         * log10 of the weight: crun >= 1.23, runc >= 1.3.2 (opencontainers/cgroups). */
        l = log2((double)shares);
        exponent = (l * l + 125.0 * l) / 612.0 - 7.0 / 34.0;
        return (uint64_t)ceil(pow(10.0, exponent));
}

/* Appends "what: from -> to" to plan->clamped. */
static void note_clamp(struct policy_plan *plan, const char *what, const char *from, const char *to)
{
        size_t used = strlen(plan->clamped);

        snprintf(plan->clamped + used, sizeof(plan->clamped) - used, "%s%s: %s -> %s",
                 used > 0 ? "; " : "", what, from, to);
}

static void note_clamp_u64(struct policy_plan *plan, const char *what, uint64_t from, uint64_t to)
{
        char a[32], b[32];

        snprintf(a, sizeof(a), "%" PRIu64, from);
        snprintf(b, sizeof(b), "%" PRIu64, to);
        note_clamp(plan, what, a, b);
}

static bool is_user(enum policy_source s)
{
        return s >= POLICY_SOURCE_COMMAND;
}

static const char *origin_of(const char *origin, enum policy_source s)
{
        return origin && origin[0] ? origin : policy_source_name(s);
}

/*
 * Bound a user value: reject (out_of_bounds "reject"), or clamp and note it. Values that no
 * user gave (built-in defaults) are always clamped.
 */
static int bound_u64(const struct policy *p, struct policy_plan *plan, const char *what,
                     const char *origin, enum policy_source source, const char *unit, uint64_t min,
                     uint64_t max, const char *bounds_name, uint64_t *value, struct util_error *err)
{
        uint64_t v = *value, to = v < min ? min : v > max ? max : v;

        if (to == v)
                return 0;
        if (is_user(source) && p->out_of_bounds == POLICY_BOUNDS_REJECT)
                return util_error_set(err, EINVAL,
                                      "%s: %s %" PRIu64 " %s is out of range; allowed: >= %" PRIu64
                                      " and <= %" PRIu64 " %s (%s)",
                                      origin_of(origin, source), what, v, unit, min, max, unit,
                                      bounds_name);
        note_clamp_u64(plan, what, v, to);
        *value = to;
        return 0;
}

static int check_overrides(const struct policy *p, const struct policy_inputs *in,
                           struct util_error *err)
{
        const struct {
                enum policy_source source;
                const char *origin;
                enum policy_override bit;
        } checks[] = {
            /* The command's --cores and -Xmx are what the executor really runs with,
             * not overrides of a policy value; set elsewhere, they are. */
            {in->cores.source == POLICY_SOURCE_COMMAND ? POLICY_SOURCE_NONE : in->cores.source,
             in->cores.origin, POLICY_OVERRIDE_CORES},
            {in->millicores.source, in->millicores.origin, POLICY_OVERRIDE_MILLICORES},
            {in->limit_millicores.source, in->limit_millicores.origin, POLICY_OVERRIDE_MILLICORES},
            {in->heap_bytes.source == POLICY_SOURCE_COMMAND ? POLICY_SOURCE_NONE
                                                            : in->heap_bytes.source,
             in->heap_bytes.origin, POLICY_OVERRIDE_MEMORY},
            {in->overhead_bytes.source, in->overhead_bytes.origin, POLICY_OVERRIDE_MEMORY},
            {in->overhead_factor.source, in->overhead_factor.origin, POLICY_OVERRIDE_MEMORY},
            {in->offheap_enabled.source, in->offheap_enabled.origin, POLICY_OVERRIDE_MEMORY},
            {in->offheap_bytes.source, in->offheap_bytes.origin, POLICY_OVERRIDE_MEMORY},
            {in->pyspark_bytes.source, in->pyspark_bytes.origin, POLICY_OVERRIDE_MEMORY},
            {in->burst_ratio.source, in->burst_ratio.origin, POLICY_OVERRIDE_BURST_RATIO},
            {in->spill_fraction.source, in->spill_fraction.origin, POLICY_OVERRIDE_AGENT},
        };

        for (size_t i = 0; i < ELEMENTSOF(checks); i++) {
                int r = policy_check_override(p, checks[i].bit, checks[i].source, checks[i].origin,
                                              err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int plan_cpu(const struct policy *p, const struct policy_inputs *in,
                    struct policy_plan *plan, struct util_error *err)
{
        uint64_t cores = 1, request, limit, max_limit = 0;
        const char *origin;
        enum policy_source source;
        int r;

        if (in->cores.source != POLICY_SOURCE_NONE) {
                cores = in->cores.value;
                if (cores == 0 || cores > POLICY_MILLICORES_LIMIT / 1000)
                        return util_error_set(err, EINVAL,
                                              "%s: %" PRIu64
                                              " cores is out of range; allowed: >= 1 and <= "
                                              "%" PRIu64,
                                              origin_of(in->cores.origin, in->cores.source), cores,
                                              POLICY_MILLICORES_LIMIT / 1000);
        }

        if (in->millicores.source != POLICY_SOURCE_NONE) {
                request = in->millicores.value;
                source = in->millicores.source;
                origin = in->millicores.origin;
        } else {
                request = cores * 1000;
                source = in->cores.source;
                origin = in->cores.origin;
        }
        r = bound_u64(p, plan, "cpu.request_millicores", origin, source, "millicores",
                      p->millicores_min, p->millicores_max, "cpu.millicores in the policy",
                      &request, err);
        if (r < 0)
                return r;
        if (request == 0) /* only with a policy minimum of 0, which the parser refuses */
                request = 1;

        if (!p->cpu_unlimited) {
                max_limit = policy_ceil_u64((double)request * p->overcommit);
                if (max_limit < request)
                        max_limit = request;
        }

        if (in->limit_millicores.source != POLICY_SOURCE_NONE) {
                char bounds[96];

                limit = in->limit_millicores.value;
                if (p->cpu_unlimited)
                        snprintf(bounds, sizeof(bounds), "the request");
                else
                        snprintf(bounds, sizeof(bounds),
                                 "the request x cpu.overcommit %g in the policy", p->overcommit);
                r = bound_u64(p, plan, "cpu.limit_millicores", in->limit_millicores.origin,
                              in->limit_millicores.source, "millicores", request,
                              p->cpu_unlimited ? POLICY_MILLICORES_LIMIT * 64 : max_limit, bounds,
                              &limit, err);
                if (r < 0)
                        return r;
                plan->cpu_unlimited = false;
        } else if (p->cpu_unlimited) {
                limit = 0;
                plan->cpu_unlimited = true;
        } else {
                limit = max_limit;
                plan->cpu_unlimited = false;
        }

        plan->cpu_request_millicores = request;
        plan->cpu_limit_millicores = limit;
        plan->cpu_period_us = POLICY_CPU_PERIOD_US;
        if (plan->cpu_unlimited)
                plan->cpu_quota_us = 0;
        else {
                /* limit x period / 1000; the kernel's minimum quota is 1 ms */
                plan->cpu_quota_us = limit * (POLICY_CPU_PERIOD_US / 1000);
                if (plan->cpu_quota_us < 1000)
                        plan->cpu_quota_us = 1000;
        }
        plan->cpu_shares = request * 1024 / 1000;
        if (plan->cpu_shares < SHARES_MIN)
                plan->cpu_shares = SHARES_MIN;
        plan->cpu_weight = policy_shares_to_weight(plan->cpu_shares);
        return 0;
}

static int add_bytes(uint64_t *sum, uint64_t v)
{
        if (v > POLICY_BYTES_MAX - *sum)
                return -ERANGE;
        *sum += v;
        return 0;
}

static int plan_memory(const struct policy *p, const struct policy_inputs *in,
                       struct policy_plan *plan, struct util_error *err)
{
        const char *heap_origin = origin_of(in->heap_bytes.origin, in->heap_bytes.source);
        uint64_t heap, offheap = 0, pyspark = 0, overhead, limit = 0, request = 0, kept;
        double ratio;

        if (in->heap_bytes.source == POLICY_SOURCE_NONE)
                return util_error_set(err, EINVAL,
                                      "no executor memory: give --memory, SPARKSHIM_MEMORY or "
                                      "-Xmx in the command");
        heap = in->heap_bytes.value;
        if (heap == 0)
                return util_error_set(err, EINVAL,
                                      "%s: 0 bytes of executor memory is out of range; allowed: "
                                      "> 0",
                                      heap_origin);

        if (in->overhead_bytes.source != POLICY_SOURCE_NONE)
                overhead = in->overhead_bytes.value;
        else {
                /* Spark: max((factor * executorMemoryMiB).toLong, 384) MiB */
                double factor = in->overhead_factor.source != POLICY_SOURCE_NONE
                                    ? in->overhead_factor.value
                                    : p->overhead_factor;
                double mib = factor * (double)(heap / POLICY_MIB);

                overhead = mib >= (double)(POLICY_BYTES_MAX / POLICY_MIB)
                               ? POLICY_BYTES_MAX
                               : (uint64_t)mib * POLICY_MIB;
                if (overhead < p->overhead_min_bytes)
                        overhead = p->overhead_min_bytes;
        }
        if (in->offheap_enabled.source != POLICY_SOURCE_NONE && in->offheap_enabled.value &&
            in->offheap_bytes.source != POLICY_SOURCE_NONE)
                offheap = in->offheap_bytes.value;
        if (in->pyspark_bytes.source != POLICY_SOURCE_NONE)
                pyspark = in->pyspark_bytes.value;

        ratio = in->burst_ratio.source != POLICY_SOURCE_NONE ? in->burst_ratio.value
                                                             : p->burst_ratio_default;
        if (!(ratio >= 0.0 && ratio <= p->burst_ratio_max)) {
                double to = ratio > p->burst_ratio_max ? p->burst_ratio_max : 0.0;
                if (is_user(in->burst_ratio.source) && p->out_of_bounds == POLICY_BOUNDS_REJECT)
                        return util_error_set(
                            err, EINVAL,
                            "%s: %g is out of range; allowed: >= 0 and <= %g "
                            "(memory.burst_ratio.max in the policy)",
                            origin_of(in->burst_ratio.origin, in->burst_ratio.source), ratio,
                            p->burst_ratio_max);
                {
                        char a[32], b[32];
                        snprintf(a, sizeof(a), "%g", ratio);
                        snprintf(b, sizeof(b), "%g", to);
                        note_clamp(plan, "memory.burst_ratio", a, b);
                }
                ratio = to;
        }

        kept = policy_floor_u64((double)overhead * (1.0 - ratio));
        if (kept > overhead)
                kept = overhead;
        if (add_bytes(&limit, heap) < 0 || add_bytes(&limit, offheap) < 0 ||
            add_bytes(&limit, pyspark) < 0 || add_bytes(&limit, overhead) < 0)
                return util_error_set(err, EINVAL,
                                      "%s: the executor memory is too large; allowed: a total "
                                      "below 8 EiB",
                                      heap_origin);
        request = limit - overhead + kept;

        if (p->memory_limit_max > 0 && limit > p->memory_limit_max) {
                if (p->out_of_bounds == POLICY_BOUNDS_REJECT)
                        return util_error_set(
                            err, EINVAL,
                            "%s: memory limit %" PRIu64
                            " bytes (heap + off-heap + pyspark + overhead) is out of range; "
                            "allowed: <= %" PRIu64 " bytes (memory.limit_max in the policy)",
                            heap_origin, limit, p->memory_limit_max);
                note_clamp_u64(plan, "memory.limit_bytes", limit, p->memory_limit_max);
                limit = p->memory_limit_max;
                if (request > limit) {
                        note_clamp_u64(plan, "memory.request_bytes", request, limit);
                        request = limit;
                }
        }

        plan->heap_bytes = heap;
        plan->offheap_bytes = offheap;
        plan->pyspark_bytes = pyspark;
        plan->overhead_bytes = overhead;
        plan->burst_ratio = ratio;
        plan->memory_limit_bytes = limit;
        plan->memory_request_bytes = request;
        plan->protection = p->protection;
        plan->memory_high_bytes = 0;
        if (p->memory_high_enabled) {
                /* Kubernetes MemoryQoS: request + f x (limit - request), whole pages */
                uint64_t high =
                    request + policy_floor_u64(p->memory_high_factor * (double)(limit - request));
                high -= high % POLICY_PAGE_SIZE;
                plan->memory_high_bytes = high > limit ? limit - limit % POLICY_PAGE_SIZE : high;
        }
        return 0;
}

/* The user's agent threshold fraction (what `sparkshim tune` recommends), within the
 * policy's tuner.spill_fraction range. */
static int plan_agent(const struct policy *p, const struct policy_inputs *in,
                      struct policy_plan *plan, struct util_error *err)
{
        double f, lo = p->tuner.spill_fraction_min, hi = p->tuner.spill_fraction_max;

        if (in->spill_fraction.source == POLICY_SOURCE_NONE)
                return 0;
        f = in->spill_fraction.value;
        if (!(f >= lo && f <= hi)) {
                double to = f > hi ? hi : lo;
                char a[32], b[32];

                if (p->out_of_bounds == POLICY_BOUNDS_REJECT)
                        return util_error_set(
                            err, EINVAL,
                            "%s: %g is out of range; allowed: >= %g and <= %g "
                            "(tuner.spill_fraction in the policy)",
                            origin_of(in->spill_fraction.origin, in->spill_fraction.source), f, lo,
                            hi);
                snprintf(a, sizeof(a), "%g", f);
                snprintf(b, sizeof(b), "%g", to);
                note_clamp(plan, "agent.spill_fraction", a, b);
                f = to;
        }
        plan->agent_spill_fraction = f;
        return 0;
}

int policy_plan_compute(const struct policy *p, const struct policy_inputs *in,
                        struct policy_plan *ret, struct util_error *err)
{
        struct policy_plan plan = {0};
        int r;

        r = check_overrides(p, in, err);
        if (r < 0)
                return r;
        r = plan_cpu(p, in, &plan, err);
        if (r < 0)
                return r;
        r = plan_memory(p, in, &plan, err);
        if (r < 0)
                return r;
        r = plan_agent(p, in, &plan, err);
        if (r < 0)
                return r;
        plan.pids_max = p->pids_max;
        plan.io_weight = p->io_weight;
        *ret = plan;
        return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Output                                                                               */

static void format_cpu_max(const struct policy_plan *plan, char *buf, size_t size)
{
        if (plan->cpu_unlimited)
                snprintf(buf, size, "max %u", POLICY_CPU_PERIOD_US);
        else
                snprintf(buf, size, "%" PRIu64 " %" PRIu64, plan->cpu_quota_us,
                         plan->cpu_period_us ? plan->cpu_period_us : POLICY_CPU_PERIOD_US);
}

static struct policy_write *add_write(struct policy_write out[], size_t *n, const char *controller,
                                      const char *file)
{
        struct policy_write *w = &out[(*n)++];

        w->controller = controller;
        w->file = file;
        w->value[0] = '\0';
        return w;
}

size_t policy_plan_writes(const struct policy_plan *plan, struct policy_write out[])
{
        struct policy_write *w;
        size_t n = 0;

        w = add_write(out, &n, "cpu", "cpu.max");
        format_cpu_max(plan, w->value, sizeof(w->value));
        w = add_write(out, &n, "cpu", "cpu.weight");
        snprintf(w->value, sizeof(w->value), "%" PRIu64, plan->cpu_weight);

        w = add_write(out, &n, "memory", "memory.max");
        snprintf(w->value, sizeof(w->value), "%" PRIu64, plan->memory_limit_bytes);
        if (plan->protection != POLICY_PROTECTION_NONE) {
                w = add_write(out, &n, "memory",
                              plan->protection == POLICY_PROTECTION_MIN ? "memory.min"
                                                                        : "memory.low");
                snprintf(w->value, sizeof(w->value), "%" PRIu64, plan->memory_request_bytes);
        }
        if (plan->memory_high_bytes > 0) {
                w = add_write(out, &n, "memory", "memory.high");
                snprintf(w->value, sizeof(w->value), "%" PRIu64, plan->memory_high_bytes);
        }

        if (plan->pids_max > 0) {
                w = add_write(out, &n, "pids", "pids.max");
                snprintf(w->value, sizeof(w->value), "%" PRIu64, plan->pids_max);
        }
        if (plan->io_weight > 0) {
                /* blk-iocost takes "default N" (or "N") for the default weight */
                w = add_write(out, &n, "io", "io.weight");
                snprintf(w->value, sizeof(w->value), "default %u", plan->io_weight);
        }
        return n;
}

static json_t *json_u64(uint64_t v)
{
        return json_integer((json_int_t)(v > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : v));
}

/* json_object_set_new() steals value even when it fails (also on a NULL object). */
static void put(json_t *obj, const char *key, json_t *value, bool *ok)
{
        if (json_object_set_new(obj, key, value) < 0)
                *ok = false;
}

json_t *policy_plan_to_json(const struct policy_plan *plan)
{
        struct policy_write writes[POLICY_WRITES_MAX];
        size_t n = policy_plan_writes(plan, writes);
        json_t *root = json_object(), *cpu = json_object(), *memory = json_object(),
               *pids = json_object(), *io = json_object(), *clamped = json_array();
        static const char *const protection_names[] = {"low", "min", "none"};
        bool ok = true;

        /* the written values, by file; null when the file is not written */
        const char *cpu_max = NULL, *cpu_weight = NULL, *memory_max = NULL, *protect = NULL,
                   *memory_high = NULL, *pids_max = NULL, *io_weight = NULL;
        for (size_t i = 0; i < n; i++) {
                const char *f = writes[i].file;
                const char *v = writes[i].value;
                if (strcmp(f, "cpu.max") == 0)
                        cpu_max = v;
                else if (strcmp(f, "cpu.weight") == 0)
                        cpu_weight = v;
                else if (strcmp(f, "memory.max") == 0)
                        memory_max = v;
                else if (strcmp(f, "memory.low") == 0 || strcmp(f, "memory.min") == 0)
                        protect = v;
                else if (strcmp(f, "memory.high") == 0)
                        memory_high = v;
                else if (strcmp(f, "pids.max") == 0)
                        pids_max = v;
                else if (strcmp(f, "io.weight") == 0)
                        io_weight = v;
        }

        put(cpu, "request_millicores", json_u64(plan->cpu_request_millicores), &ok);
        put(cpu, "limit_millicores",
            plan->cpu_unlimited ? json_null() : json_u64(plan->cpu_limit_millicores), &ok);
        put(cpu, "weight", json_string(cpu_weight ? cpu_weight : ""), &ok);
        put(cpu, "max", json_string(cpu_max ? cpu_max : ""), &ok);

        put(memory, "heap_bytes", json_u64(plan->heap_bytes), &ok);
        put(memory, "offheap_bytes", json_u64(plan->offheap_bytes), &ok);
        put(memory, "pyspark_bytes", json_u64(plan->pyspark_bytes), &ok);
        put(memory, "overhead_bytes", json_u64(plan->overhead_bytes), &ok);
        put(memory, "burst_ratio", json_real(plan->burst_ratio), &ok);
        put(memory, "request_bytes", json_u64(plan->memory_request_bytes), &ok);
        put(memory, "limit_bytes", json_u64(plan->memory_limit_bytes), &ok);
        put(memory, "protection",
            json_string((unsigned)plan->protection < ELEMENTSOF(protection_names)
                            ? protection_names[plan->protection]
                            : "none"),
            &ok);
        put(memory, "max", json_string(memory_max ? memory_max : ""), &ok);
        if (protect)
                put(memory, plan->protection == POLICY_PROTECTION_MIN ? "min" : "low",
                    json_string(protect), &ok);
        put(memory, "high", memory_high ? json_string(memory_high) : json_null(), &ok);

        put(pids, "max", pids_max ? json_string(pids_max) : json_null(), &ok);
        put(io, "weight", io_weight ? json_string(io_weight) : json_null(), &ok);

        for (const char *s = plan->clamped; *s;) {
                const char *end = strstr(s, "; ");
                size_t len = end ? (size_t)(end - s) : strlen(s);
                json_t *item = json_stringn(s, len);
                if (!clamped || !item || json_array_append_new(clamped, item) < 0)
                        ok = false;
                s += len + (end ? 2 : 0);
        }

        put(root, "cpu", cpu, &ok);
        put(root, "memory", memory, &ok);
        put(root, "pids", pids, &ok);
        put(root, "io", io, &ok);
        put(root, "clamped", clamped, &ok);
        if (!ok) {
                json_decref(root);
                return NULL;
        }
        return root;
}

uint64_t policy_agent_threshold_bytes(const struct policy_agent *agent,
                                      const struct policy_plan *plan)
{
        uint64_t base, bytes;

        switch (agent->threshold) {
        case POLICY_AGENT_THRESHOLD_BYTES:
                return agent->threshold_bytes;
        case POLICY_AGENT_THRESHOLD_REQUEST:
        case POLICY_AGENT_THRESHOLD_LIMIT:
                base = agent->threshold == POLICY_AGENT_THRESHOLD_LIMIT
                           ? plan->memory_limit_bytes
                           : plan->memory_request_bytes;
                bytes = policy_floor_u64((plan->agent_spill_fraction > 0.0
                                              ? plan->agent_spill_fraction
                                              : agent->threshold_fraction) *
                                         (double)base);
                if (bytes > base)
                        bytes = base;
                return bytes > 0 ? bytes : 1;
        case POLICY_AGENT_THRESHOLD_NONE:
        default:
                return 0;
        }
}

void policy_utilization(const struct policy_plan *plan, double cpu_seconds, double wall_seconds,
                        double peak_bytes, struct policy_utilization *ret)
{
        double cores = (double)plan->cpu_request_millicores / 1000.0;
        struct policy_utilization u = {NAN, NAN, NAN};

        if (isfinite(cpu_seconds) && isfinite(wall_seconds) && wall_seconds > 0 && cores > 0)
                u.cpu = cpu_seconds / (cores * wall_seconds);
        if (isfinite(peak_bytes) && plan->memory_request_bytes > 0)
                u.memory = peak_bytes / (double)plan->memory_request_bytes;
        if (u.cpu > 0 && u.memory > 0)
                u.objective = 1.0 / (u.cpu * u.memory);
        *ret = u;
}
