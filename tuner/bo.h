/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage 2 of the tuner: safe Bayesian optimisation (docs/tuner-bo.md).
 *
 * A Gaussian process (gp.h) models log(objective) of the successful runs over the tuned
 * parameters mapped to the unit cube; a second GP on +-1 labels models failure
 * (P(failure) = Phi(mean / sd), prior mean 0: where there is no evidence, P = 0.5).
 * Usage models (optional; tuner_bo_recommend() always uses them): GPs of what each run
 * measured (CPU and memory, average and peak) over the workload dimensions; a candidate is
 * eligible only if the upper confidence bound of each usage stays within that candidate's
 * limit, and the objective GP models what the usages' medians leave unexplained.
 * Expected Improvement is maximised by a seeded genetic algorithm over the trust region
 * around the best known safe point, raised to the caller's floor; only candidates with
 * P(failure) < the bound are eligible. Deterministic given the seed (same build, same
 * BLAS). Never logs; memory O(n^2), time O(n^3) for n points of history.
 *
 * bo.c holds the acquisition and tuner_bo_suggest() over points in the unit cube; bo-runs.c
 * maps a job's runs into the cube and back (tuner_bo_recommend()); the genetic algorithm is
 * ga.h, its random stream rng.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ga.h"
#include "shim-common.h"
#include "tuner.h"

#define TUNER_BO_DIMS_MAX   6 /* millicores, heap, overhead, burst, spill, partitions */
#define TUNER_BO_POINTS_MAX 256
#define TUNER_BO_USAGES_MAX 6 /* usage measures per point (the usage models) */

/* ---- acquisition ---- */

/*
 * Expected Improvement for minimisation over the incumbent best:
 *   EI = (best - mean - xi) Phi(z) + sd phi(z),  z = (best - mean - xi) / sd;
 *   sd 0: max(best - mean - xi, 0).
 */
double tuner_bo_expected_improvement(double mean, double sd, double best, double xi);
double tuner_bo_normal_cdf(double z); /* 0.5 erfc(-z / sqrt 2) */
double tuner_bo_normal_pdf(double z);

/* ---- over raw points (the offline benchmark) ---- */

struct tuner_bo_point {
        double x[TUNER_BO_DIMS_MAX]; /* in [0,1] */
        /* the value minimised (log objective); ignored if failed; NAN for a success without a
           measured objective (safe evidence for the failure model only) */
        double y;
        bool failed;
        /* failed for lack of memory (OOM): with options.monotone, a candidate with no more in
           every monotone dimension than this point is taken to fail too */
        bool memory_failure;
        /* with memory_failure: bits (1 << dimension) of the monotone ones it rules out in,
           0 = all of options.monotone (a Java heap OOM rules out less heap at no more
           partitions whatever the overhead: the overhead is not the heap) */
        unsigned monotone_in;
        /* what the point measured of each usage the options model (opt->usages of them, > 0;
           NAN unknown), e.g. its memory peak: the usage models' data */
        double usage[TUNER_BO_USAGES_MAX];
        /* the point failed because a usage passed its limit (a memory peak at memory.max, a
           p90 CPU at the CPU limit): the usage models explain it, the failure model and the
           monotone rule leave it to them */
        bool usage_failure;
};

struct tuner_bo_options {
        uint64_t seed;
        /*
         * true: the failure model, the trust region and the bound; false ("BO without the
         * safety model"): EI over the whole box above the floor, failures ignored unless
         * failure_penalty.
         */
        bool safety;
        double failure_bound; /* eligible only with P(failure) < this; default 0.1 */
        /* failed points also enter the objective model at max(y) + failure_penalty; 0 = not */
        double failure_penalty;
        double xi;                       /* EI's margin, in units of y; default 0 */
        double floor[TUNER_BO_DIMS_MAX]; /* lowest allowed x per dimension; default 0 */
        /* trust region (L-infinity half-width around the incumbent), see docs/tuner-bo.md,
           in steps of 0.1 (below) */
        double trust_initial;        /* with 2 safe points; default 0.1 */
        double trust_growth;         /* x per further safe point; default 1.15 */
        double trust_min, trust_max; /* default 0.05, 0.5 */
        enum tuner_bo_kernel {
                TUNER_BO_KERNEL_AUTO = 0, /* ARD once there are >= 2 dims + 2 safe points */
                TUNER_BO_KERNEL_SHARED,
                TUNER_BO_KERNEL_ARD,
        } kernel;
        struct tuner_ga_options ga;
        /* bits (1 << dimension) in which more never causes an OOM (memory sizes): candidates
           dominated by a memory_failure point there are ineligible; 0 = none */
        unsigned monotone;
        /* ... and those with at most this much more (unit cube); default 0.02, which is 12 %
           of heap between 256 MiB and 64 GiB on the log scale */
        double monotone_margin;
        /* extra feasibility (e.g. heap + overhead <= the limit); NULL = none */
        bool (*feasible)(const double *x, void *userdata);
        void *feasible_userdata;

        /*
         * Usage models (docs/tuner-bo.md, "The usage models"): usages > 0 measures per point
         * (struct tuner_bo_point.usage), each a GP of log(usage) over the workload dimensions
         * (below). usage_limit(j, x) is what candidate x allows of usage j (NAN or INFINITY:
         * no limit, <= 0: none allowed); a candidate is eligible only if exp(mean + usage_beta x
         * sd) of every limited usage stays at or below its limit, sd including the noise, at least
         * usage_noise. objective_prior(x, usage_median): the log objective that candidate x
         * would have with the usages' medians, the objective GP's prior mean (NULL: none).
         */
        unsigned usages;
        /*
         * bits (1 << dimension) of the dimensions that change what the job does (heap,
         * partitions, ...), as against limits on it (millicores, overhead, burst ratio). With
         * usage models, the usage models, the failure model and the trust region work in
         * these only: along a limit, safety is the usage model's. 0 = every dimension.
         */
        unsigned workload;
        double usage_beta;  /* default 2 */
        double usage_noise; /* sd of log usage between identical runs, at least; default 0.05:
                               replicated points (the same x) raise it to what they measured */
        /* bits (1 << j) of the usages bounded by their median, not by the upper confidence
           bound (run time: "the median run within 1.1 x the fastest"); 0 = none */
        unsigned usage_median;
        /* bits (1 << j) of the usages whose usage_limit is a factor of the lowest modelled
           median among the points that did not fail, not a value (run time: 1.1 x the
           fastest, as the model sees the fastest, not its luckiest run); a point whose own
           modelled median passes that bound is never the incumbent while one within exists */
        unsigned usage_relative;
        /* bits (1 << j) of the usages objective_prior reads (the others are NAN to it, and
           no candidate pays for their prediction there); 0 = all */
        unsigned usage_in_objective;
        double (*usage_limit)(unsigned j, const double *x, void *userdata);
        double (*objective_prior)(const double *x, const double *usage_median, void *userdata);
        void *usage_userdata;
        /* per dimension (unit cube): a candidate's coordinate within this of the incumbent's
           is the incumbent's (a change too small to be worth a run); 0 = none */
        double dead_band[TUNER_BO_DIMS_MAX];
        /*
         * per dimension (unit cube): the physical step the cube constants stand for, 0 = 0.1.
         * The trust region's half-width, the failure and usage models' prior lengthscales
         * and the monotone margin are given for a step of 0.1 and scale with it, so that a
         * caller who maps a factor 1.6 of heap to 0.05 of the cube under wide bounds and to
         * 0.3 under narrow ones gets the same search in bytes (issue 24).
         */
        double step[TUNER_BO_DIMS_MAX];
};

void tuner_bo_options_default(struct tuner_bo_options *opt);

struct tuner_bo_prediction {
        double mean, sd;            /* of y at the suggestion (GP posterior of f) */
        double ei;                  /* 0 when fallback */
        double failure_probability; /* NAN without the safety model */
        double best_y;              /* the incumbent's y */
        double trust_radius;        /* NAN without the safety model */
        size_t incumbent;           /* index into pts of the best safe point */
        unsigned safe_points, failed_points;
        /* the incumbent (raised to the floor) is returned: no eligible candidate, or (converged)
           eligible ones but none with an EI above 1e-9 */
        bool fallback, converged;
        /* with usage models: the tightest usage UCB / its limit at the suggestion; NAN */
        double usage_headroom;
        /* with usage models: each usage's UCB at the suggestion (NAN: no model) */
        double usage_ucb[TUNER_BO_USAGES_MAX];
};

/*
 * Suggest the next point from n points (n <= TUNER_BO_POINTS_MAX; more is -E2BIG) of dims
 * (1..TUNER_BO_DIMS_MAX) dimensions. Needs >= 2 points that did not fail and have a
 * finite y (-ENODATA).
 * opt NULL: tuner_bo_options_default(). Writes dims values to ret_x and, if not NULL,
 * ret_pred. -EINVAL on a bad argument, -ENOMEM, -EDOM (a GP could not be fitted).
 */
int tuner_bo_suggest(const struct tuner_bo_point *pts, size_t n, unsigned dims,
                     const struct tuner_bo_options *opt, double *ret_x,
                     struct tuner_bo_prediction *ret_pred, struct util_error *err);

/* ---- over runs (sparkshim tune) ---- */

/*
 * The tuned dimensions, in order (enum tuner_param_index names them): millicores as
 * millicores / (cores x 1000), linear; heap and overhead, log scale; burst_ratio and
 * spill_fraction, linear; shuffle_partitions, log scale, integer (0 = Spark's 200).
 * Ranges from struct tuner_bounds (docs/tuner-bo.md).
 */
struct tuner_bo_recommend_options {
        /* bits (1 << TUNER_P_x) of dimensions to leave out when the history never varies */
        unsigned fixed;
        /* NULL: tuner_bo_options_default() with the bounds' seed and failure_bound. With
           usages 0 (the default) the runs' usage models are used (average and p90 CPU, memory,
           memory peak; docs/tuner-bo.md); the rules' dead band always */
        const struct tuner_bo_options *bo;
};

/*
 * Recommend the next run's settings from a job's runs (newest first; n clipped to
 * TUNER_BO_POINTS_MAX). floor (NULL = none): no value below it for millicores, heap and
 * overhead (0 = none), burst_ratio and spill_fraction (NAN = none), partitions (0 = none);
 * b's bounds win over the floor. Cores are the newest run's. Needs >= 2 successful runs with
 * a finite objective (-ENODATA). Fills ret (stage TUNER_STAGE_BO, the predicted objective,
 * the failure probability, a reason per value).
 */
int tuner_bo_recommend(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                       const struct tuner_params *floor, struct tuner_recommendation *ret,
                       struct util_error *err);
int tuner_bo_recommend_with(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                            const struct tuner_params *floor,
                            const struct tuner_bo_recommend_options *opt,
                            struct tuner_recommendation *ret, struct util_error *err);
