/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage 2, safe Bayesian optimisation (bo.h): a GP of log(objective), a GP of failure,
 * Expected Improvement maximised by a genetic algorithm inside a trust region around the
 * best safe run. docs/tuner-bo.md explains the choices and their sources.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo.h"
#include "gp.h"
#include "rules.h"
#include "util.h"

/* ---- random stream ---- */

static uint64_t splitmix64(uint64_t *state)
{
        uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
        return (x << k) | (x >> (64 - k));
}

void tuner_rng_seed(struct tuner_rng *rng, uint64_t seed)
{
        uint64_t state = seed;

        for (size_t i = 0; i < ELEMENTSOF(rng->s); i++)
                rng->s[i] = splitmix64(&state);
}

uint64_t tuner_rng_next(struct tuner_rng *rng)
{
        uint64_t *s = rng->s;
        uint64_t result = rotl(s[1] * 5, 7) * 9;
        uint64_t t = s[1] << 17;

        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
}

double tuner_rng_uniform(struct tuner_rng *rng)
{
        return (double)(tuner_rng_next(rng) >> 11) * 0x1.0p-53;
}

double tuner_rng_normal(struct tuner_rng *rng)
{
        double u1 = 1.0 - tuner_rng_uniform(rng); /* (0,1]: log is finite */
        double u2 = tuner_rng_uniform(rng);

        return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

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

/* ---- genetic algorithm ---- */

void tuner_ga_options_default(struct tuner_ga_options *opt)
{
        *opt = (struct tuner_ga_options){
            .population = 48,
            .generations = 40,
            .tournament = 3,
            .elite = 2,
            .immigrants = 6,
            .crossover_rate = 0.9,
            .blend_alpha = 0.5,
            .mutation_rate = 0,
            .mutation_sd = 0.1,
        };
}

static double clamp(double v, double lo, double hi)
{
        return v < lo ? lo : v > hi ? hi : v;
}

static double safe_fitness(double (*fitness)(const double *, void *), void *userdata,
                           const double *x)
{
        double f = fitness(x, userdata);
        return isnan(f) ? -INFINITY : f;
}

static unsigned tournament(const double *fit, unsigned population, unsigned size,
                           struct tuner_rng *rng)
{
        unsigned best = (unsigned)(tuner_rng_next(rng) % population);

        for (unsigned i = 1; i < size; i++) {
                unsigned c = (unsigned)(tuner_rng_next(rng) % population);
                if (fit[c] > fit[best])
                        best = c;
        }
        return best;
}

int tuner_ga_maximise(double (*fitness)(const double *x, void *userdata), void *userdata,
                      unsigned dims, const double *lo, const double *hi, const double *seeds,
                      size_t n_seeds, const struct tuner_ga_options *opt, struct tuner_rng *rng,
                      double *ret_x, double *ret_fitness)
{
        struct tuner_ga_options defaults;
        _cleanup_free_ double *pop = NULL, *next = NULL, *fit = NULL, *next_fit = NULL;
        _cleanup_free_ unsigned *order = NULL;
        double best_x[TUNER_BO_DIMS_MAX], best_fit = -INFINITY;
        unsigned population, elite, tsize, bred;
        double mutation_rate;
        bool have_best = false;

        if (!opt) {
                tuner_ga_options_default(&defaults);
                opt = &defaults;
        }
        if (!fitness || dims == 0 || dims > ELEMENTSOF(best_x) || !lo || !hi || !rng || !ret_x ||
            opt->population < 2 || opt->population > 4096 || opt->generations > 10000)
                return -EINVAL;
        for (unsigned k = 0; k < dims; k++)
                if (!(lo[k] <= hi[k]) || !isfinite(lo[k]) || !isfinite(hi[k]))
                        return -EINVAL;
        population = opt->population;
        elite = opt->elite < population ? opt->elite : population - 1;
        tsize = opt->tournament ? opt->tournament : 1;
        /* immigrants keep the population diverse: EI is often multi-modal */
        bred = opt->immigrants < population - elite ? population - opt->immigrants : elite;
        mutation_rate = opt->mutation_rate > 0 ? opt->mutation_rate : 1.0 / dims;

        pop = malloc(sizeof(double) * population * dims);
        next = malloc(sizeof(double) * population * dims);
        fit = malloc(sizeof(double) * population);
        next_fit = malloc(sizeof(double) * population);
        order = malloc(sizeof(unsigned) * population);
        if (!pop || !next || !fit || !next_fit || !order)
                return -ENOMEM;

        for (unsigned i = 0; i < population; i++) {
                double *x = pop + (size_t)i * dims;
                for (unsigned k = 0; k < dims; k++)
                        x[k] = i < n_seeds ? clamp(seeds[(size_t)i * dims + k], lo[k], hi[k])
                                           : lo[k] + tuner_rng_uniform(rng) * (hi[k] - lo[k]);
                fit[i] = safe_fitness(fitness, userdata, x);
        }

        for (unsigned gen = 0;; gen++) {
                /* order by fitness, best first; ties keep the lower index (stable) */
                for (unsigned i = 0; i < population; i++) {
                        unsigned j = i;
                        while (j > 0 && fit[order[j - 1]] < fit[i]) {
                                order[j] = order[j - 1];
                                j--;
                        }
                        order[j] = i;
                }
                if (!have_best || fit[order[0]] > best_fit) {
                        best_fit = fit[order[0]];
                        memcpy(best_x, pop + (size_t)order[0] * dims, dims * sizeof(double));
                        have_best = true;
                }
                if (gen == opt->generations)
                        break;

                for (unsigned i = 0; i < elite; i++) {
                        memcpy(next + (size_t)i * dims, pop + (size_t)order[i] * dims,
                               dims * sizeof(double));
                        next_fit[i] = fit[order[i]];
                }
                for (unsigned i = bred; i < population; i++) {
                        double *x = next + (size_t)i * dims;
                        for (unsigned k = 0; k < dims; k++)
                                x[k] = lo[k] + tuner_rng_uniform(rng) * (hi[k] - lo[k]);
                        next_fit[i] = safe_fitness(fitness, userdata, x);
                }
                for (unsigned i = elite; i < bred; i++) {
                        const double *a =
                            pop + (size_t)tournament(fit, population, tsize, rng) * dims;
                        const double *b =
                            pop + (size_t)tournament(fit, population, tsize, rng) * dims;
                        double *child = next + (size_t)i * dims;
                        bool cross = tuner_rng_uniform(rng) < opt->crossover_rate;

                        for (unsigned k = 0; k < dims; k++) {
                                double width = hi[k] - lo[k], v = a[k];
                                if (cross) {
                                        double l = fmin(a[k], b[k]), h = fmax(a[k], b[k]);
                                        double d = opt->blend_alpha * (h - l);
                                        v = (l - d) + tuner_rng_uniform(rng) * (h - l + 2 * d);
                                }
                                if (tuner_rng_uniform(rng) < mutation_rate)
                                        v += tuner_rng_normal(rng) * opt->mutation_sd * width;
                                child[k] = clamp(v, lo[k], hi[k]);
                        }
                        next_fit[i] = safe_fitness(fitness, userdata, child);
                }
                {
                        double *t = pop;
                        pop = next;
                        next = t;
                        t = fit;
                        fit = next_fit;
                        next_fit = t;
                }
        }

        memcpy(ret_x, best_x, dims * sizeof(double));
        if (ret_fitness)
                *ret_fitness = best_fit;
        return 0;
}

/* ---- safe BO over raw points ---- */

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

static void usage_models_free(struct usage_model (*models)[TUNER_BO_USAGES_MAX])
{
        for (unsigned j = 0; j < TUNER_BO_USAGES_MAX; j++)
                tuner_gp_free((*models)[j].gp);
}

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

int tuner_bo_suggest(const struct tuner_bo_point *pts, size_t n, unsigned dims,
                     const struct tuner_bo_options *opt, double *ret_x,
                     struct tuner_bo_prediction *ret_pred, struct util_error *err)
{
        struct tuner_bo_options defaults;
        _cleanup_(tuner_gp_freep) struct tuner_gp *objective = NULL, *failure = NULL;
        _cleanup_free_ double *x = NULL, *y = NULL, *seeds = NULL, *residual = NULL;
        _cleanup_free_ bool *over = NULL;
        double lo[TUNER_BO_DIMS_MAX], hi[TUNER_BO_DIMS_MAX], best_x[TUNER_BO_DIMS_MAX];
        double best_fit, max_y = -INFINITY, radius = NAN, mean, var;
        struct tuner_bo_prediction pred = {
            .failure_probability = NAN, .trust_radius = NAN, .usage_headroom = NAN};
        struct acquisition acq = {0};
        __attribute__((
            cleanup(usage_models_free))) struct usage_model usage[TUNER_BO_USAGES_MAX] = {0};
        unsigned wdims = 0, limited = 0;
        bool limits_modelled = opt && opt->usages > 0;
        struct tuner_rng rng;
        size_t n_objective = 0, n_seeds = 0, incumbent = SIZE_MAX, m;
        unsigned safe = 0, failed = 0;
        double ratio[TUNER_BO_DIMS_MAX], wratio[TUNER_BO_DIMS_MAX], noise_ratio_min = 0;
        int r;

        if (!opt) {
                tuner_bo_options_default(&defaults);
                opt = &defaults;
        }
        if (!pts || !ret_x || dims == 0 || dims > TUNER_BO_DIMS_MAX)
                return util_error_set(err, EINVAL, "bo: %u dimensions; allowed 1..%d", dims,
                                      TUNER_BO_DIMS_MAX);
        if (n > TUNER_BO_POINTS_MAX)
                return util_error_set(err, E2BIG, "bo: %zu points; at most %d", n,
                                      TUNER_BO_POINTS_MAX);
        if (opt->safety && !(opt->failure_bound > 0 && opt->failure_bound <= 1))
                return util_error_set(err, EINVAL, "bo: failure bound %g; allowed (0,1]",
                                      opt->failure_bound);
        for (size_t i = 0; i < n; i++)
                for (unsigned k = 0; k < dims; k++)
                        if (!(pts[i].x[k] >= 0 && pts[i].x[k] <= 1))
                                return util_error_set(err, EINVAL,
                                                      "bo: point %zu x[%u] = %g; must be in [0,1]",
                                                      i, k, pts[i].x[k]);
        for (unsigned k = 0; k < dims; k++)
                if (!(opt->floor[k] >= 0 && opt->floor[k] <= 1))
                        return util_error_set(err, EINVAL, "bo: floor[%u] = %g; allowed [0,1]", k,
                                              opt->floor[k]);

        for (size_t i = 0; i < n; i++) {
                if (pts[i].failed) {
                        failed++;
                        continue;
                }
                safe++;
                if (!isfinite(pts[i].y))
                        continue;
                n_objective++;
                if (pts[i].y > max_y)
                        max_y = pts[i].y;
                if (incumbent == SIZE_MAX || pts[i].y < pts[incumbent].y)
                        incumbent = i;
        }
        for (unsigned k = 0; k < dims; k++) {
                double step = opt->step[k] == 0 ? STEP_UNIT : opt->step[k];

                if (!(step > 0) || !isfinite(step))
                        return util_error_set(err, EINVAL,
                                              "bo: step[%u] = %g; must be > 0 (or 0: 0.1)", k,
                                              opt->step[k]);
                ratio[k] = step / STEP_UNIT;
        }
        if (opt->usages > TUNER_BO_USAGES_MAX || (opt->usages && !(opt->usage_noise > 0)) ||
            (opt->usages && !(opt->usage_beta >= 0)))
                return util_error_set(err, EINVAL,
                                      "bo: %u usage models (at most %d), noise %g (> 0), beta %g "
                                      "(>= 0)",
                                      opt->usages, TUNER_BO_USAGES_MAX, opt->usage_noise,
                                      opt->usage_beta);
        {
                double probe[TUNER_BO_DIMS_MAX] = {0}, w[TUNER_BO_DIMS_MAX];
                wdims = project(probe, dims, opt->usages ? opt->workload : 0, w);
        }
        if (n_objective < 2)
                return util_error_set(err, ENODATA,
                                      "bo: %zu successful points with an objective; need 2",
                                      n_objective);
        pred.incumbent = incumbent;
        pred.best_y = pts[incumbent].y;
        pred.safe_points = safe;
        pred.failed_points = failed;

        x = malloc(sizeof(double) * n * dims);
        y = malloc(sizeof(double) * n);
        seeds = malloc(sizeof(double) * n * dims);
        residual = malloc(sizeof(double) * n);
        over = calloc(n, sizeof(bool));
        objective = tuner_gp_new(dims);
        failure = tuner_gp_new(wdims);
        if (!x || !y || !seeds || !residual || !over || !objective || !failure)
                return util_error_set(err, ENOMEM, "bo: no memory for %zu points", n);

        acq = (struct acquisition){
            .pts = pts,
            .n = n,
            .dims = dims,
            .monotone = opt->monotone,
            .objective = objective,
            .failure = failure,
            .best = pts[incumbent].y,
            .xi = opt->xi,
            .bound = opt->failure_bound,
            .safety = opt->safety,
            .feasible = opt->feasible,
            .feasible_userdata = opt->feasible_userdata,
            .usages = opt->usages,
            .workload = opt->workload,
            .usage = usage,
            .beta = opt->usage_beta,
            .median_only = opt->usage_median,
            .in_objective = opt->usage_in_objective,
            .relative = opt->usage_relative,
            .usage_limit = opt->usage_limit,
            .objective_prior = opt->objective_prior,
            .usage_userdata = opt->usage_userdata,
        };

        for (unsigned k = 0; k < dims; k++)
                acq.margin[k] = opt->monotone_margin * ratio[k];
        project(ratio, dims, opt->usages ? opt->workload : 0, wratio);
        if (opt->usages && opt->workload && !(opt->workload & ((1u << dims) - 1)))
                wratio[0] = 1.0; /* no workload dimension: the constant coordinate */

        /* the usage models: log usage over the workload dimensions, fixed hyperparameters
           (a prior, not a fit: a few runs at one workload point identify no lengthscale);
           the noise at least usage_noise, more where replicates measured more */
        for (unsigned j = 0; j < opt->usages; j++) {
                double rep_var;

                for (size_t i = 0; i < n; i++)
                        y[i] = pts[i].usage[j] > 0 && isfinite(pts[i].usage[j])
                                   ? log(pts[i].usage[j])
                                   : NAN;
                rep_var = replicate_variance(pts, n, dims, opt->workload, y);
                struct tuner_gp_hyper hyper = {.signal_variance =
                                                   USAGE_SIGNAL_SD * USAGE_SIGNAL_SD};
                double sum = 0;

                usage[j].noise = opt->usage_noise;
                if (rep_var > usage[j].noise * usage[j].noise)
                        usage[j].noise = sqrt(rep_var);
                hyper.noise_variance = usage[j].noise * usage[j].noise;

                m = 0;
                for (size_t i = 0; i < n; i++) {
                        double u = pts[i].usage[j];
                        if (!(u > 0) || !isfinite(u))
                                continue;
                        project(pts[i].x, dims, opt->workload, x + m * wdims);
                        y[m] = log(u);
                        sum += y[m++];
                }
                if (m == 0)
                        continue;
                usage[j].centre = sum / (double)m;
                for (size_t i = 0; i < m; i++)
                        y[i] -= usage[j].centre;
                for (unsigned k = 0; k < wdims; k++)
                        hyper.lengthscale[k] = USAGE_LENGTHSCALE * wratio[k];
                usage[j].gp = tuner_gp_new(wdims);
                if (!usage[j].gp)
                        return util_error_set(err, ENOMEM, "bo: no memory for a usage model");
                r = tuner_gp_fit(usage[j].gp, x, y, m,
                                 &(struct tuner_gp_options){
                                     .kernel = TUNER_GP_ARD, .standardise = false, .hyper = &hyper},
                                 err);
                if (r < 0)
                        return r;
                usage[j].fitted = true;
        }

        /* the relative usages' floors: the lowest modelled median where nothing failed; and
           which points pass their own bound there (never the incumbent while one does not) */
        for (unsigned j = 0; j < opt->usages; j++) {
                acq.usage_floor[j] = NAN;
                if (!(opt->usage_relative & (1u << j)) || !usage[j].fitted)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        double median;
                        if (pts[i].failed || usage_predict(&acq, j, pts[i].x, &median, NULL) < 0)
                                continue;
                        if (!(median >= acq.usage_floor[j]))
                                acq.usage_floor[j] = median;
                }
        }
        for (size_t i = 0; i < n; i++) {
                over[i] = false;
                for (unsigned j = 0; j < opt->usages && opt->usage_limit && !over[i]; j++) {
                        double median, limit;
                        if (!(opt->usage_relative & (1u << j)) || pts[i].failed ||
                            usage_predict(&acq, j, pts[i].x, &median, NULL) < 0)
                                continue;
                        limit = limit_of(&acq, j, pts[i].x);
                        over[i] = isfinite(limit) && median > limit;
                }
        }

        /* the objective model: successes, and failures at a penalty if asked; with usage
           models, of what the usages' medians do not explain (the prior mean) */
        m = 0;
        for (size_t i = 0; i < n; i++) {
                bool penalised = pts[i].failed && opt->failure_penalty > 0;
                double prior;
                if (!penalised && (pts[i].failed || !isfinite(pts[i].y)))
                        continue;
                prior = objective_prior(&acq, pts[i].x);
                if (!isfinite(prior)) {
                        acq.objective_prior = NULL; /* a usage unknown: no prior anywhere */
                        i = SIZE_MAX;               /* start again without it */
                        m = 0;
                        continue;
                }
                memcpy(x + m * dims, pts[i].x, dims * sizeof(double));
                y[m++] = (penalised ? max_y + opt->failure_penalty : pts[i].y) - prior;
        }
        /* the noise the replicates measured, as a share of the data's variance: the fit may
           not call it signal (a lucky run is not a better configuration) */
        if (m >= 2) {
                double rep_var, mean_y = 0, var_y = 0;

                /* as the loop above filled y: penalised failures are in it, not residuals */
                for (size_t i = 0, k = 0; i < n; i++) {
                        bool penalised = pts[i].failed && opt->failure_penalty > 0;
                        bool in = penalised || (!pts[i].failed && isfinite(pts[i].y));
                        residual[i] = in && !penalised ? y[k] : NAN;
                        k += in;
                }
                rep_var = replicate_variance(pts, n, dims, 0, residual);

                for (size_t i = 0; i < m; i++)
                        mean_y += y[i] / (double)m;
                for (size_t i = 0; i < m; i++)
                        var_y += (y[i] - mean_y) * (y[i] - mean_y) / (double)m;
                if (rep_var > 0 && var_y > 0)
                        noise_ratio_min = fmin(rep_var / var_y, 1.0);
        }
        r = tuner_gp_fit(
            objective, x, y, m,
            &(struct tuner_gp_options){.kernel = pick_kernel(opt->kernel, dims, n_objective),
                                       .standardise = true,
                                       .noise_ratio_min = noise_ratio_min},
            err);
        if (r < 0)
                return r;
        /* the incumbent and EI's best: the lowest modelled objective among the safe points,
           not the luckiest run (the same as the lowest y where the fit has no noise) */
        {
                size_t pick = SIZE_MAX;
                double pick_mean = INFINITY;

                for (size_t i = 0; i < n; i++) {
                        double mu;
                        if (pts[i].failed || !isfinite(pts[i].y) ||
                            tuner_gp_predict(objective, pts[i].x, &mu, NULL) < 0)
                                continue;
                        mu += objective_prior(&acq, pts[i].x);
                        if (!isfinite(mu))
                                continue;
                        if (pick == SIZE_MAX ||
                            better_incumbent(over[i], mu, over[pick], pick_mean)) {
                                pick = i;
                                pick_mean = mu;
                        }
                }
                if (pick != SIZE_MAX) {
                        incumbent = pick;
                        acq.best = pick_mean;
                        pred.incumbent = incumbent;
                        pred.best_y = pick_mean;
                }
        }

        /* the failure model and the trust region; with usage models, over the workload
           dimensions, of the failures the usages do not explain */
        if (opt->safety) {
                size_t k_pts = 0;
                unsigned unexplained = 0;

                for (size_t i = 0; i < n; i++) {
                        if (opt->usages && pts[i].usage_failure)
                                continue;
                        /* a run that ran out of memory is the monotone rule's (and the
                           rules' floor's): in the failure model it also marked the partitions
                           around it unsafe, where more of them shrink the tasks */
                        if (opt->monotone && pts[i].memory_failure)
                                continue;
                        project(pts[i].x, dims, opt->usages ? opt->workload : 0, x + k_pts * wdims);
                        y[k_pts++] = pts[i].failed ? 1.0 : -1.0;
                        unexplained += pts[i].failed;
                }
                struct tuner_gp_hyper prior = {.signal_variance = 1.0,
                                               .noise_variance = FAILURE_NOISE_PRIOR};
                double mean_ratio = 0;
                for (unsigned k = 0; k < wdims; k++) {
                        prior.lengthscale[k] = FAILURE_LENGTHSCALE_PRIOR * wratio[k];
                        mean_ratio += log(wratio[k]) / (double)wdims;
                }
                r = tuner_gp_fit(
                    failure, x, y, k_pts,
                    &(struct tuner_gp_options){
                        .kernel =
                            unexplained ? pick_kernel(opt->kernel, wdims, k_pts) : TUNER_GP_ARD,
                        .standardise = false,
                        .signal_variance = 1.0,
                        .lengthscale_max = fmax(FAILURE_LENGTHSCALE_MAX * exp(mean_ratio),
                                                FAILURE_LENGTHSCALE_MIN),
                        .hyper = unexplained ? NULL : &prior},
                    err);
                if (r < 0)
                        return r;
                radius = opt->trust_initial * pow(opt->trust_growth, (double)safe - 2.0) /
                         pow(2.0, (double)unexplained);
                radius = clamp(radius, opt->trust_min, opt->trust_max);
        }
        /* every limited usage has a model (its usage was measured): the limits are theirs */
        for (unsigned j = 0; j < opt->usages && opt->usage_limit; j++) {
                double limit = opt->usage_limit(j, pts[incumbent].x, opt->usage_userdata);
                if (isnan(limit) || limit == INFINITY)
                        continue;
                limited++;
                if (!usage[j].fitted)
                        limits_modelled = false;
        }
        limits_modelled = limits_modelled && limited > 0;
        for (unsigned k = 0; k < dims; k++) {
                double c = pts[incumbent].x[k];
                /* with usage models, a limit's safety is theirs: no region along it */
                bool region = opt->safety &&
                              (!limits_modelled || !opt->workload || (opt->workload & (1u << k)));
                lo[k] = region ? fmax(opt->floor[k], c - radius * ratio[k]) : opt->floor[k];
                hi[k] = region ? fmin(1.0, c + radius * ratio[k]) : 1.0;
                if (hi[k] < lo[k]) /* the floor lies beyond the region: the floor wins */
                        hi[k] = lo[k];
        }
        pred.trust_radius = radius;
        acq.incumbent = pts[incumbent].x;
        acq.dead_band = opt->dead_band;
        acq.lo = lo;
        acq.hi = hi;

        /* the incumbent first, then the other safe points: the GA starts from evidence */
        memcpy(seeds, pts[incumbent].x, dims * sizeof(double));
        n_seeds = 1;
        for (size_t i = 0; i < n && n_seeds < opt->ga.population / 2; i++)
                if (i != incumbent && !pts[i].failed)
                        memcpy(seeds + n_seeds++ * dims, pts[i].x, dims * sizeof(double));

        tuner_rng_seed(&rng, opt->seed);
        r = tuner_ga_maximise(acquisition_fitness, &acq, dims, lo, hi, seeds, n_seeds, &opt->ga,
                              &rng, best_x, &best_fit);
        if (r < 0)
                return util_error_set(err, -r, "bo: the genetic algorithm's options are invalid");

        {
                double snapped[TUNER_BO_DIMS_MAX];
                snap(&acq, best_x, snapped);
                memcpy(best_x, snapped, sizeof(snapped));
        }
        if (!(best_fit > EI_NEGLIGIBLE)) {
                /* nothing eligible, or nothing expected to improve: the best safe point */
                for (unsigned k = 0; k < dims; k++)
                        best_x[k] = clamp(pts[incumbent].x[k], lo[k], hi[k]);
                pred.fallback = true;
                pred.converged = best_fit >= 0;
                pred.ei = 0;
        } else
                pred.ei = best_fit;

        r = tuner_gp_predict(objective, best_x, &mean, &var);
        if (r < 0)
                return util_error_set(err, EDOM, "bo: the objective model has no fit");
        {
                double prior_var;
                pred.mean = mean + objective_prior_var(&acq, best_x, &prior_var);
                pred.sd = sqrt(var + prior_var);
        }
        if (opt->safety) {
                pred.failure_probability = failure_probability(&acq, best_x);
                pred.usage_headroom = usage_headroom(&acq, best_x);
        }
        for (unsigned j = 0; j < TUNER_BO_USAGES_MAX; j++)
                if (j >= acq.usages || usage_predict(&acq, j, best_x, NULL, &pred.usage_ucb[j]) < 0)
                        pred.usage_ucb[j] = NAN;

        memcpy(ret_x, best_x, dims * sizeof(double));
        if (ret_pred)
                *ret_pred = pred;
        return 0;
}

/* ---- over runs: the mapping between struct tuner_params and the unit cube ---- */

#define MIB        (UINT64_C(1) << 20)
#define CANDIDATES (TUNER_P_COUNT - 1) /* every parameter but cores */

struct dimension {
        enum tuner_param_index param;
        double lo, hi; /* in the mapped space: ratio, log bytes, fraction, log partitions */
        int position;  /* in x, or -1 when left out */
};

struct mapping {
        uint32_t cores;
        struct dimension dim[CANDIDATES];
        unsigned dims;
        const struct tuner_bounds *bounds;
        struct tuner_params base; /* the newest run's: left-out values */
};

static bool known_bytes(uint64_t v)
{
        return v != 0 && v != TUNER_UNKNOWN;
}

static double log_bytes(uint64_t v)
{
        return v == 0 || v == TUNER_UNKNOWN ? NAN : log((double)v);
}

/* A run's value of a parameter in the mapped space; NAN when it has none usable. */
static double raw_value(const struct mapping *map, const struct tuner_params *p,
                        enum tuner_param_index param)
{
        const struct tuner_bounds *b = map->bounds;
        uint32_t cores = p->cores ? p->cores : map->cores;

        switch (param) {
        case TUNER_P_MILLICORES:
                if (p->millicores == 0 || p->millicores == TUNER_UNKNOWN)
                        return NAN;
                return (double)p->millicores / (1000.0 * cores);
        case TUNER_P_HEAP:
                return log_bytes(p->heap_bytes);
        case TUNER_P_OVERHEAD:
                return log_bytes(p->overhead_bytes ? p->overhead_bytes : b->overhead_min_bytes);
        case TUNER_P_BURST_RATIO:
                return isfinite(p->burst_ratio) ? p->burst_ratio : 0.0;
        case TUNER_P_SPILL_FRACTION:
                return isfinite(p->spill_fraction) ? p->spill_fraction : b->spill_fraction_max;
        case TUNER_P_PARTITIONS:
                return log((double)tuner_partitions(p));
        case TUNER_P_CORES:
        case TUNER_P_COUNT:
                break;
        }
        return NAN;
}

static double to_unit(const struct dimension *d, double raw)
{
        return clamp((raw - d->lo) / (d->hi - d->lo), 0.0, 1.0);
}

static double from_unit(const struct dimension *d, double u)
{
        return d->lo + clamp(u, 0.0, 1.0) * (d->hi - d->lo);
}

/*
 * Up to a whole MiB, but not for the last bits of a round trip: exp(log(512 MiB)) through
 * the unit cube comes back a few 1e-13 MiB above 512 MiB, and a plain ceil made it 513 MiB,
 * one more each run (issue 24: 1493m -> 1494m -> 1495m in the real loops). A millionth of
 * a MiB (one byte) is below any size anyone asks for and far above the round trip's error.
 */
#define MIB_ROUND_TRIP 1e-6
static uint64_t bytes_up_to_mib(double log_value, uint64_t lo, uint64_t hi)
{
        double v = ceil(exp(log_value) / (double)MIB - MIB_ROUND_TRIP) * (double)MIB;
        if (v < (double)lo)
                return lo;
        if (v > (double)hi)
                return hi;
        return (uint64_t)v;
}

/* x (the tuned dimensions) -> params, rounded and within the bounds */
static void decode(const struct mapping *map, const double *x, struct tuner_params *ret)
{
        const struct tuner_bounds *b = map->bounds;
        struct tuner_params p = map->base;

        p.cores = map->cores;
        for (unsigned i = 0; i < CANDIDATES; i++) {
                const struct dimension *d = &map->dim[i];
                double v;

                if (d->position < 0)
                        continue;
                v = from_unit(d, x[d->position]);
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        v = round(v * 1000.0 * map->cores);
                        p.millicores = (uint64_t)clamp(v, (double)b->millicores_min,
                                                       (double)b->millicores_max);
                        break;
                case TUNER_P_HEAP:
                        p.heap_bytes = bytes_up_to_mib(v, b->heap_min_bytes, b->heap_max_bytes);
                        break;
                case TUNER_P_OVERHEAD:
                        p.overhead_bytes =
                            bytes_up_to_mib(v, b->overhead_min_bytes, b->overhead_max_bytes);
                        break;
                case TUNER_P_BURST_RATIO:
                        p.burst_ratio = clamp(round(v * 1000) / 1000, 0, b->burst_ratio_max);
                        break;
                case TUNER_P_SPILL_FRACTION:
                        p.spill_fraction = clamp(round(v * 1000) / 1000, b->spill_fraction_min,
                                                 b->spill_fraction_max);
                        break;
                case TUNER_P_PARTITIONS:
                        p.shuffle_partitions =
                            (uint32_t)clamp(round(exp(v)), b->partitions_min, b->partitions_max);
                        break;
                case TUNER_P_CORES:
                case TUNER_P_COUNT:
                        break;
                }
        }
        *ret = p;
}

/*
 * Where x is still the best safe run's coordinate (the fallback, or a dimension the proposal
 * did not move), its exact value: decoding would round, and a value the tuner keeps must be
 * kept exactly. Unless the floor raised it or the bounds now exclude it.
 */
static void keep_incumbent(const struct mapping *map, const struct tuner_bo_point *point,
                           const double *x, const struct tuner_params *best,
                           struct tuner_params *ret)
{
        const struct tuner_bounds *b = map->bounds;

        for (unsigned i = 0; i < CANDIDATES; i++) {
                const struct dimension *d = &map->dim[i];

                if (d->position < 0 || x[d->position] != point->x[d->position])
                        continue;
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        if (best->cores == map->cores && best->millicores >= b->millicores_min &&
                            best->millicores <= b->millicores_max)
                                ret->millicores = best->millicores;
                        break;
                case TUNER_P_HEAP:
                        if (best->heap_bytes >= b->heap_min_bytes &&
                            best->heap_bytes <= b->heap_max_bytes)
                                ret->heap_bytes = best->heap_bytes;
                        break;
                case TUNER_P_OVERHEAD:
                        if (best->overhead_bytes >= b->overhead_min_bytes &&
                            best->overhead_bytes <= b->overhead_max_bytes)
                                ret->overhead_bytes = best->overhead_bytes;
                        break;
                case TUNER_P_BURST_RATIO:
                        if (best->burst_ratio >= 0 && best->burst_ratio <= b->burst_ratio_max)
                                ret->burst_ratio = best->burst_ratio;
                        break;
                case TUNER_P_SPILL_FRACTION:
                        if (best->spill_fraction >= b->spill_fraction_min &&
                            best->spill_fraction <= b->spill_fraction_max)
                                ret->spill_fraction = best->spill_fraction;
                        break;
                case TUNER_P_PARTITIONS:
                        if (best->shuffle_partitions >= b->partitions_min &&
                            best->shuffle_partitions <= b->partitions_max)
                                ret->shuffle_partitions = best->shuffle_partitions;
                        break;
                case TUNER_P_CORES:
                case TUNER_P_COUNT:
                        break;
                }
        }
}

/*
 * One step of the search (struct tuner_bo_options.step) per parameter, in the mapped units:
 * a tenth of the policy's default range, rounded to a physical figure, so that the default
 * bounds search as before and an admin's narrower or wider ones do not change the steps in
 * bytes, cores or partitions (issue 24: with the grid's bounds cpu-light ended at 2.44x, with
 * the policy's at 1.00-1.86x). The trust region starts at one step around the best run and
 * grows 1.15x a safe run; the models' prior lengthscales are 1.5 steps.
 */
static double physical_step(enum tuner_param_index param)
{
        switch (param) {
        case TUNER_P_MILLICORES:
                return 0.1; /* a tenth of a core per task slot */
        case TUNER_P_HEAP:
        case TUNER_P_OVERHEAD:
                return log(1.6); /* a factor 1.6 (512 MiB .. 64 GiB / 10: 1.62) */
        case TUNER_P_BURST_RATIO:
                return 0.1;
        case TUNER_P_SPILL_FRACTION:
                return 0.05;
        case TUNER_P_PARTITIONS:
                return log(10.0) / 2; /* half a decade, x3.16 (1 .. 100000 / 10) */
        case TUNER_P_CORES:
        case TUNER_P_COUNT:
                break;
        }
        return NAN;
}

/* the bits of the heap's and the partitions' positions in x */
static unsigned heap_and_partitions(const struct mapping *map)
{
        unsigned bits = 0;

        for (unsigned i = 0; i < CANDIDATES; i++)
                if (map->dim[i].position >= 0 &&
                    (map->dim[i].param == TUNER_P_HEAP || map->dim[i].param == TUNER_P_PARTITIONS))
                        bits |= 1u << map->dim[i].position;
        return bits ? bits : ~0u;
}

static bool memory_limit_feasible(const double *x, void *userdata)
{
        const struct mapping *map = userdata;
        struct tuner_params p;

        decode(map, x, &p);
        return p.heap_bytes + p.overhead_bytes <= map->bounds->memory_limit_max;
}

/*
 * The usage models of a run (docs/tuner-bo.md, "The usage models"), per executor: what the
 * objective's utilisations divide (average CPU in cores, the memory mem_util counts, MiB),
 * and what the limits bound (the 90th percentile of CPU in cores: cpu.max; the memory peak,
 * MiB: memory.max). None of them depends on the request while it stays under the limit.
 */
enum usage_index {
        USAGE_CPU = 0,
        USAGE_MEMORY,
        USAGE_CPU_P90,
        USAGE_MEMORY_PEAK,
        USAGE_DURATION, /* the run's wall time, s: bounded by its median (the run-time target) */
        USAGE_COUNT,
};
_Static_assert(USAGE_COUNT <= TUNER_BO_USAGES_MAX, "TUNER_BO_USAGES_MAX too small");

static double positive_or_nan(double v)
{
        return v > 0 && isfinite(v) ? v : NAN;
}

static double request_mib(const struct tuner_params *p)
{
        double burst = isfinite(p->burst_ratio) ? p->burst_ratio : 0.0;
        return ((double)p->heap_bytes + (double)p->overhead_bytes * (1.0 - burst)) / (double)MIB;
}

static void usages_of(const struct tuner_run *r, double usage[TUNER_BO_USAGES_MAX])
{
        double cores = r->params.millicores && r->params.millicores != TUNER_UNKNOWN
                           ? (double)r->params.millicores / 1000.0
                           : NAN;

        usage[USAGE_CPU] = positive_or_nan(r->cpu_util * cores);
        usage[USAGE_MEMORY] = positive_or_nan(r->mem_util * request_mib(&r->params));
        usage[USAGE_CPU_P90] = positive_or_nan(r->cpu_peak_util * cores);
        usage[USAGE_MEMORY_PEAK] =
            known_bytes(r->memory_peak_bytes) ? (double)r->memory_peak_bytes / (double)MIB : NAN;
        /* a run that failed ended early or was retried: its wall time says nothing of the
           configuration's (a 20 s OOM would drag the fastest modelled median down) */
        usage[USAGE_DURATION] = r->failure == TUNER_OK || r->failure == TUNER_FAIL_RUNTIME
                                    ? positive_or_nan(r->duration_seconds)
                                    : NAN;
}

/*
 * A failure the usage models explain: the memory peak reached memory.max (a kernel OOM
 * kill's peak is the limit), or the run was slow with its p90 CPU at the CPU limit or
 * throttled. USAGE_AT_LIMIT: a peak sampled within 5 % of a limit counts as at it.
 */
#define USAGE_AT_LIMIT 0.95
static bool usage_failure_of(const struct tuner_run *r, double cpu_limit_ratio)
{
        double limit = (double)r->params.heap_bytes + (double)r->params.overhead_bytes;

        switch (r->failure) {
        case TUNER_FAIL_OOM:
        case TUNER_FAIL_EXECUTOR_LOST:
                return (r->oom_kills && r->oom_kills != TUNER_UNKNOWN) ||
                       (known_bytes(r->memory_peak_bytes) &&
                        (double)r->memory_peak_bytes >= USAGE_AT_LIMIT * limit);
        case TUNER_FAIL_RUNTIME:
                return r->cpu_peak_util >= USAGE_AT_LIMIT * cpu_limit_ratio ||
                       r->throttled_fraction >= TUNER_RULES_THROTTLED_HIGH;
        case TUNER_OK:
        case TUNER_FAIL_TASKS:
        case TUNER_FAIL_APP:
                break;
        }
        return false;
}

struct usage_context {
        const struct mapping *map;
        double cpu_limit_ratio;
        double runtime_target; /* the run-time bound's factor; NAN: no run time known */
};

static double usage_limit(unsigned j, const double *x, void *userdata)
{
        const struct usage_context *c = userdata;
        struct tuner_params p;

        decode(c->map, x, &p);
        switch (j) {
        case USAGE_CPU_P90:
                return (double)p.millicores / 1000.0 * c->cpu_limit_ratio;
        case USAGE_MEMORY_PEAK:
                return ((double)p.heap_bytes + (double)p.overhead_bytes) / (double)MIB;
        case USAGE_DURATION:
                return c->runtime_target; /* x the fastest modelled median (usage_relative) */
        default:
                return NAN;
        }
}

/*
 * The memory limit no larger than the peak's upper bound needs, at the same request. The
 * objective counts the request (heap + overhead x (1 - burst)); a larger limit is as safe by
 * the usage models and costs the objective nothing, so nothing in EI keeps it down, and the
 * first loop on real Spark with these models got 16 GiB of overhead at a burst ratio of 0.99
 * for a job that peaks under 1 GiB: a node's worth of memory that may be taken at once.
 * The overhead drops to the peak's UCB - heap (never under the floor or the bounds), and
 * with BURST the ratio follows so that the request stays what the GA chose. true when
 * changed.
 */
static bool tighten_limit(struct tuner_params *p, double peak_ucb_mib,
                          const struct tuner_params *floor, const struct tuner_bounds *b,
                          bool burst)
{
        double heap = (double)p->heap_bytes, overhead = (double)p->overhead_bytes;
        double ratio = isfinite(p->burst_ratio) ? p->burst_ratio : 0.0;
        double request = heap + overhead * (1.0 - ratio), need;
        uint64_t to;

        if (!(peak_ucb_mib > 0) || !isfinite(peak_ucb_mib))
                return false;
        need = fmax(peak_ucb_mib * (double)MIB - heap, 0.0);
        to = (uint64_t)ceil(need / (double)MIB) * MIB;
        if (to < b->overhead_min_bytes)
                to = b->overhead_min_bytes;
        if (floor && floor->overhead_bytes != TUNER_UNKNOWN && to < floor->overhead_bytes)
                to = floor->overhead_bytes;
        if (to >= p->overhead_bytes)
                return false;
        p->overhead_bytes = to;
        if (burst && to > 0)
                p->burst_ratio = clamp(round((1.0 - (request - heap) / (double)to) * 1000) / 1000,
                                       0, b->burst_ratio_max);
        return true;
}

/* the log objective of x with the usages' medians (ByteDance's f, each utilisation capped) */
static double usage_objective(const double *x, const double *median, void *userdata)
{
        const struct usage_context *c = userdata;
        struct tuner_params p;
        double cpu, mem;

        decode(c->map, x, &p);
        cpu = median[USAGE_CPU] * 1000.0 / (double)p.millicores;
        mem = median[USAGE_MEMORY] / request_mib(&p);
        if (!(cpu > 0) || !(mem > 0))
                return NAN;
        return -log(fmin(cpu, 1.0)) - log(fmin(mem, 1.0));
}

static const char *param_name(enum tuner_param_index p)
{
        static const char *const names[TUNER_P_COUNT] = {
            [TUNER_P_CORES] = "cores",
            [TUNER_P_MILLICORES] = "millicores",
            [TUNER_P_HEAP] = "heap",
            [TUNER_P_OVERHEAD] = "overhead",
            [TUNER_P_BURST_RATIO] = "burst_ratio",
            [TUNER_P_SPILL_FRACTION] = "spill_fraction",
            [TUNER_P_PARTITIONS] = "shuffle_partitions",
        };
        return p < TUNER_P_COUNT ? names[p] : "?";
}

static void format_value(const struct tuner_params *p, enum tuner_param_index param, char *buf,
                         size_t size)
{
        switch (param) {
        case TUNER_P_CORES:
                snprintf(buf, size, "%" PRIu32, p->cores);
                break;
        case TUNER_P_MILLICORES:
                snprintf(buf, size, "%" PRIu64 "m", p->millicores);
                break;
        case TUNER_P_HEAP:
                snprintf(buf, size, "%" PRIu64 "MiB", p->heap_bytes / MIB);
                break;
        case TUNER_P_OVERHEAD:
                snprintf(buf, size, "%" PRIu64 "MiB", p->overhead_bytes / MIB);
                break;
        case TUNER_P_BURST_RATIO:
                snprintf(buf, size, "%.3f", p->burst_ratio);
                break;
        case TUNER_P_SPILL_FRACTION:
                snprintf(buf, size, "%.3f", p->spill_fraction);
                break;
        case TUNER_P_PARTITIONS:
                snprintf(buf, size, "%" PRIu32, p->shuffle_partitions);
                break;
        case TUNER_P_COUNT:
                buf[0] = '\0';
                break;
        }
}

static void set_reason(struct tuner_reason *r, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_reason(struct tuner_reason *r, const char *source, const char *fmt, ...)
{
        va_list ap;

        snprintf(r->source, sizeof(r->source), "%s", source);
        va_start(ap, fmt);
        vsnprintf(r->text, sizeof(r->text), fmt, ap);
        va_end(ap);
}

static int build_mapping(struct mapping *map, const struct tuner_run *runs, size_t n,
                         const struct tuner_bounds *b, unsigned fixed)
{
        double cores_1000;

        *map = (struct mapping){.bounds = b, .base = runs[0].params};
        map->cores = 1;
        for (size_t i = 0; i < n; i++)
                if (runs[i].params.cores) {
                        map->cores = runs[i].params.cores;
                        break;
                }
        cores_1000 = 1000.0 * map->cores;

        for (unsigned i = 0; i < CANDIDATES; i++) {
                struct dimension *d = &map->dim[i];
                double seen_lo = INFINITY, seen_hi = -INFINITY;
                bool any = false;

                d->param = (enum tuner_param_index)(TUNER_P_MILLICORES + i);
                d->position = -1;
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        /* a request above the task slots buys nothing but GC headroom: up
                           to cores x 1000, or the most a run had */
                        d->lo = (double)b->millicores_min / cores_1000;
                        d->hi = 1.0;
                        for (size_t j = 0; j < n; j++)
                                d->hi = fmax(d->hi, raw_value(map, &runs[j].params, d->param));
                        d->hi = fmin(d->hi, (double)b->millicores_max / cores_1000);
                        break;
                case TUNER_P_HEAP:
                        d->lo = log_bytes(b->heap_min_bytes);
                        d->hi = log_bytes(b->heap_max_bytes);
                        break;
                case TUNER_P_OVERHEAD:
                        d->lo = log_bytes(b->overhead_min_bytes);
                        d->hi = log_bytes(b->overhead_max_bytes);
                        break;
                case TUNER_P_BURST_RATIO:
                        d->lo = 0;
                        d->hi = b->burst_ratio_max;
                        break;
                case TUNER_P_SPILL_FRACTION:
                        d->lo = b->spill_fraction_min;
                        d->hi = b->spill_fraction_max;
                        break;
                case TUNER_P_PARTITIONS:
                        d->lo = log(b->partitions_min ? (double)b->partitions_min : 1.0);
                        d->hi = log(b->partitions_max ? (double)b->partitions_max : 1.0);
                        break;
                case TUNER_P_CORES:
                case TUNER_P_COUNT:
                        break;
                }
                if (!(d->hi > d->lo) || !isfinite(d->lo) || !isfinite(d->hi))
                        continue; /* the bounds leave nothing to choose */

                for (size_t j = 0; j < n; j++) {
                        double v;
                        if (d->param == TUNER_P_SPILL_FRACTION &&
                            !isfinite(runs[j].params.spill_fraction))
                                continue;
                        v = raw_value(map, &runs[j].params, d->param);
                        if (!isfinite(v))
                                continue;
                        v = to_unit(d, v);
                        seen_lo = fmin(seen_lo, v);
                        seen_hi = fmax(seen_hi, v);
                        any = true;
                }
                /* an agent threshold no run set stays unset */
                if (d->param == TUNER_P_SPILL_FRACTION && !any)
                        continue;
                if ((fixed & (1u << d->param)) && seen_hi - seen_lo < 1e-9)
                        continue;
                d->position = (int)map->dims++;
        }
        return map->dims ? 0 : -ENODATA;
}

int tuner_bo_recommend_with(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                            const struct tuner_params *floor,
                            const struct tuner_bo_recommend_options *opt,
                            struct tuner_recommendation *ret, struct util_error *err)
{
        _cleanup_free_ struct tuner_bo_point *pts = NULL;
        _cleanup_free_ size_t *run_of = NULL;
        struct tuner_bo_options bo;
        struct tuner_bo_prediction pred;
        struct tuner_recommendation rec = {0};
        struct mapping map;
        struct usage_context usage;
        double x[TUNER_BO_DIMS_MAX];
        const struct tuner_run *best;
        size_t m = 0;
        char before[64], after[64], summary[440];
        bool tightened = false;
        int r;

        if (!runs || !b || !ret)
                return util_error_set(err, EINVAL, "bo: no runs, bounds or result");
        if (n == 0)
                return util_error_set(err, ENODATA, "bo: no runs; need 2 successful ones");
        if (n > TUNER_BO_POINTS_MAX)
                n = TUNER_BO_POINTS_MAX; /* the newest */

        if (opt && opt->bo)
                bo = *opt->bo;
        else {
                tuner_bo_options_default(&bo);
                bo.seed = b->seed;
                if (b->failure_bound > 0 && b->failure_bound <= 1)
                        bo.failure_bound = b->failure_bound;
        }

        r = build_mapping(&map, runs, n, b, opt ? opt->fixed : 0);
        if (r < 0)
                return util_error_set(err, ENODATA,
                                      "bo: no parameter left to tune (bounds fixed or history "
                                      "never varies)");

        usage = (struct usage_context){.map = &map, .cpu_limit_ratio = NAN};
        for (size_t j = 0; j < n && !isfinite(usage.cpu_limit_ratio); j++)
                if (runs[j].cpu_limit_ratio >= 1 && isfinite(runs[j].cpu_limit_ratio))
                        usage.cpu_limit_ratio = runs[j].cpu_limit_ratio;
        if (!isfinite(usage.cpu_limit_ratio))
                usage.cpu_limit_ratio = TUNER_RULES_CPU_OVERCOMMIT; /* as the rules take it */
        /* the run-time constraint: the median run within runtime_target x the job's fastest
           configuration's median (issue 24: utilisation alone rewards a slower run that uses
           more of the same request) */
        usage.runtime_target = NAN;
        if (b->runtime_target >= 1 && isfinite(b->runtime_target) &&
            isfinite(tuner_fastest_duration(runs, n)))
                usage.runtime_target = b->runtime_target;

        pts = calloc(n, sizeof(*pts));
        run_of = calloc(n, sizeof(*run_of));
        if (!pts || !run_of)
                return util_error_set(err, ENOMEM, "bo: no memory for %zu runs", n);
        for (size_t j = 0; j < n; j++) {
                struct tuner_bo_point *p = &pts[m];
                bool usable = true;

                for (unsigned i = 0; i < CANDIDATES; i++) {
                        const struct dimension *d = &map.dim[i];
                        double v;
                        if (d->position < 0)
                                continue;
                        v = raw_value(&map, &runs[j].params, d->param);
                        if (!isfinite(v)) {
                                usable = false;
                                break;
                        }
                        p->x[d->position] = to_unit(d, v);
                }
                if (!usable)
                        continue;
                p->failed = runs[j].failure != TUNER_OK;
                /* as the rules read it: an executor lost of unknown cause counts as memory */
                p->memory_failure = runs[j].failure == TUNER_FAIL_OOM ||
                                    runs[j].failure == TUNER_FAIL_EXECUTOR_LOST;
                /* a Java heap OOM (no kernel OOM kill): the heap ran out, not the limit */
                if (p->memory_failure && runs[j].oom_task_failures > 0 &&
                    !(runs[j].oom_kills && runs[j].oom_kills != TUNER_UNKNOWN))
                        p->monotone_in = heap_and_partitions(&map);
                usages_of(&runs[j], p->usage);
                p->usage_failure = usage_failure_of(&runs[j], usage.cpu_limit_ratio);
                p->y = !p->failed && isfinite(runs[j].objective) && runs[j].objective > 0
                           ? log(runs[j].objective)
                           : NAN;
                run_of[m++] = j;
        }

        /* the floor, in the unit cube; the bounds win over it */
        for (unsigned i = 0; i < CANDIDATES; i++) {
                const struct dimension *d = &map.dim[i];
                double v = NAN;
                if (d->position < 0 || !floor)
                        continue;
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        if (floor->millicores && floor->millicores != TUNER_UNKNOWN)
                                v = (double)floor->millicores / (1000.0 * map.cores);
                        break;
                case TUNER_P_HEAP:
                        v = log_bytes(floor->heap_bytes);
                        break;
                case TUNER_P_OVERHEAD:
                        v = log_bytes(floor->overhead_bytes);
                        break;
                case TUNER_P_BURST_RATIO:
                        v = floor->burst_ratio > 0 ? floor->burst_ratio : NAN;
                        break;
                case TUNER_P_SPILL_FRACTION:
                        v = floor->spill_fraction;
                        break;
                case TUNER_P_PARTITIONS:
                        v = floor->shuffle_partitions ? log((double)floor->shuffle_partitions)
                                                      : NAN;
                        break;
                case TUNER_P_CORES:
                case TUNER_P_COUNT:
                        break;
                }
                bo.floor[d->position] = isfinite(v) ? fmax(bo.floor[d->position], to_unit(d, v))
                                                    : bo.floor[d->position];
        }
        /* memory is monotone: less than what ran out of memory runs out too, and so do
           fewer shuffle partitions (larger tasks); a run with more partitions than one that
           ran out of memory is not ruled out by it (issue 24: skew's Java heap OOM at 1g and
           2 partitions ruled out 1g at 8, the best safe point) */
        for (unsigned i = 0; i < CANDIDATES; i++)
                if (map.dim[i].position >= 0 &&
                    (map.dim[i].param == TUNER_P_HEAP || map.dim[i].param == TUNER_P_OVERHEAD ||
                     map.dim[i].param == TUNER_P_PARTITIONS))
                        bo.monotone |= 1u << map.dim[i].position;
        if (b->memory_limit_max) {
                bo.feasible = memory_limit_feasible;
                bo.feasible_userdata = &map;
        }
        /* the rules' dead band: a change below 5 % of a value (0.05 of a ratio) is none */
        for (unsigned i = 0; i < CANDIDATES; i++) {
                const struct dimension *d = &map.dim[i];
                double width = d->hi - d->lo, band;
                if (d->position < 0)
                        continue;
                switch (d->param) {
                case TUNER_P_MILLICORES:
                        band = TUNER_RULES_DEAD_BAND * raw_value(&map, &runs[0].params, d->param);
                        break;
                case TUNER_P_HEAP:
                case TUNER_P_OVERHEAD:
                case TUNER_P_PARTITIONS:
                        band = log(1.0 + TUNER_RULES_DEAD_BAND);
                        break;
                default:
                        band = TUNER_RULES_DEAD_BAND;
                        break;
                }
                if (isfinite(band) && width > 0)
                        bo.dead_band[d->position] = band / width;
                /* the search's step in physical terms, whatever the admin's bounds */
                if (width > 0 && !(bo.step[d->position] > 0))
                        bo.step[d->position] = physical_step(d->param) / width;
        }
        /* the runs' usage models (bo.usages 0; a caller's own usage callbacks would not know
           the runs); what changes the job's work is heap, spill threshold and partitions, the
           rest are limits on it */
        if (bo.usages == 0) {
                bo.usages = USAGE_COUNT;
                bo.workload = 0;
                for (unsigned i = 0; i < CANDIDATES; i++)
                        if (map.dim[i].position >= 0 &&
                            (map.dim[i].param == TUNER_P_HEAP ||
                             map.dim[i].param == TUNER_P_SPILL_FRACTION ||
                             map.dim[i].param == TUNER_P_PARTITIONS))
                                bo.workload |= 1u << map.dim[i].position;
                bo.usage_limit = usage_limit;
                bo.usage_median = bo.usage_relative = 1u << USAGE_DURATION;
                bo.usage_in_objective = (1u << USAGE_CPU) | (1u << USAGE_MEMORY);
                bo.objective_prior = usage_objective;
                bo.usage_userdata = &usage;
        }

        r = tuner_bo_suggest(pts, m, map.dims, &bo, x, &pred, err);
        if (r == -ENODATA)
                return util_error_set(err, ENODATA,
                                      "bo: %zu of %zu runs usable, fewer than 2 successful "
                                      "with an objective",
                                      m, n);
        if (r < 0)
                return r;

        decode(&map, x, &rec.params);
        keep_incumbent(&map, &pts[pred.incumbent], x, &runs[run_of[pred.incumbent]].params,
                       &rec.params);
        if (map.dim[TUNER_P_OVERHEAD - 1].position >= 0)
                tightened = tighten_limit(&rec.params, pred.usage_ucb[USAGE_MEMORY_PEAK], floor, b,
                                          map.dim[TUNER_P_BURST_RATIO - 1].position >= 0);
        /* rounding up to MiB may cross the limit: take it off the heap */
        if (b->memory_limit_max &&
            rec.params.heap_bytes + rec.params.overhead_bytes > b->memory_limit_max &&
            b->memory_limit_max > rec.params.overhead_bytes + b->heap_min_bytes)
                rec.params.heap_bytes =
                    (b->memory_limit_max - rec.params.overhead_bytes) / MIB * MIB;

        rec.stage = TUNER_STAGE_BO;
        rec.converged = pred.converged;
        rec.predicted_objective = exp(pred.mean);
        rec.failure_probability = pred.failure_probability;
        rec.runs_used = (unsigned)m;
        best = &runs[run_of[pred.incumbent]];

        if (pred.fallback)
                snprintf(summary, sizeof(summary),
                         "%s: best safe run %s kept (objective %.4g), predicted objective %.4g "
                         "(log %.3f +- %.3f), P(fail) %.3f, trust radius %.3f, %u safe / %u "
                         "failed runs",
                         pred.converged
                             ? "no candidate with EI > 0 (converged)"
                             : "no eligible candidate (P(fail) at or above the bound, or "
                               "less memory than an OOM run)",
                         best->app_id, exp(pred.best_y), rec.predicted_objective, pred.mean,
                         pred.sd, pred.failure_probability, pred.trust_radius, pred.safe_points,
                         pred.failed_points);
        else
                snprintf(summary, sizeof(summary),
                         "EI %.3g, predicted objective %.4g (log %.3f +- %.3f) vs best %.4g "
                         "(run %s), P(fail) %.3f < %.3g, usage bound / limit %.3f, trust radius "
                         "%.3f, %u safe / %u failed runs",
                         pred.ei, rec.predicted_objective, pred.mean, pred.sd, exp(pred.best_y),
                         best->app_id, pred.failure_probability, bo.failure_bound,
                         pred.usage_headroom, pred.trust_radius, pred.safe_points,
                         pred.failed_points);

        for (unsigned p = 0; p < TUNER_P_COUNT; p++) {
                const struct dimension *d = p == TUNER_P_CORES ? NULL : &map.dim[p - 1];

                format_value(&runs[0].params, (enum tuner_param_index)p, before, sizeof(before));
                format_value(&rec.params, (enum tuner_param_index)p, after, sizeof(after));
                if (!d)
                        set_reason(&rec.reasons[p], "unchanged",
                                   "cores %s: not tuned by stage 2 (the newest run's)", after);
                else if (d->position < 0)
                        set_reason(&rec.reasons[p], "unchanged",
                                   "%s %s: not tuned (bounds leave no choice, never set, or the "
                                   "same in every run and marked fixed)",
                                   param_name(d->param), after);
                else
                        set_reason(&rec.reasons[p], "bo", "%s %s -> %s: %s", param_name(d->param),
                                   before, after, summary);
        }
        if (tightened) {
                struct tuner_reason *o = &rec.reasons[TUNER_P_OVERHEAD];
                size_t len = strlen(o->text);

                snprintf(o->text + len, sizeof(o->text) - len,
                         "; limit lowered to the memory peak's bound %.0f MiB, the request kept",
                         pred.usage_ucb[USAGE_MEMORY_PEAK]);
        }

        *ret = rec;
        return 0;
}

int tuner_bo_recommend(const struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                       const struct tuner_params *floor, struct tuner_recommendation *ret,
                       struct util_error *err)
{
        return tuner_bo_recommend_with(runs, n, b, floor, NULL, ret, err);
}
