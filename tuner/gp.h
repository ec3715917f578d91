/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gaussian-process regression for stage 2 of the tuner (bo.h, docs/tuner-bo.md).
 *
 * Model: y(x) = m + f(x) + e, f ~ GP(0, k), e ~ N(0, noise_variance), x in [0,1]^dims.
 * k is the Matern 5/2 kernel
 *
 *   k(x, x') = s2 (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r),
 *   r = sqrt(sum_i ((x_i - x'_i) / l_i)^2)
 *
 * with one lengthscale shared by every dimension or one per dimension (ARD). Outputs are
 * standardised (mean and standard deviation of the training y) unless the options say
 * otherwise; all hyperparameters (signal variance s2, noise variance, lengthscales) are in
 * the standardised units. The fit is a Cholesky factorisation (LAPACKE_dpotrf) of
 * K + noise I; when it fails, a jitter of 1e-10 .. 1e-4 (relative to s2) is added to the
 * diagonal, escalating by 100x.
 *
 * Hyperparameters, unless fixed by the caller, maximise the log marginal likelihood over a
 * deterministic grid (lengthscale x noise, with s2 profiled out in closed form), then, for
 * ARD, two passes of coordinate search over each dimension's lengthscale. No randomness.
 *
 * Cost: O(n^3) per fit per grid point, O(n^2) per prediction; n <= TUNER_GP_POINTS_MAX.
 * Not thread-safe beyond one thread per struct tuner_gp. Never logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "shim-common.h"

#define TUNER_GP_DIMS_MAX   8
#define TUNER_GP_POINTS_MAX 512

enum tuner_gp_kernel {
        TUNER_GP_SHARED = 0, /* one lengthscale for every dimension */
        TUNER_GP_ARD,        /* one lengthscale per dimension */
};

struct tuner_gp_hyper {
        double lengthscale[TUNER_GP_DIMS_MAX]; /* in units of the [0,1] inputs */
        double signal_variance;                /* s2 */
        double noise_variance;
};

struct tuner_gp_options {
        enum tuner_gp_kernel kernel;
        /* false: y is used as given, with prior mean 0 (e.g. +-1 labels of a classifier) */
        bool standardise;
        /* > 0: s2 is this value, not chosen (e.g. 1 for labels); 0: profiled by likelihood */
        double signal_variance;
        /* > 0: the largest lengthscale the search may choose (grid default: 2.5) */
        double lengthscale_max;
        /* > 0: the search's noise / s2 is at least this (the noise measured between
           replicated runs, say); 0: from 1e-6 */
        double noise_ratio_min;
        /* non-NULL: use these hyperparameters as they are, no search */
        const struct tuner_gp_hyper *hyper;
};

struct tuner_gp;

/* A GP over dims (1..TUNER_GP_DIMS_MAX) inputs; NULL on ENOMEM (or EINVAL: dims out of range). */
struct tuner_gp *tuner_gp_new(unsigned dims);
void tuner_gp_free(struct tuner_gp *gp); /* NULL-safe */
void tuner_gp_freep(struct tuner_gp **gp);

/*
 * Fit to n points: x is n rows of dims values in [0,1] (row-major), y n finite values.
 * opt NULL: shared lengthscale, standardised, everything chosen by likelihood.
 * Returns 0, -EINVAL (n 0 or above TUNER_GP_POINTS_MAX, x outside [0,1], y not finite),
 * -ENOMEM, or -EDOM (the kernel matrix is not positive definite even with jitter).
 * On failure the GP holds no fit.
 */
int tuner_gp_fit(struct tuner_gp *gp, const double *x, const double *y, size_t n,
                 const struct tuner_gp_options *opt, struct util_error *err);

/*
 * Posterior of the latent f (plus the output mean) at x, in the units of y: mean, and the
 * variance of f (the noise variance not included; add tuner_gp_noise_variance() for a
 * new observation). -EINVAL when the GP holds no fit.
 */
int tuner_gp_predict(const struct tuner_gp *gp, const double *x, double *ret_mean,
                     double *ret_variance);

/* Log marginal likelihood of the fit, of the standardised y when standardised; NAN unfitted. */
double tuner_gp_log_marginal_likelihood(const struct tuner_gp *gp);

/* The hyperparameters of the fit (standardised units), and the jitter the fit needed. */
void tuner_gp_hyper_get(const struct tuner_gp *gp, struct tuner_gp_hyper *ret);
double tuner_gp_jitter(const struct tuner_gp *gp);
double tuner_gp_noise_variance(const struct tuner_gp *gp); /* in the units of y */

/* The Matern 5/2 correlation (s2 = 1) at the scaled distance r >= 0. */
double tuner_gp_matern52(double r);
