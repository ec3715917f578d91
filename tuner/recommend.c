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
        for (size_t i = 0; i < n; i++)
                good += runs[i].failure == TUNER_OK && isfinite(runs[i].objective);
        if (stage == TUNER_STAGE_BO ||
            (stage == TUNER_STAGE_NONE && rules.converged && good >= BO_MIN_RUNS)) {
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
