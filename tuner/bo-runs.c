/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage 2 over a job's runs (bo.h, "over runs"): the mapping between struct tuner_params and
 * the unit cube (ratio, log bytes, fraction, log partitions; decode rounds back and clamps
 * into the bounds), the runs' usage models, and tuner_bo_recommend(): the runs as points,
 * the floor, dead band and steps in the cube, tuner_bo_suggest() (bo.c), then the limit
 * tightened to the memory peak's bound and a reason per value.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo-internal.h"
#include "bo.h"
#include "rules.h"
#include "util.h"

/* ---- over runs: the mapping between struct tuner_params and the unit cube ---- */

#define MIB        (UINT64_C(1) << 20)
#define CANDIDATES (TUNER_P_COUNT - 1) /* every parameter but cores */

struct dimension {
        enum tuner_param_index param;
        double lo, hi; /* in the mapped space: ratio, log bytes, fraction, log partitions */
        int position;  /* in x, or -1 when left out */
};

struct mapping {
        uint32_t cores;
        struct dimension dim[CANDIDATES];
        unsigned dims;
        const struct tuner_bounds *bounds;
        struct tuner_params base; /* the newest run's: left-out values */
};

static bool known_bytes(uint64_t v)
{
        return v != 0 && v != TUNER_UNKNOWN;
}

static double log_bytes(uint64_t v)
{
        return v == 0 || v == TUNER_UNKNOWN ? NAN : log((double)v);
}

/* A run's value of a parameter in the mapped space; NAN when it has none usable. */
static double raw_value(const struct mapping *map, const struct tuner_params *p,
                        enum tuner_param_index param)
{
        const struct tuner_bounds *b = map->bounds;
        uint32_t cores = p->cores ? p->cores : map->cores;

        switch (param) {
        case TUNER_P_MILLICORES:
                if (p->millicores == 0 || p->millicores == TUNER_UNKNOWN)
                        return NAN;
                return (double)p->millicores / (1000.0 * cores);
        case TUNER_P_HEAP:
                return log_bytes(p->heap_bytes);
        case TUNER_P_OVERHEAD:
                return log_bytes(p->overhead_bytes ? p->overhead_bytes : b->overhead_min_bytes);
        case TUNER_P_BURST_RATIO:
                return isfinite(p->burst_ratio) ? p->burst_ratio : 0.0;
        case TUNER_P_SPILL_FRACTION:
                return isfinite(p->spill_fraction) ? p->spill_fraction : b->spill_fraction_max;
        case TUNER_P_PARTITIONS:
                return log((double)tuner_partitions(p));
        case TUNER_P_CORES:
        case TUNER_P_COUNT:
                break;
        }
        return NAN;
}

static double to_unit(const struct dimension *d, double raw)
{
        return clamp((raw - d->lo) / (d->hi - d->lo), 0.0, 1.0);
}

static double from_unit(const struct dimension *d, double u)
{
        return d->lo + clamp(u, 0.0, 1.0) * (d->hi - d->lo);
}

/*
 * Up to a whole MiB, but not for the last bits of a round trip: exp(log(512 MiB)) through
 * the unit cube comes back a few 1e-13 MiB above 512 MiB, and a plain ceil made it 513 MiB,
 * one more each run (issue 24: 1493m -> 1494m -> 1495m in the real loops). A millionth of
 * a MiB (one byte) is below any size anyone asks for and far above the round trip's error.
 */
#define MIB_ROUND_TRIP 1e-6
static uint64_t bytes_up_to_mib(double log_value, uint64_t lo, uint64_t hi)
{
        double v = ceil(exp(log_value) / (double)MIB - MIB_ROUND_TRIP) * (double)MIB;
        if (v < (double)lo)
                return lo;
        if (v > (double)hi)
                return hi;
        return (uint64_t)v;
}

/* x (the tuned dimensions) -> params, rounded and within the bounds */
static void decode(const struct mapping *map, const double *x, struct tuner_params *ret)
{
        const struct tuner_bounds *b = map->bounds;
        struct tuner_params p = map->base;

        p.cores = map->cores;
        for (unsigned i = 0; i < CANDIDATES; i++) {
                const struct dimension *d = &map->dim[i];
                double v;

                if (d->position < 0)
                        continue;
                v = from_unit(d, x[d->position]);
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        v = round(v * 1000.0 * map->cores);
                        p.millicores = (uint64_t)clamp(v, (double)b->millicores_min,
                                                       (double)b->millicores_max);
                        break;
                case TUNER_P_HEAP:
                        p.heap_bytes = bytes_up_to_mib(v, b->heap_min_bytes, b->heap_max_bytes);
                        break;
                case TUNER_P_OVERHEAD:
                        p.overhead_bytes =
                            bytes_up_to_mib(v, b->overhead_min_bytes, b->overhead_max_bytes);
                        break;
                case TUNER_P_BURST_RATIO:
                        p.burst_ratio = clamp(round(v * 1000) / 1000, 0, b->burst_ratio_max);
                        break;
                case TUNER_P_SPILL_FRACTION:
                        p.spill_fraction = clamp(round(v * 1000) / 1000, b->spill_fraction_min,
                                                 b->spill_fraction_max);
                        break;
                case TUNER_P_PARTITIONS:
                        p.shuffle_partitions =
                            (uint32_t)clamp(round(exp(v)), b->partitions_min, b->partitions_max);
                        break;
                case TUNER_P_CORES:
                case TUNER_P_COUNT:
                        break;
                }
        }
        *ret = p;
}

/*
 * Where x is still the best safe run's coordinate (the fallback, or a dimension the proposal
 * did not move), its exact value: decoding would round, and a value the tuner keeps must be
 * kept exactly. Unless the floor raised it or the bounds now exclude it.
 */
static void keep_incumbent(const struct mapping *map, const struct tuner_bo_point *point,
                           const double *x, const struct tuner_params *best,
                           struct tuner_params *ret)
{
        const struct tuner_bounds *b = map->bounds;

        for (unsigned i = 0; i < CANDIDATES; i++) {
                const struct dimension *d = &map->dim[i];

                if (d->position < 0 || x[d->position] != point->x[d->position])
                        continue;
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        if (best->cores == map->cores && best->millicores >= b->millicores_min &&
                            best->millicores <= b->millicores_max)
                                ret->millicores = best->millicores;
                        break;
                case TUNER_P_HEAP:
                        if (best->heap_bytes >= b->heap_min_bytes &&
                            best->heap_bytes <= b->heap_max_bytes)
                                ret->heap_bytes = best->heap_bytes;
                        break;
                case TUNER_P_OVERHEAD:
                        if (best->overhead_bytes >= b->overhead_min_bytes &&
                            best->overhead_bytes <= b->overhead_max_bytes)
                                ret->overhead_bytes = best->overhead_bytes;
                        break;
                case TUNER_P_BURST_RATIO:
                        if (best->burst_ratio >= 0 && best->burst_ratio <= b->burst_ratio_max)
                                ret->burst_ratio = best->burst_ratio;
                        break;
                case TUNER_P_SPILL_FRACTION:
                        if (best->spill_fraction >= b->spill_fraction_min &&
                            best->spill_fraction <= b->spill_fraction_max)
                                ret->spill_fraction = best->spill_fraction;
                        break;
                case TUNER_P_PARTITIONS:
                        if (best->shuffle_partitions >= b->partitions_min &&
                            best->shuffle_partitions <= b->partitions_max)
                                ret->shuffle_partitions = best->shuffle_partitions;
                        break;
                case TUNER_P_CORES:
                case TUNER_P_COUNT:
                        break;
                }
        }
}

/*
 * One step of the search (struct tuner_bo_options.step) per parameter, in the mapped units:
 * a tenth of the policy's default range, rounded to a physical figure, so that the default
 * bounds search as before and an admin's narrower or wider ones do not change the steps in
 * bytes, cores or partitions (issue 24: with the grid's bounds cpu-light ended at 2.44x, with
 * the policy's at 1.00-1.86x). The trust region starts at one step around the best run and
 * grows 1.15x a safe run; the models' prior lengthscales are 1.5 steps.
 */
static double physical_step(enum tuner_param_index param)
{
        switch (param) {
        case TUNER_P_MILLICORES:
                return 0.1; /* a tenth of a core per task slot */
        case TUNER_P_HEAP:
        case TUNER_P_OVERHEAD:
                return log(1.6); /* a factor 1.6 (512 MiB .. 64 GiB / 10: 1.62) */
        case TUNER_P_BURST_RATIO:
                return 0.1;
        case TUNER_P_SPILL_FRACTION:
                return 0.05;
        case TUNER_P_PARTITIONS:
                return log(10.0) / 2; /* half a decade, x3.16 (1 .. 100000 / 10) */
        case TUNER_P_CORES:
        case TUNER_P_COUNT:
                break;
        }
        return NAN;
}

/* the bits of the heap's and the partitions' positions in x */
static unsigned heap_and_partitions(const struct mapping *map)
{
        unsigned bits = 0;

        for (unsigned i = 0; i < CANDIDATES; i++)
                if (map->dim[i].position >= 0 &&
                    (map->dim[i].param == TUNER_P_HEAP || map->dim[i].param == TUNER_P_PARTITIONS))
                        bits |= 1u << map->dim[i].position;
        return bits ? bits : ~0u;
}

/*
 * What a candidate must meet besides the models: the policy's memory limit, the heap the
 * memory failures hold at the candidate's own shuffle partitions (tuner_rules_oom_heap_floor),
 * and, once the job has run out of heap, a step of at most TUNER_RULES_HEAP_STEP under the
 * heaps that completed at those partitions or fewer (tuner_rules_heap_step_floor); both
 * within the bounds as the floor is. The floor (tuner_rules_floor_measured) is at the newest
 * run's partitions, one box for every candidate: a Java heap OOM it lets go there may still
 * hold at a candidate's other ones.
 */
struct feasibility {
        const struct mapping *map;
        const struct tuner_run *runs;
        size_t n;
        bool safety; /* the failures' heap held (struct tuner_bo_options.safety) */
};

static bool feasible(const double *x, void *userdata)
{
        const struct feasibility *f = userdata;
        const struct tuner_bounds *b = f->map->bounds;
        struct tuner_params p;
        uint64_t heap, step, parts;

        decode(f->map, x, &p);
        if (b->memory_limit_max && p.heap_bytes + p.overhead_bytes > b->memory_limit_max)
                return false;
        if (!f->safety)
                return true;
        parts = tuner_partitions(&p);
        heap = tuner_rules_oom_heap_floor(f->runs, f->n, parts);
        step = tuner_rules_heap_step_floor(f->runs, f->n, parts);
        if (step > heap)
                heap = step;
        return p.heap_bytes >= (heap < b->heap_max_bytes ? heap : b->heap_max_bytes);
}

/*
 * The usage models of a run (docs/tuner-bo.md, "The usage models"), per executor (the run
 * time and the work per run): what the
 * objective's utilisations divide (average CPU in cores, the memory mem_util counts, MiB),
 * and what the limits bound (the 90th percentile of CPU in cores: cpu.max; the memory peak,
 * MiB: memory.max). None of them depends on the request while it stays under the limit.
 */
enum usage_index {
        USAGE_CPU = 0,
        USAGE_MEMORY,
        USAGE_CPU_P90,
        USAGE_MEMORY_PEAK,
        USAGE_DURATION, /* the run's wall time, s: bounded by its median (the run-time target) */
        USAGE_WORK,     /* the CPU it burns, core-seconds: bounded the same way (below) */
        USAGE_COUNT,
};
_Static_assert(USAGE_COUNT <= TUNER_BO_USAGES_MAX, "TUNER_BO_USAGES_MAX too small");

static double positive_or_nan(double v)
{
        return v > 0 && isfinite(v) ? v : NAN;
}

static double request_mib(const struct tuner_params *p)
{
        double burst = isfinite(p->burst_ratio) ? p->burst_ratio : 0.0;
        return ((double)p->heap_bytes + (double)p->overhead_bytes * (1.0 - burst)) / (double)MIB;
}

static void usages_of(const struct tuner_run *r, bool job_cpu, double usage[TUNER_BO_USAGES_MAX])
{
        double cores = r->params.millicores && r->params.millicores != TUNER_UNKNOWN
                           ? (double)r->params.millicores / 1000.0
                           : NAN;

        usage[USAGE_CPU] = positive_or_nan(r->cpu_util * cores);
        usage[USAGE_MEMORY] = positive_or_nan(r->mem_util * request_mib(&r->params));
        usage[USAGE_CPU_P90] = positive_or_nan(r->cpu_peak_util * cores);
        usage[USAGE_MEMORY_PEAK] =
            known_bytes(r->memory_peak_bytes) ? (double)r->memory_peak_bytes / (double)MIB : NAN;
        /* a run that failed ended early or was retried: its wall time says nothing of the
           configuration's (a 20 s OOM would drag the fastest modelled median down) */
        usage[USAGE_DURATION] = r->failure == TUNER_OK || r->failure == TUNER_FAIL_RUNTIME
                                    ? positive_or_nan(r->duration_seconds)
                                    : NAN;
        /* the work: the CPU the job burned over the run (issue 24, defect 4: more partitions
           can burn a quarter more CPU for the same output in a little more time, and read as
           a higher cpu_util of the same request): its executors' CPU seconds, summed, which
           counts every executor dynamic allocation starts (job_cpu: every run of the history
           with a work figure has them, usage_context_init); else the executor's average CPU
           over the application's wall time, which tracks the job's CPU only while the
           executor count is fixed. One figure for the whole history: the bound is relative
           to the job's own runs */
        usage[USAGE_WORK] = isnan(usage[USAGE_CPU]) || isnan(usage[USAGE_DURATION]) ? NAN
                            : job_cpu ? positive_or_nan(r->cpu_seconds)
                                      : positive_or_nan(usage[USAGE_CPU] * usage[USAGE_DURATION]);
}

/*
 * A failure the usage models explain: the memory peak reached memory.max (a kernel OOM
 * kill's peak is the limit), or the run was slow with its p90 CPU at the CPU limit or
 * throttled. USAGE_AT_LIMIT: a peak sampled within 5 % of a limit counts as at it.
 */
#define USAGE_AT_LIMIT 0.95
static bool usage_failure_of(const struct tuner_run *r, double cpu_limit_ratio)
{
        double limit = (double)r->params.heap_bytes + (double)r->params.overhead_bytes;

        switch (r->failure) {
        case TUNER_FAIL_OOM:
        case TUNER_FAIL_EXECUTOR_LOST:
                return (r->oom_kills && r->oom_kills != TUNER_UNKNOWN) ||
                       (known_bytes(r->memory_peak_bytes) &&
                        (double)r->memory_peak_bytes >= USAGE_AT_LIMIT * limit);
        case TUNER_FAIL_RUNTIME:
                return r->cpu_peak_util >= USAGE_AT_LIMIT * cpu_limit_ratio ||
                       r->throttled_fraction >= TUNER_RULES_THROTTLED_HIGH;
        case TUNER_OK:
        case TUNER_FAIL_TASKS:
        case TUNER_FAIL_APP:
                break;
        }
        return false;
}

struct usage_context {
        const struct mapping *map;
        double cpu_limit_ratio;
        double runtime_target; /* the run-time bound's factor; NAN: no run time known */
        double work_target;    /* the work bound's factor; NAN: no run time known */
        bool job_cpu;          /* the work is the runs' cpu_seconds (usages_of) */
};

static double usage_limit(unsigned j, const double *x, void *userdata)
{
        const struct usage_context *c = userdata;
        struct tuner_params p;

        decode(c->map, x, &p);
        switch (j) {
        case USAGE_CPU_P90:
                return (double)p.millicores / 1000.0 * c->cpu_limit_ratio;
        case USAGE_MEMORY_PEAK:
                return ((double)p.heap_bytes + (double)p.overhead_bytes) / (double)MIB;
        case USAGE_DURATION: /* x the least modelled median (usage_relative) */
                return c->runtime_target;
        case USAGE_WORK:
                return c->work_target;
        default:
                return NAN;
        }
}

/*
 * The memory limit no larger than the peak's upper bound needs, at the same request. The
 * objective counts the request (heap + overhead x (1 - burst)); a larger limit is as safe by
 * the usage models and costs the objective nothing, so nothing in EI keeps it down, and the
 * first loop on real Spark with these models got 16 GiB of overhead at a burst ratio of 0.99
 * for a job that peaks under 1 GiB: a node's worth of memory that may be taken at once.
 * The overhead drops to the peak's UCB - heap (never under the floor or the bounds), and
 * with BURST the ratio follows so that the request stays what the GA chose. true when
 * changed.
 */
static bool tighten_limit(struct tuner_params *p, double peak_ucb_mib,
                          const struct tuner_params *floor, const struct tuner_bounds *b,
                          bool burst)
{
        double heap = (double)p->heap_bytes, overhead = (double)p->overhead_bytes;
        double ratio = isfinite(p->burst_ratio) ? p->burst_ratio : 0.0;
        double request = heap + overhead * (1.0 - ratio), need;
        uint64_t to;

        if (!(peak_ucb_mib > 0) || !isfinite(peak_ucb_mib))
                return false;
        need = fmax(peak_ucb_mib * (double)MIB - heap, 0.0);
        to = (uint64_t)ceil(need / (double)MIB) * MIB;
        if (to < b->overhead_min_bytes)
                to = b->overhead_min_bytes;
        if (floor && floor->overhead_bytes != TUNER_UNKNOWN && to < floor->overhead_bytes)
                to = floor->overhead_bytes;
        if (to >= p->overhead_bytes)
                return false;
        p->overhead_bytes = to;
        if (burst && to > 0)
                p->burst_ratio = clamp(round((1.0 - (request - heap) / (double)to) * 1000) / 1000,
                                       0, b->burst_ratio_max);
        return true;
}

/* the log objective of x with the usages' medians (ByteDance's f, each utilisation capped) */
static double usage_objective(const double *x, const double *median, void *userdata)
{
        const struct usage_context *c = userdata;
        struct tuner_params p;
        double cpu, mem;

        decode(c->map, x, &p);
        cpu = median[USAGE_CPU] * 1000.0 / (double)p.millicores;
        mem = median[USAGE_MEMORY] / request_mib(&p);
        if (!(cpu > 0) || !(mem > 0))
                return NAN;
        return -log(fmin(cpu, 1.0)) - log(fmin(mem, 1.0));
}

static void format_value(const struct tuner_params *p, enum tuner_param_index param, char *buf,
                         size_t size)
{
        switch (param) {
        case TUNER_P_CORES:
                snprintf(buf, size, "%" PRIu32, p->cores);
                break;
        case TUNER_P_MILLICORES:
                snprintf(buf, size, "%" PRIu64 "m", p->millicores);
                break;
        case TUNER_P_HEAP:
                snprintf(buf, size, "%" PRIu64 "MiB", p->heap_bytes / MIB);
                break;
        case TUNER_P_OVERHEAD:
                snprintf(buf, size, "%" PRIu64 "MiB", p->overhead_bytes / MIB);
                break;
        case TUNER_P_BURST_RATIO:
                snprintf(buf, size, "%.3f", p->burst_ratio);
                break;
        case TUNER_P_SPILL_FRACTION:
                snprintf(buf, size, "%.3f", p->spill_fraction);
                break;
        case TUNER_P_PARTITIONS:
                snprintf(buf, size, "%" PRIu32, p->shuffle_partitions);
                break;
        case TUNER_P_COUNT:
                buf[0] = '\0';
                break;
        }
}

static void set_reason(struct tuner_reason *r, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_reason(struct tuner_reason *r, const char *source, const char *fmt, ...)
{
        va_list ap;

        snprintf(r->source, sizeof(r->source), "%s", source);
        va_start(ap, fmt);
        vsnprintf(r->text, sizeof(r->text), fmt, ap);
        va_end(ap);
}

static int build_mapping(struct mapping *map, const struct tuner_run *runs, size_t n,
                         const struct tuner_bounds *b, unsigned fixed)
{
        double cores_1000;

        *map = (struct mapping){.bounds = b, .base = runs[0].params};
        map->cores = 1;
        for (size_t i = 0; i < n; i++)
                if (runs[i].params.cores) {
                        map->cores = runs[i].params.cores;
                        break;
                }
        cores_1000 = 1000.0 * map->cores;

        for (unsigned i = 0; i < CANDIDATES; i++) {
                struct dimension *d = &map->dim[i];
                double seen_lo = INFINITY, seen_hi = -INFINITY;
                bool any = false;

                d->param = (enum tuner_param_index)(TUNER_P_MILLICORES + i);
                d->position = -1;
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        /* a request above the task slots buys nothing but GC headroom: up
                           to cores x 1000, or the most a run had */
                        d->lo = (double)b->millicores_min / cores_1000;
                        d->hi = 1.0;
                        for (size_t j = 0; j < n; j++)
                                d->hi = fmax(d->hi, raw_value(map, &runs[j].params, d->param));
                        d->hi = fmin(d->hi, (double)b->millicores_max / cores_1000);
                        break;
                case TUNER_P_HEAP:
                        d->lo = log_bytes(b->heap_min_bytes);
                        d->hi = log_bytes(b->heap_max_bytes);
                        break;
                case TUNER_P_OVERHEAD:
                        d->lo = log_bytes(b->overhead_min_bytes);
                        d->hi = log_bytes(b->overhead_max_bytes);
                        break;
                case TUNER_P_BURST_RATIO:
                        d->lo = 0;
                        d->hi = b->burst_ratio_max;
                        break;
                case TUNER_P_SPILL_FRACTION:
                        d->lo = b->spill_fraction_min;
                        d->hi = b->spill_fraction_max;
                        break;
                case TUNER_P_PARTITIONS:
                        d->lo = log(b->partitions_min ? (double)b->partitions_min : 1.0);
                        d->hi = log(b->partitions_max ? (double)b->partitions_max : 1.0);
                        break;
                case TUNER_P_CORES:
                case TUNER_P_COUNT:
                        break;
                }
                if (!(d->hi > d->lo) || !isfinite(d->lo) || !isfinite(d->hi))
                        continue; /* the bounds leave nothing to choose */

                for (size_t j = 0; j < n; j++) {
                        double v;
                        if (d->param == TUNER_P_SPILL_FRACTION &&
                            !isfinite(runs[j].params.spill_fraction))
                                continue;
                        v = raw_value(map, &runs[j].params, d->param);
                        if (!isfinite(v))
                                continue;
                        v = to_unit(d, v);
                        seen_lo = fmin(seen_lo, v);
                        seen_hi = fmax(seen_hi, v);
                        any = true;
                }
                /* an agent threshold no run set stays unset */
                if (d->param == TUNER_P_SPILL_FRACTION && !any)
                        continue;
                if ((fixed & (1u << d->param)) && seen_hi - seen_lo < 1e-9)
                        continue;
                d->position = (int)map->dims++;
        }
        return map->dims ? 0 : -ENODATA;
}

/* the usage models' context: the CPU limit's ratio to the request (the first run's, else
   the rules'), and the run-time target when the runs give a fastest duration */
static void usage_context_init(struct usage_context *usage, const struct mapping *map,
                               const struct tuner_run *runs, size_t n, const struct tuner_bounds *b)
{
        *usage = (struct usage_context){.map = map, .cpu_limit_ratio = NAN};
        for (size_t j = 0; j < n && !isfinite(usage->cpu_limit_ratio); j++)
                if (runs[j].cpu_limit_ratio >= 1 && isfinite(runs[j].cpu_limit_ratio))
                        usage->cpu_limit_ratio = runs[j].cpu_limit_ratio;
        if (!isfinite(usage->cpu_limit_ratio))
                usage->cpu_limit_ratio = TUNER_RULES_CPU_OVERCOMMIT; /* as the rules take it */
        /* the run-time constraint: the median run within runtime_target x the job's fastest
           configuration's median (issue 24: utilisation alone rewards a slower run that uses
           more of the same request) */
        usage->runtime_target = usage->work_target = NAN;
        if (b->runtime_target >= 1 && isfinite(b->runtime_target) &&
            isfinite(tuner_fastest_duration(runs, n))) {
                usage->runtime_target = b->runtime_target;
                /* tuner.work_target: unset (0), the run time's factor */
                usage->work_target = b->work_target >= 1 && isfinite(b->work_target)
                                         ? b->work_target
                                         : b->runtime_target;
        }
        /* the job's CPU seconds as the work when every run with a work figure has them:
           never one figure for some runs and another for others */
        usage->job_cpu = false;
        for (size_t j = 0; j < n; j++) {
                double u[TUNER_BO_USAGES_MAX];

                usages_of(&runs[j], false, u);
                if (isnan(u[USAGE_WORK]))
                        continue;
                if (!(runs[j].cpu_seconds > 0 && isfinite(runs[j].cpu_seconds))) {
                        usage->job_cpu = false;
                        break;
                }
                usage->job_cpu = true;
        }
}

/* the runs as points in the unit cube (a run without a usable value of a tuned parameter is
   left out); run_of[i]: the run of point i. Returns the number of points */
static size_t points_from_runs(const struct mapping *map, const struct tuner_run *runs, size_t n,
                               const struct usage_context *usage, struct tuner_bo_point *pts,
                               size_t *run_of)
{
        size_t m = 0;

        for (size_t j = 0; j < n; j++) {
                struct tuner_bo_point *p = &pts[m];
                bool usable = true;

                for (unsigned i = 0; i < CANDIDATES; i++) {
                        const struct dimension *d = &map->dim[i];
                        double v;
                        if (d->position < 0)
                                continue;
                        v = raw_value(map, &runs[j].params, d->param);
                        if (!isfinite(v)) {
                                usable = false;
                                break;
                        }
                        p->x[d->position] = to_unit(d, v);
                }
                if (!usable)
                        continue;
                p->failed = runs[j].failure != TUNER_OK;
                /* as the rules read it: an executor lost of unknown cause counts as memory */
                p->memory_failure = runs[j].failure == TUNER_FAIL_OOM ||
                                    runs[j].failure == TUNER_FAIL_EXECUTOR_LOST;
                /* a Java heap OOM (no kernel OOM kill): the heap ran out, not the limit */
                if (p->memory_failure && runs[j].oom_task_failures > 0 &&
                    !(runs[j].oom_kills && runs[j].oom_kills != TUNER_UNKNOWN))
                        p->monotone_in = heap_and_partitions(map);
                usages_of(&runs[j], usage->job_cpu, p->usage);
                p->usage_failure = usage_failure_of(&runs[j], usage->cpu_limit_ratio);
                p->y = !p->failed && isfinite(runs[j].objective) && runs[j].objective > 0
                           ? log(runs[j].objective)
                           : NAN;
                run_of[m++] = j;
        }
        return m;
}

/* the floor, in the unit cube; the bounds win over it */
static void floor_in_cube(const struct mapping *map, const struct tuner_params *floor,
                          struct tuner_bo_options *bo)
{
        for (unsigned i = 0; i < CANDIDATES; i++) {
                const struct dimension *d = &map->dim[i];
                double v = NAN;
                if (d->position < 0 || !floor)
                        continue;
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        if (floor->millicores && floor->millicores != TUNER_UNKNOWN)
                                v = (double)floor->millicores / (1000.0 * map->cores);
                        break;
                case TUNER_P_HEAP:
                        v = log_bytes(floor->heap_bytes);
                        break;
                case TUNER_P_OVERHEAD:
                        v = log_bytes(floor->overhead_bytes);
                        break;
                case TUNER_P_BURST_RATIO:
                        v = floor->burst_ratio > 0 ? floor->burst_ratio : NAN;
                        break;
                case TUNER_P_SPILL_FRACTION:
                        v = floor->spill_fraction;
                        break;
                case TUNER_P_PARTITIONS:
                        v = floor->shuffle_partitions ? log((double)floor->shuffle_partitions)
                                                      : NAN;
                        break;
                case TUNER_P_CORES:
                case TUNER_P_COUNT:
                        break;
                }
                bo->floor[d->position] = isfinite(v) ? fmax(bo->floor[d->position], to_unit(d, v))
                                                     : bo->floor[d->position];
        }
}

/* the dead band and the step of each tuned dimension, in the unit cube */
static void dead_band_and_step(const struct mapping *map, const struct tuner_run *runs,
                               struct tuner_bo_options *bo)
{
        /* the rules' dead band: a change below 5 % of a value (0.05 of a ratio) is none */
        for (unsigned i = 0; i < CANDIDATES; i++) {
                const struct dimension *d = &map->dim[i];
                double width = d->hi - d->lo, band;
                if (d->position < 0)
                        continue;
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        band = TUNER_RULES_DEAD_BAND * raw_value(map, &runs[0].params, d->param);
                        break;
                case TUNER_P_HEAP:
                case TUNER_P_OVERHEAD:
                case TUNER_P_PARTITIONS:
                        band = log(1.0 + TUNER_RULES_DEAD_BAND);
                        break;
                default:
                        band = TUNER_RULES_DEAD_BAND;
                        break;
                }
                if (isfinite(band) && width > 0)
                        bo->dead_band[d->position] = band / width;
                /* the search's step in physical terms, whatever the admin's bounds */
                if (width > 0 && !(bo->step[d->position] > 0))
                        bo->step[d->position] = physical_step(d->param) / width;
        }
}

/* the search's options from the mapping: the floor, the monotone memory, the memory limit,
   the dead band and steps, and the runs' usage models */
static void search_options(struct mapping *map, const struct tuner_run *runs,
                           const struct tuner_bounds *b, const struct tuner_params *floor,
                           struct usage_context *usage, struct feasibility *feasibility,
                           struct tuner_bo_options *bo)
{
        floor_in_cube(map, floor, bo);
        /* memory is monotone: less than what ran out of memory runs out too, and so do
           fewer shuffle partitions (larger tasks); a run with more partitions than one that
           ran out of memory is not ruled out by it (issue 24: skew's Java heap OOM at 1g and
           2 partitions ruled out 1g at 8, the best safe point) */
        for (unsigned i = 0; i < CANDIDATES; i++)
                if (map->dim[i].position >= 0 &&
                    (map->dim[i].param == TUNER_P_HEAP || map->dim[i].param == TUNER_P_OVERHEAD ||
                     map->dim[i].param == TUNER_P_PARTITIONS))
                        bo->monotone |= 1u << map->dim[i].position;
        if (b->memory_limit_max || bo->safety) {
                bo->feasible = feasible;
                bo->feasible_userdata = feasibility;
        }
        dead_band_and_step(map, runs, bo);
        /* the runs' usage models (bo.usages 0; a caller's own usage callbacks would not know
           the runs); what changes the job's work is heap, spill threshold and partitions, the
           rest are limits on it */
        if (bo->usages == 0) {
                bo->usages = USAGE_COUNT;
                bo->workload = 0;
                for (unsigned i = 0; i < CANDIDATES; i++)
                        if (map->dim[i].position >= 0 &&
                            (map->dim[i].param == TUNER_P_HEAP ||
                             map->dim[i].param == TUNER_P_SPILL_FRACTION ||
                             map->dim[i].param == TUNER_P_PARTITIONS))
                                bo->workload |= 1u << map->dim[i].position;
                bo->usage_limit = usage_limit;
                bo->usage_median = bo->usage_relative = (1u << USAGE_DURATION) | (1u << USAGE_WORK);
                bo->usage_in_objective = (1u << USAGE_CPU) | (1u << USAGE_MEMORY);
                bo->objective_prior = usage_objective;
                bo->usage_userdata = usage;
        }
}

/* the overhead lowered to the memory peak's bound (tighten_limit), then the heap within the
   memory limit; true when the overhead was lowered */
static bool tighten(const struct mapping *map, const struct tuner_bo_prediction *pred,
                    const struct tuner_params *floor, const struct tuner_bounds *b,
                    struct tuner_params *p)
{
        bool tightened = false;

        if (map->dim[TUNER_P_OVERHEAD - 1].position >= 0)
                tightened = tighten_limit(p, pred->usage_ucb[USAGE_MEMORY_PEAK], floor, b,
                                          map->dim[TUNER_P_BURST_RATIO - 1].position >= 0);
        /* rounding up to MiB may cross the limit: take it off the heap */
        if (b->memory_limit_max && p->heap_bytes + p->overhead_bytes > b->memory_limit_max &&
            b->memory_limit_max > p->overhead_bytes + b->heap_min_bytes)
                p->heap_bytes = (b->memory_limit_max - p->overhead_bytes) / MIB * MIB;
        return tightened;
}

/* the reasons: one line on the suggestion, given to every tuned value */
static void explain(const struct mapping *map, const struct tuner_run *runs,
                    const struct tuner_run *best, const struct tuner_bo_prediction *pred,
                    double failure_bound, bool tightened, struct tuner_recommendation *rec)
{
        char before[64], after[64], summary[440];

        if (pred->fallback)
                snprintf(summary, sizeof(summary),
                         "%s: best safe run %s kept (objective %.4g), predicted objective %.4g "
                         "(log %.3f +- %.3f), P(fail) %.3f, trust radius %.3f, %u safe / %u "
                         "failed runs",
                         pred->converged
                             ? "no candidate with EI > 0 (converged)"
                             : "no eligible candidate (P(fail) at or above the bound, a "
                               "usage over its limit or bound, or less memory than an OOM run)",
                         best->app_id, exp(pred->best_y), rec->predicted_objective, pred->mean,
                         pred->sd, pred->failure_probability, pred->trust_radius, pred->safe_points,
                         pred->failed_points);
        else
                snprintf(summary, sizeof(summary),
                         "EI %.3g, predicted objective %.4g (log %.3f +- %.3f) vs best %.4g "
                         "(run %s), P(fail) %.3f < %.3g, usage bound / limit %.3f, trust radius "
                         "%.3f, %u safe / %u failed runs",
                         pred->ei, rec->predicted_objective, pred->mean, pred->sd,
                         exp(pred->best_y), best->app_id, pred->failure_probability, failure_bound,
                         pred->usage_headroom, pred->trust_radius, pred->safe_points,
                         pred->failed_points);

        for (unsigned p = 0; p < TUNER_P_COUNT; p++) {
                const struct dimension *d = p == TUNER_P_CORES ? NULL : &map->dim[p - 1];

                format_value(&runs[0].params, (enum tuner_param_index)p, before, sizeof(before));
                format_value(&rec->params, (enum tuner_param_index)p, after, sizeof(after));
                if (!d)
                        set_reason(&rec->reasons[p], "unchanged",
                                   "cores %s: not tuned by stage 2 (the newest run's)", after);
                else if (d->position < 0)
                        set_reason(&rec->reasons[p], "unchanged",
                                   "%s %s: not tuned (bounds leave no choice, never set, or the "
                                   "same in every run and marked fixed)",
                                   tuner_param_name(d->param), after);
                else
                        set_reason(&rec->reasons[p], "bo", "%s %s -> %s: %s",
                                   tuner_param_name(d->param), before, after, summary);
        }
        if (tightened) {
                struct tuner_reason *o = &rec->reasons[TUNER_P_OVERHEAD];
                size_t len = strlen(o->text);

                snprintf(o->text + len, sizeof(o->text) - len,
                         "; limit lowered to the memory peak's bound %.0f MiB, the request kept",
                         pred->usage_ucb[USAGE_MEMORY_PEAK]);
        }
}

int tuner_bo_recommend_with(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                            const struct tuner_params *floor,
                            const struct tuner_bo_recommend_options *opt,
                            struct tuner_recommendation *ret, struct util_error *err)
{
        _cleanup_free_ struct tuner_bo_point *pts = NULL;
        _cleanup_free_ size_t *run_of = NULL;
        struct tuner_bo_options bo;
        struct tuner_bo_prediction pred;
        struct tuner_recommendation rec = {0};
        struct mapping map;
        struct usage_context usage;
        struct feasibility feasibility;
        double x[TUNER_BO_DIMS_MAX];
        const struct tuner_run *best;
        bool tightened;
        size_t m;
        int r;

        if (!runs || !b || !ret)
                return util_error_set(err, EINVAL, "bo: no runs, bounds or result");
        if (n == 0)
                return util_error_set(err, ENODATA, "bo: no runs; need 2 successful ones");
        if (n > TUNER_BO_POINTS_MAX)
                n = TUNER_BO_POINTS_MAX; /* the newest */

        if (opt && opt->bo)
                bo = *opt->bo;
        else {
                tuner_bo_options_default(&bo);
                bo.seed = b->seed;
                if (b->failure_bound > 0 && b->failure_bound <= 1)
                        bo.failure_bound = b->failure_bound;
        }

        r = build_mapping(&map, runs, n, b, opt ? opt->fixed : 0);
        if (r < 0)
                return util_error_set(err, ENODATA,
                                      "bo: no parameter left to tune (bounds fixed or history "
                                      "never varies)");
        usage_context_init(&usage, &map, runs, n, b);

        pts = calloc(n, sizeof(*pts));
        run_of = calloc(n, sizeof(*run_of));
        if (!pts || !run_of)
                return util_error_set(err, ENOMEM, "bo: no memory for %zu runs", n);
        m = points_from_runs(&map, runs, n, &usage, pts, run_of);
        feasibility = (struct feasibility){.map = &map, .runs = runs, .n = n, .safety = bo.safety};
        search_options(&map, runs, b, floor, &usage, &feasibility, &bo);

        r = tuner_bo_suggest(pts, m, map.dims, &bo, x, &pred, err);
        if (r == -ENODATA)
                return util_error_set(err, ENODATA,
                                      "bo: %zu of %zu runs usable, fewer than 2 successful "
                                      "with an objective",
                                      m, n);
        if (r < 0)
                return r;

        best = &runs[run_of[pred.incumbent]];
        decode(&map, x, &rec.params);
        keep_incumbent(&map, &pts[pred.incumbent], x, &best->params, &rec.params);
        tightened = tighten(&map, &pred, floor, b, &rec.params);

        rec.stage = TUNER_STAGE_BO;
        rec.converged = pred.converged;
        rec.predicted_objective = exp(pred.mean);
        rec.failure_probability = pred.failure_probability;
        rec.runs_used = (unsigned)m;
        explain(&map, runs, best, &pred, bo.failure_bound, tightened, &rec);

        *ret = rec;
        return 0;
}

int tuner_bo_recommend(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                       const struct tuner_params *floor, struct tuner_recommendation *ret,
                       struct util_error *err)
{
        return tuner_bo_recommend_with(runs, n, b, floor, NULL, ret, err);
}
