/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A seeded genetic algorithm over a box (ga.c): tournament selection, BLX-alpha crossover,
 * Gaussian mutation, elitism and immigrants. Stage 2 (bo.h) maximises Expected Improvement
 * with it. Deterministic given the random stream (rng.h) and a deterministic fitness; no
 * globals, never logs.
 */
#pragma once

#include <stddef.h>

#include "rng.h"

#define TUNER_GA_DIMS_MAX 6 /* as TUNER_BO_DIMS_MAX: the tuned parameters */

struct tuner_ga_options {
        unsigned population;   /* default 48 */
        unsigned generations;  /* default 40 */
        unsigned tournament;   /* default 3 */
        unsigned elite;        /* best individuals copied unchanged; default 2 */
        unsigned immigrants;   /* uniform draws replacing the worst each generation; default 6 */
        double crossover_rate; /* default 0.9 */
        double blend_alpha;    /* BLX-alpha; default 0.5 */
        double mutation_rate;  /* per gene; 0 = 1 / dims */
        double mutation_sd;    /* x the box's width; default 0.1 */
};

void tuner_ga_options_default(struct tuner_ga_options *opt);

/* What to maximise, and where; the caller owns every pointer. */
struct tuner_ga_problem {
        /* deterministic; may return -INFINITY (NAN counts as -INFINITY) */
        double (*fitness)(const double *x, void *userdata);
        void *userdata;
        unsigned dims;         /* 1..TUNER_GA_DIMS_MAX */
        const double *lo, *hi; /* the box: dims values each, lo[k] <= hi[k], finite */
        /* the first generation's first n_seeds individuals (rows of dims values, clamped into
           the box); the rest are uniform draws. NULL with n_seeds 0 */
        const double *seeds;
        size_t n_seeds;
};

/*
 * Maximise problem->fitness over the box. opt NULL: tuner_ga_options_default(). Returns 0
 * with the best point in ret_x (dims values) and its fitness in ret_fitness (may be NULL),
 * -EINVAL, or -ENOMEM.
 */
int tuner_ga_maximise(const struct tuner_ga_problem *problem, const struct tuner_ga_options *opt,
                      struct tuner_rng *rng, double *ret_x, double *ret_fitness);
