/* SPDX-License-Identifier: Apache-2.0 */
/* Gaussian-process regression with a Matern 5/2 kernel (gp.h): LAPACKE Cholesky, CBLAS solves. */
#include <cblas.h>
#include <errno.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gp.h"
#include "util.h"

#define SQRT5 2.23606797749978969641

struct tuner_gp {
        unsigned dims;
        size_t n, capacity;
        double *x;     /* n x dims, row-major */
        double *y;     /* standardised */
        double *chol;  /* n x n column-major; lower triangle: L of R = C + (rho + jitter) I */
        double *alpha; /* K^-1 y = R^-1 y / s2 */
        double y_mean, y_sd;
        double lengthscale[TUNER_GP_DIMS_MAX];
        double signal_variance, noise_ratio, jitter, lml;
        bool fitted;
};

/* the likelihood search's grids: lengthscales in units of the unit cube, noise / s2 */
static const double lengthscale_grid[] = {0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.5};
/* up to 1 (half of the variance noise): on pure noise the fit must be able to say so, and not
   interpolate lucky runs (issue 24) */
static const double noise_ratio_grid[] = {1e-6, 1e-4, 1e-2, 1e-1, 0.3, 1.0};
static const double ard_factors[] = {0.25, 0.5, 2.0, 4.0};
#define ARD_PASSES      2
#define LENGTHSCALE_MIN 0.02
#define SIGNAL_MIN      1e-2
#define SIGNAL_MAX      1e2
#define JITTER_FIRST    1e-10
#define JITTER_LAST     1e-4

double tuner_gp_matern52(double r)
{
        double s = SQRT5 * r;
        return (1.0 + s + s * s / 3.0) * exp(-s);
}

struct tuner_gp *tuner_gp_new(unsigned dims)
{
        struct tuner_gp *gp;

        if (dims == 0 || dims > TUNER_GP_DIMS_MAX) {
                errno = EINVAL;
                return NULL;
        }
        gp = calloc(1, sizeof(*gp));
        if (!gp)
                return NULL;
        gp->dims = dims;
        gp->lml = NAN;
        return gp;
}

void tuner_gp_free(struct tuner_gp *gp)
{
        if (!gp)
                return;
        free(gp->x);
        free(gp->y);
        free(gp->chol);
        free(gp->alpha);
        free(gp);
}

void tuner_gp_freep(struct tuner_gp **gp)
{
        tuner_gp_free(*gp);
}

static int reserve(struct tuner_gp *gp, size_t n)
{
        double *x, *y, *chol, *alpha;

        if (n <= gp->capacity)
                return 0;
        x = realloc(gp->x, n * gp->dims * sizeof(double));
        if (!x)
                return -ENOMEM;
        gp->x = x;
        y = realloc(gp->y, n * sizeof(double));
        if (!y)
                return -ENOMEM;
        gp->y = y;
        chol = realloc(gp->chol, n * n * sizeof(double));
        if (!chol)
                return -ENOMEM;
        gp->chol = chol;
        alpha = realloc(gp->alpha, n * sizeof(double));
        if (!alpha)
                return -ENOMEM;
        gp->alpha = alpha;
        gp->capacity = n;
        return 0;
}

static double scaled_distance(const double *a, const double *b, const double *lengthscale,
                              unsigned dims)
{
        double sum = 0;

        for (unsigned k = 0; k < dims; k++) {
                double d = (a[k] - b[k]) / lengthscale[k];
                sum += d * d;
        }
        return sqrt(sum);
}

/*
 * Factor R = C(lengthscale) + rho I into gp->chol, escalating the jitter when dpotrf
 * refuses, and solve alpha. signal > 0 fixes s2; 0 profiles it: s2 = y' R^-1 y / n,
 * clamped. Sets gp's hyperparameters and lml; -EDOM when no jitter helps.
 */
static int evaluate(struct tuner_gp *gp, const double *lengthscale, double signal, double rho)
{
        size_t n = gp->n;
        double jitter = 0, quad, logdet = 0;
        lapack_int info;

        for (;;) {
                for (size_t j = 0; j < n; j++) {
                        const double *xj = gp->x + j * gp->dims;
                        gp->chol[j + j * n] = 1.0 + rho + jitter;
                        for (size_t i = j + 1; i < n; i++)
                                gp->chol[i + j * n] = tuner_gp_matern52(scaled_distance(
                                    gp->x + i * gp->dims, xj, lengthscale, gp->dims));
                }
                info =
                    LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, gp->chol, (lapack_int)n);
                if (info == 0)
                        break;
                if (info < 0)
                        return -EINVAL;
                if (jitter >= JITTER_LAST)
                        return -EDOM;
                jitter = jitter == 0 ? JITTER_FIRST : jitter * 100;
        }

        memcpy(gp->alpha, gp->y, n * sizeof(double));
        info = LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', (lapack_int)n, 1, gp->chol, (lapack_int)n,
                              gp->alpha, (lapack_int)n);
        if (info != 0)
                return -EDOM;
        quad = cblas_ddot((blasint)n, gp->y, 1, gp->alpha, 1);
        for (size_t i = 0; i < n; i++)
                logdet += log(gp->chol[i + i * n]);
        if (signal <= 0) {
                signal = quad / (double)n;
                if (signal < SIGNAL_MIN)
                        signal = SIGNAL_MIN;
                if (signal > SIGNAL_MAX)
                        signal = SIGNAL_MAX;
        }
        cblas_dscal((blasint)n, 1.0 / signal, gp->alpha, 1);
        /* log N(y; 0, s2 R) = -y'R^-1 y / (2 s2) - log|L| - n/2 log s2 - n/2 log 2 pi */
        gp->lml = -0.5 * quad / signal - logdet - 0.5 * (double)n * log(signal) -
                  0.5 * (double)n * log(2 * M_PI);
        memcpy(gp->lengthscale, lengthscale, gp->dims * sizeof(double));
        gp->signal_variance = signal;
        gp->noise_ratio = rho;
        gp->jitter = jitter;
        return 0;
}

static void fill(double *lengthscale, unsigned dims, double value)
{
        for (unsigned k = 0; k < dims; k++)
                lengthscale[k] = value;
}

/* The grid and the ARD coordinate search; leaves gp fitted with the best. */
static int search(struct tuner_gp *gp, const struct tuner_gp_options *opt)
{
        double best_ls[TUNER_GP_DIMS_MAX], ls[TUNER_GP_DIMS_MAX];
        double best_rho = 0, best_lml = -INFINITY, max_ls;
        bool found = false;
        int r;

        max_ls = opt->lengthscale_max > 0 ? opt->lengthscale_max
                                          : lengthscale_grid[ELEMENTSOF(lengthscale_grid) - 1];
        for (size_t a = 0; a < ELEMENTSOF(lengthscale_grid); a++) {
                if (lengthscale_grid[a] > max_ls)
                        break;
                for (size_t b = 0; b < ELEMENTSOF(noise_ratio_grid); b++) {
                        double rho = fmax(noise_ratio_grid[b], opt->noise_ratio_min);

                        if (b > 0 && noise_ratio_grid[b - 1] < opt->noise_ratio_min &&
                            noise_ratio_grid[b] <= opt->noise_ratio_min)
                                continue; /* the same rho as the one before */
                        fill(ls, gp->dims, lengthscale_grid[a]);
                        r = evaluate(gp, ls, opt->signal_variance, rho);
                        if (r == -EDOM)
                                continue;
                        if (r < 0)
                                return r;
                        if (gp->lml > best_lml) {
                                best_lml = gp->lml;
                                memcpy(best_ls, ls, sizeof(ls));
                                best_rho = rho;
                                found = true;
                        }
                }
        }
        if (!found)
                return -EDOM;

        if (opt->kernel == TUNER_GP_ARD && gp->dims > 1)
                for (unsigned pass = 0; pass < ARD_PASSES; pass++)
                        for (unsigned k = 0; k < gp->dims; k++)
                                for (size_t f = 0; f < ELEMENTSOF(ard_factors); f++) {
                                        memcpy(ls, best_ls, sizeof(ls));
                                        ls[k] =
                                            fmin(fmax(best_ls[k] * ard_factors[f], LENGTHSCALE_MIN),
                                                 max_ls);
                                        if (ls[k] == best_ls[k])
                                                continue;
                                        r = evaluate(gp, ls, opt->signal_variance, best_rho);
                                        if (r == -EDOM)
                                                continue;
                                        if (r < 0)
                                                return r;
                                        if (gp->lml > best_lml) {
                                                best_lml = gp->lml;
                                                memcpy(best_ls, ls, sizeof(ls));
                                        }
                                }

        return evaluate(gp, best_ls, opt->signal_variance, best_rho);
}

int tuner_gp_fit(struct tuner_gp *gp, const double *x, const double *y, size_t n,
                 const struct tuner_gp_options *opt, struct util_error *err)
{
        static const struct tuner_gp_options defaults = {.kernel = TUNER_GP_SHARED,
                                                         .standardise = true};
        double mean = 0, var = 0;
        int r;

        if (!opt)
                opt = &defaults;
        gp->fitted = false;
        gp->lml = NAN;
        if (n == 0 || n > TUNER_GP_POINTS_MAX)
                return util_error_set(err, EINVAL, "gp: %zu points; allowed 1..%d", n,
                                      TUNER_GP_POINTS_MAX);
        if (!(opt->noise_ratio_min >= 0 && opt->noise_ratio_min <= 1))
                return util_error_set(err, EINVAL, "gp: noise ratio minimum %g; allowed [0,1]",
                                      opt->noise_ratio_min);
        for (size_t i = 0; i < n; i++) {
                if (!isfinite(y[i]))
                        return util_error_set(err, EINVAL, "gp: y[%zu] = %g; must be finite", i,
                                              y[i]);
                for (unsigned k = 0; k < gp->dims; k++) {
                        double v = x[i * gp->dims + k];
                        if (!(v >= 0 && v <= 1))
                                return util_error_set(
                                    err, EINVAL, "gp: x[%zu][%u] = %g; must be in [0,1]", i, k, v);
                }
        }
        if (opt->hyper) {
                const struct tuner_gp_hyper *h = opt->hyper;
                for (unsigned k = 0; k < gp->dims; k++) {
                        double l = h->lengthscale[opt->kernel == TUNER_GP_ARD ? k : 0];
                        if (!(l > 0) || !isfinite(l))
                                return util_error_set(
                                    err, EINVAL, "gp: lengthscale[%u] = %g; must be > 0", k, l);
                }
                if (!(h->signal_variance > 0) || !(h->noise_variance >= 0) ||
                    !isfinite(h->signal_variance) || !isfinite(h->noise_variance))
                        return util_error_set(err, EINVAL,
                                              "gp: signal variance %g, noise variance %g; must "
                                              "be > 0 and >= 0",
                                              h->signal_variance, h->noise_variance);
        }

        r = reserve(gp, n);
        if (r < 0)
                return util_error_set(err, -r, "gp: no memory for %zu points", n);
        gp->n = n;
        memcpy(gp->x, x, n * gp->dims * sizeof(double));

        if (opt->standardise) {
                for (size_t i = 0; i < n; i++)
                        mean += y[i];
                mean /= (double)n;
                for (size_t i = 0; i < n; i++)
                        var += (y[i] - mean) * (y[i] - mean);
                var /= (double)n; /* population variance (ddof 0) */
        }
        gp->y_mean = mean;
        gp->y_sd = var > 1e-24 ? sqrt(var) : 1.0;
        for (size_t i = 0; i < n; i++)
                gp->y[i] = (y[i] - gp->y_mean) / gp->y_sd;

        if (opt->hyper) {
                double ls[TUNER_GP_DIMS_MAX];
                for (unsigned k = 0; k < gp->dims; k++)
                        ls[k] = opt->hyper->lengthscale[opt->kernel == TUNER_GP_ARD ? k : 0];
                r = evaluate(gp, ls, opt->hyper->signal_variance,
                             opt->hyper->noise_variance / opt->hyper->signal_variance);
        } else
                r = search(gp, opt);
        if (r == -EDOM)
                return util_error_set(err, EDOM,
                                      "gp: kernel matrix of %zu points not positive definite "
                                      "with a jitter up to %g",
                                      n, JITTER_LAST);
        if (r < 0)
                return util_error_set(err, -r, "gp: fit of %zu points failed", n);
        gp->fitted = true;
        return 0;
}

int tuner_gp_predict(const struct tuner_gp *gp, const double *x, double *ret_mean,
                     double *ret_variance)
{
        double c[TUNER_GP_POINTS_MAX], mean, var;
        size_t n;

        if (!gp || !gp->fitted)
                return -EINVAL;
        n = gp->n;
        for (size_t i = 0; i < n; i++)
                c[i] = tuner_gp_matern52(
                    scaled_distance(x, gp->x + i * gp->dims, gp->lengthscale, gp->dims));
        mean = gp->signal_variance * cblas_ddot((blasint)n, c, 1, gp->alpha, 1);
        if (ret_mean)
                *ret_mean = gp->y_mean + gp->y_sd * mean;
        if (!ret_variance)
                return 0; /* the mean alone is O(n): no triangular solve */
        /* var f = s2 (1 - c' R^-1 c) = s2 (1 - |L^-1 c|^2) */
        cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, (blasint)n, gp->chol,
                    (blasint)n, c, 1);
        var = gp->signal_variance * (1.0 - cblas_ddot((blasint)n, c, 1, c, 1));
        if (var < 0)
                var = 0;
        *ret_variance = gp->y_sd * gp->y_sd * var;
        return 0;
}

double tuner_gp_log_marginal_likelihood(const struct tuner_gp *gp)
{
        return gp && gp->fitted ? gp->lml : NAN;
}

void tuner_gp_hyper_get(const struct tuner_gp *gp, struct tuner_gp_hyper *ret)
{
        *ret = (struct tuner_gp_hyper){.signal_variance = gp->signal_variance,
                                       .noise_variance = gp->noise_ratio * gp->signal_variance};
        memcpy(ret->lengthscale, gp->lengthscale, gp->dims * sizeof(double));
}

double tuner_gp_jitter(const struct tuner_gp *gp)
{
        return gp->jitter * gp->signal_variance;
}

double tuner_gp_noise_variance(const struct tuner_gp *gp)
{
        return gp->y_sd * gp->y_sd * (gp->noise_ratio + gp->jitter) * gp->signal_variance;
}
