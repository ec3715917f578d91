/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The genetic algorithm (ga.h): each generation keeps the elite, breeds children of two
 * tournaments (BLX-alpha crossover, Gaussian mutation) and lets uniform immigrants replace
 * the worst, so that a multi-modal fitness (EI often is) keeps a diverse population.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bo-internal.h"
#include "ga.h"
#include "util.h"

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

/* one run of the algorithm: the problem, its options and the two generations */
struct ga_run {
        const struct tuner_ga_problem *problem;
        const struct tuner_ga_options *opt;
        struct tuner_rng *rng;
        unsigned population, elite, tsize, bred;
        double mutation_rate;
        double *pop, *next, *fit, *next_fit; /* population x dims, population */
        unsigned *order;                     /* pop by fitness, best first */
};

static void ga_run_done(struct ga_run *g)
{
        free(g->pop);
        free(g->next);
        free(g->fit);
        free(g->next_fit);
        free(g->order);
}

static double safe_fitness(const struct tuner_ga_problem *p, const double *x)
{
        double f = p->fitness(x, p->userdata);
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

static bool valid(const struct tuner_ga_problem *p, const struct tuner_ga_options *opt)
{
        if (!p || !p->fitness || p->dims == 0 || p->dims > TUNER_GA_DIMS_MAX || !p->lo || !p->hi ||
            opt->population < 2 || opt->population > 4096 || opt->generations > 10000)
                return false;
        for (unsigned k = 0; k < p->dims; k++)
                if (!(p->lo[k] <= p->hi[k]) || !isfinite(p->lo[k]) || !isfinite(p->hi[k]))
                        return false;
        return true;
}

/* the first generation: the seeds, clamped into the box, then uniform draws */
static void first_generation(struct ga_run *g)
{
        const struct tuner_ga_problem *p = g->problem;
        const double *lo = p->lo, *hi = p->hi;
        unsigned dims = p->dims;

        for (unsigned i = 0; i < g->population; i++) {
                double *x = g->pop + (size_t)i * dims;
                for (unsigned k = 0; k < dims; k++)
                        x[k] = i < p->n_seeds ? clamp(p->seeds[(size_t)i * dims + k], lo[k], hi[k])
                                              : lo[k] + tuner_rng_uniform(g->rng) * (hi[k] - lo[k]);
                g->fit[i] = safe_fitness(p, x);
        }
}

/* order by fitness, best first; ties keep the lower index (stable) */
static void rank(struct ga_run *g)
{
        for (unsigned i = 0; i < g->population; i++) {
                unsigned j = i;
                while (j > 0 && g->fit[g->order[j - 1]] < g->fit[i]) {
                        g->order[j] = g->order[j - 1];
                        j--;
                }
                g->order[j] = i;
        }
}

/* a child of two tournaments' winners: BLX-alpha crossover, then Gaussian mutation */
static void breed(struct ga_run *g, double *child)
{
        const struct tuner_ga_problem *p = g->problem;
        const double *lo = p->lo, *hi = p->hi;
        unsigned dims = p->dims;
        const double *a =
            g->pop + (size_t)tournament(g->fit, g->population, g->tsize, g->rng) * dims;
        const double *b =
            g->pop + (size_t)tournament(g->fit, g->population, g->tsize, g->rng) * dims;
        bool cross = tuner_rng_uniform(g->rng) < g->opt->crossover_rate;

        for (unsigned k = 0; k < dims; k++) {
                double width = hi[k] - lo[k], v = a[k];
                if (cross) {
                        double l = fmin(a[k], b[k]), h = fmax(a[k], b[k]);
                        double d = g->opt->blend_alpha * (h - l);
                        v = (l - d) + tuner_rng_uniform(g->rng) * (h - l + 2 * d);
                }
                if (tuner_rng_uniform(g->rng) < g->mutation_rate)
                        v += tuner_rng_normal(g->rng) * g->opt->mutation_sd * width;
                child[k] = clamp(v, lo[k], hi[k]);
        }
}

/* next from pop: the elite unchanged, then the immigrants, then the children */
static void next_generation(struct ga_run *g)
{
        const struct tuner_ga_problem *p = g->problem;
        unsigned dims = p->dims;

        for (unsigned i = 0; i < g->elite; i++) {
                memcpy(g->next + (size_t)i * dims, g->pop + (size_t)g->order[i] * dims,
                       dims * sizeof(double));
                g->next_fit[i] = g->fit[g->order[i]];
        }
        for (unsigned i = g->bred; i < g->population; i++) {
                double *x = g->next + (size_t)i * dims;
                for (unsigned k = 0; k < dims; k++)
                        x[k] = p->lo[k] + tuner_rng_uniform(g->rng) * (p->hi[k] - p->lo[k]);
                g->next_fit[i] = safe_fitness(p, x);
        }
        for (unsigned i = g->elite; i < g->bred; i++) {
                double *child = g->next + (size_t)i * dims;
                breed(g, child);
                g->next_fit[i] = safe_fitness(p, child);
        }
}

int tuner_ga_maximise(const struct tuner_ga_problem *problem, const struct tuner_ga_options *opt,
                      struct tuner_rng *rng, double *ret_x, double *ret_fitness)
{
        struct tuner_ga_options defaults;
        _cleanup_(ga_run_done) struct ga_run g = {0};
        double best_x[TUNER_GA_DIMS_MAX], best_fit = -INFINITY;
        unsigned population, dims;
        bool have_best = false;

        if (!opt) {
                tuner_ga_options_default(&defaults);
                opt = &defaults;
        }
        if (!valid(problem, opt) || !rng || !ret_x)
                return -EINVAL;
        dims = problem->dims;
        population = opt->population;
        g = (struct ga_run){.problem = problem, .opt = opt, .rng = rng, .population = population};
        g.elite = opt->elite < population ? opt->elite : population - 1;
        g.tsize = opt->tournament ? opt->tournament : 1;
        /* immigrants keep the population diverse: EI is often multi-modal */
        g.bred = opt->immigrants < population - g.elite ? population - opt->immigrants : g.elite;
        g.mutation_rate = opt->mutation_rate > 0 ? opt->mutation_rate : 1.0 / dims;

        g.pop = malloc(sizeof(double) * population * dims);
        g.next = malloc(sizeof(double) * population * dims);
        g.fit = malloc(sizeof(double) * population);
        g.next_fit = malloc(sizeof(double) * population);
        g.order = malloc(sizeof(unsigned) * population);
        if (!g.pop || !g.next || !g.fit || !g.next_fit || !g.order)
                return -ENOMEM;

        first_generation(&g);
        for (unsigned gen = 0;; gen++) {
                rank(&g);
                if (!have_best || g.fit[g.order[0]] > best_fit) {
                        best_fit = g.fit[g.order[0]];
                        memcpy(best_x, g.pop + (size_t)g.order[0] * dims, dims * sizeof(double));
                        have_best = true;
                }
                if (gen == opt->generations)
                        break;
                next_generation(&g);
                {
                        double *t = g.pop;
                        g.pop = g.next;
                        g.next = t;
                        t = g.fit;
                        g.fit = g.next_fit;
                        g.next_fit = t;
                }
        }

        memcpy(ret_x, best_x, dims * sizeof(double));
        if (ret_fitness)
                *ret_fitness = best_fit;
        return 0;
}
