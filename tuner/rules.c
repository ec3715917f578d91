/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage 1: the rule tree (docs/tuner-rules.md). Every rule reads the job's last runs
 * (newest first), proposes one parameter, and says why with the numbers; then the safety
 * floor raises what is below it and the admin bounds clamp everything.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

#define MIB (1024.0 * 1024.0)

/* What a memory failure says about which memory ran out. */
enum oom_kind {
        OOM_NONE = 0,
        OOM_HEAP = 1u << 0,  /* java.lang.OutOfMemoryError: the heap */
        OOM_LIMIT = 1u << 1, /* the kernel's OOM killer: the process' limit */
};

struct usage {
        /* the VPA-like percentile of the window's samples; NAN when there is none */
        double process_peak; /* cgroup memory peak */
        double heap_peak;    /* JVM heap peak */
        double nonheap_peak; /* nonheap_of() */
        unsigned process_samples, heap_samples, nonheap_samples;
};

/* Sizes saturate one below TUNER_UNKNOWN: a computed size is never "unknown". */
static uint64_t u64_of(double x)
{
        if (!(x > 0))
                return 0;
        if (x >= 18446744073709549568.0)
                return UINT64_MAX - 1;
        return (uint64_t)ceil(x);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
        return a > UINT64_MAX - 1 - b ? UINT64_MAX - 1 : a + b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
        return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
        return a < b ? a : b;
}

static uint64_t limit_of(const struct tuner_params *p)
{
        return add_sat(p->heap_bytes, p->overhead_bytes);
}

static bool known_u64(uint64_t v)
{
        return v != TUNER_UNKNOWN;
}

/* The run completed: its usage is a valid sample of what the job needs. */
static bool run_completed(const struct tuner_run *r)
{
        return r->failure == TUNER_OK || r->failure == TUNER_FAIL_RUNTIME;
}

/*
 * A completed run's peaks are evidence of the job's need at the newest run's sizes only
 * when it ran at most that size: a JVM fills the heap it is given before it collects, and
 * page cache fills a cgroup, so the peaks of a larger run overstate the need and, kept as
 * a floor, would ratchet the sizes at the largest ever tried.
 */
static bool heap_evidence(const struct tuner_run *r, const struct tuner_params *cur)
{
        return run_completed(r) && r->params.heap_bytes <= cur->heap_bytes;
}

static bool limit_evidence(const struct tuner_run *r, const struct tuner_params *cur)
{
        return run_completed(r) && limit_of(&r->params) <= limit_of(cur);
}

/*
 * The memory a completed run's process held outside its heap: what its peak held beyond the
 * heap size (the resident set cannot hold more heap than -Xmx), or what the JVM reported
 * outside its heap (the event log's JVMOffHeapMemory: metaspace, code cache), whichever is
 * larger. Not the process peak minus the event log's heap peak: the event log samples the
 * heap at each heartbeat (10 s) and the resident set keeps heap pages that the collector
 * has freed, so that difference held most of the heap (the first loop on real Spark: a
 * 1434m heap, a 1.2 GB peak, a 400 MB heap peak: "800 MB of non-heap", and the overhead
 * climbed from 973m to 1574m over four good runs).
 */
static bool nonheap_of(const struct tuner_run *r, uint64_t *ret)
{
        bool have = false;
        uint64_t v = 0;

        if (known_u64(r->memory_peak_bytes) && r->params.heap_bytes > 0) {
                v = r->memory_peak_bytes > r->params.heap_bytes
                        ? r->memory_peak_bytes - r->params.heap_bytes
                        : 0;
                have = true;
        }
        if (known_u64(r->offheap_peak_bytes)) {
                v = max_u64(v, r->offheap_peak_bytes);
                have = true;
        }
        if (have)
                *ret = v;
        return have;
}

static bool run_memory_failure(const struct tuner_run *r)
{
        return r->failure == TUNER_FAIL_OOM || r->failure == TUNER_FAIL_EXECUTOR_LOST;
}

static unsigned run_oom_kind(const struct tuner_run *r)
{
        bool heap = r->oom_task_failures > 0;
        bool kernel = known_u64(r->oom_kills) && r->oom_kills > 0;

        if (!run_memory_failure(r))
                return OOM_NONE;
        if (heap && !kernel)
                return OOM_HEAP;
        if (kernel && !heap)
                return OOM_LIMIT;
        return OOM_HEAP | OOM_LIMIT; /* both, or an executor lost for a reason we cannot see */
}

static double burst_of(const struct tuner_params *p)
{
        return isnan(p->burst_ratio) ? 0.0 : p->burst_ratio;
}

static double request_of(const struct tuner_params *p)
{
        return (double)p->heap_bytes + (double)p->overhead_bytes * (1.0 - burst_of(p));
}

/* VPA's OOM bump: max(1.2 x, + 100 MiB). */
static uint64_t oom_bump(uint64_t bytes)
{
        return max_u64(u64_of((double)bytes * TUNER_RULES_OOM_BUMP_RATIO),
                       add_sat(bytes, TUNER_RULES_OOM_BUMP_MIN));
}

static size_t window_of(size_t n, const struct tuner_bounds *b)
{
        return b->history_runs > 0 && n > b->history_runs ? b->history_runs : n;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/* Nearest-rank percentile of v[0..k), sorting v; NAN when k == 0. */
static double percentile(double *v, size_t k, double p)
{
        size_t rank;

        if (k == 0)
                return NAN;
        qsort(v, k, sizeof(*v), cmp_double);
        rank = (size_t)ceil(p * (double)k);
        if (rank < 1)
                rank = 1;
        return v[rank - 1];
}

/*
 * The usage samples of the window: every completed run's peaks, and like the VPA's
 * RecordOOM, every memory failure's bumped size as a sample of what was needed.
 */
static int usage_of(const struct tuner_run *runs, size_t w, struct usage *ret)
{
        const struct tuner_params *cur = &runs[0].params;
        double *proc = calloc(w ? w : 1, sizeof(double));
        double *heap = calloc(w ? w : 1, sizeof(double));
        double *nonheap = calloc(w ? w : 1, sizeof(double));
        size_t np = 0, nh = 0, nn = 0;

        if (!proc || !heap || !nonheap) {
                free(proc);
                free(heap);
                free(nonheap);
                return -ENOMEM;
        }
        for (size_t i = 0; i < w; i++) {
                const struct tuner_run *r = &runs[i];
                unsigned kind = run_oom_kind(r);

                if (run_completed(r)) {
                        bool at_limit = limit_evidence(r, cur);
                        uint64_t nonheap_bytes;

                        if (at_limit && known_u64(r->memory_peak_bytes))
                                proc[np++] = (double)r->memory_peak_bytes;
                        if (heap_evidence(r, cur) && known_u64(r->heap_peak_bytes))
                                heap[nh++] = (double)r->heap_peak_bytes;
                        if (at_limit && nonheap_of(r, &nonheap_bytes))
                                nonheap[nn++] = (double)nonheap_bytes;
                } else if (kind & OOM_LIMIT) {
                        /* the bumped size is the need, margin included */
                        proc[np++] =
                            (double)oom_bump(limit_of(&r->params)) / (1.0 + TUNER_RULES_MARGIN);
                }
                if (kind & OOM_HEAP)
                        heap[nh++] = (double)oom_bump(r->params.heap_bytes) /
                                     (1.0 + TUNER_RULES_HEAP_BUFFER);
        }
        *ret = (struct usage){
            .process_peak = percentile(proc, np, TUNER_RULES_PERCENTILE),
            .heap_peak = percentile(heap, nh, TUNER_RULES_PERCENTILE),
            .nonheap_peak = percentile(nonheap, nn, TUNER_RULES_PERCENTILE),
            .process_samples = (unsigned)np,
            .heap_samples = (unsigned)nh,
            .nonheap_samples = (unsigned)nn,
        };
        free(proc);
        free(heap);
        free(nonheap);
        return 0;
}

/* heap + overhead <= memory_limit_max: take from the overhead first, then from the heap. */
static void clamp_limit(uint64_t *heap, uint64_t *overhead, const struct tuner_bounds *b)
{
        if (b->memory_limit_max == 0 || add_sat(*heap, *overhead) <= b->memory_limit_max)
                return;
        if (*heap < b->memory_limit_max && b->memory_limit_max - *heap >= b->overhead_min_bytes) {
                *overhead = b->memory_limit_max - *heap;
                return;
        }
        *overhead = min_u64(*overhead, b->overhead_min_bytes);
        *heap = b->memory_limit_max > *overhead ? b->memory_limit_max - *overhead : 0;
}

/*
 * The floor of the sizes, and its two parts that are not parameters of their own: the
 * heap + overhead (limit) and the non-heap that any overhead must cover. MARGIN over the
 * measured peaks; LIMIT_PEAKS: successful runs' process peaks floor heap + overhead.
 */
struct memory_floor {
        struct tuner_params params;
        uint64_t limit, nonheap;
};

static uint64_t partitions_of(const struct tuner_params *p)
{
        return tuner_partitions(p);
}

/*
 * The partitions a Java heap OOM asks for (Spark's tuning guide, "Memory Usage of Reduce
 * Tasks": an OutOfMemoryError because one task's working set was too large; "the simplest fix
 * here is to increase the level of parallelism, so that each task's input set is smaller"):
 * TUNER_RULES_PARTITIONS_CORES per task slot, where the run had fewer and set them; 0 when it
 * asks for none. The slots: the executors that ran at once (those reported, less the lost
 * ones their replacements stand in for) x their cores.
 */
static uint64_t oom_partitions(const struct tuner_run *r)
{
        uint64_t slots = (uint64_t)tuner_executors_at_once(r) * r->params.cores; /* no wrap */
        uint64_t next = slots > UINT32_MAX / TUNER_RULES_PARTITIONS_CORES
                            ? UINT32_MAX
                            : TUNER_RULES_PARTITIONS_CORES * slots;

        if (!r->has_eventlog || next == 0 || !r->params.shuffle_partitions ||
            partitions_of(&r->params) >= next)
                return 0;
        return min_u64(next, UINT32_MAX);
}

/*
 * The partitions a Java heap OOM, runs[i], rolls back to: those of the newest run before it
 * that completed (in *ret_good), when it had more of them (beyond the dead band) and the
 * bounds still allow its partitions and heap; 0: none. Fewer partitions
 * make larger tasks, and how much more heap they need is not known: for a skewed key not
 * even in order, as two heavy keys may share a partition at one count and not at the next
 * (issue 24, skew: 1536m ran at 2 and 4 partitions, 1280m ran out at 6 in 3 of 3 runs, and
 * 960m sufficed at 8). The rules used to retry the smaller count with the heap bumped, a
 * guess at a need they had just found larger than they knew: on Spark 3.5 each of three
 * loops ran out a second time there, at heaps that had completed 2 or 3 times. The last
 * configuration that completed is known to: a step that ran out is undone, and not taken
 * again while the OOM is in the window (floor_of). An OOM with fewer than
 * TUNER_RULES_PARTITIONS_CORES per task slot raises them as Spark's guide says instead
 * (oom_partitions).
 */
static uint64_t oom_rollback_partitions(const struct tuner_run *runs, size_t n, size_t i,
                                        const struct tuner_bounds *b,
                                        const struct tuner_run **ret_good)
{
        const struct tuner_run *failed = &runs[i], *good = NULL;
        uint64_t back;

        if (run_oom_kind(failed) != OOM_HEAP || oom_partitions(failed))
                return 0;
        for (size_t j = i + 1; j < n && !good; j++)
                if (run_completed(&runs[j]))
                        good = &runs[j];
        if (!good)
                return 0;
        back = partitions_of(&good->params);
        /* beyond the dead band, and the bounds still allow the run that completed */
        if ((double)back <=
                (double)partitions_of(&failed->params) * (1.0 + TUNER_RULES_DEAD_BAND) ||
            back < b->partitions_min || back > b->partitions_max ||
            good->params.heap_bytes < b->heap_min_bytes ||
            good->params.heap_bytes > b->heap_max_bytes ||
            (b->memory_limit_max &&
             add_sat(good->params.heap_bytes, known_u64(failed->params.overhead_bytes)
                                                  ? failed->params.overhead_bytes
                                                  : b->overhead_min_bytes) > b->memory_limit_max))
                return 0;
        if (ret_good)
                *ret_good = good;
        return back;
}

/* The overcommit a run's plan had: its limit / request, or the policy's default when the
   run does not say (unknown, unlimited). */
static double cpu_ratio_of(const struct tuner_run *r)
{
        return isfinite(r->cpu_limit_ratio) && r->cpu_limit_ratio >= 1 ? r->cpu_limit_ratio
                                                                       : TUNER_RULES_CPU_OVERCOMMIT;
}

/*
 * A completed run's average and p90 CPU use in millicores, when it ran at CORES with a known
 * request and both utilisations. Use is the same whatever the request while the limit does
 * not cut it, so runs at other millicores are draws of the same job. An enforced run with a
 * known limit cannot have used more than the limit: a p90 above it is a sampling artefact,
 * and is cut there. A run without enforcement keeps what it used, which is what a limit
 * would have to absorb.
 */
static bool cpu_use_of(const struct tuner_run *r, uint32_t cores, double *ret_mean, double *ret_p90)
{
        double m = (double)r->params.millicores;

        if (!run_completed(r) || r->params.cores != cores || r->params.millicores == 0 ||
            !known_u64(r->params.millicores))
                return false;
        if (!isfinite(r->cpu_util) || !isfinite(r->cpu_peak_util) || r->cpu_util < 0 ||
            r->cpu_peak_util < 0)
                return false;
        *ret_mean = r->cpu_util * m;
        *ret_p90 = r->cpu_peak_util * m;
        if (r->enforced && isfinite(r->cpu_limit_ratio) && r->cpu_limit_ratio >= 1) {
                *ret_mean = fmin(*ret_mean, r->cpu_limit_ratio * m);
                *ret_p90 = fmin(*ret_p90, r->cpu_limit_ratio * m);
        }
        /* a throttled run's p90 reads at its limit, not at its need: counted as what the
           request cpu-short raises it to would hold under 0.9 of its limit, as a memory
           failure's bumped size counts as the memory's need, margin included (the offline
           benchmark: stage 2 asked a throttled 468m four times in a row, the floor at that
           run's own limit) */
        if (r->enforced && r->throttled_fraction > TUNER_RULES_THROTTLED_HIGH)
                *ret_p90 = fmax(*ret_p90, cpu_ratio_of(r) * m * TUNER_RULES_CPU_RAISE *
                                              TUNER_RULES_CPU_PEAK_OF_LIMIT);
        return true;
}

/*
 * The heap a completed run showed to fit at more partitions than the Java heap OOM runs[i]'s,
 * and no more than PARTS: the least such heap (UINT64_MAX: none, or PARTS are no more than
 * the OOM's), or 0 when it was no more than the heap that ran out.
 *
 * Fewer partitions make larger tasks, so at its own partitions and fewer an OOM holds its
 * heap. At more, the heap's need falls, but how far is not known, and for a skewed key not at
 * all past a point: the hot key's partition does not shrink. Only a run that completed there
 * with no more heap than ran out shows the need fell, and lets the OOM go (issue 24: skew's
 * OOM at 1g and 2 partitions, then 1g at 8, its best point). Short of that, the OOM holds its
 * heap at any partitions, capped at the least heap completed there, which is known to fit.
 * The floor used to let any OOM at fewer partitions than now go, and stage 2 took that for
 * safety (the fifth real loops, skew on Spark 4.0: 866m ran out at 5 partitions, then 730m
 * at 21, where 1109m was the least heap completed; the third: 1213m at 6, then 1067m at 61).
 * Partitions within the dead band of the OOM's are its own.
 */
static uint64_t oom_heap_shown(const struct tuner_run *runs, size_t n, size_t i, uint64_t parts)
{
        const struct tuner_run *failed = &runs[i];
        double failed_at = (double)partitions_of(&failed->params) * (1.0 + TUNER_RULES_DEAD_BAND);
        uint64_t least = UINT64_MAX;

        if ((double)parts <= failed_at || !known_u64(failed->params.heap_bytes))
                return UINT64_MAX;
        for (size_t j = 0; j < n; j++) {
                const struct tuner_run *r = &runs[j];
                uint64_t at = partitions_of(&r->params);

                if (run_completed(r) && known_u64(r->params.heap_bytes) && (double)at > failed_at &&
                    at <= parts)
                        least = min_u64(least, r->params.heap_bytes);
        }
        return least <= failed->params.heap_bytes ? 0 : least;
}

/* The heap a memory failure, runs[i], holds at PARTS: the size that ran out x 1.05, bumped
   while it is held, capped for a Java heap OOM alone by oom_heap_shown; 0: none */
static uint64_t oom_heap_held(const struct tuner_run *runs, size_t n, size_t i, uint64_t parts)
{
        const struct tuner_run *r = &runs[i];
        unsigned kind = run_oom_kind(r);
        uint64_t held;

        if (!(kind & OOM_HEAP))
                return 0;
        held = u64_of((double)r->params.heap_bytes * (1.0 + TUNER_RULES_OOM_MARGIN));
        if (i < TUNER_RULES_HOLD_RUNS)
                held = max_u64(held, oom_bump(r->params.heap_bytes));
        return kind == OOM_HEAP ? min_u64(held, oom_heap_shown(runs, n, i, parts)) : held;
}

uint64_t tuner_rules_oom_heap_floor(const struct tuner_run *runs, size_t n, uint64_t parts)
{
        uint64_t heap = 0;

        for (size_t i = 0; runs && i < n; i++)
                heap = max_u64(heap, oom_heap_held(runs, n, i, parts));
        return heap;
}

/* the reference of tuner_rules_heap_step_floor: the lesser heap, then the larger heap after
   GC (unknown counts as none) */
static bool less_heap(const struct tuner_run *r, const struct tuner_run *than)
{
        uint64_t a = known_u64(r->heap_after_gc_peak_bytes) ? r->heap_after_gc_peak_bytes : 0;
        uint64_t b = known_u64(than->heap_after_gc_peak_bytes) ? than->heap_after_gc_peak_bytes : 0;

        return r->params.heap_bytes < than->params.heap_bytes ||
               (r->params.heap_bytes == than->params.heap_bytes && a > b);
}

/*
 * The least heap stage 2 may ask at PARTS partitions: from the heap that completed with the
 * least at no more partitions (within the dead band), or, when none ran at so few, at the
 * fewest partitions that completed (the reference; among equal heaps, the one whose heap after
 * GC was largest):
 *   - once the job has run out of heap, TUNER_RULES_HEAP_STEP under the reference's heap;
 *   - where the reference's agent measured the heap in use after a collection (A),
 *     TUNER_RULES_HEAP_AFTER_GC x A, up to the reference's heap; at fewer partitions than any
 *     that completed, TUNER_RULES_HEAP_TIGHT x A, not capped (larger tasks than any that
 *     fitted: the heap the rules would take the jump there from, heap_tight);
 * the larger of the two; 0: neither applies, or no run completed.
 *
 * A heap that completed at these partitions or fewer is known to fit (fewer partitions, larger
 * tasks); how far under it the need lies is not, since a JVM fills the heap it is given and
 * only a run that ran out measures it. Stage 2's failure model leaves memory failures to the
 * floor, which knows only the heaps that ran out, so it took the gap for room: on Spark 3.5
 * skew ran out at 6 partitions, completed with 1274m at 50, and stage 2 then asked 1080m at
 * 50, which ran out too (issue 24, the seventh real loops); the grid's skew completes with
 * 960m at 8 partitions, and 896m ran out there in 1 or 2 of 3 runs. A job with no OOM is
 * explored as before: with the step always on, mem-sort, which never runs out, descended so
 * slowly that its median quality in the offline benchmark went from 0.96x to 1.47x.
 *
 * The heap after GC measures the gap, before any OOM: what the collector could not free is the
 * live data plus what it had not collected yet (an old generation's garbage until its next
 * cycle, more in a larger heap); the agent reads the latest collection at each sample, so it
 * may miss the highest. An allocation's peak lies above it (skew's collect_list grows its
 * buffer by copying it): skew needed 1.5-1.7 x it on Spark 3.5. As a floor it leaves a job with
 * little live data its whole descent (mem-sort's reading is 0.1-0.2 of its heap) and holds one
 * whose heap was full of live data where it completed (docs/tuner-rules.md).
 */
uint64_t tuner_rules_heap_step_floor(const struct tuner_run *runs, size_t n, uint64_t parts)
{
        const struct tuner_run *least = NULL, *fewest = NULL;
        uint64_t floor = 0, after_gc;
        bool cliff = false, fewer = false;

        for (size_t j = 0; runs && j < n; j++) {
                const struct tuner_run *r = &runs[j];
                uint64_t at = partitions_of(&r->params);

                if (run_oom_kind(r) & OOM_HEAP)
                        cliff = true;
                if (!run_completed(r) || !known_u64(r->params.heap_bytes))
                        continue;
                if ((double)at <= (double)parts * (1.0 + TUNER_RULES_DEAD_BAND) &&
                    (!least || less_heap(r, least)))
                        least = r;
                if (!fewest || at < partitions_of(&fewest->params) ||
                    (at == partitions_of(&fewest->params) && less_heap(r, fewest)))
                        fewest = r;
        }
        if (!least) {
                least = fewest;
                fewer = true;
        }
        if (!least)
                return 0;
        if (cliff)
                floor = u64_of((double)least->params.heap_bytes * (1.0 - TUNER_RULES_HEAP_STEP));
        after_gc = least->heap_after_gc_peak_bytes;
        if (known_u64(after_gc) && after_gc > 0)
                /* at fewer partitions than any that completed, a heap the rules would not jump
                   from (heap_tight): larger tasks than any that fitted */
                floor = max_u64(
                    floor, fewer ? u64_of((double)after_gc * TUNER_RULES_HEAP_TIGHT)
                                 : min_u64(least->params.heap_bytes,
                                           u64_of((double)after_gc * TUNER_RULES_HEAP_AFTER_GC)));
        return floor;
}

/* The partitions' floor: those a held Java heap OOM asked for (oom_partitions), and no step
   down that ran out while it is in the window (oom_rollback_partitions); within the bounds. */
static uint64_t partitions_floor_of(const struct tuner_run *runs, size_t n,
                                    const struct tuner_bounds *b)
{
        uint64_t partitions = b->partitions_min;
        size_t w = window_of(n, b);

        for (size_t i = 0; runs && i < n; i++) {
                if (i < TUNER_RULES_HOLD_RUNS && (run_oom_kind(&runs[i]) & OOM_HEAP))
                        partitions = max_u64(partitions, oom_partitions(&runs[i]));
                if (i < w)
                        partitions =
                            max_u64(partitions, oom_rollback_partitions(runs, n, i, b, NULL));
        }
        return min_u64(partitions, b->partitions_max);
}

/* PARTS_NOW: the partitions the floor is for (0: the newest run's); a recommendation that
   lowers them asks for the floor at its own, raised to the partitions' floor */
static void floor_of(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                     double margin, bool limit_peaks, double cpu_of_limit, uint64_t parts_now,
                     struct memory_floor *ret)
{
        uint64_t heap = b->heap_min_bytes, nonheap = b->overhead_min_bytes, limit = 0;
        uint64_t overhead, millicores = b->millicores_min;
        uint64_t partitions = partitions_floor_of(runs, n, b);
        double cpu_p90 = 0; /* the highest p90 CPU, millicores, of a completed run at the cores */
        /* the partitions the heap is held at: the run's, raised to their floor (after a
           rollback the rules' step down is raised back, and the heap an OOM holds at the
           fewer partitions is not the one it holds where the run goes) */
        uint64_t at = max_u64(parts_now       ? parts_now
                              : runs && n > 0 ? partitions_of(&runs[0].params)
                                              : 0,
                              partitions);

        for (size_t i = 0; runs && i < n; i++) {
                const struct tuner_run *r = &runs[i];
                unsigned kind = run_oom_kind(r);

                /* a Java heap OOM with fewer shuffle partitions than now had larger tasks: its
                   heap held at most as far as the runs show (oom_heap_shown), none once they
                   show it fits */
                uint64_t held = oom_heap_held(runs, n, i, at);

                if (kind == OOM_HEAP && held == 0)
                        kind = 0;

                double mean, p90;

                if (cpu_use_of(r, runs[0].params.cores, &mean, &p90))
                        cpu_p90 = fmax(cpu_p90, p90);
                if (run_completed(r)) {
                        bool at_heap = heap_evidence(r, &runs[0].params);
                        bool at_limit = limit_evidence(r, &runs[0].params);

                        if (at_heap && known_u64(r->heap_peak_bytes))
                                heap =
                                    max_u64(heap, min_u64(r->params.heap_bytes,
                                                          u64_of((double)r->heap_peak_bytes *
                                                                 (1.0 + TUNER_RULES_HEAP_BUFFER))));
                        if (limit_peaks && at_limit && known_u64(r->memory_peak_bytes))
                                limit = max_u64(limit, min_u64(limit_of(&r->params),
                                                               u64_of((double)r->memory_peak_bytes *
                                                                      (1.0 + margin))));
                        uint64_t nh;

                        if (at_limit && nonheap_of(r, &nh))
                                nonheap =
                                    max_u64(nonheap, min_u64(r->params.overhead_bytes,
                                                             u64_of((double)nh * (1.0 + margin))));
                }
                /*
                 * Held: the memory that ran out is bumped, the other part kept, so that the
                 * floor of each parameter alone keeps the failing run's size plus the bump.
                 */
                /*
                 * Never back to a size that ran out, while the failure is in the window: the
                 * hold below ends after a few runs, and stage 2 then explored under the
                 * failing heap (the first real loop: 1181m recommended after 1195m ran out).
                 */
                if (kind & OOM_HEAP) /* x 1.05, bumped while held (oom_heap_held) */
                        heap = max_u64(heap, held);
                if (kind & OOM_LIMIT)
                        limit = max_u64(limit, u64_of((double)limit_of(&r->params) *
                                                      (1.0 + TUNER_RULES_OOM_MARGIN)));
                if (i < TUNER_RULES_HOLD_RUNS) {
                        if (!(kind & OOM_HEAP) && (kind & OOM_LIMIT))
                                heap = max_u64(heap, r->params.heap_bytes);
                        if (kind & OOM_LIMIT)
                                limit = max_u64(limit, oom_bump(limit_of(&r->params)));
                        else if (kind & OOM_HEAP)
                                nonheap = max_u64(nonheap, r->params.overhead_bytes);
                }
        }
        /*
         * No CPU limit under a p90 a run at these cores already had: the CPU's counterpart of
         * a size that ran out. Stage 2's p90 model fitted one low draw as the effect of the
         * partitions (cpu-light: a 655m p90 at 32 partitions, 940m at 8) and asked 379-411m,
         * a 760-820m limit, throttled. With the rules' margin: the rules' 0.9 of the limit.
         */
        if (cpu_p90 > 0) {
                uint64_t cap =
                    runs[0].params.cores > 0
                        ? min_u64((uint64_t)runs[0].params.cores * 1000, b->millicores_max)
                        : b->millicores_max;

                millicores = max_u64(
                    millicores,
                    min_u64(cap, u64_of(cpu_p90 / (cpu_ratio_of(&runs[0]) * cpu_of_limit))));
        }
        heap = min_u64(heap, b->heap_max_bytes);
        overhead = max_u64(nonheap, limit > heap ? limit - heap : 0);
        overhead = min_u64(overhead, b->overhead_max_bytes);
        clamp_limit(&heap, &overhead, b);

        *ret = (struct memory_floor){
            .params =
                {
                    .cores = runs && n > 0 ? runs[0].params.cores : 0,
                    .millicores = millicores,
                    .heap_bytes = heap,
                    .overhead_bytes = overhead,
                    .burst_ratio = 0.0,
                    .spill_fraction = b->spill_fraction_min,
                    .shuffle_partitions = (uint32_t)partitions,
                },
            .limit = limit,
            .nonheap = nonheap,
        };
}

void tuner_rules_floor(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                       struct tuner_params *ret_floor)
{
        struct memory_floor f;

        floor_of(runs, n, b, TUNER_RULES_MARGIN, true, TUNER_RULES_CPU_PEAK_OF_LIMIT, 0, &f);
        *ret_floor = f.params;
}

void tuner_rules_floor_measured(const struct tuner_run *runs, size_t n,
                                const struct tuner_bounds *b, struct tuner_params *ret_floor)
{
        struct memory_floor f;

        floor_of(runs, n, b, 0.0, false, 1.0, 0, &f);
        *ret_floor = f.params;
}

__attribute__((format(printf, 4, 5))) static void set_reason(struct tuner_recommendation *rec,
                                                             enum tuner_param_index i,
                                                             const char *source, const char *fmt,
                                                             ...)
{
        va_list ap;

        snprintf(rec->reasons[i].source, sizeof(rec->reasons[i].source), "%s", source);
        va_start(ap, fmt);
        vsnprintf(rec->reasons[i].text, sizeof(rec->reasons[i].text), fmt, ap);
        va_end(ap);
}

/* Append "; ..." to a reason's text and make its source "bound" (or keep it). */
__attribute__((format(printf, 4, 5))) static void append_reason(struct tuner_recommendation *rec,
                                                                enum tuner_param_index i,
                                                                const char *source, const char *fmt,
                                                                ...)
{
        char more[TUNER_REASON_MAX];
        struct tuner_reason *r = &rec->reasons[i];
        size_t len = strlen(r->text);
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(more, sizeof(more), fmt, ap);
        va_end(ap);
        snprintf(r->text + len, sizeof(r->text) - len, "%s%s", len ? "; " : "", more);
        if (source)
                snprintf(r->source, sizeof(r->source), "%s", source);
}

/* A change below the dead band is no change. */
static bool beyond_dead_band(double now, double next)
{
        if (now == 0)
                return next != 0;
        return fabs(next - now) >= TUNER_RULES_DEAD_BAND * fabs(now);
}

/* The newest run ran longer than the target over the job's yardstick: the median of its
   fastest configuration (tuner_fastest_duration), not one lucky run. */
static bool run_slow(const struct tuner_run *runs, size_t w, const struct tuner_bounds *b,
                     double *ret_best)
{
        double best = tuner_fastest_duration(runs, w);

        *ret_best = best;
        return runs[0].failure == TUNER_FAIL_RUNTIME ||
               (!isnan(best) && runs[0].duration_seconds > b->runtime_target * best);
}

static void rule_millicores(const struct tuner_run *runs, size_t w, const struct tuner_bounds *b,
                            struct tuner_recommendation *rec)
{
        const struct tuner_run *r = &runs[0];
        const struct tuner_params *cur = &r->params;
        uint64_t cap = cur->cores > 0 ? min_u64((uint64_t)cur->cores * 1000, b->millicores_max)
                                      : b->millicores_max;
        double best, util = NAN, peak = NAN, next;
        bool slow = run_slow(runs, w, b, &best);
        /* without cgroup limits the request throttles nothing: the host's contention and a
         * slow run are not the request's doing, and raising it would change nothing */
        bool throttled = r->enforced && r->throttled_fraction > TUNER_RULES_THROTTLED_HIGH;
        bool queued = r->enforced && r->runq_wait_per_cpu > TUNER_RULES_RUNQ_HIGH;

        slow = slow && r->enforced;
        if (throttled || queued || slow) {
                next = fmin((double)cur->millicores * TUNER_RULES_CPU_RAISE, (double)cap);
                if (u64_of(next) <= cur->millicores) {
                        set_reason(rec, TUNER_P_MILLICORES, "unchanged",
                                   "CPU short (throttled %.3f, run-queue wait %.3f s per CPU s, "
                                   "duration %.0f s vs best %.0f s) but already at %" PRIu64
                                   "m, the task concurrency or millicores_max",
                                   r->throttled_fraction, r->runq_wait_per_cpu, r->duration_seconds,
                                   best, cur->millicores);
                        return;
                }
                rec->params.millicores = u64_of(next);
                if (throttled || queued)
                        set_reason(rec, TUNER_P_MILLICORES, "rule:cpu-short",
                                   "throttled_fraction %.3f (> %.2f) or runq_wait_per_cpu %.3f "
                                   "(> %.2f): %" PRIu64 "m x %.2f -> %" PRIu64 "m (cap %" PRIu64
                                   "m)",
                                   r->throttled_fraction, TUNER_RULES_THROTTLED_HIGH,
                                   r->runq_wait_per_cpu, TUNER_RULES_RUNQ_HIGH, cur->millicores,
                                   TUNER_RULES_CPU_RAISE, rec->params.millicores, cap);
                else
                        set_reason(
                            rec, TUNER_P_MILLICORES, "rule:cpu-runtime",
                            "duration %.0f s > %.2f x the fastest configuration's median %.0f s: "
                            "%" PRIu64 "m x %.2f -> %" PRIu64 "m (cap %" PRIu64 "m)",
                            r->duration_seconds, b->runtime_target, best, cur->millicores,
                            TUNER_RULES_CPU_RAISE, rec->params.millicores, cap);
                return;
        }

        /*
         * The highest average and p90 use, in millicores, of the window's completed runs at
         * the current cores, whatever millicores they asked: each run is one draw of the
         * job's use, and the p90 of one run is a noisy one (cpu-light's runs at one point
         * measured a p90 of 650m or of 1000m, docs/tuner-bench.md). Sized on the newest
         * millicores' runs alone, the first step down often rested on one low draw and the
         * next run was throttled. A throttled run's use is capped by its limit, so it only
         * ever understates the highest (cpu_use_of).
         */
        unsigned used = 0;
        for (size_t i = 0; i < w; i++) {
                double mean, p90;

                if (!cpu_use_of(&runs[i], cur->cores, &mean, &p90))
                        continue;
                util = isnan(util) ? mean : fmax(util, mean);
                peak = isnan(peak) ? p90 : fmax(peak, p90);
                used++;
        }
        if (used == 0 || cur->millicores == 0 || !known_u64(cur->millicores)) {
                set_reason(rec, TUNER_P_MILLICORES, "unchanged",
                           "no run at %" PRIu32 " cores with both average and peak CPU utilisation",
                           cur->cores);
                return;
        }
        /* over the current request, as the thresholds read them */
        util /= (double)cur->millicores;
        peak /= (double)cur->millicores;
        double peak_max = TUNER_RULES_CPU_PEAK_OF_LIMIT * cpu_ratio_of(r);

        if (peak > peak_max) {
                /* a run drew a higher p90 than the request was sized on: the headroom this
                   rule keeps under the limit is gone. At least the dead band, so that the
                   raise is a step and the next run's draw has room */
                next = fmin(fmax((double)cur->millicores * peak / peak_max,
                                 (double)cur->millicores * (1.0 + TUNER_RULES_DEAD_BAND)),
                            (double)cap);
                if (u64_of(next) <= cur->millicores) {
                        set_reason(rec, TUNER_P_MILLICORES, "unchanged",
                                   "highest cpu_peak_util %.3f > %.2f of the %" PRIu64
                                   "m request over %u runs, but already at the task "
                                   "concurrency or millicores_max (%" PRIu64 "m)",
                                   peak, peak_max, cur->millicores, used, cap);
                        return;
                }
                rec->params.millicores = u64_of(next);
                set_reason(rec, TUNER_P_MILLICORES, "rule:cpu-margin",
                           "highest cpu_peak_util %.3f > %.2f of the %" PRIu64
                           "m request over %u runs at %" PRIu32 " cores: %" PRIu64 "m -> %" PRIu64
                           "m = max(x peak/%.2f, x %.2f) (cap %" PRIu64 "m)",
                           peak, peak_max, cur->millicores, used, cur->cores, cur->millicores,
                           rec->params.millicores, peak_max, 1.0 + TUNER_RULES_DEAD_BAND, cap);
                return;
        }
        if (util >= b->cpu_target * (1.0 - TUNER_RULES_DEAD_BAND) || peak >= peak_max) {
                set_reason(rec, TUNER_P_MILLICORES, "unchanged",
                           "highest cpu_util %.3f (target %.2f), cpu_peak_util %.3f (max %.2f) "
                           "over %u runs at %" PRIu32 " cores, of the %" PRIu64 "m request",
                           util, b->cpu_target, peak, peak_max, used, cur->cores, cur->millicores);
                return;
        }
        double by_util = (double)cur->millicores * util / b->cpu_target;
        double by_peak = (double)cur->millicores * peak / peak_max;
        double by_step = (double)cur->millicores * TUNER_RULES_STEP_DOWN;
        next = fmax(fmax(by_util, by_peak), fmax(by_step, (double)b->millicores_min));
        if (!beyond_dead_band((double)cur->millicores, next) || u64_of(next) >= cur->millicores) {
                set_reason(rec, TUNER_P_MILLICORES, "unchanged",
                           "cpu_util %.3f, cpu_peak_util %.3f over %u runs: %" PRIu64
                           "m -> %.0fm is within the dead band",
                           util, peak, used, cur->millicores, next);
                return;
        }
        rec->params.millicores = u64_of(next);
        set_reason(rec, TUNER_P_MILLICORES, "rule:cpu-low",
                   "highest cpu_util %.3f < %.2f and cpu_peak_util %.3f < %.2f of the %" PRIu64
                   "m request over %u runs at %" PRIu32 " cores: %" PRIu64 "m -> %" PRIu64
                   "m = max(x util/target %.0f, x peak/%.2f %.0f, half %.0f, min %" PRIu64 ")",
                   util, b->cpu_target, peak, peak_max, cur->millicores, used, cur->cores,
                   cur->millicores, rec->params.millicores, by_util, peak_max, by_peak, by_step,
                   b->millicores_min);
}

struct memory_signals {
        double gc_share;  /* NAN: not judged */
        bool spill_heavy; /* Dr. Elephant's spill severity */
        double spill_per_task, spill_limit;
        bool hold; /* a memory failure within the newest TUNER_RULES_HOLD_RUNS runs */
        size_t hold_index;
        bool slow; /* the newest run beyond the run-time allowance: nothing is lowered */
        double duration, best_duration;
        double util;  /* p90 process peak / current request */
        double scale; /* lowering factor towards mem_target, >= TUNER_RULES_STEP_DOWN */
};

static void memory_signals_of(const struct tuner_run *runs, size_t n, size_t w,
                              const struct tuner_bounds *b, const struct usage *u,
                              struct memory_signals *ret)
{
        const struct tuner_run *r = &runs[0];
        double request = request_of(&r->params);

        *ret = (struct memory_signals){.gc_share = NAN, .util = NAN, .scale = 1.0};
        if (r->has_eventlog && r->executor_run_seconds >= TUNER_RULES_GC_MIN_SECONDS)
                ret->gc_share = r->gc_seconds / r->executor_run_seconds;
        if (r->has_eventlog && r->tasks > 0 && r->params.cores > 0) {
                ret->spill_per_task = (double)r->memory_spill_bytes / (double)r->tasks;
                ret->spill_limit = TUNER_RULES_SPILL_HEAVY * (double)r->params.heap_bytes /
                                   (double)r->params.cores;
                ret->spill_heavy =
                    r->memory_spill_bytes > 0 && ret->spill_per_task >= ret->spill_limit;
        }
        ret->slow = run_slow(runs, w, b, &ret->best_duration);
        ret->duration = r->duration_seconds;
        for (size_t i = 0; i < n && i < TUNER_RULES_HOLD_RUNS; i++)
                if (run_memory_failure(&runs[i])) {
                        ret->hold = true;
                        ret->hold_index = i;
                        break;
                }
        if (!isnan(u->process_peak) && request > 0) {
                ret->util = u->process_peak / request;
                ret->scale = fmax(ret->util / b->mem_target, TUNER_RULES_STEP_DOWN);
        }
}

static void rule_heap(const struct tuner_run *runs, const struct tuner_bounds *b,
                      const struct usage *u, const struct memory_signals *s,
                      struct tuner_recommendation *rec)
{
        const struct tuner_params *cur = &runs[0].params;
        double need, next;

        if (!isnan(s->gc_share) && s->gc_share >= TUNER_RULES_GC_RAISE) {
                next = (double)cur->heap_bytes * (1.0 + TUNER_RULES_HEAP_BUFFER);
                rec->params.heap_bytes = u64_of(next);
                set_reason(rec, TUNER_P_HEAP, "rule:gc",
                           "GC time share %.3f >= %.2f of executor run time: heap %.0f MiB x "
                           "%.2f -> %.0f MiB",
                           s->gc_share, TUNER_RULES_GC_RAISE, cur->heap_bytes / MIB,
                           1.0 + TUNER_RULES_HEAP_BUFFER, rec->params.heap_bytes / MIB);
                return;
        }
        if (isnan(u->heap_peak)) {
                set_reason(rec, TUNER_P_HEAP, "unchanged", "no JVM heap peak in the runs");
                return;
        }
        if (!isnan(s->gc_share) && s->gc_share >= TUNER_RULES_GC_HOLD) {
                set_reason(rec, TUNER_P_HEAP, "rule:gc",
                           "GC time share %.3f >= %.2f: heap %.0f MiB not lowered", s->gc_share,
                           TUNER_RULES_GC_HOLD, cur->heap_bytes / MIB);
                return;
        }
        if (s->spill_heavy) {
                set_reason(rec, TUNER_P_HEAP, "rule:spill",
                           "memory spill %.0f MiB per task >= %.2f x heap per task slot (%.0f "
                           "MiB): heap %.0f MiB not lowered",
                           s->spill_per_task / MIB, TUNER_RULES_SPILL_HEAVY, s->spill_limit / MIB,
                           cur->heap_bytes / MIB);
                return;
        }
        if (s->slow) {
                set_reason(rec, TUNER_P_HEAP, "hold",
                           "run time %.0f s beyond the allowance over the best %.0f s: heap "
                           "%.0f MiB not lowered",
                           s->duration, s->best_duration, cur->heap_bytes / MIB);
                return;
        }
        if (s->hold) {
                set_reason(rec, TUNER_P_HEAP, "hold",
                           "memory failure %zu run(s) ago (held for %d runs): heap %.0f MiB not "
                           "lowered",
                           s->hold_index, TUNER_RULES_HOLD_RUNS, cur->heap_bytes / MIB);
                return;
        }
        if (isnan(s->util) || s->util >= b->mem_target * (1.0 - TUNER_RULES_DEAD_BAND)) {
                set_reason(rec, TUNER_P_HEAP, "unchanged",
                           "mem_util (p90 process peak / request) %.3f, target %.2f", s->util,
                           b->mem_target);
                return;
        }
        need = u->heap_peak * (1.0 + TUNER_RULES_HEAP_BUFFER);
        next = fmax(need, (double)cur->heap_bytes * s->scale);
        if (!beyond_dead_band((double)cur->heap_bytes, next) || next >= (double)cur->heap_bytes) {
                set_reason(rec, TUNER_P_HEAP, "unchanged",
                           "p90 JVM heap peak %.0f MiB x %.2f = %.0f MiB: heap %.0f MiB within "
                           "the dead band",
                           u->heap_peak / MIB, 1.0 + TUNER_RULES_HEAP_BUFFER, need / MIB,
                           cur->heap_bytes / MIB);
                return;
        }
        rec->params.heap_bytes = u64_of(next);
        set_reason(rec, TUNER_P_HEAP, "rule:heap",
                   "mem_util %.3f < %.2f: heap %.0f MiB -> %.0f MiB = max(p90 JVM heap peak %.0f "
                   "MiB x %.2f over %u samples, heap x %.3f)",
                   s->util, b->mem_target, cur->heap_bytes / MIB, rec->params.heap_bytes / MIB,
                   u->heap_peak / MIB, 1.0 + TUNER_RULES_HEAP_BUFFER, u->heap_samples, s->scale);
}

static void rule_overhead(const struct tuner_run *runs, const struct tuner_bounds *b,
                          const struct usage *u, const struct memory_signals *s,
                          struct tuner_recommendation *rec)
{
        const struct tuner_params *cur = &runs[0].params;
        double heap = (double)rec->params.heap_bytes, need = 0, next;

        if (isnan(u->process_peak)) {
                set_reason(rec, TUNER_P_OVERHEAD, "unchanged",
                           "no process memory peak in the runs");
                return;
        }
        /* the limit keeps the VPA margin over the process peak whatever the heap became */
        need = u->process_peak * (1.0 + TUNER_RULES_MARGIN) - heap;
        if (!isnan(u->nonheap_peak))
                need = fmax(need, u->nonheap_peak * (1.0 + TUNER_RULES_MARGIN));
        need = fmax(need, (double)b->overhead_min_bytes);

        if (need > (double)cur->overhead_bytes) {
                rec->params.overhead_bytes = u64_of(need);
                set_reason(rec, TUNER_P_OVERHEAD, "rule:near-limit",
                           "p90 process peak %.0f MiB (non-heap %.0f MiB) x %.2f needs more than "
                           "heap %.0f MiB + overhead %.0f MiB: overhead -> %.0f MiB",
                           u->process_peak / MIB, u->nonheap_peak / MIB, 1.0 + TUNER_RULES_MARGIN,
                           heap / MIB, cur->overhead_bytes / MIB, rec->params.overhead_bytes / MIB);
                return;
        }
        if (s->slow) {
                set_reason(rec, TUNER_P_OVERHEAD, "hold",
                           "run time %.0f s beyond the allowance over the best %.0f s: overhead "
                           "%.0f MiB not lowered",
                           s->duration, s->best_duration, cur->overhead_bytes / MIB);
                return;
        }
        if (s->hold) {
                set_reason(rec, TUNER_P_OVERHEAD, "hold",
                           "memory failure %zu run(s) ago (held for %d runs): overhead %.0f MiB "
                           "not lowered",
                           s->hold_index, TUNER_RULES_HOLD_RUNS, cur->overhead_bytes / MIB);
                return;
        }
        if (isnan(s->util) || s->util >= b->mem_target * (1.0 - TUNER_RULES_DEAD_BAND)) {
                set_reason(rec, TUNER_P_OVERHEAD, "unchanged",
                           "mem_util (p90 process peak / request) %.3f, target %.2f", s->util,
                           b->mem_target);
                return;
        }
        next = fmax(need, (double)cur->overhead_bytes * s->scale);
        if (!beyond_dead_band((double)cur->overhead_bytes, next) ||
            next >= (double)cur->overhead_bytes) {
                set_reason(rec, TUNER_P_OVERHEAD, "unchanged",
                           "needed %.0f MiB: overhead %.0f MiB within the dead band", need / MIB,
                           cur->overhead_bytes / MIB);
                return;
        }
        rec->params.overhead_bytes = u64_of(next);
        set_reason(rec, TUNER_P_OVERHEAD, "rule:overhead",
                   "mem_util %.3f < %.2f: overhead %.0f MiB -> %.0f MiB = max(need %.0f MiB "
                   "(p90 process peak %.0f MiB x %.2f - heap, p90 non-heap %.0f MiB x %.2f), "
                   "overhead x %.3f)",
                   s->util, b->mem_target, cur->overhead_bytes / MIB,
                   rec->params.overhead_bytes / MIB, need / MIB, u->process_peak / MIB,
                   1.0 + TUNER_RULES_MARGIN, u->nonheap_peak / MIB, 1.0 + TUNER_RULES_MARGIN,
                   s->scale);
}

static void rule_burst(const struct tuner_run *runs, const struct tuner_bounds *b,
                       const struct usage *u, const struct memory_signals *s,
                       struct tuner_recommendation *rec)
{
        double now = burst_of(&runs[0].params), used, target, next;
        double overhead = (double)rec->params.overhead_bytes;

        rec->params.burst_ratio = now;
        if (isnan(u->nonheap_peak) || overhead <= 0) {
                set_reason(rec, TUNER_P_BURST_RATIO, "unchanged",
                           "no non-heap peak (process - JVM heap) in the runs");
                return;
        }
        used = u->nonheap_peak * (1.0 + TUNER_RULES_MARGIN);
        target = fmin(fmax(1.0 - used / overhead, 0.0), b->burst_ratio_max);
        if (target < now - TUNER_RULES_DEAD_BAND) {
                rec->params.burst_ratio = target;
                set_reason(rec, TUNER_P_BURST_RATIO, "rule:burst",
                           "p90 non-heap %.0f MiB x %.2f uses %.3f of overhead %.0f MiB: ratio "
                           "%.3f -> %.3f",
                           u->nonheap_peak / MIB, 1.0 + TUNER_RULES_MARGIN, used / overhead,
                           overhead / MIB, now, target);
                return;
        }
        if (target <= now + TUNER_RULES_DEAD_BAND) {
                set_reason(rec, TUNER_P_BURST_RATIO, "unchanged",
                           "p90 non-heap %.0f MiB x %.2f uses %.3f of overhead %.0f MiB: ratio "
                           "%.3f within the dead band of %.3f",
                           u->nonheap_peak / MIB, 1.0 + TUNER_RULES_MARGIN, used / overhead,
                           overhead / MIB, now, target);
                return;
        }
        if (s->hold) {
                set_reason(rec, TUNER_P_BURST_RATIO, "hold",
                           "memory failure %zu run(s) ago (held for %d runs): ratio %.3f not "
                           "raised",
                           s->hold_index, TUNER_RULES_HOLD_RUNS, now);
                return;
        }
        next = fmin(target, now + TUNER_RULES_BURST_STEP);
        rec->params.burst_ratio = next;
        set_reason(rec, TUNER_P_BURST_RATIO, "rule:burst",
                   "p90 non-heap %.0f MiB x %.2f uses %.3f of overhead %.0f MiB: ratio %.3f -> "
                   "%.3f (target %.3f, step %.2f, max %.2f)",
                   u->nonheap_peak / MIB, 1.0 + TUNER_RULES_MARGIN, used / overhead, overhead / MIB,
                   now, next, target, TUNER_RULES_BURST_STEP, b->burst_ratio_max);
}

static void rule_spill(const struct tuner_run *runs, const struct tuner_bounds *b,
                       const struct memory_signals *s, struct tuner_recommendation *rec)
{
        const struct tuner_run *r = &runs[0];
        double now = r->params.spill_fraction, next;
        uint64_t limit = limit_of(&r->params);
        bool events = known_u64(r->high_events) && r->high_events > 0;
        bool near = known_u64(r->memory_peak_bytes) && limit > 0 &&
                    (double)r->memory_peak_bytes >= TUNER_RULES_NEAR_LIMIT * (double)limit;
        int64_t many = TUNER_RULES_FORCED_SPILLS_MANY * (int64_t)(r->executors ? r->executors : 1);

        if (events || near) {
                next = isnan(now) ? b->spill_fraction_max - TUNER_RULES_SPILL_STEP
                                  : now - TUNER_RULES_SPILL_STEP;
                next = fmax(next, b->spill_fraction_min);
                if (!isnan(now) && next >= now - 1e-9) {
                        set_reason(rec, TUNER_P_SPILL_FRACTION, "unchanged",
                                   "memory pressure (high events %" PRIu64
                                   ", peak %.0f MiB of limit %.0f MiB) but already at the "
                                   "minimum %.2f",
                                   events ? r->high_events : 0,
                                   known_u64(r->memory_peak_bytes) ? r->memory_peak_bytes / MIB
                                                                   : NAN,
                                   limit / MIB, b->spill_fraction_min);
                        return;
                }
                rec->params.spill_fraction = next;
                set_reason(rec, TUNER_P_SPILL_FRACTION, "rule:spill-earlier",
                           "memory pressure (high events %" PRIu64
                           ", peak %.0f MiB >= %.2f x limit %.0f MiB): spill fraction %.2f -> "
                           "%.2f",
                           events ? r->high_events : 0,
                           known_u64(r->memory_peak_bytes) ? r->memory_peak_bytes / MIB : NAN,
                           TUNER_RULES_NEAR_LIMIT, limit / MIB, now, next);
                return;
        }
        if (r->forced_spills >= many && !isnan(r->mem_util) && r->mem_util < b->mem_target) {
                if (isnan(now)) {
                        set_reason(rec, TUNER_P_SPILL_FRACTION, "unchanged",
                                   "%" PRId64 " forced spills at mem_util %.3f, but the agent's "
                                   "threshold is not a fraction set by the tuner",
                                   r->forced_spills, r->mem_util);
                        return;
                }
                if (s->hold) {
                        set_reason(rec, TUNER_P_SPILL_FRACTION, "hold",
                                   "memory failure %zu run(s) ago: spill fraction %.2f not raised",
                                   s->hold_index, now);
                        return;
                }
                next = fmin(now + TUNER_RULES_SPILL_STEP, b->spill_fraction_max);
                if (next <= now + 1e-9) {
                        set_reason(rec, TUNER_P_SPILL_FRACTION, "unchanged",
                                   "%" PRId64 " forced spills at mem_util %.3f but already at "
                                   "the maximum %.2f",
                                   r->forced_spills, r->mem_util, b->spill_fraction_max);
                        return;
                }
                rec->params.spill_fraction = next;
                set_reason(rec, TUNER_P_SPILL_FRACTION, "rule:spill-later",
                           "%" PRId64 " forced spills (>= %" PRId64 ") at mem_util %.3f < %.2f: "
                           "spill fraction %.2f -> %.2f",
                           r->forced_spills, many, r->mem_util, b->mem_target, now, next);
                return;
        }
        set_reason(rec, TUNER_P_SPILL_FRACTION, "unchanged",
                   "no memory pressure, forced spills %" PRId64 " (many: %" PRId64 ")",
                   r->forced_spills, many);
}

/*
 * The newest run's heap was tight by the agent's heap after GC: under TUNER_RULES_HEAP_TIGHT x
 * the reading. Fewer partitions make larger tasks, which such a heap may not hold: on Spark
 * 3.5 and 4.0 skew ran out at the rules' jump to 3 x the cores (50 or 12 partitions to 6, at
 * 1218m-1381m, reading 550-700m where it completed) in each of the four loops that took it
 * (issue 24, the ninth real loops). Under such a heap the jump is not taken; skew's step of a
 * factor 4 a run is (held at 200 partitions, skew's runs took 32-39 s against 23-27 s at
 * 50: the tenth loops' first try). The heap's own floor is stage 2's
 * (tuner_rules_heap_step_floor).
 */
static bool heap_tight(const struct tuner_run *r)
{
        return known_u64(r->heap_after_gc_peak_bytes) && known_u64(r->params.heap_bytes) &&
               r->params.heap_bytes > 0 &&
               (double)r->params.heap_bytes <
                   (double)r->heap_after_gc_peak_bytes * TUNER_RULES_HEAP_TIGHT;
}

static void rule_partitions(const struct tuner_run *runs, const struct memory_signals *s,
                            struct tuner_recommendation *rec)
{
        const struct tuner_run *r = &runs[0];
        uint64_t cores = (uint64_t)r->executors * r->params.cores;
        uint64_t now = r->params.shuffle_partitions ? r->params.shuffle_partitions
                                                    : TUNER_RULES_SPARK_PARTITIONS;
        uint64_t next = TUNER_RULES_PARTITIONS_CORES * cores;

        if (!r->has_eventlog || cores == 0) {
                set_reason(rec, TUNER_P_PARTITIONS, "unchanged",
                           "no event log or no executor count for the newest run");
                return;
        }
        if (r->max_stage_tasks > TUNER_RULES_PARTITIONS_FAR * cores && now > next) {
                /* under skew, a factor of TUNER_RULES_PARTITIONS_FAR a run: the hot task keeps
                   its key whatever the count and gains the small ones merged into it, step by
                   step (issue 24: kept at 200, skew's runs were 40 % slower than at 8, and
                   mem-sort's global sort reads as skewed at 200) */
                if (r->max_stage_skew >= TUNER_RULES_SKEW_HIGH &&
                    now > TUNER_RULES_PARTITIONS_FAR * next) {
                        uint64_t step = now / TUNER_RULES_PARTITIONS_FAR;

                        rec->params.shuffle_partitions = (uint32_t)min_u64(step, UINT32_MAX);
                        set_reason(rec, TUNER_P_PARTITIONS, "rule:skew",
                                   "a stage's task skew %.1f >= %.1f: partitions %" PRIu64
                                   " -> / %d = %" PRIu64 " (towards %d x cores = %" PRIu64
                                   " a step a run)",
                                   r->max_stage_skew, TUNER_RULES_SKEW_HIGH, now,
                                   TUNER_RULES_PARTITIONS_FAR, step, TUNER_RULES_PARTITIONS_CORES,
                                   next);
                        return;
                }
                if (!beyond_dead_band((double)now, (double)next)) {
                        set_reason(rec, TUNER_P_PARTITIONS, "unchanged",
                                   "%" PRIu64 " partitions within the dead band of %" PRIu64, now,
                                   next);
                        return;
                }
                if (heap_tight(r)) {
                        set_reason(rec, TUNER_P_PARTITIONS, "hold",
                                   "%" PRIu64 " partitions kept, not %" PRIu64 " at once: the "
                                   "%.0f MiB heap is under %g x its %.0f MiB after GC, and fewer "
                                   "partitions make larger tasks",
                                   now, next, (double)r->params.heap_bytes / MIB,
                                   TUNER_RULES_HEAP_TIGHT,
                                   (double)r->heap_after_gc_peak_bytes / MIB);
                        return;
                }
                rec->params.shuffle_partitions = (uint32_t)min_u64(next, UINT32_MAX);
                set_reason(rec, TUNER_P_PARTITIONS, "rule:partitions",
                           "max stage tasks %" PRIu32 " > %d x %" PRIu64 " cores (%" PRIu32
                           " executors x %" PRIu32 "): partitions %" PRIu64
                           " -> %d x cores = %" PRIu64,
                           r->max_stage_tasks, TUNER_RULES_PARTITIONS_FAR, cores, r->executors,
                           r->params.cores, now, TUNER_RULES_PARTITIONS_CORES, next);
                return;
        }
        if (s->spill_heavy && now < cores) {
                rec->params.shuffle_partitions = (uint32_t)min_u64(next, UINT32_MAX);
                set_reason(rec, TUNER_P_PARTITIONS, "rule:partitions-spill",
                           "spill heavy and %" PRIu64 " partitions < %" PRIu64
                           " cores: partitions -> %d x cores = %" PRIu64,
                           now, cores, TUNER_RULES_PARTITIONS_CORES, next);
                return;
        }
        set_reason(rec, TUNER_P_PARTITIONS, "unchanged",
                   "max stage tasks %" PRIu32 ", %" PRIu64 " partitions, %" PRIu64 " cores",
                   r->max_stage_tasks, now, cores);
}

/* A Java heap OOM with few partitions: more of them, smaller tasks (oom_partitions). */
static void rule_oom_partitions(const struct tuner_run *r, struct tuner_recommendation *rec)
{
        uint64_t next = oom_partitions(r);

        if (!next)
                return;
        rec->params.shuffle_partitions = (uint32_t)next;
        set_reason(rec, TUNER_P_PARTITIONS, "rule:oom",
                   "Java heap OOM with %" PRIu64 " partitions, fewer than %d per task slot: "
                   "partitions -> %" PRIu64 " (smaller tasks, Spark's tuning guide)",
                   partitions_of(&r->params), TUNER_RULES_PARTITIONS_CORES, next);
}

/* A Java heap OOM after fewer partitions than the last run that completed: back to that
   run's partitions and heap (oom_rollback_partitions). */
static void rule_oom_rollback(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                              struct tuner_recommendation *rec)
{
        const struct tuner_run *good = NULL;
        uint64_t back = oom_rollback_partitions(runs, n, 0, b, &good);

        if (!back)
                return;
        rec->params.shuffle_partitions = (uint32_t)min_u64(back, UINT32_MAX);
        rec->params.heap_bytes = good->params.heap_bytes;
        set_reason(rec, TUNER_P_PARTITIONS, "rule:oom-rollback",
                   "Java heap OOM at %" PRIu64 " partitions, fewer than the %" PRIu64
                   " of the last run that completed (%s): partitions -> %" PRIu64
                   " and its heap, not again while the OOM is in the window",
                   partitions_of(&runs[0].params), back, good->app_id, back);
        set_reason(rec, TUNER_P_HEAP, "rule:oom-rollback",
                   "Java heap OOM at fewer partitions than the last run that completed (%s): "
                   "its heap %.0f MiB at its %" PRIu64 " partitions",
                   good->app_id, good->params.heap_bytes / MIB, back);
}

/* After an OOM / executor loss in the newest run: raise the memory that ran out, hold the
   rest; a Java heap OOM after a step down in partitions undoes the step. */
static void rule_oom(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                     struct tuner_recommendation *rec)
{
        const struct tuner_run *r = &runs[0];
        const struct tuner_params *cur = &r->params;
        unsigned kind = run_oom_kind(r);
        const char *name = tuner_failure_name(r->failure);

        for (int i = 0; i < TUNER_P_COUNT; i++)
                set_reason(rec, i, "hold", "newest run %s failed (%s): held", r->app_id, name);
        if (kind & OOM_HEAP) {
                rec->params.heap_bytes = oom_bump(cur->heap_bytes);
                set_reason(rec, TUNER_P_HEAP, "rule:oom",
                           "newest run failed (%s, %" PRIu32 " OutOfMemoryError tasks%s%s): heap "
                           "%.0f MiB -> %.0f MiB = max(x %.1f, + %.0f MiB)",
                           name, r->oom_task_failures, r->failure_detail[0] ? ": " : "",
                           r->failure_detail, cur->heap_bytes / MIB, rec->params.heap_bytes / MIB,
                           TUNER_RULES_OOM_BUMP_RATIO, TUNER_RULES_OOM_BUMP_MIN / MIB);
                rule_oom_partitions(r, rec);
                rule_oom_rollback(runs, n, b, rec);
        }
        if (kind & OOM_LIMIT) {
                uint64_t limit = oom_bump(limit_of(cur));
                uint64_t heap = rec->params.heap_bytes;

                rec->params.overhead_bytes =
                    max_u64(cur->overhead_bytes, limit > heap ? limit - heap : 0);
                set_reason(rec, TUNER_P_OVERHEAD, "rule:oom",
                           "newest run failed (%s, %" PRIu64 " OOM kills%s%s): limit %.0f MiB -> "
                           "%.0f MiB = max(x %.1f, + %.0f MiB), overhead %.0f MiB -> %.0f MiB",
                           name, known_u64(r->oom_kills) ? r->oom_kills : 0,
                           r->failure_detail[0] ? ": " : "", r->failure_detail, limit_of(cur) / MIB,
                           limit / MIB, TUNER_RULES_OOM_BUMP_RATIO, TUNER_RULES_OOM_BUMP_MIN / MIB,
                           cur->overhead_bytes / MIB, rec->params.overhead_bytes / MIB);
        }
}

/* Raise to the floor, then clamp to the bounds; each says so in its reason. */
/* The floor (partitions, millicores, heap, the overhead against the heap): the overhead
   needed. It raises a held run's values too: a hold keeps what ran, never less than the
   floor. */
static uint64_t apply_floor(const struct memory_floor *f, const struct tuner_bounds *b,
                            struct tuner_recommendation *rec)
{
        const struct tuner_params *floor = &f->params;
        struct tuner_params *p = &rec->params;
        uint64_t heap, need;

        if (floor->shuffle_partitions > b->partitions_min &&
            partitions_of(p) < floor->shuffle_partitions) {
                append_reason(rec, TUNER_P_PARTITIONS, "rule:floor",
                              "raised to %" PRIu32 " while a Java heap OOM is held, or one "
                              "at fewer partitions than a run before it is in the window",
                              floor->shuffle_partitions);
                p->shuffle_partitions = floor->shuffle_partitions;
        }

        if (p->millicores < floor->millicores) {
                append_reason(rec, TUNER_P_MILLICORES, "rule:floor",
                              "raised to the safety floor %" PRIu64
                              "m (the highest p90 CPU of a run at these cores)",
                              floor->millicores);
                p->millicores = floor->millicores;
        }
        if (p->heap_bytes < floor->heap_bytes) {
                append_reason(rec, TUNER_P_HEAP, "rule:floor",
                              "raised to the safety floor %.0f MiB (successful runs' need, held "
                              "OOM bump)",
                              floor->heap_bytes / MIB);
                p->heap_bytes = floor->heap_bytes;
        }
        heap = min_u64(p->heap_bytes, b->heap_max_bytes); /* as the bounds will leave it */
        need = max_u64(f->nonheap, f->limit > heap ? f->limit - heap : 0);
        need = min_u64(need, floor->overhead_bytes);
        if (p->overhead_bytes < need) {
                append_reason(rec, TUNER_P_OVERHEAD, "rule:floor",
                              "raised to the safety floor %.0f MiB (successful runs' need, held "
                              "OOM bump)",
                              need / MIB);
                p->overhead_bytes = need;
        }
        return need;
}

static void clamp_u64(struct tuner_recommendation *rec, enum tuner_param_index idx, uint64_t *value,
                      uint64_t lo, uint64_t hi, const char *unit, double scale)
{
        if (*value < lo) {
                append_reason(rec, idx, "bound", "clamped to the minimum %.0f%s",
                              (double)lo / scale, unit);
                *value = lo;
        } else if (*value > hi) {
                append_reason(rec, idx, "bound", "clamped to the maximum %.0f%s",
                              (double)hi / scale, unit);
                *value = hi;
        }
}

/* heap + overhead within memory_limit_max: what is above the floor goes first, overhead first. */
static void apply_limit_max(const struct memory_floor *f, const struct tuner_bounds *b,
                            uint64_t need, struct tuner_recommendation *rec)
{
        struct tuner_params *p = &rec->params;
        uint64_t heap = p->heap_bytes, overhead = p->overhead_bytes;

        if (b->memory_limit_max > 0 && add_sat(heap, overhead) > b->memory_limit_max) {
                uint64_t excess = add_sat(heap, overhead) - b->memory_limit_max;
                uint64_t keep = max_u64(need, b->overhead_min_bytes);
                uint64_t take = overhead > keep ? min_u64(excess, overhead - keep) : 0;

                overhead -= take;
                excess -= take;
                keep = max_u64(f->params.heap_bytes, b->heap_min_bytes);
                take = heap > keep ? min_u64(excess, heap - keep) : 0;
                heap -= take;
                clamp_limit(&heap, &overhead, b); /* the bounds win over the floor */
        }
        if (overhead != p->overhead_bytes)
                append_reason(rec, TUNER_P_OVERHEAD, "bound",
                              "heap + overhead clamped to memory_limit_max %.0f MiB",
                              b->memory_limit_max / MIB);
        if (heap != p->heap_bytes)
                append_reason(rec, TUNER_P_HEAP, "bound",
                              "heap + overhead clamped to memory_limit_max %.0f MiB",
                              b->memory_limit_max / MIB);
        p->heap_bytes = heap;
        p->overhead_bytes = overhead;
}

/* The burst ratio, the spill fraction and the partitions (0: Spark's default, left alone). */
static void apply_other_bounds(const struct tuner_bounds *b, struct tuner_recommendation *rec)
{
        struct tuner_params *p = &rec->params;

        if (p->burst_ratio > b->burst_ratio_max) {
                append_reason(rec, TUNER_P_BURST_RATIO, "bound", "clamped to burst_ratio_max %.2f",
                              b->burst_ratio_max);
                p->burst_ratio = b->burst_ratio_max;
        } else if (p->burst_ratio < 0) {
                append_reason(rec, TUNER_P_BURST_RATIO, "bound", "clamped to 0");
                p->burst_ratio = 0;
        }
        if (!isnan(p->spill_fraction)) {
                if (p->spill_fraction < b->spill_fraction_min) {
                        append_reason(rec, TUNER_P_SPILL_FRACTION, "bound",
                                      "clamped to spill_fraction_min %.2f", b->spill_fraction_min);
                        p->spill_fraction = b->spill_fraction_min;
                } else if (p->spill_fraction > b->spill_fraction_max) {
                        append_reason(rec, TUNER_P_SPILL_FRACTION, "bound",
                                      "clamped to spill_fraction_max %.2f", b->spill_fraction_max);
                        p->spill_fraction = b->spill_fraction_max;
                }
        }
        if (p->shuffle_partitions != 0) {
                if (p->shuffle_partitions < b->partitions_min) {
                        append_reason(rec, TUNER_P_PARTITIONS, "bound",
                                      "clamped to partitions_min %" PRIu32, b->partitions_min);
                        p->shuffle_partitions = b->partitions_min;
                } else if (p->shuffle_partitions > b->partitions_max) {
                        append_reason(rec, TUNER_P_PARTITIONS, "bound",
                                      "clamped to partitions_max %" PRIu32, b->partitions_max);
                        p->shuffle_partitions = b->partitions_max;
                }
        }
}

/*
 * Raise to the floor, then clamp to the bounds; each says so in its reason. The overhead's
 * floor is taken against the heap recommended, not the heap's floor: the per-parameter floor
 * (stage 2's box) fills the limit's floor on top of the smallest heap, and applied to a
 * larger heap it gave a limit far above any need (the first loop's skew: 1434m of heap and
 * an overhead held near 1 GB because a 512m heap would have needed it).
 */
static void apply_floor_and_bounds(const struct memory_floor *f, const struct tuner_bounds *b,
                                   struct tuner_recommendation *rec)
{
        struct tuner_params *p = &rec->params;
        uint64_t need = apply_floor(f, b, rec);

        clamp_u64(rec, TUNER_P_MILLICORES, &p->millicores, b->millicores_min, b->millicores_max,
                  "m", 1.0);
        clamp_u64(rec, TUNER_P_HEAP, &p->heap_bytes, b->heap_min_bytes, b->heap_max_bytes, " MiB",
                  MIB);
        clamp_u64(rec, TUNER_P_OVERHEAD, &p->overhead_bytes, b->overhead_min_bytes,
                  b->overhead_max_bytes, " MiB", MIB);
        apply_limit_max(f, b, need, rec);
        apply_other_bounds(b, rec);
}

static bool streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

static bool same_double(double a, double b)
{
        return (isnan(a) && isnan(b)) || a == b;
}

static bool params_equal(const struct tuner_params *a, const struct tuner_params *b)
{
        return a->cores == b->cores && a->millicores == b->millicores &&
               a->heap_bytes == b->heap_bytes && a->overhead_bytes == b->overhead_bytes &&
               same_double(burst_of(a), burst_of(b)) &&
               same_double(a->spill_fraction, b->spill_fraction) &&
               a->shuffle_partitions == b->shuffle_partitions;
}

int tuner_rules_recommend(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                          struct tuner_recommendation *ret)
{
        struct tuner_recommendation rec;
        struct memory_floor floor;
        struct memory_signals signals;
        struct usage usage;
        const struct tuner_run *newest;
        size_t w;
        int r;

        if (!runs || n == 0 || !b || !ret)
                return -EINVAL;
        newest = &runs[0];
        w = window_of(n, b);

        rec = (struct tuner_recommendation){
            .params = newest->params,
            .stage = TUNER_STAGE_RULES,
            .predicted_objective = NAN,
            .failure_probability = NAN,
            .runs_used = (unsigned)w,
        };
        rec.params.burst_ratio = burst_of(&newest->params);
        set_reason(&rec, TUNER_P_CORES, "unchanged",
                   "spark.executor.cores is the task concurrency the rules keep");

        r = usage_of(runs, w, &usage);
        if (r < 0)
                return r;
        if (run_memory_failure(newest)) {
                rule_oom(runs, n, b, &rec);
        } else if (newest->failure == TUNER_FAIL_TASKS || newest->failure == TUNER_FAIL_APP) {
                for (int i = 0; i < TUNER_P_COUNT; i++)
                        set_reason(&rec, i, "hold", "newest run %s failed (%s%s%s): held",
                                   newest->app_id, tuner_failure_name(newest->failure),
                                   newest->failure_detail[0] ? ": " : "", newest->failure_detail);
        } else {
                memory_signals_of(runs, n, w, b, &usage, &signals);
                rule_millicores(runs, w, b, &rec);
                rule_heap(runs, b, &usage, &signals, &rec);
                rule_overhead(runs, b, &usage, &signals, &rec);
                rule_burst(runs, b, &usage, &signals, &rec);
                rule_spill(runs, b, &signals, &rec);
                rule_partitions(runs, &signals, &rec);
        }
        /* at the partitions recommended when they are lowered: the heap floor of the OOMs
           at those partitions holds (floor_of raises them to the partitions' floor, a
           rollback's among them) */
        floor_of(runs, n, b, TUNER_RULES_MARGIN, true, TUNER_RULES_CPU_PEAK_OF_LIMIT,
                 min_u64(partitions_of(&rec.params), partitions_of(&newest->params)), &floor);
        apply_floor_and_bounds(&floor, b, &rec);
        /* holding after a failure is waiting, not convergence */
        rec.converged = newest->failure == TUNER_OK && params_equal(&rec.params, &newest->params);
        for (int i = 0; i < TUNER_P_COUNT; i++)
                if (streq(rec.reasons[i].source, "hold"))
                        rec.converged = false;

        *ret = rec;
        return 0;
}
