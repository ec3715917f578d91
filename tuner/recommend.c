/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two stages together (docs/tuner.md): the rules first; a job the rules are done with
 * (converged, settled on a target the host cannot give exactly, or 5 successful runs) goes
 * to safe Bayesian optimisation, and stays there, within the rules' measured floor (their
 * back-off and hold after a failure). Every value ends clamped into the admin's bounds.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bo.h"
#include "rules.h"
#include "tuner.h"

/* stage 2 wants this many successful runs with an objective before it models anything */
#define BO_MIN_RUNS 3

int tuner_recommend(struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                    struct tuner_recommendation *ret, struct util_error *err)
{
        return tuner_recommend_stage(runs, n, b, TUNER_STAGE_NONE, ret, err);
}

static size_t good_runs(const struct tuner_run *runs, size_t n)
{
        size_t good = 0;

        for (size_t i = 0; i < n; i++)
                good += runs[i].failure == TUNER_OK && isfinite(runs[i].objective);
        return good;
}

/* Whether spark.sql.shuffle.partitions matters to the job: a run set it, or shuffled. Left
   unset it is Spark's 200, which stage 2 tunes like any other value (issue 24: from runs that
   left it unset it stayed fixed, at 200 for ever). */
static bool sql_shuffles(const struct tuner_run *runs, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (runs[i].params.shuffle_partitions ||
                    (runs[i].shuffle_write_bytes && runs[i].shuffle_write_bytes != TUNER_UNKNOWN))
                        return true;
        return false;
}

static bool holding(const struct tuner_recommendation *rec)
{
        for (int i = 0; i < TUNER_P_COUNT; i++)
                if (strcmp(rec->reasons[i].source, "hold") == 0)
                        return true;
        return false;
}

/*
 * Whether the rules are done with the job (runs newest first, now = the rules' answer for
 * them): they converged (nothing to change), or they are settled: the newest two runs
 * succeeded, the newest moved (by more than the dead band) and the rules asked the same
 * (within their dead band) after each, without a hold. A host gives the nearest setting it has (a
 * grid, a node size, Spark's rounding of memory to MiB): a rule whose target lies between two of
 * them never converges, it asks for the target again. Or the newest HANDOVER_RUNS runs all
 * succeeded: the rules had their turns, and stage 2 learns from every one of them.
 */
#define HANDOVER_RUNS 5
_Static_assert(HANDOVER_RUNS >= TUNER_RULES_HOLD_RUNS,
               "a memory hold must end before the hand-over");
bool tuner_recommend_rules_done(const struct tuner_run *runs, size_t n,
                                const struct tuner_bounds *b,
                                const struct tuner_recommendation *now)
{
        struct tuner_recommendation older;
        size_t ok = 0;

        if (now->converged)
                return true;
        /* before the hold: a run-time hold (a run slower than the target) may last for ever
           on a noisy host, and a memory failure's hold cannot outlast 5 good runs
           (TUNER_RULES_HOLD_RUNS) */
        while (ok < n && ok < HANDOVER_RUNS && runs[ok].failure == TUNER_OK)
                ok++;
        if (ok >= HANDOVER_RUNS)
                return true;
        if (n < 2 || runs[0].failure != TUNER_OK || holding(now))
                return false;
        /* the newest run moved (the host applied something), and the rules still ask the same */
        if (runs[1].failure != TUNER_OK || tuner_params_close(&runs[0].params, &runs[1].params) ||
            tuner_rules_recommend(runs + 1, n - 1, b, &older) < 0 || holding(&older))
                return false;
        return tuner_params_close(&now->params, &older.params);
}

/*
 * Whether the job was handed to stage 2 before its newest run: the rules were done with an
 * older part of its history (runs[k..n) for some k >= 1) with enough successful runs.
 * Without it the stages would take turns: stage 2 moves a value past the rules' margin (a
 * higher burst ratio, say), the rules move it back, stage 2 again. Stateless: the history
 * says it, nothing is recorded.
 */
static bool handed_over(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b)
{
        for (size_t k = 1; k < n; k++) {
                struct tuner_recommendation older;

                if (good_runs(runs + k, n - k) < BO_MIN_RUNS)
                        break;
                if (tuner_rules_recommend(runs + k, n - k, b, &older) == 0 &&
                    tuner_recommend_rules_done(runs + k, n - k, b, &older))
                        return true;
        }
        return false;
}

int tuner_recommend_stage(struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                          enum tuner_stage_used stage, struct tuner_recommendation *ret,
                          struct util_error *err)
{
        struct tuner_recommendation rules, bo;
        struct tuner_params floor;
        size_t good = 0;
        int r;

        if (n == 0)
                return util_error_set(err, ENODATA, "no runs in the history");
        r = tuner_rules_recommend(runs, n, b, &rules);
        if (r < 0)
                return util_error_set(err, -r, "the rules cannot recommend: %s", strerror(-r));
        good = good_runs(runs, n);
        /* stage 2 once the rules are done, now or before; it keeps the job after a failure
         * too: the failure is in its models (the usage models see a peak at its limit), and
         * the floor holds the rules' back-off (the OOM bump, held for 5 runs) */
        if (stage == TUNER_STAGE_BO ||
            (stage == TUNER_STAGE_NONE && good >= BO_MIN_RUNS &&
             (tuner_recommend_rules_done(runs, n, b, &rules) || handed_over(runs, n, b)))) {
                struct util_error bo_err = {0};

                /* what the job never set stays unset: no partitions for a job without SQL
                 * shuffles, no agent fraction where the policy's applies */
                struct tuner_bo_recommend_options opt = {.fixed = 1u << TUNER_P_CORES};

                if (!sql_shuffles(runs, n))
                        opt.fixed |= 1u << TUNER_P_PARTITIONS;
                if (!isfinite(runs[0].params.spill_fraction))
                        opt.fixed |= 1u << TUNER_P_SPILL_FRACTION;
                /* the floor without the rules' margin: stage 2's usage models keep their
                   own, from the measured variation (docs/tuner-bo.md) */
                tuner_rules_floor_measured(runs, n, b, &floor);
                r = tuner_bo_recommend_with(runs, n, b, &floor, &opt, &bo, &bo_err);
                if (r == 0) {
                        tuner_clamp(&bo.params, bo.reasons, b);
                        bo.converged = true;
                        *ret = bo;
                        return 0;
                }
                if (r != -ENODATA || stage == TUNER_STAGE_BO)
                        return util_error_set(err, -r, "stage 2: %s", bo_err.text);
        }
        tuner_clamp(&rules.params, rules.reasons, b);
        *ret = rules;
        return 0;
}
