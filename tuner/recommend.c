/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two stages together (docs/tuner.md): the rules first; a job whose rules have converged
 * goes to safe Bayesian optimisation, which may not go below the rules' safety floor. Every
 * value ends clamped into the admin's bounds.
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
                    struct tuner_recommendation *ret, struct shim_error *err)
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

/*
 * Whether the job was handed to stage 2 before its newest run: the rules had converged on
 * an older part of its history (runs[k..n) for some k >= 1) with enough successful runs.
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
                if (tuner_rules_recommend(runs + k, n - k, b, &older) == 0 && older.converged)
                        return true;
        }
        return false;
}

int tuner_recommend_stage(struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                          enum tuner_stage_used stage, struct tuner_recommendation *ret,
                          struct shim_error *err)
{
        struct tuner_recommendation rules, bo;
        struct tuner_params floor;
        size_t good = 0;
        int r;

        if (n == 0)
                return shim_error_set(err, ENODATA, "no runs in the history");
        r = tuner_rules_recommend(runs, n, b, &rules);
        if (r < 0)
                return shim_error_set(err, -r, "the rules cannot recommend: %s", strerror(-r));
        good = good_runs(runs, n);
        /* stage 2 once the rules have converged, now or before; a failed newest run goes back
         * to the rules (their back-off and hold), and stage 2 never goes below their floor */
        if (stage == TUNER_STAGE_BO ||
            (stage == TUNER_STAGE_NONE && good >= BO_MIN_RUNS &&
             (rules.converged || (runs[0].failure == TUNER_OK && handed_over(runs, n, b))))) {
                struct shim_error bo_err = {0};

                /* what the job never set stays unset: no partitions for a job without SQL
                 * shuffles, no agent fraction where the policy's applies */
                struct tuner_bo_recommend_options opt = {.fixed = 1u << TUNER_P_CORES};

                if (!runs[0].params.shuffle_partitions)
                        opt.fixed |= 1u << TUNER_P_PARTITIONS;
                if (!isfinite(runs[0].params.spill_fraction))
                        opt.fixed |= 1u << TUNER_P_SPILL_FRACTION;
                tuner_rules_floor(runs, n, b, &floor);
                r = tuner_bo_recommend_with(runs, n, b, &floor, &opt, &bo, &bo_err);
                if (r == 0) {
                        tuner_clamp(&bo.params, bo.reasons, b);
                        bo.converged = true;
                        *ret = bo;
                        return 0;
                }
                if (r != -ENODATA || stage == TUNER_STAGE_BO)
                        return shim_error_set(err, -r, "stage 2: %s", bo_err.text);
        }
        tuner_clamp(&rules.params, rules.reasons, b);
        *ret = rules;
        return 0;
}
