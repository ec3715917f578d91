/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/tune-offline: tuner against tuner on a grid of real measured runs (issue 13,
 * docs/tuner.md "Tuner against tuner"). The grid is one job's runs measured over a grid of
 * settings (bench/tune/grid), as `sparkshim report --job KEY --json` prints them. Each
 * tuner starts from the grid's oversized start, proposes the next settings from the history
 * so far, and "runs" the grid point nearest to them (in the tuner's own coordinates: CPU per
 * core, log heap, log overhead, burst ratio, spill fraction, log partitions); its measured
 * run joins the history. Compared side by side over many seeds: the best safe objective
 * after k runs and the failed runs suggested.
 *
 * usage: tune-offline GRID.jsonl [--runs K] [--seeds N] [--allowance A]
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bo.h"
#include "rules.h"
#include "tuner.h"

#define RUNS_MAX 64

enum tuner_kind { T_RULES, T_BO_SAFE, T_BO_UNSAFE, T_TWO_STAGE, T_RANDOM, T_COUNT };
static const char *const kind_names[T_COUNT] = {"rules only", "BO (safe)", "BO without safety",
                                                "two-stage", "random search"};

struct grid {
        struct tuner_run *runs;
        size_t n;
        size_t start; /* the oversized start: the most memory and CPU requested */
};

static uint64_t rng_state;
static bool trace; /* --trace: each step of each tuner's first seed */

static uint64_t next_random(void)
{
        /* splitmix64: the simulation's own stream, apart from the tuner's */
        uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static void coords(const struct tuner_params *p, double x[6])
{
        x[0] =
            p->cores ? (double)p->millicores / (1000.0 * p->cores) : (double)p->millicores / 1000.0;
        x[1] = log2((double)(p->heap_bytes ? p->heap_bytes : 1));
        x[2] = log2((double)(p->overhead_bytes ? p->overhead_bytes : 1));
        x[3] = p->burst_ratio;
        x[4] = isfinite(p->spill_fraction) ? p->spill_fraction : 1.0;
        x[5] = log2(1.0 + (p->shuffle_partitions ? p->shuffle_partitions : 200));
}

/*
 * The grid point a recommendation runs. Per coordinate, a value that differs from the
 * current run's goes at least one grid step that way (a grid coarser than the tuner's steps
 * must not hold it in place), then the nearest point to that.
 */
static size_t nearest(const struct grid *g, const struct tuner_params *p,
                      const struct tuner_params *cur)
{
        double want[6], now[6], best = INFINITY;
        size_t at = 0;

        coords(p, want);
        coords(cur, now);
        for (int k = 0; k < 6; k++) {
                double step = INFINITY, pick = want[k];

                if (fabs(want[k] - now[k]) < 1e-9)
                        continue;
                /* the grid value on want's side of now that is nearest to want, or the first step
                 */
                for (size_t i = 0; i < g->n; i++) {
                        double x[6];

                        coords(&g->runs[i].params, x);
                        if ((want[k] < now[k] && x[k] < now[k] - 1e-9) ||
                            (want[k] > now[k] && x[k] > now[k] + 1e-9)) {
                                double d = fabs(x[k] - want[k]);
                                if (d < step) {
                                        step = d;
                                        pick = x[k];
                                }
                        }
                }
                want[k] = pick;
        }
        for (size_t i = 0; i < g->n; i++) {
                double x[6], d = 0;

                coords(&g->runs[i].params, x);
                for (int k = 0; k < 6; k++)
                        d += (x[k] - want[k]) * (x[k] - want[k]);
                if (d < best) {
                        best = d;
                        at = i;
                }
        }
        return at;
}

static int load(const char *path, struct grid *g)
{
        FILE *f = fopen(path, "re");
        char *line = NULL;
        size_t cap = 0, lineno = 0;
        double most = -1;

        if (!f) {
                fprintf(stderr, "tune-offline: %s: %s\n", path, strerror(errno));
                return -errno;
        }
        *g = (struct grid){0};
        while (getline(&line, &cap, f) > 0) {
                struct shim_error err = {0};
                json_error_t jerr;
                json_t *doc;
                struct tuner_run run;

                lineno++;
                doc = json_loads(line, 0, &jerr);
                if (!doc || tuner_run_from_json(doc, &run, &err) < 0) {
                        fprintf(stderr, "tune-offline: %s:%zu: %s\n", path, lineno,
                                doc ? err.text : jerr.text);
                        json_decref(doc);
                        free(line);
                        fclose(f);
                        return -EINVAL;
                }
                json_decref(doc);
                g->runs = realloc(g->runs, (g->n + 1) * sizeof(*g->runs));
                if (!g->runs)
                        abort();
                g->runs[g->n++] = run;
        }
        free(line);
        fclose(f);
        for (size_t i = 0; i < g->n; i++) {
                double size = (double)g->runs[i].params.heap_bytes +
                              (double)g->runs[i].params.overhead_bytes +
                              (double)g->runs[i].params.millicores * 1e6;
                if (size > most) {
                        most = size;
                        g->start = i;
                }
        }
        return g->n ? 0 : -ENODATA;
}

/* One tuning episode: the history newest first; returns the failed runs suggested and fills
 * best[k] (the best safe objective after k runs beyond the start). */
static unsigned episode(const struct grid *g, enum tuner_kind kind, const struct tuner_bounds *base,
                        uint64_t seed, unsigned runs, double allowance, double *best)
{
        struct tuner_run hist[RUNS_MAX];
        struct tuner_bounds b = *base;
        size_t n = 0;
        unsigned failures = 0;
        double so_far = INFINITY;

        b.seed = seed;
        rng_state = seed * UINT64_C(7919) + 1;
        hist[n++] = g->runs[g->start];
        if (hist[0].failure == TUNER_OK && isfinite(hist[0].objective))
                so_far = hist[0].objective;
        for (unsigned k = 1; k <= runs && n < RUNS_MAX; k++) {
                struct tuner_recommendation rec;
                struct tuner_bo_recommend_options fixed = {.fixed = 1u << TUNER_P_CORES};
                struct shim_error err = {0};
                struct tuner_run work[RUNS_MAX];
                size_t pick;
                int r = -ENODATA;

                memcpy(work, hist, n * sizeof(hist[0]));
                tuner_mark_runtime(work, n, allowance);
                switch (kind) {
                case T_RULES:
                        r = tuner_rules_recommend(work, n, &b, &rec);
                        break;
                case T_TWO_STAGE:
                        r = tuner_recommend(work, n, &b, &rec, &err);
                        break;
                case T_BO_SAFE:
                        r = tuner_bo_recommend_with(work, n, &b, NULL, &fixed, &rec, &err);
                        break;
                case T_BO_UNSAFE: {
                        struct tuner_bo_options bo;
                        struct tuner_bo_recommend_options unsafe = fixed;

                        tuner_bo_options_default(&bo);
                        bo.seed = seed;
                        bo.safety = false;
                        unsafe.bo = &bo;
                        r = tuner_bo_recommend_with(work, n, &b, NULL, &unsafe, &rec, &err);
                        break;
                }
                default:
                        break;
                }
                if (r == 0)
                        pick = nearest(g, &rec.params, &hist[0].params);
                else
                        pick = (size_t)(next_random() %
                                        g->n); /* random search, or too little history */
                memmove(hist + 1, hist, n * sizeof(hist[0]));
                hist[0] = g->runs[pick];
                snprintf(hist[0].app_id, sizeof(hist[0].app_id), "sim-%u", k);
                hist[0].start_ms = (int64_t)k * 1000;
                n++;
                memcpy(work, hist, n * sizeof(hist[0]));
                tuner_mark_runtime(work, n, allowance);
                if (trace && seed == 1)
                        printf("  %-18s run %2u: %s (millicores %" PRIu64 ", heap %" PRIu64
                               "m, overhead %" PRIu64
                               "m, burst %.2f) cpu %.2f mem %.2f objective %.3f %s; asked: %s\n",
                               kind_names[kind], k, g->runs[pick].app_id, hist[0].params.millicores,
                               hist[0].params.heap_bytes >> 20, hist[0].params.overhead_bytes >> 20,
                               hist[0].params.burst_ratio, hist[0].cpu_util, hist[0].mem_util,
                               hist[0].objective, tuner_failure_name(work[0].failure),
                               r == 0 ? (rec.stage == TUNER_STAGE_BO ? "bo" : "rules") : "random");
                if (trace && seed == 1 && r == 0)
                        printf("  %-18s         asked for millicores %" PRIu64 ", heap %" PRIu64
                               "m, overhead %" PRIu64 "m, burst %.2f, partitions %" PRIu32
                               ", spill %.2f\n",
                               kind_names[kind], rec.params.millicores, rec.params.heap_bytes >> 20,
                               rec.params.overhead_bytes >> 20, rec.params.burst_ratio,
                               rec.params.shuffle_partitions, rec.params.spill_fraction);
                if (trace && seed == 1 && r == 0 && rec.stage == TUNER_STAGE_BO)
                        printf("  %-18s         %s\n", kind_names[kind],
                               rec.reasons[TUNER_P_OVERHEAD].text);
                if (work[0].failure != TUNER_OK)
                        failures++;
                else if (isfinite(work[0].objective) && work[0].objective < so_far)
                        so_far = work[0].objective;
                best[k] = so_far;
        }
        return failures;
}

static uint64_t umin(uint64_t a, uint64_t b)
{
        return a < b ? a : b;
}

static uint64_t umax(uint64_t a, uint64_t b)
{
        return a > b ? a : b;
}

static int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        struct grid g = {0};
        struct tuner_bounds b;
        unsigned runs = 10, seeds = 50;
        double allowance = 1.5, grid_best = INFINITY;
        const char *path = NULL;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
                        runs = (unsigned)strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
                        seeds = (unsigned)strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--trace") == 0)
                        trace = true;
                else if (strcmp(argv[i], "--allowance") == 0 && i + 1 < argc)
                        allowance = strtod(argv[++i], NULL);
                else if (!path && argv[i][0] != '-')
                        path = argv[i];
                else {
                        fprintf(stderr, "usage: tune-offline GRID.jsonl [--runs K] [--seeds N] "
                                        "[--allowance A]\n");
                        return 120;
                }
        }
        if (!path || runs < 1 || runs >= RUNS_MAX || seeds < 1) {
                fprintf(
                    stderr,
                    "usage: tune-offline GRID.jsonl [--runs K<%d] [--seeds N] [--allowance A]\n",
                    RUNS_MAX);
                return 120;
        }
        if (load(path, &g) < 0)
                return 1;
        tuner_bounds_default(&b);
        b.runtime_allowance = allowance;
        /* the admin's bounds are what the grid can run: a tuner asked for a burst ratio of 1
           or 64 GiB of heap would be measured at another point than it chose */
        b.millicores_min = b.heap_min_bytes = b.overhead_min_bytes = UINT64_MAX;
        b.millicores_max = b.heap_max_bytes = b.overhead_max_bytes = 0;
        b.burst_ratio_max = 0;
        b.partitions_min = UINT32_MAX;
        b.partitions_max = 0;
        for (size_t i = 0; i < g.n; i++) {
                const struct tuner_params *p = &g.runs[i].params;
                uint32_t parts = p->shuffle_partitions ? p->shuffle_partitions : 200;

                b.millicores_min = umin(b.millicores_min, p->millicores);
                b.millicores_max = umax(b.millicores_max, p->millicores);
                b.heap_min_bytes = umin(b.heap_min_bytes, p->heap_bytes);
                b.heap_max_bytes = umax(b.heap_max_bytes, p->heap_bytes);
                b.overhead_min_bytes = umin(b.overhead_min_bytes, p->overhead_bytes);
                b.overhead_max_bytes = umax(b.overhead_max_bytes, p->overhead_bytes);
                b.burst_ratio_max = fmax(b.burst_ratio_max, p->burst_ratio);
                b.partitions_min = (uint32_t)umin(b.partitions_min, parts);
                b.partitions_max = (uint32_t)umax(b.partitions_max, parts);
        }
        {
                struct tuner_run *all = calloc(g.n + 1, sizeof(*all));
                /* the grid's best safe point, with the runtime allowance against the start */
                if (!all)
                        return 124;
                for (size_t i = 0; i < g.n; i++) {
                        struct tuner_run pair[2] = {g.runs[i], g.runs[g.start]};
                        tuner_mark_runtime(pair, 2, allowance);
                        if (pair[0].failure == TUNER_OK && isfinite(pair[0].objective) &&
                            pair[0].objective < grid_best)
                                grid_best = pair[0].objective;
                }
                free(all);
        }
        printf("grid %s: %zu points, start %s (objective %.3f), best safe objective %.3f\n", path,
               g.n, g.runs[g.start].app_id, g.runs[g.start].objective, grid_best);
        printf("%-18s %10s %10s %10s %10s %9s %12s %10s\n", "tuner", "best@1", "best@3", "best@5",
               "best@K", "ratio@K", "within10%", "failures");
        for (int kind = 0; kind < T_COUNT; kind++) {
                double *at = calloc((size_t)seeds * (runs + 1), sizeof(double));
                double col[4][1024];
                unsigned ks[4] = {1, 3, 5, runs}, within = 0;
                double failures = 0;

                if (!at || seeds > 1024)
                        return 124;
                for (unsigned s = 0; s < seeds; s++) {
                        double *best = at + (size_t)s * (runs + 1);
                        failures +=
                            episode(&g, (enum tuner_kind)kind, &b, s + 1, runs, allowance, best);
                        within += best[runs] <= 1.1 * grid_best;
                        for (int c = 0; c < 4; c++)
                                col[c][s] = best[ks[c] <= runs ? ks[c] : runs];
                }
                for (int c = 0; c < 4; c++)
                        qsort(col[c], seeds, sizeof(double), compare_double);
                printf("%-18s %10.3f %10.3f %10.3f %10.3f %9.3f %11.0f%% %10.2f\n",
                       kind_names[kind], col[0][seeds / 2], col[1][seeds / 2], col[2][seeds / 2],
                       col[3][seeds / 2], col[3][seeds / 2] / grid_best, 100.0 * within / seeds,
                       failures / seeds);
                free(at);
        }
        printf("best@k: median over %u seeds of the best safe objective (lower is better) after k "
               "runs beyond the start; "
               "ratio: to the grid's best; within10%%: seeds at most 1.1 x the grid's best after "
               "%u runs; failures: mean failed runs suggested in %u\n",
               seeds, runs, runs);
        free(g.runs);
        return 0;
}
