/* SPDX-License-Identifier: Apache-2.0 */
/* Stage 1 of the tuner (tuner/rules.h): every rule, just below and just above its threshold. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/*
 * A run that no rule wants to change with the default bounds: 2 executors x 4 cores at
 * 4000m, CPU at the target, memory request 5 GiB with the process peak at 0.72 of it, the
 * overhead nearly all used, no pressure, few stages' tasks.
 */
static struct tuner_run base_run(void)
{
        struct tuner_run r = {
            .job = "job",
            .start_ms = 1,
            .duration_seconds = 100,
            .params =
                {
                    .cores = 4,
                    .millicores = 4000,
                    .heap_bytes = 4 * GiB,
                    .overhead_bytes = 1 * GiB,
                    .burst_ratio = 0,
                    .spill_fraction = 0.8,
                    .shuffle_partitions = 200,
                },
            .executors = 2,
            .cpu_util = 0.85,
            .mem_util = 0.72,
            .objective = 1 / (0.85 * 0.72),
            .cpu_peak_util = 1.2,
            .throttled_fraction = 0.01,
            .runq_wait_per_cpu = 0.01,
            .memory_peak_bytes = 3686 * MiB, /* 3.6 GiB: 0.72 of the 5 GiB request */
            .heap_peak_bytes = 2816 * MiB,   /* 2.75 GiB */
            .offheap_peak_bytes = 870 * MiB, /* the JVM's non-heap: 870 MiB of 1 GiB */
            .heap_after_gc_peak_bytes = TUNER_UNKNOWN,
            .high_events = 0,
            .oom_kills = 0,
            .forced_spills = 0,
            .has_eventlog = true,
            .has_reports = true,
            .stages = 3,
            .tasks = 100,
            .max_stage_tasks = 24,
            .max_stage_skew = 1.5,
            .gc_seconds = 10,
            .executor_run_seconds = 1000,
            .failure = TUNER_OK,
            .enforced = true,
            .cpu_limit_ratio = NAN,
        };
        snprintf(r.app_id, sizeof(r.app_id), "app-0");
        return r;
}

static struct tuner_bounds bounds(void)
{
        struct tuner_bounds b;

        tuner_bounds_default(&b);
        b.heap_min_bytes = 256 * MiB; /* the cases below size heaps under Spark's 450 MiB */
        return b;
}

static struct tuner_recommendation recommend(const struct tuner_run *runs, size_t n,
                                             const struct tuner_bounds *b)
{
        struct tuner_recommendation rec;
        int r = tuner_rules_recommend(runs, n, b, &rec);

        cr_assert_eq(r, 0, "tuner_rules_recommend: %d", r);
        cr_assert_eq(rec.stage, TUNER_STAGE_RULES);
        cr_assert(isnan(rec.predicted_objective) && isnan(rec.failure_probability));
        return rec;
}

static struct tuner_recommendation recommend1(const struct tuner_run *run)
{
        struct tuner_bounds b = bounds();

        return recommend(run, 1, &b);
}

static void assert_source(const struct tuner_recommendation *rec, enum tuner_param_index i,
                          const char *source)
{
        cr_assert_str_eq(rec->reasons[i].source, source, "param %d: source %s (%s), want %s", i,
                         rec->reasons[i].source, rec->reasons[i].text, source);
        cr_assert(rec->reasons[i].text[0], "param %d has no reason text", i);
}

static bool params_same(const struct tuner_params *a, const struct tuner_params *b)
{
        return a->cores == b->cores && a->millicores == b->millicores &&
               a->heap_bytes == b->heap_bytes && a->overhead_bytes == b->overhead_bytes &&
               a->burst_ratio == b->burst_ratio &&
               ((isnan(a->spill_fraction) && isnan(b->spill_fraction)) ||
                a->spill_fraction == b->spill_fraction) &&
               a->shuffle_partitions == b->shuffle_partitions;
}

static void assert_near(double got, double want, double tol, const char *what)
{
        cr_assert(fabs(got - want) <= tol, "%s: %.6f, want %.6f (+- %g)", what, got, want, tol);
}

static void low_memory(struct tuner_run *r)
{
        r->heap_peak_bytes = 1 * GiB;
        r->offheap_peak_bytes = 512 * MiB;
        r->memory_peak_bytes = 1536 * MiB; /* util 0.3 of the 5 GiB request */
        r->mem_util = 0.3;
}

Test(rules, no_runs_is_einval)
{
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;
        struct tuner_run run = base_run();

        memset(&rec, 0x5a, sizeof(rec));
        cr_assert_eq(tuner_rules_recommend(&run, 0, &b, &rec), -EINVAL);
        cr_assert_eq(tuner_rules_recommend(NULL, 1, &b, &rec), -EINVAL);
        cr_assert_eq(tuner_rules_recommend(&run, 1, NULL, &rec), -EINVAL);
        cr_assert_eq(((unsigned char *)&rec)[0], 0x5a, "ret touched on failure");
}

Test(rules, converged_when_nothing_to_change)
{
        struct tuner_run runs[3] = {base_run(), base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec = recommend(runs, 3, &b);

        cr_assert(rec.converged, "not converged");
        cr_assert_eq(rec.runs_used, 3);
        cr_assert(params_same(&rec.params, &runs[0].params),
                  "params changed: %" PRIu64 "m heap %" PRIu64 " ovh %" PRIu64
                  " burst %f spill %f parts %" PRIu32,
                  rec.params.millicores, rec.params.heap_bytes, rec.params.overhead_bytes,
                  rec.params.burst_ratio, rec.params.spill_fraction, rec.params.shuffle_partitions);
        for (int i = 0; i < TUNER_P_COUNT; i++)
                assert_source(&rec, i, "unchanged");
}

Test(rules, history_runs_limits_the_window)
{
        struct tuner_run runs[3] = {base_run(), base_run(), base_run()};
        struct tuner_bounds b = bounds();

        b.history_runs = 2;
        cr_assert_eq(recommend(runs, 3, &b).runs_used, 2);
}

/* millicores */

Test(rules, millicores_lowered_at_most_halved)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.cpu_util = 0.30;
        run.cpu_peak_util = 0.60;
        rec = recommend1(&run);
        /* max(4000 x 0.30 / 0.85 = 1412, 4000 x 0.6 / 1.5 = 1600, half = 2000) */
        cr_assert_eq(rec.params.millicores, 2000);
        assert_source(&rec, TUNER_P_MILLICORES, "rule:cpu-low");
        cr_assert_eq(rec.params.cores, 4, "cores changed");
        cr_assert(!rec.converged);
}

Test(rules, millicores_threshold_just_below_and_above)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        /* the target band: lowered below 0.85 x (1 - 0.05) = 0.8075 */
        run.cpu_util = 0.80;
        run.cpu_peak_util = 1.0;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 3765, "%" PRIu64, rec.params.millicores);
        assert_source(&rec, TUNER_P_MILLICORES, "rule:cpu-low");

        run.cpu_util = 0.81;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 4000);
        assert_source(&rec, TUNER_P_MILLICORES, "unchanged");
}

Test(rules, millicores_not_lowered_when_peak_high)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        /* the bound is 0.9 of the limit: of 2 x the request when the plan's ratio is unknown */
        run.cpu_util = 0.30;
        run.cpu_peak_util = 1.44;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 3200, "peak bound: 4000 x 1.44 / 1.8");
        run.cpu_peak_util = 1.79; /* 3978m: inside the dead band */
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 4000);
        run.cpu_peak_util = 1.8;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 4000);
        assert_source(&rec, TUNER_P_MILLICORES, "unchanged");

        /* the plan's own overcommit: 3 x the request allows a peak up to 2.7 */
        run.cpu_limit_ratio = 3.0;
        run.cpu_peak_util = 2.16;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 3200, "peak bound: 4000 x 2.16 / 2.7");
        run.cpu_limit_ratio = NAN;
        run.cpu_peak_util = NAN;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 4000, "no peak: not lowered");
}

Test(rules, millicores_from_runs_at_the_same_cores_at_any_millicores)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        runs[0].cpu_util = 0.30;
        runs[0].cpu_peak_util = 0.60;
        runs[1].cpu_util = 0.84; /* same cores and millicores: the higher average counts */
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 4000);

        /* at other millicores its use counts in millicores: 0.42 x 8000 = 0.84 x 4000 */
        runs[1].params.millicores = 8000;
        runs[1].cpu_util = 0.42;
        runs[1].cpu_peak_util = 0.30; /* 2400m, the newest run's */
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 4000, "%s", rec.reasons[TUNER_P_MILLICORES].text);
        /* 2800m: 4000 x 0.70 / 0.85, not the newest run's half (its 1200m gave 2000m) */
        runs[1].cpu_util = 0.35;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 3295, "%s", rec.reasons[TUNER_P_MILLICORES].text);

        /* another task concurrency: not counted */
        runs[1].cpu_util = 0.84;
        runs[1].params.cores = 8;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 2000);
}

/*
 * cpu-light's throttled runs (docs/tuner-bench.md): its p90 at one configuration measured
 * 650m in one replicate and 970m in others. At 1000m a run's p90 was 970m; the newest run,
 * at 500m, drew the low one (1.3 x 500m). A step down sized on the newest millicores' runs
 * alone went to 471m, whose 942m limit throttles the next run that draws the high p90.
 */
Test(rules, millicores_step_down_keeps_every_p90_of_the_window_under_the_limit)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        for (int i = 0; i < 2; i++)
                runs[i].params.cores = 1;
        runs[0].params.millicores = 500;
        runs[0].cpu_util = 0.80;
        runs[0].cpu_peak_util = 1.30;
        runs[1].params.millicores = 1000;
        runs[1].cpu_util = 0.40;
        runs[1].cpu_peak_util = 0.97;
        rec = recommend(runs, 2, &b);
        cr_assert_geq(rec.params.millicores * 2, 970, "%" PRIu64 "m: %s", rec.params.millicores,
                      rec.reasons[TUNER_P_MILLICORES].text);

        /* and when every p90 is low it is lowered, as far as the highest one allows */
        runs[1].cpu_peak_util = 0.70;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 471, "%s", rec.reasons[TUNER_P_MILLICORES].text);
        assert_source(&rec, TUNER_P_MILLICORES, "rule:cpu-low");
}

/*
 * cpu-light again: a step down sized on a 925m p90 (515m, a 1030m limit), then a run there
 * drew 940m, over 0.9 of the limit. Not throttled, and before this rule not lowered or
 * raised either: every later run kept a p90 within 10 % of the limit.
 */
Test(rules, millicores_raised_when_a_p90_passes_the_margin)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        for (int i = 0; i < 2; i++)
                runs[i].params.cores = 1;
        runs[0].params.millicores = 515;
        runs[0].cpu_util = 0.80;
        runs[0].cpu_peak_util = 1.80; /* 927m: 0.9 of the limit, the margin itself */
        runs[1].params.millicores = 1000;
        runs[1].cpu_util = 0.40;
        runs[1].cpu_peak_util = 0.925;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 515, "%s", rec.reasons[TUNER_P_MILLICORES].text);
        assert_source(&rec, TUNER_P_MILLICORES, "unchanged");

        /* 940m: 515 x 1.825 / 1.8 = 522m is inside the dead band, so at least x 1.05 */
        runs[0].cpu_peak_util = 1.825;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 541, "%s", rec.reasons[TUNER_P_MILLICORES].text);
        assert_source(&rec, TUNER_P_MILLICORES, "rule:cpu-margin");
        cr_assert(!rec.converged);

        /* and as far as the p90 needs */
        runs[0].cpu_peak_util = 1.90; /* 978.5m: 544m */
        runs[1].cpu_peak_util = 1.00; /* 1000m at 1000m, the window's highest: 556m */
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 556, "%s", rec.reasons[TUNER_P_MILLICORES].text);

        /* never above the task concurrency */
        runs[0].params.millicores = 990;
        runs[0].cpu_peak_util = 1.0;
        runs[0].cpu_limit_ratio = 1.0; /* a limit at the request: the bound is 0.9 of it */
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 1000, "%s", rec.reasons[TUNER_P_MILLICORES].text);
        runs[0].params.millicores = 1000;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 1000, "%s", rec.reasons[TUNER_P_MILLICORES].text);
        assert_source(&rec, TUNER_P_MILLICORES, "unchanged");
}

/*
 * The CPU floor: no limit under a p90 a completed run at these cores had. Stage 2 fitted
 * cpu-light's one low p90 draw (655m at 32 partitions against 940m at 8) as an effect of the
 * partitions and asked 379m, a 758m limit: throttled.
 */
Test(rules, millicores_floor_is_the_highest_p90)
{
        struct tuner_run runs[3] = {base_run(), base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_params floor;

        for (int i = 0; i < 3; i++)
                runs[i].params.cores = 1;
        runs[0].params.millicores = 515;
        runs[0].cpu_peak_util = 655.0 / 515;
        runs[1].params.millicores = 515;
        runs[1].cpu_peak_util = 940.0 / 515;
        runs[2].params.millicores = 1000;
        runs[2].cpu_peak_util = 0.925;
        /* stage 2's floor has no margin: its models keep their own */
        tuner_rules_floor_measured(runs, 3, &b, &floor);
        cr_assert_eq(floor.millicores, 470, "%" PRIu64, floor.millicores);
        /* the rules': 0.9 of the limit */
        tuner_rules_floor(runs, 3, &b, &floor);
        cr_assert_eq(floor.millicores, 523, "%" PRIu64, floor.millicores);
        /* the plan's own overcommit */
        runs[0].cpu_limit_ratio = 4.0;
        tuner_rules_floor_measured(runs, 3, &b, &floor);
        cr_assert_eq(floor.millicores, 235, "%" PRIu64, floor.millicores);

        /* a failed run and a run at other cores do not count; the task concurrency caps */
        runs[0].cpu_limit_ratio = NAN;
        runs[1].failure = TUNER_FAIL_OOM;
        runs[2].params.cores = 2;
        runs[2].cpu_peak_util = 2.0;
        tuner_rules_floor_measured(runs, 3, &b, &floor);
        cr_assert_eq(floor.millicores, 328, "%" PRIu64, floor.millicores);
        runs[0].cpu_peak_util = 3.0; /* 1545m: over the 1000m of one core */
        runs[0].cpu_limit_ratio = 1.0;
        runs[0].enforced = false; /* what it used: a limit would have to absorb it */
        tuner_rules_floor_measured(runs, 3, &b, &floor);
        cr_assert_eq(floor.millicores, 1000, "%" PRIu64, floor.millicores);
        /* an enforced run used at most its limit: the p90 above it is cut there */
        runs[0].enforced = true;
        tuner_rules_floor_measured(runs, 3, &b, &floor);
        cr_assert_eq(floor.millicores, 515, "%" PRIu64, floor.millicores);
        /* a request nobody knows counts nothing (TUNER_UNKNOWN is no millicores figure) */
        runs[0].params.millicores = TUNER_UNKNOWN;
        tuner_rules_floor_measured(runs, 3, &b, &floor);
        cr_assert_eq(floor.millicores, b.millicores_min, "%" PRIu64, floor.millicores);
        runs[0].params.millicores = 515;

        /* and the rules raise to it */
        struct tuner_recommendation rec;

        runs[0].failure = TUNER_FAIL_TASKS; /* held: no millicores rule ran */
        runs[0].cpu_peak_util = 655.0 / 515;
        runs[0].cpu_limit_ratio = NAN;
        runs[1].failure = TUNER_OK;
        rec = recommend(runs, 3, &b);
        cr_assert_eq(rec.params.millicores, 523, "%s", rec.reasons[TUNER_P_MILLICORES].text);
        cr_assert_str_eq(rec.reasons[TUNER_P_MILLICORES].source, "rule:floor");
}

/* a run whose request nobody knows, or with an infinite utilisation, is no CPU evidence */
Test(rules, millicores_ignore_runs_without_a_request_or_finite_use)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        runs[0].cpu_util = 0.30;
        runs[0].cpu_peak_util = 0.60;
        runs[1].params.millicores = TUNER_UNKNOWN;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 2000, "%s", rec.reasons[TUNER_P_MILLICORES].text);
        assert_source(&rec, TUNER_P_MILLICORES, "rule:cpu-low");

        runs[1].params.millicores = 4000;
        runs[1].cpu_peak_util = INFINITY;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 2000, "%s", rec.reasons[TUNER_P_MILLICORES].text);
}

/*
 * A throttled run's p90 reads at its limit, not at its need: the floor counts it as the need
 * of the request cpu-short raises it to. Without it stage 2 asked the throttled 468m four
 * times in a row (the offline benchmark, cpu-light, seed 19).
 */
Test(rules, millicores_floor_over_a_throttled_run)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_params floor;

        for (int i = 0; i < 2; i++) {
                runs[i].params.cores = 1;
                runs[i].cpu_limit_ratio = 2.0;
        }
        runs[0].params.millicores = 468;
        runs[0].cpu_peak_util = 2.0; /* at the limit */
        runs[0].throttled_fraction = 0.5;
        runs[0].failure = TUNER_FAIL_RUNTIME;
        runs[1].params.millicores = 519;
        runs[1].cpu_peak_util = 934.0 / 519;
        tuner_rules_floor_measured(runs, 2, &b, &floor);
        cr_assert_eq(floor.millicores, 527, "%" PRIu64 ": 468 x 2 x 1.25 x 0.9 / 2",
                     floor.millicores);
        tuner_rules_floor(runs, 2, &b, &floor);
        cr_assert_eq(floor.millicores, 585, "%" PRIu64 ": 468 x 1.25", floor.millicores);

        /* not throttled (or not enforced): the p90 as read */
        runs[0].throttled_fraction = 0.10;
        tuner_rules_floor_measured(runs, 2, &b, &floor);
        cr_assert_eq(floor.millicores, 468, "%" PRIu64, floor.millicores);
        runs[0].throttled_fraction = 0.5;
        runs[0].enforced = false;
        tuner_rules_floor_measured(runs, 2, &b, &floor);
        cr_assert_eq(floor.millicores, 468, "%" PRIu64, floor.millicores);
}

Test(rules, millicores_never_below_min)
{
        struct tuner_run run = base_run();
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        run.cpu_util = 0.10;
        run.cpu_peak_util = 0.20;
        b.millicores_min = 3000;
        rec = recommend(&run, 1, &b);
        cr_assert_eq(rec.params.millicores, 3000);
}

Test(rules, millicores_raised_when_throttled_or_queued)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.params.millicores = 2000;
        run.throttled_fraction = 0.10;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 2000, "0.10 is not above the threshold");

        run.throttled_fraction = 0.11;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 2500);
        assert_source(&rec, TUNER_P_MILLICORES, "rule:cpu-short");

        run.throttled_fraction = 0.0;
        run.runq_wait_per_cpu = 0.11;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 2500);

        /* never above the task concurrency */
        run.params.millicores = 3600;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 4000);
        run.params.millicores = 4000;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.millicores, 4000);
        assert_source(&rec, TUNER_P_MILLICORES, "unchanged");
}

/* without cgroup limits the host's contention is not the request's doing */
Test(rules, unenforced_runs_are_not_cpu_short)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.params.millicores = 2000;
        run.enforced = false;
        run.runq_wait_per_cpu = 2.2;
        run.throttled_fraction = NAN;
        rec = recommend1(&run);
        cr_assert_neq(strcmp(rec.reasons[TUNER_P_MILLICORES].source, "rule:cpu-short"), 0, "%s",
                      rec.reasons[TUNER_P_MILLICORES].text);
        cr_assert_leq(rec.params.millicores, 2000);

        /* and at a low use it is lowered as any run would be */
        run.cpu_util = 0.3;
        run.cpu_peak_util = 0.6;
        rec = recommend1(&run);
        cr_assert_lt(rec.params.millicores, 2000, "%s", rec.reasons[TUNER_P_MILLICORES].text);
        assert_source(&rec, TUNER_P_MILLICORES, "rule:cpu-low");
}

Test(rules, millicores_raised_when_run_time_grew)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        /* the newest run at less CPU than the one before: a configuration of its own (the
           same configuration's slower run is noise: it joins that configuration's median) */
        runs[0].params.millicores = 2000;
        runs[1].params.millicores = 2400;
        runs[0].duration_seconds = 110; /* 1.1 x 100: not beyond the allowance */
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 2000);

        runs[0].duration_seconds = 111;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 2500);
        assert_source(&rec, TUNER_P_MILLICORES, "rule:cpu-runtime");

        /* memory is not lowered while the job is slow */
        low_memory(&runs[0]);
        low_memory(&runs[1]);
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.heap_bytes, 4 * GiB);
        assert_source(&rec, TUNER_P_HEAP, "hold");
        assert_source(&rec, TUNER_P_OVERHEAD, "hold");
        runs[0].duration_seconds = 100;
        rec = recommend(runs, 2, &b);
        assert_source(&rec, TUNER_P_HEAP, "rule:heap");

        /* a run the store marked as beyond the allowance */
        runs[0].failure = TUNER_FAIL_RUNTIME;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.millicores, 2500);
        assert_source(&rec, TUNER_P_HEAP, "hold");
        cr_assert(!rec.converged);
}

/* heap and overhead */

Test(rules, memory_lowered_towards_target_at_most_halved)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        low_memory(&run);
        rec = recommend1(&run);
        /* scale max(0.3 / 0.7, 0.5) = 0.5; heap max(1 GiB x 1.2, 4 GiB x 0.5) */
        cr_assert_eq(rec.params.heap_bytes, 2 * GiB);
        assert_source(&rec, TUNER_P_HEAP, "rule:heap");
        /* overhead max(512 MiB x 1.15 = 588.8 MiB, 1.5 GiB x 1.15 - 2 GiB < 0, 1 GiB x 0.5) */
        cr_assert_eq(rec.params.overhead_bytes, (uint64_t)ceil(512.0 * MiB * 1.15));
        assert_source(&rec, TUNER_P_OVERHEAD, "rule:overhead");
        cr_assert(!rec.converged);
}

Test(rules, memory_threshold_just_below_and_above_target)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        /* 0.7 x (1 - 0.05) = 0.665 of 5 GiB = 3404.8 MiB */
        run.memory_peak_bytes = 3410 * MiB;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.heap_bytes, 4 * GiB);
        assert_source(&rec, TUNER_P_HEAP, "unchanged");

        run.memory_peak_bytes = 3380 * MiB; /* util 0.660: scale 0.943 */
        rec = recommend1(&run);
        assert_source(&rec, TUNER_P_HEAP, "rule:heap");
        assert_near((double)rec.params.heap_bytes, 4.0 * GiB * (3380.0 / 5120) / 0.7, 2, "heap");
}

Test(rules, heap_not_below_the_peak_with_buffer)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        low_memory(&run);
        run.heap_peak_bytes = 3 * GiB; /* x 1.2 = 3.6 GiB > 4 GiB x (0.62 / 0.7) */
        run.memory_peak_bytes = 3 * GiB + 100 * MiB;
        run.mem_util = 0.62;
        rec = recommend1(&run);
        assert_near((double)rec.params.heap_bytes, 3.6 * GiB, 1, "heap");
}

Test(rules, gc_share_high_raises_heap)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.gc_seconds = 100; /* 0.10 of 1000 s */
        rec = recommend1(&run);
        assert_near((double)rec.params.heap_bytes, 4.8 * GiB, 1, "heap");
        assert_source(&rec, TUNER_P_HEAP, "rule:gc");

        run.gc_seconds = 99;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.heap_bytes, 4 * GiB);
}

Test(rules, gc_share_moderate_keeps_heap)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        low_memory(&run);
        run.gc_seconds = 80; /* 0.08 */
        rec = recommend1(&run);
        cr_assert_eq(rec.params.heap_bytes, 4 * GiB);
        assert_source(&rec, TUNER_P_HEAP, "rule:gc");

        run.gc_seconds = 79;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.heap_bytes, 2 * GiB);

        /* executors that ran < 5 minutes in total are not judged on GC */
        run.gc_seconds = 200;
        run.executor_run_seconds = 299;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.heap_bytes, 2 * GiB);
        assert_source(&rec, TUNER_P_HEAP, "rule:heap");
}

Test(rules, heavy_spill_keeps_heap)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        low_memory(&run);
        /* 0.05 x 4 GiB / 4 cores = 51.2 MiB per task */
        run.memory_spill_bytes = 100 * (uint64_t)(51.3 * MiB);
        rec = recommend1(&run);
        cr_assert_eq(rec.params.heap_bytes, 4 * GiB);
        assert_source(&rec, TUNER_P_HEAP, "rule:spill");

        run.memory_spill_bytes = 100 * (uint64_t)(51.1 * MiB);
        rec = recommend1(&run);
        cr_assert_eq(rec.params.heap_bytes, 2 * GiB);
}

Test(rules, overhead_raised_near_the_limit)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.memory_peak_bytes = 4600 * MiB; /* x 1.15 = 5290 MiB: more than 4 GiB + 1 GiB */
        run.mem_util = 0.9;
        rec = recommend1(&run);
        assert_near((double)rec.params.overhead_bytes, 4600.0 * MiB * 1.15 - 4.0 * GiB, 1,
                    "overhead");
        assert_source(&rec, TUNER_P_OVERHEAD, "rule:near-limit");
        cr_assert_eq(rec.params.heap_bytes, 4 * GiB);
        /* the limit keeps the VPA margin over the process peak */
        cr_assert_geq((double)(rec.params.heap_bytes + rec.params.overhead_bytes),
                      4600.0 * MiB * 1.15);
}

/* memoryBurst ratio */

Test(rules, burst_raised_for_unused_overhead_in_steps)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.offheap_peak_bytes = 307 * MiB; /* x 1.15 = 0.345 of the 1 GiB overhead */
        rec = recommend1(&run);
        assert_near(rec.params.burst_ratio, 0.25, 1e-9, "burst");
        assert_source(&rec, TUNER_P_BURST_RATIO, "rule:burst");

        run.params.burst_ratio = 0.5;
        rec = recommend1(&run);
        assert_near(rec.params.burst_ratio, 1 - 307.0 * 1.15 / 1024, 1e-6, "burst target");
}

Test(rules, burst_bounded_by_max)
{
        struct tuner_run run = base_run();
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        run.offheap_peak_bytes = 307 * MiB;
        b.burst_ratio_max = 0.1;
        rec = recommend(&run, 1, &b);
        assert_near(rec.params.burst_ratio, 0.1, 1e-9, "burst");

        run.params.burst_ratio = 0.3; /* above a lowered admin maximum */
        rec = recommend(&run, 1, &b);
        cr_assert_leq(rec.params.burst_ratio, 0.1);
}

Test(rules, burst_lowered_when_overhead_used)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.params.burst_ratio = 0.5; /* the request covers 512 MiB; 870 x 1.15 MiB used */
        rec = recommend1(&run);
        assert_near(rec.params.burst_ratio, 1 - 870.0 * 1.15 / 1024, 1e-6, "burst");
        assert_source(&rec, TUNER_P_BURST_RATIO, "rule:burst");

        /* within the dead band of the target: unchanged */
        run.params.burst_ratio = 0.07;
        rec = recommend1(&run);
        assert_near(rec.params.burst_ratio, 0.07, 1e-12, "burst");
}

/* the agent's spill fraction */

Test(rules, spill_fraction_lowered_under_pressure)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.high_events = 3;
        rec = recommend1(&run);
        assert_near(rec.params.spill_fraction, 0.7, 1e-9, "spill");
        assert_source(&rec, TUNER_P_SPILL_FRACTION, "rule:spill-earlier");

        run.params.spill_fraction = 0.55;
        rec = recommend1(&run);
        assert_near(rec.params.spill_fraction, 0.5, 1e-9, "spill stops at the minimum");
        run.params.spill_fraction = 0.5;
        rec = recommend1(&run);
        assert_near(rec.params.spill_fraction, 0.5, 1e-9, "spill");
        assert_source(&rec, TUNER_P_SPILL_FRACTION, "unchanged");

        /* the peak within 1 / 1.15 of the limit (4452 MiB of 5 GiB) is pressure too */
        run = base_run();
        run.memory_peak_bytes = 4460 * MiB;
        rec = recommend1(&run);
        assert_near(rec.params.spill_fraction, 0.7, 1e-9, "spill");
        run.memory_peak_bytes = 4440 * MiB;
        rec = recommend1(&run);
        assert_near(rec.params.spill_fraction, 0.8, 1e-9, "spill");
}

Test(rules, spill_fraction_raised_for_many_forced_spills_at_low_memory)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.mem_util = 0.5;
        run.forced_spills = 19; /* many = 10 per executor x 2 */
        rec = recommend1(&run);
        assert_near(rec.params.spill_fraction, 0.8, 1e-9, "spill");

        run.forced_spills = 20;
        rec = recommend1(&run);
        assert_near(rec.params.spill_fraction, 0.9, 1e-9, "spill");
        assert_source(&rec, TUNER_P_SPILL_FRACTION, "rule:spill-later");

        run.mem_util = 0.7; /* memory at the target: not raised */
        rec = recommend1(&run);
        assert_near(rec.params.spill_fraction, 0.8, 1e-9, "spill");
}

/* shuffle partitions */

Test(rules, partitions_lowered_to_a_multiple_of_the_cores)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.max_stage_tasks = 33; /* > 4 x 8 cores */
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 24);
        assert_source(&rec, TUNER_P_PARTITIONS, "rule:partitions");

        run.max_stage_tasks = 32;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 200);

        /* unset = Spark's 200 */
        run.max_stage_tasks = 200;
        run.params.shuffle_partitions = 0;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 24);
}

Test(rules, partitions_lowered_step_by_step_under_skew)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.max_stage_tasks = 200;
        run.max_stage_skew = 4.0;
        rec = recommend1(&run);
        /* under skew, a factor 4 a run towards 3 x the 8 cores (issue 24: kept at 200, skew's
           runs were 40 % slower than at 8) */
        cr_assert_eq(rec.params.shuffle_partitions, 50);
        assert_source(&rec, TUNER_P_PARTITIONS, "rule:skew");
        run.params.shuffle_partitions = 50;
        run.max_stage_tasks = 50;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 24, "within a factor 4 of 24: there");

        run.params.shuffle_partitions = 200;
        run.max_stage_tasks = 200;
        run.max_stage_skew = 3.9;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 24);
}

/*
 * A heap tight by the agent's heap after GC (under 3 x the reading) does not jump to 3 x the
 * cores at once: fewer partitions make larger tasks (the ninth real loops: skew ran out at the
 * rules' jump to 6 partitions in each loop that took it, reading 550-700m with 1218m-1381m).
 * Skew's step of a factor 4 is still taken (held at 200, skew ran 40 % slower). Without the
 * reading, or with a loose heap, the jump is taken as before.
 */
Test(rules, partitions_kept_when_the_heap_after_gc_is_tight)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.max_stage_tasks = 200;
        run.max_stage_skew = 1.0;
        run.params.heap_bytes = 1323 * MiB;
        run.heap_after_gc_peak_bytes = 654 * MiB; /* 1323m < 3 x 654m */
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 200);
        assert_source(&rec, TUNER_P_PARTITIONS, "hold");
        run.max_stage_skew = 4.0; /* skew's step of a factor 4 */
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 50);
        assert_source(&rec, TUNER_P_PARTITIONS, "rule:skew");
        run.params.shuffle_partitions = 50; /* within a factor 4 of 24: the jump, held */
        run.max_stage_tasks = 50;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 50);
        assert_source(&rec, TUNER_P_PARTITIONS, "hold");
        run.heap_after_gc_peak_bytes = 441 * MiB; /* 3 x 441m = 1323m: loose */
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 24);
        assert_source(&rec, TUNER_P_PARTITIONS, "rule:partitions");
        run.heap_after_gc_peak_bytes = TUNER_UNKNOWN;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.shuffle_partitions, 24);
}

/*
 * A Java heap OOM with fewer partitions than 3 per task slot raises them with the heap (Spark's
 * tuning guide: more parallelism, smaller tasks), and holds that floor; the heap floor of that
 * OOM does not bind a later run with more partitions (its tasks are smaller).
 */
Test(rules, jvm_oom_with_few_partitions_raises_them)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_params floor;
        struct tuner_recommendation rec;

        runs[0].failure = TUNER_FAIL_OOM;
        runs[0].oom_task_failures = 2;
        runs[0].params.shuffle_partitions = 4;
        runs[0].executors = 6; /* 2 at once, 4 lost and replaced */
        runs[0].executors_lost = 4;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 24, "3 x 2 executors x 4 cores: %s",
                     rec.reasons[TUNER_P_PARTITIONS].text);
        assert_source(&rec, TUNER_P_PARTITIONS, "rule:oom");
        assert_near((double)rec.params.heap_bytes, 4.8 * GiB, 1, "heap");
        tuner_rules_floor_measured(runs, 2, &b, &floor);
        cr_assert_eq(floor.shuffle_partitions, 24, "the hold keeps the partitions up");
        cr_assert_geq(floor.heap_bytes, (uint64_t)(4.8 * GiB) - 1, "and the heap");

        /* enough partitions already, as many as the run before: only the heap */
        runs[0].params.shuffle_partitions = 24;
        runs[1].params.shuffle_partitions = 24;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 24);
        assert_source(&rec, TUNER_P_PARTITIONS, "hold");
        /* enough of them, fewer than the run before that completed: back to its
           (jvm_oom_after_fewer_partitions_rolls_back) */
        runs[1].params.shuffle_partitions = 200;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 200);
        assert_source(&rec, TUNER_P_PARTITIONS, "rule:oom-rollback");

        /* a later good run with more partitions: the OOM at 4 is no heap floor for it */
        runs[0].params.shuffle_partitions = 4;
        runs[1] = runs[0];
        runs[0] = base_run();
        runs[0].params.shuffle_partitions = 24;
        tuner_rules_floor_measured(runs, 2, &b, &floor);
        cr_assert_lt(floor.heap_bytes, 4 * GiB, "heap floor %" PRIu64 " MiB from an OOM at 4",
                     floor.heap_bytes / MiB);

        /* ... but only once a run there completed with no more heap than ran out: with more
           partitions and more heap, nothing shows the need fell (a skewed key's does not) */
        runs[0].params.heap_bytes = 5 * GiB;
        tuner_rules_floor_measured(runs, 2, &b, &floor);
        cr_assert_geq(floor.heap_bytes, (uint64_t)(4.8 * GiB) - 1,
                      "heap floor %" PRIu64 " MiB: the OOM at 4 let go", floor.heap_bytes / MiB);
}

/*
 * A Java heap OOM at fewer partitions than the last run that completed, with enough of them
 * per task slot: back to that run's partitions and heap, and not below them again while the
 * OOM is in the window (issue 24: skew on Spark 3.5 ran out at 6 partitions after 50, then
 * again at 6 with the heap bumped, in each of three loops).
 */
Test(rules, jvm_oom_after_fewer_partitions_rolls_back)
{
        struct tuner_run runs[4] = {base_run(), base_run(), base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_params floor;
        struct tuner_recommendation rec;

        for (int i = 0; i < 4; i++) {
                runs[i].params.cores = 1;
                runs[i].params.millicores = 1000;
                runs[i].max_stage_skew = 8.0; /* the rules would step the partitions down */
        }
        /* newest first: 6 partitions (3 x 2 slots) and 1148m ran out, 50 and 1425m completed */
        runs[0].failure = TUNER_FAIL_OOM;
        runs[0].oom_task_failures = 3;
        runs[0].params.shuffle_partitions = 6;
        runs[0].params.heap_bytes = 1148 * MiB;
        runs[1].params.shuffle_partitions = 50;
        runs[1].params.heap_bytes = 1425 * MiB;
        runs[1].max_stage_tasks = 50;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 50, "%s", rec.reasons[TUNER_P_PARTITIONS].text);
        cr_assert_eq(rec.params.heap_bytes, 1425 * MiB, "%s", rec.reasons[TUNER_P_HEAP].text);
        assert_source(&rec, TUNER_P_PARTITIONS, "rule:oom-rollback");
        assert_source(&rec, TUNER_P_HEAP, "rule:oom-rollback");
        assert_source(&rec, TUNER_P_MILLICORES, "hold");

        /* the rollback ran: the rules do not step down again while the OOM is in the window */
        runs[2] = runs[1];
        runs[1] = runs[0];
        runs[0] = runs[2];
        runs[0].app_id[4] = '3';
        rec = recommend(runs, 3, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 50, "%s", rec.reasons[TUNER_P_PARTITIONS].text);
        tuner_rules_floor_measured(runs, 3, &b, &floor);
        cr_assert_eq(floor.shuffle_partitions, 50, "stage 2's box too");
        /* the heap is held at the 50 partitions the floor raises the rules' step back to,
           where the same heap completed, not at the 12 they stepped to (the first real loops
           with the rollback, Spark 3.5: 1274m ran out at 6 and completed at 50, and the
           floor at 12 raised it to 1529m) */
        for (int i = 0; i < 3; i++)
                runs[i].params.heap_bytes = 1274 * MiB;
        rec = recommend(runs, 3, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 50);
        cr_assert_eq(rec.params.heap_bytes, 1274 * MiB, "%s", rec.reasons[TUNER_P_HEAP].text);
        tuner_rules_floor_measured(runs, 3, &b, &floor);
        cr_assert_leq(floor.heap_bytes, 1274 * MiB, "stage 2's box: the heap held at 50");
        for (int i = 0; i < 3; i++)
                runs[i].params.heap_bytes = i == 1 ? 1148 * MiB : 1425 * MiB;
        /* out of the window: the step is the rules' again */
        b.history_runs = 1;
        rec = recommend(runs, 3, &b);
        cr_assert_lt(rec.params.shuffle_partitions, 50, "%s", rec.reasons[TUNER_P_PARTITIONS].text);
        b = bounds();

        /* the same heap ran out at 6 after 12 completed: back to 12 and that heap */
        runs[0] = runs[1];
        runs[1].failure = TUNER_OK;
        runs[1].oom_task_failures = 0;
        runs[1].params.shuffle_partitions = 12;
        runs[1].params.heap_bytes = 1148 * MiB;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 12);
        cr_assert_eq(rec.params.heap_bytes, 1148 * MiB, "no heap floor at 12: it completed");

        /* the bounds no longer allow the run that completed: the heap is bumped instead */
        b.partitions_max = 10;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 6);
        assert_source(&rec, TUNER_P_HEAP, "rule:oom");
        b = bounds();

        /* no step down: the heap is bumped at the same partitions, as before */
        runs[1].params.shuffle_partitions = 6;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 6);
        assert_source(&rec, TUNER_P_HEAP, "rule:oom");
        cr_assert_gt(rec.params.heap_bytes, 1148 * MiB);

        /* a kernel OOM kill (the limit, not the tasks' heap): no rollback */
        runs[1].params.shuffle_partitions = 50;
        runs[0].oom_kills = 1;
        runs[0].oom_task_failures = 0;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 6);
        assert_source(&rec, TUNER_P_OVERHEAD, "rule:oom");
}

/*
 * The heap a Java heap OOM holds at each partition count (stage 2 checks its candidates with
 * it): at the OOM's partitions and fewer its heap, bumped while held; at more, at most the
 * least heap a run completed with there, and none once that was no more than ran out.
 */
Test(rules, oom_heap_floor_by_partitions)
{
        struct tuner_run runs[3] = {base_run(), base_run(), base_run()};
        uint64_t bumped = (uint64_t)ceil(TUNER_RULES_OOM_BUMP_RATIO * GiB); /* > +100 MiB */

        /* newest first: 1g at 8 completed, 1.1g at 6 completed, 1g at 2 ran out of heap */
        runs[0].params.heap_bytes = 1 * GiB;
        runs[0].params.shuffle_partitions = 8;
        runs[1].params.heap_bytes = (uint64_t)(1.1 * GiB);
        runs[1].params.shuffle_partitions = 6;
        runs[2].params.heap_bytes = 1 * GiB;
        runs[2].params.shuffle_partitions = 2;
        runs[2].failure = TUNER_FAIL_OOM;
        runs[2].oom_task_failures = 4;
        cr_assert_eq(tuner_rules_oom_heap_floor(runs, 3, 1), bumped, "held: bumped");
        cr_assert_eq(tuner_rules_oom_heap_floor(runs, 3, 2), bumped);
        cr_assert_eq(tuner_rules_oom_heap_floor(runs, 3, 6), (uint64_t)(1.1 * GiB),
                     "no more than 1.1g, which completed at 6");
        cr_assert_eq(tuner_rules_oom_heap_floor(runs, 3, 8), 0, "1g completed at 8");
        cr_assert_eq(tuner_rules_oom_heap_floor(runs, 3, 200), 0);
        /* the newest two only: no run shows the need falling, held up to 1.1g everywhere */
        cr_assert_eq(tuner_rules_oom_heap_floor(runs + 1, 2, 200), (uint64_t)(1.1 * GiB));
        /* a kernel OOM kill beside it: the limit's too, held at any partitions */
        runs[2].oom_kills = 1;
        cr_assert_eq(tuner_rules_oom_heap_floor(runs, 3, 200), bumped);
        /* no OOM */
        cr_assert_eq(tuner_rules_oom_heap_floor(runs, 2, 2), 0);
        cr_assert_eq(tuner_rules_oom_heap_floor(NULL, 0, 2), 0);
}

/* stage 2's heap steps once the job ran out of heap: 10 % under what completed at as few
   partitions or fewer (issue 24: 1274m completed at 50 after an OOM at 6, then 1080m at 50) */
Test(rules, heap_step_floor_after_a_heap_oom)
{
        struct tuner_run runs[4] = {base_run(), base_run(), base_run(), base_run()};
        uint64_t at_50 = (uint64_t)ceil((1.0 - TUNER_RULES_HEAP_STEP) * (double)(1274 * MiB));
        uint64_t at_8 = (uint64_t)ceil((1.0 - TUNER_RULES_HEAP_STEP) * (double)(1536 * MiB));

        /* newest first: 1274m at 50 and 2g at 50 completed, 1536m at 8 completed, 1280m at 6
           ran out of heap */
        runs[0].params.heap_bytes = 1274 * MiB;
        runs[0].params.shuffle_partitions = 50;
        runs[1].params.heap_bytes = 1280 * MiB;
        runs[1].params.shuffle_partitions = 6;
        runs[1].failure = TUNER_FAIL_OOM;
        runs[1].oom_task_failures = 4;
        runs[2].params.heap_bytes = 1536 * MiB;
        runs[2].params.shuffle_partitions = 8;
        runs[3].params.heap_bytes = 2 * GiB;
        runs[3].params.shuffle_partitions = 50;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 4, 50), at_50);
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 4, 48), at_50, "50 within the dead band");
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 4, 200), at_50);
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 4, 20), at_8, "only 1536m at 8 or fewer");
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 4, 8), at_8);
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 4, 4), at_8,
                     "none at 4 or fewer: the fewest partitions that completed");
        /* a kernel OOM kill is the limit's, not the heap's: no step floor */
        runs[1].oom_task_failures = 0;
        runs[1].oom_kills = 1;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 4, 50), 0);
        /* with the heap's OOM: runs at an unknown heap do not count */
        runs[1].oom_kills = 0;
        runs[1].oom_task_failures = 4;
        runs[0].params.heap_bytes = TUNER_UNKNOWN;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 4, 50),
                     (uint64_t)ceil((1.0 - TUNER_RULES_HEAP_STEP) * (double)(1536 * MiB)));
        /* no Java heap OOM, no completed run, none at all */
        runs[0].params.heap_bytes = 1274 * MiB;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 1, 50), 0);
        cr_assert_eq(tuner_rules_heap_step_floor(runs + 1, 1, 50), 0);
        cr_assert_eq(tuner_rules_heap_step_floor(NULL, 0, 50), 0);
}

/*
 * The heap after GC of the reference run (the least heap completed at the partitions or fewer)
 * bounds stage 2's step before any OOM: TUNER_RULES_HEAP_AFTER_GC x it, up to that heap; with
 * an OOM too, the larger of that and the step.
 */
Test(rules, heap_step_floor_from_the_heap_after_gc)
{
        struct tuner_run runs[3] = {base_run(), base_run(), base_run()};
        const double f = TUNER_RULES_HEAP_AFTER_GC;

        /* newest first: 1536m at 2 and 2g at 2 completed, 1536m at 50 completed */
        runs[0].params.heap_bytes = 1536 * MiB;
        runs[0].params.shuffle_partitions = 2;
        runs[0].heap_after_gc_peak_bytes = 600 * MiB;
        runs[1].params.heap_bytes = 2 * GiB;
        runs[1].params.shuffle_partitions = 2;
        runs[1].heap_after_gc_peak_bytes = 900 * MiB;
        runs[2].params.heap_bytes = 1536 * MiB;
        runs[2].params.shuffle_partitions = 50;
        runs[2].heap_after_gc_peak_bytes = 500 * MiB;
        /* no OOM: from the least heap at 2 (not 2g's larger reading) */
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 3, 2),
                     (uint64_t)ceil(f * (double)(600 * MiB)));
        /* at 50: 1536m at 2 and at 50 tie; the larger reading of the two */
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 3, 50),
                     (uint64_t)ceil(f * (double)(600 * MiB)));
        runs[0].heap_after_gc_peak_bytes = 300 * MiB;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 3, 50),
                     (uint64_t)ceil(f * (double)(500 * MiB)));
        /* a heap mostly in use after GC holds that heap, no more */
        runs[0].heap_after_gc_peak_bytes = 1000 * MiB;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 3, 2), 1536 * MiB);
        /* at fewer partitions than any that completed: 3 x the reading of the least heap at the
           fewest, not capped at its heap (larger tasks than any that fitted) */
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 3, 1),
                     (uint64_t)ceil(TUNER_RULES_HEAP_TIGHT * (double)(1000 * MiB)));
        /* unknown: nothing before an OOM (nor from a run that ran out) */
        runs[0].heap_after_gc_peak_bytes = TUNER_UNKNOWN;
        runs[1].heap_after_gc_peak_bytes = TUNER_UNKNOWN;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 2, 2), 0);
        runs[1].failure = TUNER_FAIL_OOM;
        runs[1].oom_task_failures = 2;
        runs[1].heap_after_gc_peak_bytes = 2040 * MiB;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 2, 2),
                     (uint64_t)ceil(0.9 * (double)(1536 * MiB)), "the step, after the OOM");
        /* after the OOM, the larger of the step and the heap after GC */
        runs[0].heap_after_gc_peak_bytes = 750 * MiB;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 2, 2),
                     (uint64_t)ceil(f * (double)(750 * MiB)));
        runs[0].heap_after_gc_peak_bytes = 400 * MiB;
        cr_assert_eq(tuner_rules_heap_step_floor(runs, 2, 2),
                     (uint64_t)ceil(0.9 * (double)(1536 * MiB)));
}

Test(rules, partitions_bounded)
{
        struct tuner_run run = base_run();
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        run.max_stage_tasks = 200;
        b.partitions_min = 64;
        rec = recommend(&run, 1, &b);
        cr_assert_eq(rec.params.shuffle_partitions, 64);
        assert_source(&rec, TUNER_P_PARTITIONS, "bound");
}

/* failures */

Test(rules, kernel_oom_bumps_the_limit_and_holds_the_rest)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.failure = TUNER_FAIL_OOM;
        run.oom_kills = 1;
        run.cpu_util = 0.2; /* would lower millicores on a success */
        run.cpu_peak_util = 0.3;
        rec = recommend1(&run);
        /* limit 5 GiB -> 6 GiB: overhead 1 GiB -> 2 GiB */
        cr_assert_eq(rec.params.heap_bytes, 4 * GiB);
        assert_near((double)rec.params.overhead_bytes, 2.0 * GiB, 2, "overhead");
        assert_source(&rec, TUNER_P_OVERHEAD, "rule:oom");
        assert_source(&rec, TUNER_P_MILLICORES, "hold");
        assert_source(&rec, TUNER_P_PARTITIONS, "hold");
        cr_assert_eq(rec.params.millicores, 4000);
        cr_assert(!rec.converged);
}

Test(rules, jvm_oom_bumps_the_heap)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.failure = TUNER_FAIL_OOM;
        run.oom_task_failures = 2;
        rec = recommend1(&run);
        assert_near((double)rec.params.heap_bytes, 4.8 * GiB, 1, "heap");
        cr_assert_eq(rec.params.overhead_bytes, 1 * GiB);
        assert_source(&rec, TUNER_P_HEAP, "rule:oom");

        /* small: + 100 MiB wins over x 1.2 */
        run.params.heap_bytes = 300 * MiB;
        rec = recommend1(&run);
        cr_assert_eq(rec.params.heap_bytes, 400 * MiB);
}

Test(rules, executor_lost_bumps_both)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.failure = TUNER_FAIL_EXECUTOR_LOST;
        rec = recommend1(&run);
        assert_near((double)rec.params.heap_bytes, 4.8 * GiB, 1, "heap");
        /* limit 6 GiB: overhead = 6 - 4.8 GiB */
        assert_near((double)rec.params.overhead_bytes, 6.0 * GiB - 4.8 * GiB, 2, "overhead");
        assert_source(&rec, TUNER_P_OVERHEAD, "rule:oom");
}

Test(rules, failed_tasks_hold_everything)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        run.failure = TUNER_FAIL_TASKS;
        run.failed_tasks = 7;
        low_memory(&run);
        run.cpu_util = 0.2;
        rec = recommend1(&run);
        cr_assert(params_same(&rec.params, &run.params), "params changed");
        for (int i = 0; i < TUNER_P_COUNT; i++)
                assert_source(&rec, i, "hold");
        cr_assert(!rec.converged, "a failed run is not convergence");
}

Test(rules, oom_held_for_k_runs)
{
        struct tuner_run runs[TUNER_RULES_HOLD_RUNS + 1];
        struct tuner_bounds b = bounds();
        struct tuner_params floor;
        struct tuner_recommendation rec;

        /* the newest run ran at the bumped size (4 + 2 GiB) and used little */
        for (size_t i = 0; i <= TUNER_RULES_HOLD_RUNS; i++) {
                runs[i] = base_run();
                runs[i].params.overhead_bytes = 2 * GiB;
                low_memory(&runs[i]);
        }
        runs[1].failure = TUNER_FAIL_OOM;
        runs[1].params.overhead_bytes = 1 * GiB;
        runs[1].oom_kills = 1;
        rec = recommend(runs, 2, &b);
        cr_assert_eq(rec.params.heap_bytes, 4 * GiB);
        assert_near((double)rec.params.overhead_bytes, 2.0 * GiB, 2, "overhead");
        assert_source(&rec, TUNER_P_HEAP, "hold");
        assert_source(&rec, TUNER_P_OVERHEAD, "hold");
        cr_assert(!rec.converged);

        tuner_rules_floor(runs, 2, &b, &floor);
        cr_assert_geq(floor.heap_bytes + floor.overhead_bytes, 6 * GiB,
                      "floor %" PRIu64 " + %" PRIu64, floor.heap_bytes, floor.overhead_bytes);

        /* K runs later the hold ends; the bumped size stays a usage sample of the window */
        runs[1] = runs[0];
        runs[TUNER_RULES_HOLD_RUNS] = runs[0];
        runs[TUNER_RULES_HOLD_RUNS].failure = TUNER_FAIL_OOM;
        runs[TUNER_RULES_HOLD_RUNS].params.overhead_bytes = 1 * GiB;
        runs[TUNER_RULES_HOLD_RUNS].oom_kills = 1;
        tuner_rules_floor(runs, TUNER_RULES_HOLD_RUNS + 1, &b, &floor);
        cr_assert_lt(floor.heap_bytes + floor.overhead_bytes, 6 * GiB);
        rec = recommend(runs, TUNER_RULES_HOLD_RUNS + 1, &b);
        assert_source(&rec, TUNER_P_HEAP, "unchanged"); /* p90 of 6 samples = the 6 GiB one */

        /* out of the window: lowered */
        b.history_runs = TUNER_RULES_HOLD_RUNS;
        rec = recommend(runs, TUNER_RULES_HOLD_RUNS + 1, &b);
        assert_source(&rec, TUNER_P_HEAP, "rule:heap");
}

/* the floor */

Test(rules, floor_from_successful_runs)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_params floor;

        tuner_rules_floor(NULL, 0, &b, &floor);
        cr_assert_eq(floor.heap_bytes, b.heap_min_bytes);
        cr_assert_eq(floor.overhead_bytes, b.overhead_min_bytes);

        runs[1].heap_peak_bytes = 3 * GiB;
        runs[1].memory_peak_bytes = 3 * GiB + 512 * MiB;
        low_memory(&runs[0]);
        tuner_rules_floor(runs, 2, &b, &floor);
        assert_near((double)floor.heap_bytes, 3.6 * GiB, 1, "heap floor");
        cr_assert_geq(floor.heap_bytes + floor.overhead_bytes, (uint64_t)(3.5 * GiB * 1.15));
        cr_assert_eq(floor.cores, 4);
        /* the p90, 1.2 x 4000m, under 0.9 of a limit of 2 x the request */
        cr_assert_eq(floor.millicores, 2667, "%" PRIu64, floor.millicores);
        cr_assert_eq(floor.shuffle_partitions, b.partitions_min);
        assert_near(floor.spill_fraction, b.spill_fraction_min, 0, "spill floor");

        /* never above what the run itself had: it succeeded with it */
        runs[1].heap_peak_bytes = 4 * GiB - 1;
        tuner_rules_floor(runs, 2, &b, &floor);
        cr_assert_eq(floor.heap_bytes, 4 * GiB);

        /* failed runs' peaks are no evidence of need (an OOM's is cut at the limit) */
        runs[1].failure = TUNER_FAIL_TASKS;
        tuner_rules_floor(runs, 2, &b, &floor);
        assert_near((double)floor.heap_bytes, 1.2 * GiB, 1, "heap floor");
}

Test(rules, never_below_a_successful_runs_need)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        low_memory(&runs[0]);
        runs[1].heap_peak_bytes = 3 * GiB;
        b.history_runs = 1; /* the percentile sees only the newest run; the floor sees both */
        rec = recommend(runs, 2, &b);
        assert_near((double)rec.params.heap_bytes, 3.6 * GiB, 1, "heap");
        assert_source(&rec, TUNER_P_HEAP, "rule:floor");
}

/* bounds */

Test(rules, bounds_clamp_with_reason)
{
        struct tuner_run run = base_run();
        struct tuner_bounds b = bounds();
        struct tuner_recommendation rec;

        b.heap_max_bytes = 3 * GiB;
        rec = recommend(&run, 1, &b);
        cr_assert_eq(rec.params.heap_bytes, 3 * GiB);
        assert_source(&rec, TUNER_P_HEAP, "bound");
        cr_assert(!rec.converged);

        b = bounds();
        b.memory_limit_max = 4 * GiB + 512 * MiB;
        rec = recommend(&run, 1, &b);
        cr_assert_eq(rec.params.heap_bytes + rec.params.overhead_bytes, b.memory_limit_max);
        /* what is above the floor goes first: the overhead keeps the non-heap need */
        cr_assert_geq((double)rec.params.overhead_bytes, 870.0 * MiB * 1.15);
        assert_source(&rec, TUNER_P_OVERHEAD, "bound");
        assert_source(&rec, TUNER_P_HEAP, "bound");

        /* a GC raise stops at the bound */
        b = bounds();
        b.heap_max_bytes = 4 * GiB + 100 * MiB;
        run.gc_seconds = 500;
        rec = recommend(&run, 1, &b);
        cr_assert_eq(rec.params.heap_bytes, 4 * GiB + 100 * MiB);
        assert_source(&rec, TUNER_P_HEAP, "bound");
}

/* a fixed pseudo-random stream: deterministic */
static uint64_t lcg(uint64_t *s)
{
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        return *s >> 11;
}

static double unit(uint64_t *s)
{
        return (double)(lcg(s) % 1000000) / 1000000.0;
}

Test(rules, bounds_never_exceeded_and_floor_kept)
{
        uint64_t seed = 42;

        for (int iter = 0; iter < 2000; iter++) {
                struct tuner_run runs[4];
                struct tuner_bounds b = bounds();
                struct tuner_recommendation rec, again;
                struct tuner_params floor;
                size_t n = 1 + lcg(&seed) % 4;

                b.heap_max_bytes = (1 + lcg(&seed) % 16) * GiB;
                b.overhead_max_bytes = (1 + lcg(&seed) % 4) * GiB;
                b.memory_limit_max = lcg(&seed) % 2 ? (2 + lcg(&seed) % 16) * GiB : 0;
                b.millicores_max = 1000 + lcg(&seed) % 8000;
                b.burst_ratio_max = unit(&seed);
                b.partitions_max = 50 + lcg(&seed) % 400;
                for (size_t i = 0; i < n; i++) {
                        struct tuner_run *r = &runs[i];

                        *r = base_run();
                        r->params.millicores = 100 + lcg(&seed) % 16000;
                        r->params.heap_bytes = (256 + lcg(&seed) % 20000) * MiB;
                        r->params.overhead_bytes = (384 + lcg(&seed) % 4000) * MiB;
                        r->params.burst_ratio = unit(&seed);
                        r->params.spill_fraction = lcg(&seed) % 3 ? 0.3 + unit(&seed) : NAN;
                        r->params.shuffle_partitions = (uint32_t)(lcg(&seed) % 1000);
                        r->cpu_util = unit(&seed) * 1.5;
                        r->cpu_peak_util = unit(&seed) * 3;
                        r->throttled_fraction = unit(&seed) * 0.2;
                        r->heap_peak_bytes = lcg(&seed) % 5
                                                 ? (uint64_t)(unit(&seed) * r->params.heap_bytes)
                                                 : TUNER_UNKNOWN;
                        r->memory_peak_bytes =
                            (uint64_t)(unit(&seed) * 1.2 *
                                       (r->params.heap_bytes + r->params.overhead_bytes));
                        r->mem_util = unit(&seed);
                        r->gc_seconds = unit(&seed) * 200;
                        r->high_events = lcg(&seed) % 4 == 0;
                        r->forced_spills = (int64_t)(lcg(&seed) % 50);
                        r->max_stage_tasks = (uint32_t)(lcg(&seed) % 2000);
                        r->max_stage_skew = unit(&seed) * 8;
                        r->failure =
                            lcg(&seed) % 4 ? TUNER_OK : (enum tuner_failure)(1 + lcg(&seed) % 5);
                        r->oom_kills = lcg(&seed) % 2;
                        r->oom_task_failures = (uint32_t)(lcg(&seed) % 2);
                }
                rec = recommend(runs, n, &b);
                again = recommend(runs, n, &b);
                cr_assert(params_same(&rec.params, &again.params) &&
                              rec.converged == again.converged,
                          "not deterministic");
                for (int i = 0; i < TUNER_P_COUNT; i++)
                        cr_assert(!strcmp(rec.reasons[i].text, again.reasons[i].text) &&
                                      !strcmp(rec.reasons[i].source, again.reasons[i].source),
                                  "reasons not deterministic");

                const struct tuner_params *p = &rec.params;
                cr_assert(p->millicores >= b.millicores_min && p->millicores <= b.millicores_max,
                          "iter %d millicores %" PRIu64, iter, p->millicores);
                cr_assert(p->heap_bytes >= b.heap_min_bytes && p->heap_bytes <= b.heap_max_bytes,
                          "iter %d heap %" PRIu64, iter, p->heap_bytes);
                cr_assert(p->overhead_bytes <= b.overhead_max_bytes, "iter %d", iter);
                cr_assert(b.memory_limit_max == 0 ||
                              p->heap_bytes + p->overhead_bytes <= b.memory_limit_max,
                          "iter %d limit %" PRIu64 " > %" PRIu64, iter,
                          p->heap_bytes + p->overhead_bytes, b.memory_limit_max);
                cr_assert(p->burst_ratio >= 0 && p->burst_ratio <= b.burst_ratio_max,
                          "iter %d burst %f", iter, p->burst_ratio);
                cr_assert(isnan(p->spill_fraction) || (p->spill_fraction >= b.spill_fraction_min &&
                                                       p->spill_fraction <= b.spill_fraction_max),
                          "iter %d spill %f", iter, p->spill_fraction);
                cr_assert(p->shuffle_partitions == 0 || p->shuffle_partitions <= b.partitions_max,
                          "iter %d partitions %" PRIu32, iter, p->shuffle_partitions);
                for (int i = 0; i < TUNER_P_COUNT; i++)
                        cr_assert(rec.reasons[i].source[0] && rec.reasons[i].text[0],
                                  "iter %d param %d without a reason", iter, i);

                /* the floor holds wherever the bounds leave room for it (a rollback's too:
                   its heap is held at the partitions the floor raises the run to) */
                tuner_rules_floor(runs, n, &b, &floor);
                cr_assert(floor.shuffle_partitions <= b.partitions_min ||
                              tuner_partitions(p) >= floor.shuffle_partitions,
                          "iter %d partitions %" PRIu32 " under the floor %" PRIu32, iter,
                          p->shuffle_partitions, floor.shuffle_partitions);
                cr_assert_geq(p->heap_bytes, floor.heap_bytes, "iter %d heap under the floor",
                              iter);
                /* the overhead's floor is taken against the heap chosen: the limit holds */
                cr_assert_geq(p->heap_bytes + p->overhead_bytes,
                              floor.heap_bytes + floor.overhead_bytes,
                              "iter %d heap + overhead under the floor", iter);
        }
}

Test(rules, small_changes_inside_the_dead_band_converge)
{
        struct tuner_run run = base_run();
        struct tuner_recommendation rec;

        /* non-heap 856 MiB x 1.15 leaves 0.039 of the overhead unused: under 0.05 */
        run.offheap_peak_bytes = 856 * MiB;
        rec = recommend1(&run);
        cr_assert(rec.converged, "burst %f (%s)", rec.params.burst_ratio,
                  rec.reasons[TUNER_P_BURST_RATIO].text);
        assert_source(&rec, TUNER_P_BURST_RATIO, "unchanged");

        /* non-heap 816 MiB x 1.15 leaves 0.084: beyond the dead band */
        run.offheap_peak_bytes = 816 * MiB;
        rec = recommend1(&run);
        cr_assert(!rec.converged);
        assert_near(rec.params.burst_ratio, 1 - 816.0 * 1.15 / 1024, 1e-6, "burst");
}

/*
 * A toy job run through the rules for 12 iterations from an oversized start: 1.5 cores on
 * average and 2.4 at peak per executor, 1.5 GiB of live heap that the JVM pads with half of
 * the spare heap (a collector uses the room it is given), 600 MiB outside the heap. A JVM
 * OOM below the live heap, a kernel OOM above the limit.
 */
static struct tuner_run toy_run(const struct tuner_params *p, int i)
{
        struct tuner_run r = base_run();
        double request = p->millicores / 1000.0, live = 1.5 * GiB, heap_peak, peak;

        snprintf(r.app_id, sizeof(r.app_id), "app-%d", i);
        r.params = *p;
        r.cpu_util = 1.5 / request;
        r.cpu_peak_util = 2.4 / request;
        r.throttled_fraction = 2.4 > 2 * request ? (2.4 - 2 * request) / 2.4 : 0;
        r.duration_seconds = 100 * fmax(1, 2.4 / (2 * request));
        heap_peak = fmin((double)p->heap_bytes, live + 0.5 * fmax(0, p->heap_bytes - live));
        peak = heap_peak + 600.0 * MiB;
        r.heap_peak_bytes = (uint64_t)heap_peak;
        r.memory_peak_bytes = (uint64_t)fmin(peak, (double)(p->heap_bytes + p->overhead_bytes));
        r.mem_util =
            r.memory_peak_bytes / (p->heap_bytes + p->overhead_bytes * (1 - p->burst_ratio));
        r.max_stage_tasks = 200;
        if (p->heap_bytes < live) {
                r.failure = TUNER_FAIL_OOM;
                r.oom_task_failures = 1;
        } else if (peak > p->heap_bytes + p->overhead_bytes) {
                r.failure = TUNER_FAIL_OOM;
                r.oom_kills = 1;
        }
        return r;
}

Test(rules, toy_job_converges_from_an_oversized_start)
{
        struct tuner_run history[12];
        struct tuner_bounds b = bounds();
        struct tuner_params p = base_run().params;
        struct tuner_recommendation rec = {0};
        size_t n = 0;
        int converged_at = -1;

        p.heap_bytes = 16 * GiB;
        p.overhead_bytes = 4 * GiB;
        for (int i = 0; i < 12; i++) {
                memmove(history + 1, history, n * sizeof(history[0]));
                history[0] = toy_run(&p, i);
                n++;
                cr_assert_eq(history[0].failure, TUNER_OK,
                             "run %d failed: heap %" PRIu64 " overhead %" PRIu64, i, p.heap_bytes,
                             p.overhead_bytes);
                rec = recommend(history, n, &b);
                if (rec.converged && converged_at < 0)
                        converged_at = i;
                cr_assert(!(converged_at >= 0 && !rec.converged), "run %d: left convergence", i);
                p = rec.params;
        }
        cr_assert(converged_at >= 0 && converged_at < 10, "converged at run %d", converged_at);
        cr_assert_geq(history[0].cpu_util, 0.8);
        cr_assert_geq(history[0].mem_util, 0.6);
        cr_assert_leq(history[0].duration_seconds, 1.1 * history[n - 1].duration_seconds);
        cr_assert_lt(p.heap_bytes, 8 * GiB, "heap %" PRIu64, p.heap_bytes);
}

Test(rules, peaks_of_larger_runs_are_no_floor)
{
        struct tuner_run runs[2] = {base_run(), base_run()};
        struct tuner_bounds b = bounds();
        struct tuner_params floor;

        /* an older run at 16 GiB whose JVM filled 8 GiB: not a need at 4 GiB */
        runs[1].params.heap_bytes = 16 * GiB;
        runs[1].params.overhead_bytes = 4 * GiB;
        runs[1].heap_peak_bytes = 8 * GiB;
        runs[1].memory_peak_bytes = 9 * GiB;
        tuner_rules_floor(runs, 2, &b, &floor);
        assert_near((double)floor.heap_bytes, 2816.0 * MiB * 1.2, 1, "heap floor");
        cr_assert_lt(floor.heap_bytes + floor.overhead_bytes, 5 * GiB);

        /* an older run at a smaller heap is evidence */
        low_memory(&runs[0]);
        runs[1].params.heap_bytes = 3 * GiB;
        runs[1].params.overhead_bytes = 1 * GiB;
        runs[1].heap_peak_bytes = 2900 * MiB;
        runs[1].memory_peak_bytes = 3800 * MiB;
        tuner_rules_floor(runs, 2, &b, &floor);
        cr_assert_eq(floor.heap_bytes, 3 * GiB);
        cr_assert_geq(floor.heap_bytes + floor.overhead_bytes, 4 * GiB);
}

/* Reports and event logs are written by the job's user: any figure may be absurd. */
static double odd_double(uint64_t *s)
{
        static const double odd[] = {NAN, INFINITY, -INFINITY, -1, 0, 1e300, 5e-324, 0.5};

        return lcg(s) % 3 ? unit(s) * 4 : odd[lcg(s) % 8];
}

static uint64_t odd_u64(uint64_t *s)
{
        static const uint64_t odd[] = {0, 1, TUNER_UNKNOWN, UINT64_MAX - 1, UINT64_C(1) << 62};

        return lcg(s) % 3 ? lcg(s) % (64 * GiB) : odd[lcg(s) % 5];
}

Test(rules, absurd_figures_stay_within_bounds)
{
        uint64_t seed = 7;

        for (int iter = 0; iter < 3000; iter++) {
                struct tuner_run runs[3];
                struct tuner_bounds b = bounds();
                struct tuner_recommendation rec;
                size_t n = 1 + lcg(&seed) % 3;

                b.memory_limit_max = lcg(&seed) % 2 ? 8 * GiB : 0;
                for (size_t i = 0; i < n; i++) {
                        struct tuner_run *r = &runs[i];

                        memset(r, 0, sizeof(*r));
                        r->params.cores = (uint32_t)(lcg(&seed) % 3 ? lcg(&seed) % 64 : UINT32_MAX);
                        r->params.millicores = odd_u64(&seed);
                        r->params.heap_bytes = odd_u64(&seed);
                        r->params.overhead_bytes = odd_u64(&seed);
                        r->params.burst_ratio = odd_double(&seed);
                        r->params.spill_fraction = odd_double(&seed);
                        r->params.shuffle_partitions = (uint32_t)lcg(&seed);
                        r->duration_seconds = odd_double(&seed);
                        r->executors = (uint32_t)(lcg(&seed) % 2 ? lcg(&seed) % 100 : UINT32_MAX);
                        r->cpu_util = odd_double(&seed);
                        r->mem_util = odd_double(&seed);
                        r->cpu_peak_util = odd_double(&seed);
                        r->throttled_fraction = odd_double(&seed);
                        r->runq_wait_per_cpu = odd_double(&seed);
                        r->memory_peak_bytes = odd_u64(&seed);
                        r->heap_peak_bytes = odd_u64(&seed);
                        r->high_events = odd_u64(&seed);
                        r->oom_kills = odd_u64(&seed);
                        r->forced_spills = lcg(&seed) % 2 ? -1 : (int64_t)(lcg(&seed) % 1000);
                        r->has_eventlog = lcg(&seed) % 2;
                        r->tasks = (uint32_t)lcg(&seed);
                        r->oom_task_failures = (uint32_t)(lcg(&seed) % 2);
                        r->max_stage_tasks = (uint32_t)lcg(&seed);
                        r->max_stage_skew = odd_double(&seed);
                        r->memory_spill_bytes = odd_u64(&seed);
                        r->gc_seconds = odd_double(&seed) * 1000;
                        r->executor_run_seconds = odd_double(&seed) * 1000;
                        r->failure = (enum tuner_failure)(lcg(&seed) % 6);
                }
                rec = recommend(runs, n, &b);

                const struct tuner_params *p = &rec.params;
                cr_assert(p->millicores >= b.millicores_min && p->millicores <= b.millicores_max,
                          "iter %d millicores %" PRIu64, iter, p->millicores);
                cr_assert(p->heap_bytes >= b.heap_min_bytes && p->heap_bytes <= b.heap_max_bytes,
                          "iter %d heap %" PRIu64, iter, p->heap_bytes);
                cr_assert(p->overhead_bytes <= b.overhead_max_bytes, "iter %d", iter);
                cr_assert(b.memory_limit_max == 0 ||
                              p->heap_bytes + p->overhead_bytes <= b.memory_limit_max,
                          "iter %d", iter);
                cr_assert(p->burst_ratio >= 0 && p->burst_ratio <= b.burst_ratio_max,
                          "iter %d burst %f (%s)", iter, p->burst_ratio,
                          rec.reasons[TUNER_P_BURST_RATIO].text);
                cr_assert(isnan(p->spill_fraction) || (p->spill_fraction >= b.spill_fraction_min &&
                                                       p->spill_fraction <= b.spill_fraction_max),
                          "iter %d spill %f", iter, p->spill_fraction);
                cr_assert(p->shuffle_partitions == 0 ||
                              (p->shuffle_partitions >= b.partitions_min &&
                               p->shuffle_partitions <= b.partitions_max),
                          "iter %d partitions %" PRIu32, iter, p->shuffle_partitions);
        }
}

/* a heap that ran out stays a floor while its run is in the window, after the hold too */
Test(rules, a_size_that_ran_out_stays_a_floor)
{
        struct tuner_run runs[8];
        struct tuner_bounds b = bounds();
        struct tuner_params floor;

        for (size_t i = 0; i < 8; i++) {
                runs[i] = base_run();
                low_memory(&runs[i]);
        }
        /* the oldest run (beyond the 5-run hold) failed with Java's OutOfMemoryError at 2 GiB */
        runs[7].params.heap_bytes = 2 * GiB;
        runs[7].failure = TUNER_FAIL_OOM;
        runs[7].oom_task_failures = 4;
        tuner_rules_floor(runs, 8, &b, &floor);
        cr_assert_geq(floor.heap_bytes, (uint64_t)(2.0 * GiB * 1.05), "heap floor %" PRIu64,
                      floor.heap_bytes);

        /* out of the window, it no longer counts */
        b.history_runs = 7;
        tuner_rules_floor(runs, 7, &b, &floor);
        cr_assert_lt(floor.heap_bytes, 2 * GiB, "heap floor %" PRIu64, floor.heap_bytes);
}

/* stage 2's floor: the measured non-heap peak without the margin, and no share of the process
   peak pushed onto the overhead (the usage model checks heap + overhead against it) */
Test(rules, floor_measured_has_no_margin)
{
        struct tuner_run run = base_run();
        struct tuner_bounds b = bounds();
        struct tuner_params floor, measured;

        run.params.overhead_bytes = 2 * GiB;
        run.memory_peak_bytes = 3 * GiB + 512 * MiB;
        run.heap_peak_bytes = 2 * GiB + 512 * MiB;
        run.offheap_peak_bytes = 1 * GiB;
        tuner_rules_floor(&run, 1, &b, &floor);
        tuner_rules_floor_measured(&run, 1, &b, &measured);
        cr_assert_eq(measured.heap_bytes, floor.heap_bytes, "heap %" PRIu64 " vs %" PRIu64,
                     measured.heap_bytes, floor.heap_bytes);
        /* non-heap peak 1 GiB: the rules keep 1.15 GiB, stage 2 the 1 GiB measured */
        assert_near((double)floor.overhead_bytes, 1.15 * GiB, 1, "overhead floor");
        cr_assert_eq(measured.overhead_bytes, 1 * GiB, "overhead %" PRIu64,
                     measured.overhead_bytes);

        /* a small heap peak: the rules' floor gives the overhead the process peak's share */
        run.heap_peak_bytes = 256 * MiB;
        run.memory_peak_bytes = 3 * GiB;
        tuner_rules_floor(&run, 1, &b, &floor);
        tuner_rules_floor_measured(&run, 1, &b, &measured);
        cr_assert_gt(floor.overhead_bytes, measured.overhead_bytes);
        /* the non-heap is the JVM's, not the process peak - the sampled heap peak */
        cr_assert_eq(measured.overhead_bytes, 1 * GiB, "non-heap peak %" PRIu64,
                     measured.overhead_bytes);

        /* an OOM's bump and hold stay */
        run.failure = TUNER_FAIL_OOM;
        run.oom_task_failures = 1;
        tuner_rules_floor_measured(&run, 1, &b, &measured);
        cr_assert_geq(measured.heap_bytes, (uint64_t)(4.8 * GiB), "heap %" PRIu64,
                      measured.heap_bytes);
}
