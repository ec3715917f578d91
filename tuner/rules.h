/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage 1 of the tuner (docs/tuner-rules.md): a fixed tree of expert rules that turns a
 * job's last runs into the next run's settings, and the safety floor that no stage may go
 * below. Pure functions: no I/O, no logging, no global state, deterministic; safe to call
 * from any number of threads on distinct outputs.
 *
 * The thresholds are the TUNER_RULES_* constants below; each one names its source in
 * docs/tuner-rules.md (ByteDance PVLDB 2024, LinkedIn Dr. Elephant, the Kubernetes VPA
 * recommender, or "ours").
 */
#pragma once

#include <stddef.h>

#include "tuner.h"

/* A change smaller than this fraction of the current value is not made (convergence). */
#define TUNER_RULES_DEAD_BAND 0.05
/* Kubernetes VPA recommender: --recommendation-margin-fraction, the head room over usage. */
#define TUNER_RULES_MARGIN 0.15
/* Dr. Elephant JvmUsedMemoryHeuristic BUFFER_FRACTION: heap = (1 + 0.2) x the JVM peak. */
#define TUNER_RULES_HEAP_BUFFER 0.20
/* VPA: the percentile of usage the target is built on (target-memory-percentile). */
#define TUNER_RULES_PERCENTILE 0.90
/* VPA model: memory after an OOM = max(1.2 x, + 100 MiB) (OOMBumpUpRatio, OOMMinBumpUp). */
#define TUNER_RULES_OOM_BUMP_RATIO 1.2
#define TUNER_RULES_OOM_BUMP_MIN   (UINT64_C(100) << 20)
/* A failure's bumped memory is a hard floor while the failing run is one of the newest K. */
#define TUNER_RULES_HOLD_RUNS 5
/* A lowering step goes at most down to this fraction of the current value (at most halve). */
#define TUNER_RULES_STEP_DOWN 0.5
/* A raise of millicores for throttling / run-queue wait / run time: x 1.25 per run. */
#define TUNER_RULES_CPU_RAISE 1.25
/* Throttled time / wall time, and run-queue wait / CPU second, above which CPU is short. */
#define TUNER_RULES_THROTTLED_HIGH 0.10
#define TUNER_RULES_RUNQ_HIGH      0.10
/* Lower millicores only while the 90th percentile of the sampled use stays below this
   fraction of the run's CPU limit (its overcommit x the request; 2 x when unknown): the limit,
   not the request, is what absorbs a burst. */
#define TUNER_RULES_CPU_PEAK_OF_LIMIT 0.9
/* A size that ran out of memory stays a floor, this much above it, while its run is in the
   window (the OOM bump's hold ends after TUNER_RULES_HOLD_RUNS). */
#define TUNER_RULES_OOM_MARGIN 0.05
/* Once a Java heap OOM is in the history, stage 2 asks at most this much less heap than the
   least that completed at the partitions or fewer: the margin the targets ask under a limit
   (docs/tuner-bench.md), since a JVM fills its heap and only an OOM measures its need. */
#define TUNER_RULES_HEAP_STEP 0.10
/* Stage 2 asks no less heap than this many times the heap in use after GC (the agent's peak
   reading) of the least heap that completed at the partitions or fewer, up to that heap. The
   reading is the live data and garbage not yet collected, read at the agent's samples; an
   allocation's peak lies above it: skew's collect_list ran out at 1280m on Spark 3.5 where
   its reading was 901m, and completed with 1408m (835m) and 1536m (961m), 1.5-1.7 x them.
   The JVM guideline is 3 to 4 x the old generation after a full collection (Hunt and John,
   "Java Performance", 2011, ch. 7); this reading, after any collection, is larger than that
   figure, hence 2. bench/tune's mem-sort reads 80-200m at any heap from 768m to 2g, so it
   keeps its whole descent (docs/tuner-rules.md). */
#define TUNER_RULES_HEAP_AFTER_GC 2.0
/* A heap under this many times its heap after GC is tight: the rules do not lower the
   partitions under it (larger tasks). The JVM guideline's lower end (3 to 4 x the live data,
   Hunt and John, above); skew read 550-700m at 50 partitions with 1218m-1381m and ran out at 6
   in each of the four loops whose rules stepped there (the ninth real loops); mem-sort and
   cpu-light read 50-200m with 768m-2g. */
#define TUNER_RULES_HEAP_TIGHT     3.0
#define TUNER_RULES_CPU_OVERCOMMIT 2.0
/* Dr. Elephant ExecutorGcHeuristic: GC time / executor run time, low 0.08, severe 0.10, judged
   only when the executors ran >= 5 minutes in total. */
#define TUNER_RULES_GC_HOLD        0.08
#define TUNER_RULES_GC_RAISE       0.10
#define TUNER_RULES_GC_MIN_SECONDS 300.0
/* Dr. Elephant ExecutorStorageSpillHeuristic: spill per task >= 0.05 x the heap per task slot. */
#define TUNER_RULES_SPILL_HEAVY 0.05
/* The process peak within 1 / (1 + margin) of the limit: raise the limit (VPA margin). */
#define TUNER_RULES_NEAR_LIMIT (1.0 / (1.0 + TUNER_RULES_MARGIN))
/* Burst ratio: at most + 0.25 per run. */
#define TUNER_RULES_BURST_STEP 0.25
/* Agent spill threshold: forced spills per executor counted as "many"; step per run. */
#define TUNER_RULES_FORCED_SPILLS_MANY 10
#define TUNER_RULES_SPILL_STEP         0.10
/* Shuffle partitions: "far more" than the cores = 4 x; recommended = 3 x the cores. */
#define TUNER_RULES_PARTITIONS_FAR   4
#define TUNER_RULES_PARTITIONS_CORES 3
/* Dr. Elephant StagesAnalyzer task skew (max / median task time), moderate severity. */
#define TUNER_RULES_SKEW_HIGH 4.0
/* Spark's default spark.sql.shuffle.partitions, for params.shuffle_partitions == 0. */
#define TUNER_RULES_SPARK_PARTITIONS 200

/*
 * Recommend the next run's settings from runs[0..n) (newest first; runs[0]'s params are the
 * current settings) within *b. Every value is clamped to *b and kept at or above
 * tuner_rules_floor(). On success fills *ret (stage TUNER_STAGE_RULES, runs_used, a reason
 * per parameter, converged = no rule changed anything and the newest run succeeded,
 * predicted_objective and failure_probability NAN) and returns 0. -EINVAL when n == 0 or a
 * pointer is NULL; *ret is untouched then.
 */
int tuner_rules_recommend(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                          struct tuner_recommendation *ret);

/*
 * The safety floor no stage may go below, from runs[0..n) (newest first). Only completed runs
 * (TUNER_OK, TUNER_FAIL_RUNTIME) at most runs[0]'s size count as successful (heap for the heap,
 * heap + overhead for the rest): a larger run's peaks show what the JVM filled, not a need.
 * The floor:
 *   heap      >= every successful run's min(heap, (1 + heap buffer) x JVM heap peak);
 *   overhead  >= every successful run's min(overhead, (1 + margin) x (process - heap peak)),
 *                and large enough that heap floor + overhead floor covers every successful
 *                run's min(limit, (1 + margin) x process peak);
 *   after a memory failure within the newest TUNER_RULES_HOLD_RUNS runs, its sizes are held
 *   with the OOM bump on the part that ran out: JVM OutOfMemoryError -> heap >= bump(heap),
 *   overhead >= its overhead; kernel OOM kill -> heap >= its heap, heap + overhead >=
 *   bump(heap + overhead); both or an executor lost of unknown cause -> both bumps;
 *   millicores >= the highest p90 CPU (cpu_peak_util x millicores) of a completed run at
 *                runs[0]'s cores, under 0.9 of the limit (runs[0]'s cpu_limit_ratio, 2 when
 *                unknown), at most cores x 1000 and millicores_max, at least millicores_min;
 *   cores = runs[0]'s (the rules do not tune it), burst_ratio = 0, spill_fraction =
 * b->spill_fraction_min, shuffle_partitions = b->partitions_min. Admin bounds win over the floor
 * (heap/overhead are clamped to their maxima and to memory_limit_max). With n == 0 the floor is the
 * bounds' minima (cores 0).
 */
void tuner_rules_floor(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                       struct tuner_params *ret_floor);

/*
 * The heap the memory failures of RUNS (newest first) hold at PARTS shuffle partitions, as
 * the floor holds it: each heap that ran out x (1 + TUNER_RULES_OOM_MARGIN), bumped while the
 * failure is held; a Java heap OOM alone at fewer partitions than PARTS only up to the least
 * heap a run completed with at more partitions, up to PARTS, and not at all when that was no
 * more than ran out (more partitions, smaller tasks: the need fell). 0: none. Not clamped to
 * the bounds. Stage 2 checks each candidate at its own partitions against it.
 */
uint64_t tuner_rules_oom_heap_floor(const struct tuner_run *runs, size_t n, uint64_t parts);

/*
 * The least heap stage 2 may ask at PARTS shuffle partitions, from the run that completed with
 * the least heap at PARTS or fewer (within the dead band), or at the fewest partitions that
 * completed when none ran at so few: once RUNS (newest first) hold a Java heap OOM,
 * (1 - TUNER_RULES_HEAP_STEP) x its heap; where its agent measured the heap after GC,
 * TUNER_RULES_HEAP_AFTER_GC x that, up to its heap (at fewer partitions than any that
 * completed, TUNER_RULES_HEAP_TIGHT x that); the larger. 0: neither, or no run
 * completed. Not clamped to the bounds.
 */
uint64_t tuner_rules_heap_step_floor(const struct tuner_run *runs, size_t n, uint64_t parts);

/*
 * The floor for stage 2: without the rules' margin on the non-heap peak, and without the
 * process peak's share of the limit (heap + overhead >= peak), which one floor per parameter
 * can only express as an overhead large enough for the lowest heap: stage 2's usage model of
 * the memory peak (bo.h) checks heap + overhead of each candidate against the peak, with a
 * margin of its own from the measured variation. The heap keeps its buffer, a failure its
 * bump and hold; the millicores floor takes the whole limit, not 0.9 of it.
 */
void tuner_rules_floor_measured(const struct tuner_run *runs, size_t n,
                                const struct tuner_bounds *b, struct tuner_params *ret_floor);
