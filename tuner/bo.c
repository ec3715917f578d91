/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage 2, safe Bayesian optimisation (bo.h) over points in the unit cube: a GP of
 * log(objective), a GP of failure, usage models, and Expected Improvement maximised by the
 * genetic algorithm (ga.c) inside a trust region around the best safe run. tuner_bo_suggest
 * goes step by step: check the input, fit the usage models, the objective, the failure model
 * and the trust region, run the GA, predict. The mapping from a job's runs is bo-runs.c.
 * docs/tuner-bo.md explains the choices and their sources.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bo-internal.h"
#include "bo.h"
#include "gp.h"
#include "util.h"

/* ---- acquisition ---- */

double tuner_bo_normal_cdf(double z)
{
        return 0.5 * erfc(-z / M_SQRT2);
}

double tuner_bo_normal_pdf(double z)
{
        return exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
}

double tuner_bo_expected_improvement(double mean, double sd, double best, double xi)
{
        double gain = best - mean - xi, z;

        if (!(sd > 0))
                return gain > 0 ? gain : 0;
        z = gain / sd;
        return gain * tuner_bo_normal_cdf(z) + sd * tuner_bo_normal_pdf(z);
}

/* ---- safe BO over raw points ---- */

_Static_assert(TUNER_BO_DIMS_MAX <= TUNER_GA_DIMS_MAX, "the GA searches every dimension");

void tuner_bo_options_default(struct tuner_bo_options *opt)
{
        *opt = (struct tuner_bo_options){
            .seed = 1,
            .safety = true,
            .failure_bound = 0.1,
            .failure_penalty = 0,
            .xi = 0,
            .trust_initial = 0.1,
            .trust_growth = 1.15,
            .monotone_margin = 0.02,
            .trust_min = 0.05,
            .trust_max = 0.5,
            .kernel = TUNER_BO_KERNEL_AUTO,
            .usage_beta = 2.0,
            .usage_noise = 0.05,
        };
        tuner_ga_options_default(&opt->ga);
}

/*
 * The failure model: GP regression on +-1 labels, prior mean 0, s2 1. Without a failure
 * the likelihood prefers ever longer lengthscales (every label agrees) and the model
 * would call the whole cube safe: then the lengthscale is fixed at 0.15, which makes one
 * safe run vouch for 0.08 around it at a bound of 0.1 (0.17 at 0.3). With failures it is
 * chosen by likelihood, at most 0.3. Tried on a synthetic job whose optimum sits on an
 * OOM boundary (docs/tuner-bo.md): prior 0.3 / cap 0.5 failed 2.5 times in 12 runs,
 * 0.15 / 0.3 1.6 times, for the same best objective within 2 %.
 */
#define FAILURE_LENGTHSCALE_PRIOR 0.15
#define FAILURE_LENGTHSCALE_MAX   0.3
#define FAILURE_NOISE_PRIOR       0.01
/* the likelihood search's smallest lengthscale (gp.c): a cap under it leaves no fit */
#define FAILURE_LENGTHSCALE_MIN 0.05
/* EI below this (in units of y) is no expected improvement: keep the incumbent */
#define EI_NEGLIGIBLE 1e-9
/*
 * The usage models' prior (log units, docs/tuner-bo.md "The usage models"): a usage may
 * differ by a factor e^0.3 = 1.35 (one sd) from the job's average away from evidence, the
 * spread of the measured jobs' memory peaks over heaps 512m..2g (sd of log 0.1 .. 0.3);
 * correlated over 0.15 of the unit cube, the failure model's prior (a factor 2 of heap).
 */
#define USAGE_SIGNAL_SD   0.3
#define USAGE_LENGTHSCALE 0.15

/* A usage model: GP of log(usage) - centre over the workload dimensions. */
struct usage_model {
        struct tuner_gp *gp;
        double centre;
        double noise; /* sd of log usage between identical runs */
        bool fitted;
};

/* the cube's constants are for a step of 0.1 (struct tuner_bo_options.step) */
#define STEP_UNIT 0.1

struct acquisition {
        const struct tuner_bo_point *pts;
        size_t n;
        unsigned dims, monotone;
        double margin[TUNER_BO_DIMS_MAX]; /* per dimension */
        const struct tuner_gp *objective, *failure;
        double best, xi, bound;
        bool safety;
        bool (*feasible)(const double *x, void *userdata);
        void *feasible_userdata;
        /* usage models */
        unsigned usages, workload;
        const struct usage_model *usage;
        double beta;
        unsigned median_only, in_objective, relative;
        double usage_floor[TUNER_BO_USAGES_MAX]; /* relative usages: the lowest modelled median */
        double (*usage_limit)(unsigned j, const double *x, void *userdata);
        double (*objective_prior)(const double *x, const double *usage_median, void *userdata);
        void *usage_userdata;
        /* the dead band around the incumbent, and the search box */
        const double *incumbent, *dead_band, *lo, *hi;
};

/* a coordinate within the dead band of the incumbent's is the incumbent's: a change that
   small is not worth a run (docs/tuner-bo.md) */
static void snap(const struct acquisition *a, const double *x, double *ret)
{
        for (unsigned k = 0; k < a->dims; k++) {
                double c = a->incumbent ? a->incumbent[k] : NAN;
                ret[k] = x[k];
                if (a->dead_band && a->dead_band[k] > 0 && fabs(x[k] - c) <= a->dead_band[k] &&
                    c >= a->lo[k] && c <= a->hi[k])
                        ret[k] = c;
        }
}

/* x restricted to the dimensions in mask (0: all); none: one constant coordinate, so that a
 * GP over them is a constant with noise */
static unsigned project(const double *x, unsigned dims, unsigned mask, double *ret)
{
        unsigned m = 0;

        for (unsigned k = 0; k < dims; k++)
                if (!mask || (mask & (1u << k)))
                        ret[m++] = x[k];
        if (m == 0)
                ret[m++] = 0.5;
        return m;
}

static double failure_probability(const struct acquisition *a, const double *x)
{
        double mean, var, w[TUNER_BO_DIMS_MAX];

        project(x, a->dims, a->usages ? a->workload : 0, w);
        if (tuner_gp_predict(a->failure, w, &mean, &var) < 0)
                return 1.0;
        return tuner_bo_normal_cdf(mean / sqrt(var + 1e-12));
}

/* the median of usage j at x (exp of the GP mean of its log), and with ret_ucb the upper
 * confidence bound exp(mean + beta sd), sd with the noise of a new run */
static int usage_predict(const struct acquisition *a, unsigned j, const double *x,
                         double *ret_median, double *ret_ucb)
{
        double w[TUNER_BO_DIMS_MAX], mean, var;
        int r;

        if (!a->usage[j].fitted)
                return -ENODATA;
        project(x, a->dims, a->workload, w);
        r = tuner_gp_predict(a->usage[j].gp, w, &mean,
                             ret_ucb && !(a->median_only & (1u << j)) ? &var : NULL);
        if (r < 0)
                return r;
        mean += a->usage[j].centre;
        if (ret_median)
                *ret_median = exp(mean);
        if (ret_ucb)
                *ret_ucb =
                    a->median_only & (1u << j)
                        ? exp(mean)
                        : exp(mean + a->beta * sqrt(var + a->usage[j].noise * a->usage[j].noise));
        return 0;
}

/* usage j's limit at x: the caller's, times the lowest modelled median for a relative one */
static double limit_of(const struct acquisition *a, unsigned j, const double *x)
{
        double limit = a->usage_limit(j, x, a->usage_userdata);

        if (a->relative & (1u << j))
                limit = isfinite(a->usage_floor[j]) ? limit * a->usage_floor[j] : NAN;
        return limit;
}

/* the tightest usage UCB / limit at x (> 1: over a limit); NAN when nothing is limited */
static double usage_headroom(const struct acquisition *a, const double *x)
{
        double worst = NAN;

        for (unsigned j = 0; j < a->usages && a->usage_limit; j++) {
                double limit = limit_of(a, j, x), ucb;

                if (isnan(limit) || limit == INFINITY)
                        continue; /* no limit */
                if (usage_predict(a, j, x, NULL, &ucb) < 0)
                        continue;
                if (!(limit > 0))
                        return INFINITY; /* nothing allowed */
                if (!(ucb / limit <= worst))
                        worst = ucb / limit;
        }
        return worst;
}

/*
 * The objective's prior mean at x from the usage medians (0 without usage models) and, with
 * ret_variance, its variance from the usages' uncertainty (first order: the sensitivity of
 * the prior to each log usage, by a difference of 0.01, squared times that usage's variance):
 * where the usages are unknown the objective is too, and EI explores there.
 */
static double objective_prior_var(const struct acquisition *a, const double *x,
                                  double *ret_variance)
{
        double median[TUNER_BO_USAGES_MAX], var[TUNER_BO_USAGES_MAX], w[TUNER_BO_DIMS_MAX];
        double prior, total = 0;

        for (unsigned j = 0; j < TUNER_BO_USAGES_MAX; j++)
                median[j] = var[j] = NAN;
        if (ret_variance)
                *ret_variance = 0;
        if (!a->objective_prior || !a->usages)
                return 0;
        project(x, a->dims, a->workload, w);
        for (unsigned j = 0; j < a->usages; j++) {
                double mean;

                if (!a->usage[j].fitted || (a->in_objective && !(a->in_objective & (1u << j))))
                        continue;
                if (tuner_gp_predict(a->usage[j].gp, w, &mean, ret_variance ? &var[j] : NULL) == 0)
                        median[j] = exp(mean + a->usage[j].centre);
        }
        prior = a->objective_prior(x, median, a->usage_userdata);
        if (!ret_variance || !isfinite(prior))
                return prior;
        for (unsigned j = 0; j < a->usages; j++) {
                double saved = median[j], slope;

                if (!(var[j] > 0))
                        continue;
                median[j] = saved * exp(0.01);
                slope = (a->objective_prior(x, median, a->usage_userdata) - prior) / 0.01;
                median[j] = saved;
                if (isfinite(slope))
                        total += slope * slope * var[j];
        }
        *ret_variance = total;
        return prior;
}

static double objective_prior(const struct acquisition *a, const double *x)
{
        return objective_prior_var(a, x, NULL);
}

/* x has no more memory than a run that ran out of it, in every monotone dimension */
static bool dominated_by_oom(const struct acquisition *a, const double *x)
{
        if (!a->monotone)
                return false;
        for (size_t i = 0; i < a->n; i++) {
                unsigned in =
                    a->pts[i].monotone_in ? a->monotone & a->pts[i].monotone_in : a->monotone;
                bool below = true;

                if (!in)
                        in = a->monotone; /* no bit in common: the whole rule, never none */
                if (!a->pts[i].memory_failure)
                        continue;
                for (unsigned k = 0; k < a->dims && below; k++)
                        if ((in & (1u << k)) && x[k] > a->pts[i].x[k] + a->margin[k])
                                below = false;
                if (below)
                        return true;
        }
        return false;
}

/*
 * Fitness for the GA: EI (>= 0) for an eligible candidate; -1 - P(failure) (in [-2,-1))
 * above the bound, so that the search climbs towards the safe region; -2 below the memory
 * of an OOM; -3 infeasible.
 */
static double acquisition_fitness(const double *raw, void *userdata)
{
        const struct acquisition *a = userdata;
        double mean, var, p = 0, x[TUNER_BO_DIMS_MAX];

        snap(a, raw, x);

        if (a->feasible && !a->feasible(x, a->feasible_userdata))
                return -3;
        if (a->safety) {
                double headroom;

                if (dominated_by_oom(a, x))
                        return -2;
                p = failure_probability(a, x);
                if (!(p < a->bound))
                        return -1 - p;
                /* over a limit: climb towards the limit, within [-2, -1) */
                headroom = usage_headroom(a, x);
                if (headroom > 1)
                        return -1 - fmin(0.999, log(headroom));
        }
        /* the incumbent again measures nothing new: eligible, but no improvement */
        if (a->incumbent && memcmp(x, a->incumbent, a->dims * sizeof(double)) == 0)
                return 0;
        if (tuner_gp_predict(a->objective, x, &mean, &var) < 0)
                return -3;
        {
                double prior_var;
                mean += objective_prior_var(a, x, &prior_var);
                var += prior_var;
        }
        if (!isfinite(mean))
                return -3;
        /* constrained EI: weighted by P(success), which keeps off the bound's edge */
        return tuner_bo_expected_improvement(mean, sqrt(var), a->best, a->xi) * (1 - p);
}

static enum tuner_gp_kernel pick_kernel(enum tuner_bo_kernel k, unsigned dims, size_t safe)
{
        switch (k) {
        case TUNER_BO_KERNEL_SHARED:
                return TUNER_GP_SHARED;
        case TUNER_BO_KERNEL_ARD:
                return TUNER_GP_ARD;
        case TUNER_BO_KERNEL_AUTO:
                break;
        }
        return safe >= 2 * (size_t)dims + 2 ? TUNER_GP_ARD : TUNER_GP_SHARED;
}

/* a before b as the incumbent: a point within its soft constraints first, then the lower value */
static bool better_incumbent(bool a_over, double ya, bool b_over, double yb)
{
        if (a_over != b_over)
                return !a_over;
        return ya < yb;
}

/* a and b at the same coordinates in the dimensions of mask (0: all) */
static bool same_at(const double *a, const double *b, unsigned dims, unsigned mask)
{
        for (unsigned k = 0; k < dims; k++)
                if ((!mask || (mask & (1u << k))) && a[k] != b[k])
                        return false;
        return true;
}

/*
 * The variance between replicates: points at the same coordinates in the dimensions of mask
 * (a recurring job run again at the same settings; for a usage, at the same workload, as a
 * usage does not depend on the limits) measure the noise of their value directly. Pooled
 * over the groups (the sum of squares about each group's mean over the sum of group sizes
 * less one); NAN without a replicate. v[i] NAN leaves point i out. O(n^2) comparisons.
 */
static double replicate_variance(const struct tuner_bo_point *pts, size_t n, unsigned dims,
                                 unsigned mask, const double *v)
{
        double squares = 0;
        size_t freedom = 0;

        for (size_t i = 0; i < n; i++) {
                double sum = 0, sq = 0;
                size_t m = 0;
                bool first = true;

                if (isnan(v[i]))
                        continue;
                for (size_t j = 0; j < i && first; j++)
                        first = isnan(v[j]) || !same_at(pts[j].x, pts[i].x, dims, mask);
                if (!first)
                        continue;
                for (size_t j = i; j < n; j++) {
                        if (isnan(v[j]) || !same_at(pts[j].x, pts[i].x, dims, mask))
                                continue;
                        sum += v[j];
                        sq += v[j] * v[j];
                        m++;
                }
                if (m < 2)
                        continue;
                squares += fmax(sq - sum * sum / (double)m, 0.0);
                freedom += m - 1;
        }
        return freedom ? squares / (double)freedom : NAN;
}

/* ---- tuner_bo_suggest, step by step ---- */

/* tuner_bo_suggest's state, from the checked input to the prediction */
struct suggestion {
        const struct tuner_bo_point *pts;
        size_t n;
        unsigned dims;
        const struct tuner_bo_options *opt;
        /* each dimension's step over STEP_UNIT; wratio: over the failure and usage models'
           wdims dimensions (the workload's with usage models, else all) */
        double ratio[TUNER_BO_DIMS_MAX], wratio[TUNER_BO_DIMS_MAX];
        unsigned wdims;
        unsigned safe, failed;
        size_t n_objective; /* successes with a finite y */
        double max_y;       /* the highest of their y */
        size_t incumbent;   /* the best safe point: the lowest y, then the lowest modelled */
        struct tuner_gp *objective, *failure;
        struct usage_model usage[TUNER_BO_USAGES_MAX];
        /* the models' data (n rows of dims), the GA's seeds (as many) */
        double *x, *y, *seeds, *residual;
        bool *over; /* over a relative usage's bound at its own modelled median */
        struct acquisition acq;
        double lo[TUNER_BO_DIMS_MAX], hi[TUNER_BO_DIMS_MAX]; /* the search box */
        struct tuner_bo_prediction pred;
};

static void suggestion_done(struct suggestion *s)
{
        tuner_gp_free(s->objective);
        tuner_gp_free(s->failure);
        for (unsigned j = 0; j < TUNER_BO_USAGES_MAX; j++)
                tuner_gp_free(s->usage[j].gp);
        free(s->x);
        free(s->y);
        free(s->seeds);
        free(s->residual);
        free(s->over);
}

/* every caller-supplied value but the pointers and dims (tuner_bo_suggest's) */
static int check_input(struct suggestion *s, struct util_error *err)
{
        const struct tuner_bo_options *opt = s->opt;

        if (s->n > TUNER_BO_POINTS_MAX)
                return util_error_set(err, E2BIG, "bo: %zu points; at most %d", s->n,
                                      TUNER_BO_POINTS_MAX);
        if (opt->safety && !(opt->failure_bound > 0 && opt->failure_bound <= 1))
                return util_error_set(err, EINVAL, "bo: failure bound %g; allowed (0,1]",
                                      opt->failure_bound);
        for (size_t i = 0; i < s->n; i++)
                for (unsigned k = 0; k < s->dims; k++)
                        if (!(s->pts[i].x[k] >= 0 && s->pts[i].x[k] <= 1))
                                return util_error_set(err, EINVAL,
                                                      "bo: point %zu x[%u] = %g; must be in [0,1]",
                                                      i, k, s->pts[i].x[k]);
        for (unsigned k = 0; k < s->dims; k++)
                if (!(opt->floor[k] >= 0 && opt->floor[k] <= 1))
                        return util_error_set(err, EINVAL, "bo: floor[%u] = %g; allowed [0,1]", k,
                                              opt->floor[k]);
        for (unsigned k = 0; k < s->dims; k++) {
                double step = opt->step[k] == 0 ? STEP_UNIT : opt->step[k];

                if (!(step > 0) || !isfinite(step))
                        return util_error_set(err, EINVAL,
                                              "bo: step[%u] = %g; must be > 0 (or 0: 0.1)", k,
                                              opt->step[k]);
                s->ratio[k] = step / STEP_UNIT;
        }
        if (opt->usages > TUNER_BO_USAGES_MAX || (opt->usages && !(opt->usage_noise > 0)) ||
            (opt->usages && !(opt->usage_beta >= 0)))
                return util_error_set(err, EINVAL,
                                      "bo: %u usage models (at most %d), noise %g (> 0), beta %g "
                                      "(>= 0)",
                                      opt->usages, TUNER_BO_USAGES_MAX, opt->usage_noise,
                                      opt->usage_beta);
        return 0;
}

/* safe and failed points, those with an objective and the first incumbent (the lowest y) */
static int count_points(struct suggestion *s, struct util_error *err)
{
        const struct tuner_bo_point *pts = s->pts;

        s->max_y = -INFINITY;
        s->incumbent = SIZE_MAX;
        for (size_t i = 0; i < s->n; i++) {
                if (pts[i].failed) {
                        s->failed++;
                        continue;
                }
                s->safe++;
                if (!isfinite(pts[i].y))
                        continue;
                s->n_objective++;
                if (pts[i].y > s->max_y)
                        s->max_y = pts[i].y;
                if (s->incumbent == SIZE_MAX || pts[i].y < pts[s->incumbent].y)
                        s->incumbent = i;
        }
        {
                double probe[TUNER_BO_DIMS_MAX] = {0}, w[TUNER_BO_DIMS_MAX];
                s->wdims = project(probe, s->dims, s->opt->usages ? s->opt->workload : 0, w);
        }
        if (s->n_objective < 2)
                return util_error_set(err, ENODATA,
                                      "bo: %zu successful points with an objective; need 2",
                                      s->n_objective);
        s->pred.incumbent = s->incumbent;
        s->pred.best_y = pts[s->incumbent].y;
        s->pred.safe_points = s->safe;
        s->pred.failed_points = s->failed;
        return 0;
}

/* the models' buffers, and the acquisition (the models it reads are filled in later) */
static int prepare(struct suggestion *s, struct util_error *err)
{
        const struct tuner_bo_options *opt = s->opt;
        size_t n = s->n;
        unsigned dims = s->dims;

        s->x = malloc(sizeof(double) * n * dims);
        s->y = malloc(sizeof(double) * n);
        s->seeds = malloc(sizeof(double) * n * dims);
        s->residual = malloc(sizeof(double) * n);
        s->over = calloc(n, sizeof(bool));
        s->objective = tuner_gp_new(dims);
        s->failure = tuner_gp_new(s->wdims);
        if (!s->x || !s->y || !s->seeds || !s->residual || !s->over || !s->objective || !s->failure)
                return util_error_set(err, ENOMEM, "bo: no memory for %zu points", n);

        s->acq = (struct acquisition){
            .pts = s->pts,
            .n = n,
            .dims = dims,
            .monotone = opt->monotone,
            .objective = s->objective,
            .failure = s->failure,
            .best = s->pts[s->incumbent].y,
            .xi = opt->xi,
            .bound = opt->failure_bound,
            .safety = opt->safety,
            .feasible = opt->feasible,
            .feasible_userdata = opt->feasible_userdata,
            .usages = opt->usages,
            .workload = opt->workload,
            .usage = s->usage,
            .beta = opt->usage_beta,
            .median_only = opt->usage_median,
            .in_objective = opt->usage_in_objective,
            .relative = opt->usage_relative,
            .usage_limit = opt->usage_limit,
            .objective_prior = opt->objective_prior,
            .usage_userdata = opt->usage_userdata,
        };

        for (unsigned k = 0; k < dims; k++)
                s->acq.margin[k] = opt->monotone_margin * s->ratio[k];
        project(s->ratio, dims, opt->usages ? opt->workload : 0, s->wratio);
        if (opt->usages && opt->workload && !(opt->workload & ((1u << dims) - 1)))
                s->wratio[0] = 1.0; /* no workload dimension: the constant coordinate */
        return 0;
}

/* usage j's model: log usage over the workload dimensions, fixed hyperparameters (a prior,
   not a fit: a few runs at one workload point identify no lengthscale); the noise at least
   usage_noise, more where replicates measured more */
static int fit_usage_model(struct suggestion *s, unsigned j, struct util_error *err)
{
        const struct tuner_bo_point *pts = s->pts;
        struct usage_model *u = &s->usage[j];
        double *x = s->x, *y = s->y;
        double rep_var;
        size_t m = 0;
        int r;

        for (size_t i = 0; i < s->n; i++)
                y[i] =
                    pts[i].usage[j] > 0 && isfinite(pts[i].usage[j]) ? log(pts[i].usage[j]) : NAN;
        rep_var = replicate_variance(pts, s->n, s->dims, s->opt->workload, y);
        struct tuner_gp_hyper hyper = {.signal_variance = USAGE_SIGNAL_SD * USAGE_SIGNAL_SD};
        double sum = 0;

        u->noise = s->opt->usage_noise;
        if (rep_var > u->noise * u->noise)
                u->noise = sqrt(rep_var);
        hyper.noise_variance = u->noise * u->noise;

        for (size_t i = 0; i < s->n; i++) {
                double v = pts[i].usage[j];
                if (!(v > 0) || !isfinite(v))
                        continue;
                project(pts[i].x, s->dims, s->opt->workload, x + m * s->wdims);
                y[m] = log(v);
                sum += y[m++];
        }
        if (m == 0)
                return 0;
        u->centre = sum / (double)m;
        for (size_t i = 0; i < m; i++)
                y[i] -= u->centre;
        for (unsigned k = 0; k < s->wdims; k++)
                hyper.lengthscale[k] = USAGE_LENGTHSCALE * s->wratio[k];
        u->gp = tuner_gp_new(s->wdims);
        if (!u->gp)
                return util_error_set(err, ENOMEM, "bo: no memory for a usage model");
        r = tuner_gp_fit(u->gp, x, y, m,
                         &(struct tuner_gp_options){
                             .kernel = TUNER_GP_ARD, .standardise = false, .hyper = &hyper},
                         err);
        if (r < 0)
                return r;
        u->fitted = true;
        return 0;
}

/* point i's modelled median of relative usage j within its bound (the floor set) */
static bool within_relative(const struct suggestion *s, unsigned j, size_t i)
{
        double median, limit;

        if (!s->opt->usage_limit || !(s->opt->usage_relative & (1u << j)) || !s->usage[j].fitted ||
            !isfinite(s->acq.usage_floor[j]) ||
            usage_predict(&s->acq, j, s->pts[i].x, &median, NULL) < 0)
                return true;
        limit = limit_of(&s->acq, j, s->pts[i].x);
        return !isfinite(limit) || median <= limit;
}

/*
 * The relative usages' floors: the lowest modelled median where nothing failed, in the
 * order of the usages, each among the runs within the bounds of those before it (the least
 * work among the runs fast enough: a floor set by a run the run-time bound rules out would
 * leave no run within both, and stage 2 nowhere to go); and which points pass their own
 * bounds there (never the incumbent while one does not).
 */
static void usage_floors(struct suggestion *s)
{
        const struct tuner_bo_options *opt = s->opt;
        const struct tuner_bo_point *pts = s->pts;
        struct acquisition *acq = &s->acq;

        for (unsigned j = 0; j < opt->usages; j++)
                acq->usage_floor[j] = NAN;
        for (unsigned j = 0; j < opt->usages; j++) {
                if (!(opt->usage_relative & (1u << j)) || !s->usage[j].fitted)
                        continue;
                for (size_t i = 0; i < s->n; i++) {
                        double median;
                        bool eligible = !pts[i].failed;
                        for (unsigned e = 0; e < j && eligible; e++)
                                eligible = within_relative(s, e, i);
                        if (!eligible || usage_predict(acq, j, pts[i].x, &median, NULL) < 0)
                                continue;
                        if (!(median >= acq->usage_floor[j]))
                                acq->usage_floor[j] = median;
                }
        }
        for (size_t i = 0; i < s->n; i++) {
                s->over[i] = false;
                for (unsigned j = 0; j < opt->usages && opt->usage_limit && !s->over[i]; j++) {
                        double median, limit;
                        if (!(opt->usage_relative & (1u << j)) || pts[i].failed ||
                            usage_predict(acq, j, pts[i].x, &median, NULL) < 0)
                                continue;
                        limit = limit_of(acq, j, pts[i].x);
                        s->over[i] = isfinite(limit) && median > limit;
                }
        }
}

static int fit_usage_models(struct suggestion *s, struct util_error *err)
{
        for (unsigned j = 0; j < s->opt->usages; j++) {
                int r = fit_usage_model(s, j, err);
                if (r < 0)
                        return r;
        }
        usage_floors(s);
        return 0;
}

/* point i in the objective model: a success with an objective, or a failure at a penalty */
static bool in_objective(const struct suggestion *s, size_t i, bool *ret_penalised)
{
        bool penalised = s->pts[i].failed && s->opt->failure_penalty > 0;

        *ret_penalised = penalised;
        return penalised || (!s->pts[i].failed && isfinite(s->pts[i].y));
}

/* the objective model's data into x and y, less the prior mean; SIZE_MAX when a point's
   prior is not finite */
static size_t objective_rows(struct suggestion *s)
{
        const struct tuner_bo_point *pts = s->pts;
        size_t m = 0;

        for (size_t i = 0; i < s->n; i++) {
                bool penalised;
                double prior;
                if (!in_objective(s, i, &penalised))
                        continue;
                prior = objective_prior(&s->acq, pts[i].x);
                if (!isfinite(prior))
                        return SIZE_MAX;
                memcpy(s->x + m * s->dims, pts[i].x, s->dims * sizeof(double));
                s->y[m++] = (penalised ? s->max_y + s->opt->failure_penalty : pts[i].y) - prior;
        }
        return m;
}

/* the noise the replicates measured, as a share of the data's variance (m >= 2 rows of y):
   the fit may not call it signal (a lucky run is not a better configuration) */
static double replicate_noise_ratio(struct suggestion *s, size_t m)
{
        double rep_var, mean_y = 0, var_y = 0;
        const double *y = s->y;

        /* as objective_rows filled y: penalised failures are in it, not residuals */
        for (size_t i = 0, k = 0; i < s->n; i++) {
                bool penalised;
                bool in = in_objective(s, i, &penalised);
                s->residual[i] = in && !penalised ? y[k] : NAN;
                k += in;
        }
        rep_var = replicate_variance(s->pts, s->n, s->dims, 0, s->residual);

        for (size_t i = 0; i < m; i++)
                mean_y += y[i] / (double)m;
        for (size_t i = 0; i < m; i++)
                var_y += (y[i] - mean_y) * (y[i] - mean_y) / (double)m;
        if (rep_var > 0 && var_y > 0)
                return fmin(rep_var / var_y, 1.0);
        return 0;
}

/* the incumbent and EI's best: the lowest modelled objective among the safe points, not the
   luckiest run (the same as the lowest y where the fit has no noise) */
static void pick_incumbent(struct suggestion *s)
{
        const struct tuner_bo_point *pts = s->pts;
        size_t pick = SIZE_MAX;
        double pick_mean = INFINITY;

        for (size_t i = 0; i < s->n; i++) {
                double mu;
                if (pts[i].failed || !isfinite(pts[i].y) ||
                    tuner_gp_predict(s->objective, pts[i].x, &mu, NULL) < 0)
                        continue;
                mu += objective_prior(&s->acq, pts[i].x);
                if (!isfinite(mu))
                        continue;
                if (pick == SIZE_MAX ||
                    better_incumbent(s->over[i], mu, s->over[pick], pick_mean)) {
                        pick = i;
                        pick_mean = mu;
                }
        }
        if (pick != SIZE_MAX) {
                s->incumbent = pick;
                s->acq.best = pick_mean;
                s->pred.incumbent = pick;
                s->pred.best_y = pick_mean;
        }
}

/* the objective model: successes, and failures at a penalty if asked; with usage models, of
   what the usages' medians do not explain (the prior mean) */
static int fit_objective(struct suggestion *s, struct util_error *err)
{
        double noise_ratio_min = 0;
        size_t m = objective_rows(s);
        int r;

        if (m == SIZE_MAX) {
                s->acq.objective_prior = NULL; /* a usage unknown: no prior anywhere */
                m = objective_rows(s);         /* again without it: every prior is 0 */
        }
        if (m >= 2)
                noise_ratio_min = replicate_noise_ratio(s, m);
        r = tuner_gp_fit(s->objective, s->x, s->y, m,
                         &(struct tuner_gp_options){
                             .kernel = pick_kernel(s->opt->kernel, s->dims, s->n_objective),
                             .standardise = true,
                             .noise_ratio_min = noise_ratio_min},
                         err);
        if (r < 0)
                return r;
        pick_incumbent(s);
        return 0;
}

/* the failure model and the trust region's radius; with usage models, over the workload
   dimensions, of the failures the usages do not explain */
static int fit_failure(struct suggestion *s, struct util_error *err)
{
        const struct tuner_bo_options *opt = s->opt;
        const struct tuner_bo_point *pts = s->pts;
        size_t k_pts = 0;
        unsigned unexplained = 0;
        double radius;
        int r;

        if (!opt->safety)
                return 0;
        for (size_t i = 0; i < s->n; i++) {
                if (opt->usages && pts[i].usage_failure)
                        continue;
                /* a run that ran out of memory is the monotone rule's (and the rules'
                   floor's): in the failure model it also marked the partitions around it
                   unsafe, where more of them shrink the tasks */
                if (opt->monotone && pts[i].memory_failure)
                        continue;
                project(pts[i].x, s->dims, opt->usages ? opt->workload : 0,
                        s->x + k_pts * s->wdims);
                s->y[k_pts++] = pts[i].failed ? 1.0 : -1.0;
                unexplained += pts[i].failed;
        }
        struct tuner_gp_hyper prior = {.signal_variance = 1.0,
                                       .noise_variance = FAILURE_NOISE_PRIOR};
        double mean_ratio = 0;
        for (unsigned k = 0; k < s->wdims; k++) {
                prior.lengthscale[k] = FAILURE_LENGTHSCALE_PRIOR * s->wratio[k];
                mean_ratio += log(s->wratio[k]) / (double)s->wdims;
        }
        r = tuner_gp_fit(
            s->failure, s->x, s->y, k_pts,
            &(struct tuner_gp_options){
                .kernel = unexplained ? pick_kernel(opt->kernel, s->wdims, k_pts) : TUNER_GP_ARD,
                .standardise = false,
                .signal_variance = 1.0,
                .lengthscale_max =
                    fmax(FAILURE_LENGTHSCALE_MAX * exp(mean_ratio), FAILURE_LENGTHSCALE_MIN),
                .hyper = unexplained ? NULL : &prior},
            err);
        if (r < 0)
                return r;
        radius = opt->trust_initial * pow(opt->trust_growth, (double)s->safe - 2.0) /
                 pow(2.0, (double)unexplained);
        s->pred.trust_radius = clamp(radius, opt->trust_min, opt->trust_max);
        return 0;
}

/* the search box: the trust region around the incumbent (NAN radius without the safety
   model: none), raised to the floor; and the dead band around the incumbent */
static void search_box(struct suggestion *s)
{
        const struct tuner_bo_options *opt = s->opt;
        const double *incumbent = s->pts[s->incumbent].x;
        double radius = s->pred.trust_radius;
        bool limits_modelled = opt->usages > 0;
        unsigned limited = 0;

        /* every limited usage has a model (its usage was measured): the limits are theirs */
        for (unsigned j = 0; j < opt->usages && opt->usage_limit; j++) {
                double limit = opt->usage_limit(j, incumbent, opt->usage_userdata);
                if (isnan(limit) || limit == INFINITY)
                        continue;
                limited++;
                if (!s->usage[j].fitted)
                        limits_modelled = false;
        }
        limits_modelled = limits_modelled && limited > 0;
        for (unsigned k = 0; k < s->dims; k++) {
                double c = incumbent[k];
                /* with usage models, a limit's safety is theirs: no region along it */
                bool region = opt->safety &&
                              (!limits_modelled || !opt->workload || (opt->workload & (1u << k)));
                s->lo[k] = region ? fmax(opt->floor[k], c - radius * s->ratio[k]) : opt->floor[k];
                s->hi[k] = region ? fmin(1.0, c + radius * s->ratio[k]) : 1.0;
                if (s->hi[k] < s->lo[k]) /* the floor lies beyond the region: the floor wins */
                        s->hi[k] = s->lo[k];
        }
        s->acq.incumbent = incumbent;
        s->acq.dead_band = opt->dead_band;
        s->acq.lo = s->lo;
        s->acq.hi = s->hi;
}

/* EI's maximum in the box, snapped to the incumbent within the dead band */
static int run_ga(struct suggestion *s, double *ret_x, double *ret_fitness, struct util_error *err)
{
        const struct tuner_bo_point *pts = s->pts;
        size_t n_seeds;
        struct tuner_rng rng;
        double snapped[TUNER_BO_DIMS_MAX];
        int r;

        /* the incumbent first, then the other safe points: the GA starts from evidence */
        memcpy(s->seeds, pts[s->incumbent].x, s->dims * sizeof(double));
        n_seeds = 1;
        for (size_t i = 0; i < s->n && n_seeds < s->opt->ga.population / 2; i++)
                if (i != s->incumbent && !pts[i].failed)
                        memcpy(s->seeds + n_seeds++ * s->dims, pts[i].x, s->dims * sizeof(double));

        tuner_rng_seed(&rng, s->opt->seed);
        r = tuner_ga_maximise(&(struct tuner_ga_problem){.fitness = acquisition_fitness,
                                                         .userdata = &s->acq,
                                                         .dims = s->dims,
                                                         .lo = s->lo,
                                                         .hi = s->hi,
                                                         .seeds = s->seeds,
                                                         .n_seeds = n_seeds},
                              &s->opt->ga, &rng, ret_x, ret_fitness);
        if (r < 0)
                return util_error_set(err, -r, "bo: the genetic algorithm's options are invalid");
        snap(&s->acq, ret_x, snapped);
        memcpy(ret_x, snapped, sizeof(snapped));
        return 0;
}

/* the suggestion (the GA's best, or the incumbent when nothing improves) and what the
   models predict there */
static int predict(struct suggestion *s, double *best_x, double best_fit, struct util_error *err)
{
        struct tuner_bo_prediction *pred = &s->pred;
        double mean, var, prior_var;

        if (!(best_fit > EI_NEGLIGIBLE)) {
                /* nothing eligible, or nothing expected to improve: the best safe point */
                for (unsigned k = 0; k < s->dims; k++)
                        best_x[k] = clamp(s->pts[s->incumbent].x[k], s->lo[k], s->hi[k]);
                pred->fallback = true;
                pred->converged = best_fit >= 0;
                pred->ei = 0;
        } else
                pred->ei = best_fit;

        if (tuner_gp_predict(s->objective, best_x, &mean, &var) < 0)
                return util_error_set(err, EDOM, "bo: the objective model has no fit");
        pred->mean = mean + objective_prior_var(&s->acq, best_x, &prior_var);
        pred->sd = sqrt(var + prior_var);
        if (s->opt->safety) {
                pred->failure_probability = failure_probability(&s->acq, best_x);
                pred->usage_headroom = usage_headroom(&s->acq, best_x);
        }
        for (unsigned j = 0; j < TUNER_BO_USAGES_MAX; j++)
                if (j >= s->acq.usages ||
                    usage_predict(&s->acq, j, best_x, NULL, &pred->usage_ucb[j]) < 0)
                        pred->usage_ucb[j] = NAN;
        return 0;
}

int tuner_bo_suggest(const struct tuner_bo_point *pts, size_t n, unsigned dims,
                     const struct tuner_bo_options *opt, double *ret_x,
                     struct tuner_bo_prediction *ret_pred, struct util_error *err)
{
        struct tuner_bo_options defaults;
        _cleanup_(suggestion_done) struct suggestion s = {
            .pts = pts,
            .n = n,
            .dims = dims,
            .pred = {.failure_probability = NAN, .trust_radius = NAN, .usage_headroom = NAN},
        };
        double best_x[TUNER_BO_DIMS_MAX], best_fit;
        int r;

        if (!opt) {
                tuner_bo_options_default(&defaults);
                opt = &defaults;
        }
        s.opt = opt;
        if (!pts || !ret_x || dims == 0 || dims > TUNER_BO_DIMS_MAX)
                return util_error_set(err, EINVAL, "bo: %u dimensions; allowed 1..%d", dims,
                                      TUNER_BO_DIMS_MAX);
        r = check_input(&s, err);
        if (r >= 0)
                r = count_points(&s, err);
        if (r >= 0)
                r = prepare(&s, err);
        if (r >= 0)
                r = fit_usage_models(&s, err);
        if (r >= 0)
                r = fit_objective(&s, err);
        if (r >= 0)
                r = fit_failure(&s, err);
        if (r < 0)
                return r;
        search_box(&s);
        r = run_ga(&s, best_x, &best_fit, err);
        if (r >= 0)
                r = predict(&s, best_x, best_fit, err);
        if (r < 0)
                return r;

        memcpy(ret_x, best_x, dims * sizeof(double));
        if (ret_pred)
                *ret_pred = s.pred;
        return 0;
}
