/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/tune-offline: tuner against tuner on real measured runs (issue 24, docs/tuner-bench.md
 * "Tuner against tuner"). The data: one job's runs measured at each workload point (heap x
 * shuffle partitions) of bench/tune/grid, several times (the replicates), as `sparkshim report
 * --job KEY --json` prints them (bench/tune/grid-runs --measured). On this host only the heap
 * and the partitions change what a run does; millicores, overhead and burst ratio change the
 * request the utilisations are computed against and the limits a host that enforces them
 * applies. So a tuner's proposal is run by snapping only its heap and partitions to a measured
 * point (round_to_axis: a coin per run by default, one world a seed with --world-per-seed),
 * drawing one of that point's replicates (the noise a tuner sees), and deriving that
 * run exactly at the millicores, overhead and burst ratio asked: cpu_util x 1000 / M,
 * mem_util x the measured request / the asked one, an OOM kill where the measured memory peak
 * passes heap + overhead, a throttled run (failure "runtime") where the p90 CPU passes the
 * CPU limit (2 x the request).
 *
 * A configuration is judged on the medians of its replicates, never one run: its objective
 * (1 / (cpu_util x mem_util), each capped at 1), and it is *safe* when no replicate failed,
 * the medians of the p90 CPU and of the memory peak keep >= 10 % headroom under their limits,
 * the median run time is within 1.1 x the job's fastest good point's, and (unless
 * --no-work-bound) the median CPU it burns, core-seconds, within 1.1 x the least of a good
 * point's (issue 24, defect 4: more partitions burn more CPU for the same output, which reads
 * as a higher cpu_util of the same request; stage 2 keeps the same bound). Reserved cost: the
 * request held for the run, core-seconds + GiB-seconds / 4 (a core priced as 4 GiB, the
 * general-purpose instances' ratio). The reference: the best safe objective and the least
 * safe cost over a fine lattice of the derived axes (millicores every 25, overhead every
 * 64 MiB, burst ratio every 0.05) at every measured point within the bounds.
 *
 * usage: tune-offline [--runs K] [--seeds N] [--start-partitions P]... [--bounds policy|grid]
 *                     [--first-seed S] [--strict-runtime] [--no-work-bound] [--world-per-seed]
 *                     [--record-ask]
 *                     [--after-gc READINGS.runs]... [--heap-margin] [--spread] [--trace SEED]
 *                     JOB.runs...
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <lapacke.h>

#include "bo.h"
#include "rules.h"
#include "tuner.h"
#include "util.h"

#define RUNS_MAX     64 /* runs of an episode, replicates of a point, points of a grid */
#define SEEDS_MAX    1024
#define MIB          (UINT64_C(1) << 20)
#define GIB          (UINT64_C(1) << 30)
#define HEADROOM     1.10 /* a limit at least 10 % above the median usage */
#define RUNTIME_MAX  1.10 /* the median run within 1.1 x the fastest good point's */
#define CPU_LIMIT    2.0  /* cpu.max / request (the policy's default overcommit) */
#define GIB_PER_CORE 4.0  /* reserved cost: a core is priced as 4 GiB */
#define CORES        1    /* the grid's executors have one core each */

enum tuner_kind { T_RULES, T_BO_SAFE, T_BO_UNSAFE, T_TWO_STAGE, T_RANDOM, T_VPA, T_COUNT };
static const char *const kind_names[T_COUNT] = {"rules only", "BO (safe)",     "BO without safety",
                                                "two-stage",  "random search", "VPA-like"};

/* one measured workload point and its replicates */
struct point {
        uint64_t heap;
        uint32_t parts;
        struct tuner_run *reps;
        unsigned *session; /* each replicate's: the index of the file it was read from */
        size_t n;
        double duration;    /* median over the replicates */
        bool failed;        /* a replicate failed as measured */
        bool within_bounds; /* its run time (and work) within their bounds */
        double work;        /* median core-seconds of its successful replicates */
        double work_fitted; /* the additive model's work */
        double fitted;      /* the additive model's run time (runtime_model) */
        bool clear_of_oom;  /* --heap-margin: its heap >= HEADROOM x every heap that ran out of
                               memory at its partitions or more */
};

struct world {
        struct point *pts;
        size_t n;
        double fastest;        /* the median run time of the fastest point where nothing failed */
        double sd_log;         /* the residual sd of log run time about the additive model */
        double fastest_fitted; /* the least fitted run time of a point where nothing failed */
        double least_work;     /* the least median core-seconds of a good point within the
                                  run-time bound */
        double sd_log_work;    /* the residual sd of log work about its additive model */
        double least_work_fitted; /* the least fitted work of such a point */
};

struct score {
        bool failed, safe;
        double objective, core_s, gib_s, cost;
};

static struct tuner_rng rng; /* the simulation's own stream (replicate draws, random search) */
static uint64_t trace;       /* --trace SEED: each step of that seed's episodes */

static uint64_t next_random(void)
{
        return tuner_rng_next(&rng);
}

static double uniform(void)
{
        return tuner_rng_uniform(&rng);
}

static double request_bytes(const struct tuner_params *p)
{
        return (double)p->heap_bytes + (double)p->overhead_bytes * (1.0 - p->burst_ratio);
}

/* ---- the data ---- */

/* the measured point at HEAP and PARTS, or NULL */
static struct point *point_at(const struct world *w, uint64_t heap, uint32_t parts)
{
        for (size_t i = 0; i < w->n; i++)
                if (w->pts[i].heap == heap && w->pts[i].parts == parts)
                        return &w->pts[i];
        return NULL;
}

static int add_run(struct world *w, const struct tuner_run *run, unsigned session)
{
        struct point *p = point_at(w, run->params.heap_bytes, tuner_partitions(&run->params));
        if (!p && w->n >= RUNS_MAX) {
                fprintf(stderr, "tune-offline: more than %d measured points\n", RUNS_MAX);
                return -E2BIG;
        }
        if (!p) {
                struct point *grown = realloc(w->pts, (w->n + 1) * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                w->pts = grown;
                p = &w->pts[w->n++];
                *p = (struct point){.heap = run->params.heap_bytes,
                                    .parts = tuner_partitions(&run->params)};
        }
        if (p->n >= RUNS_MAX) {
                fprintf(stderr, "tune-offline: more than %d replicates of a point\n", RUNS_MAX);
                return -E2BIG;
        }
        {
                struct tuner_run *grown = realloc(p->reps, (p->n + 1) * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                p->reps = grown;
        }
        {
                unsigned *grown = realloc(p->session, (p->n + 1) * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                p->session = grown;
        }
        p->reps[p->n] = *run;
        p->session[p->n++] = session;
        return 0;
}

static int load(const char *path, unsigned session, struct world *w)
{
        FILE *f = fopen(path, "re");
        char *line = NULL;
        size_t cap = 0, lineno = 0;
        int r = 0;

        if (!f) {
                fprintf(stderr, "tune-offline: %s: %s\n", path, strerror(errno));
                return -errno;
        }
        while (r == 0 && getline(&line, &cap, f) > 0) {
                struct util_error err = {0};
                json_error_t jerr;
                json_t *doc;
                struct tuner_run run;

                lineno++;
                doc = json_loads(line, 0, &jerr);
                if (!doc || tuner_run_from_json(doc, &run, &err) < 0) {
                        fprintf(stderr, "tune-offline: %s:%zu: %s\n", path, lineno,
                                doc ? err.text : jerr.text);
                        r = -EINVAL;
                } else if (run.params.millicores != 1000 || run.params.burst_ratio != 0) {
                        fprintf(stderr,
                                "tune-offline: %s:%zu: measured at %" PRIu64
                                "m, burst %g; the derivation needs 1000m and burst 0\n",
                                path, lineno, run.params.millicores, run.params.burst_ratio);
                        r = -EINVAL;
                } else {
                        /* "runtime" is the history's verdict (slower than 1.5 x the first good
                           run of the grid as it was ingested), not the run's: each episode's
                           own history judges it again (tuner_mark_runtime) */
                        if (run.failure == TUNER_FAIL_RUNTIME) {
                                run.failure = TUNER_OK;
                                run.failure_detail[0] = '\0';
                        }
                        r = add_run(w, &run, session);
                }
                json_decref(doc);
        }
        free(line);
        fclose(f);
        return r;
}

/*
 * --after-gc FILE: the agent's heap in use after GC (heap_after_gc_peak_bytes), measured at the
 * grid's points in a session of its own, for grids measured before the agent's heap source was
 * on (the stage-2 floor and the rules' partitions hold read it: tuner_rules_heap_step_floor,
 * heap_tight). A replicate without a reading takes one of its point's: of a run that completed
 * for one that completed, of one that failed for one that failed, else of the other outcome
 * (counted: a run that ran out read the live data as far as it got), the i-th replicate the
 * (i mod n)-th, so no draw of the simulation's stream moves. Only the reading is taken: the
 * session's run times and failures are not the grid's. A point with none stays unknown, as a
 * run without the agent's heap source does. One session gives one reading a point, so the
 * replicates of a point share it: the benchmark has none of the reading's own noise.
 */
struct after_gc_count {
        size_t points, runs, crossed, unmatched;
};

static void attach_after_gc(struct world *w, const struct world *readings,
                            struct after_gc_count *ret)
{
        *ret = (struct after_gc_count){0};
        for (size_t j = 0; j < readings->n; j++)
                ret->unmatched += !point_at(w, readings->pts[j].heap, readings->pts[j].parts);
        for (size_t i = 0; i < w->n; i++) {
                struct point *p = &w->pts[i];
                const struct point *q = point_at(readings, p->heap, p->parts);
                bool took = false;

                for (size_t k = 0; q && k < p->n; k++) {
                        uint64_t same[RUNS_MAX], any[RUNS_MAX];
                        size_t ns = 0, na = 0;
                        bool ok = p->reps[k].failure == TUNER_OK;

                        if (p->reps[k].heap_after_gc_peak_bytes != TUNER_UNKNOWN)
                                continue;
                        for (size_t m = 0; m < q->n; m++) {
                                uint64_t v = q->reps[m].heap_after_gc_peak_bytes;

                                if (v == TUNER_UNKNOWN || v == 0)
                                        continue;
                                any[na++] = v;
                                if ((q->reps[m].failure == TUNER_OK) == ok)
                                        same[ns++] = v;
                        }
                        if (na == 0)
                                continue;
                        p->reps[k].heap_after_gc_peak_bytes = ns ? same[k % ns] : any[k % na];
                        ret->runs++;
                        ret->crossed += ns == 0;
                        took = true;
                }
                ret->points += took;
        }
}

/*
 * The run-time constraint, "the median run within 1.1 x the fastest good point's". Literal
 * (--strict-runtime): the medians of 2-3 runs, whose log differs by an sd of 0.14-0.2
 * between identical runs on this shared host (and more between days), against the least of
 * 20 such medians: that least is biased low by the winner's curse, and points as fast in
 * truth fail it. By default each point's run time is the fit of an additive model of log run
 * time, a term per heap, a term per partition count and a term per session (additive_fit), and
 * the constraint compares the fits without the session's term: the noise of one point's
 * replicates and the hour it was measured in no longer decide, the heap's and the
 * partitions' effects do.
 * The work bound (the core-seconds, work_of, within 1.1 x the least of a good point's) is
 * judged the same way: on the fits of the same model of log work by default, on the medians
 * with --strict-runtime.
 */
static bool strict_runtime;
/*
 * --heap-margin: a point is safe only when its heap is at least HEADROOM x the largest heap
 * that ran out of memory (a replicate's OOM or lost executor, as measured) at its partitions
 * or more: the 10 % headroom the safety target asks under every other limit, applied to the
 * heap, whose need only an OOM measures (a JVM fills the heap it is given). Fewer partitions
 * make larger tasks, so an OOM at more partitions bounds the need at fewer. The proposed
 * target of docs/tuner-bench.md; off by default.
 */
static bool heap_margin;
static bool work_bound = true; /* --no-work-bound: the definition, run time alone */

/* a measured run's work, core-seconds, as stage 2 takes it (bo-runs.c, USAGE_WORK): the
   executors' CPU seconds when every good replicate of the grid has them (job_cpu, set by
   summarise), else the executor's average CPU x the run's wall time: one figure a grid */
static bool job_cpu;
static double work_of(const struct tuner_run *r)
{
        if (job_cpu)
                return r->cpu_seconds;
        return r->cpu_util * (double)r->params.millicores / 1000.0 * r->duration_seconds;
}

/* a replicate's figure the additive model fits: its run time, or its work (core-seconds) */
static double figure_of(const struct tuner_run *r, bool work)
{
        double v = work ? work_of(r) : r->duration_seconds;
        return r->failure == TUNER_OK && v > 0 && isfinite(v) ? v : NAN;
}

/*
 * The additive model of log figure, a term per heap, a term per partition count and a term
 * per session (the file a replicate was read from: one `bench/tune/grid --shuffle` run, its
 * points in a random order, so that a host's drift within it is noise), fitted by
 * backfitting over every successful replicate: each point's fit, without the session's term,
 * in fitted[]; returns the residual sd of the log. The session's term is a block effect:
 * grids measured on other days or hours ran at other speeds (skew's finer heaps, measured in
 * a faster hour, read 960m at 8 partitions as 17 % faster than 1g there), and points
 * measured in one session only would carry it as their heap's or partitions' effect. It is
 * told apart where sessions share points; the terms sum to zero over the runs.
 */
static double additive_fit(const struct world *w, bool work, double *fitted)
{
        double a[RUNS_MAX] = {0}, b[RUNS_MAX] = {0}, c[RUNS_MAX] = {0}, squares = 0;
        uint64_t heaps[RUNS_MAX];
        uint32_t parts[RUNS_MAX];
        size_t nh = 0, np = 0, ns = 0, hi[RUNS_MAX], pi[RUNS_MAX], rows = 0, rank = 0;
        /* the successful replicates, each read once: its log figure and its three levels
           (main() keeps the sessions under RUNS_MAX) */
        struct obs {
                double y;
                size_t level[3]; /* heap, partition count, session */
        } *obs = calloc((size_t)RUNS_MAX * RUNS_MAX, sizeof(*obs));

        if (!obs) {
                fprintf(stderr, "tune-offline: out of memory\n");
                exit(1);
        }
        for (size_t i = 0; i < w->n && i < RUNS_MAX; i++) {
                size_t k;
                for (k = 0; k < nh && heaps[k] != w->pts[i].heap; k++)
                        ;
                if (k == nh)
                        heaps[nh++] = w->pts[i].heap;
                hi[i] = k;
                for (k = 0; k < np && parts[k] != w->pts[i].parts; k++)
                        ;
                if (k == np)
                        parts[np++] = w->pts[i].parts;
                pi[i] = k;
                for (size_t j = 0; j < w->pts[i].n; j++) {
                        double v = figure_of(&w->pts[i].reps[j], work);

                        if (isnan(v))
                                continue;
                        obs[rows++] = (struct obs){log(v), {hi[i], pi[i], w->pts[i].session[j]}};
                        if (w->pts[i].session[j] + 1 > ns)
                                ns = w->pts[i].session[j] + 1;
                }
        }

        /* the terms the runs determine: the rank of the design (a column per heap, partition
           count and session with runs, a row per run); two less than the columns when the
           sessions share enough points to be told apart from the heaps and the partitions */
        size_t col[3][RUNS_MAX], levels = 0;

        for (size_t f = 0; f < 3; f++)
                for (size_t k = 0; k < RUNS_MAX; k++)
                        col[f][k] = SIZE_MAX;
        for (size_t r = 0; r < rows; r++)
                for (size_t f = 0; f < 3; f++)
                        if (col[f][obs[r].level[f]] == SIZE_MAX)
                                col[f][obs[r].level[f]] = levels++;
        if (rows > 0) {
                double *x = calloc(rows * levels, sizeof(*x)), *sv = calloc(levels, sizeof(*sv));

                if (!x || !sv) {
                        fprintf(stderr, "tune-offline: out of memory\n");
                        exit(1);
                }
                for (size_t r = 0; r < rows; r++)
                        for (size_t f = 0; f < 3; f++)
                                x[col[f][obs[r].level[f]] * rows + r] = 1;
                lapack_int info =
                    LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', (lapack_int)rows, (lapack_int)levels, x,
                                   (lapack_int)rows, sv, NULL, 1, NULL, 1);
                if (info != 0) {
                        fprintf(stderr, "tune-offline: the design's rank: LAPACKE_dgesdd: %d\n",
                                (int)info);
                        exit(1);
                }
                for (size_t k = 0; k < levels && k < rows; k++)
                        rank += sv[k] > 1e-9 * sv[0];
                free(x);
                free(sv);
                if (rank + 2 < levels)
                        fprintf(stderr,
                                "tune-offline: the sessions share too few points: %zu of the %zu "
                                "terms are not told apart from the others (measure a bridge: "
                                "bench/tune/data/README.md)\n",
                                levels - 2 - rank, levels - 2);
        }

        /* backfitting (Gauss-Seidel over the three factors) until no term moves */
        double *terms[3] = {a, b, c};
        size_t counts[3] = {nh, np, ns};
        int iter;

        for (iter = 0; iter < 20000; iter++) {
                double moved = 0;

                for (size_t f = 0; f < 3; f++) {
                        double sum[RUNS_MAX] = {0}, cnt[RUNS_MAX] = {0}, mean = 0, runs = 0;
                        double *term = terms[f];

                        for (size_t r = 0; r < rows; r++) {
                                const size_t *l = obs[r].level;
                                sum[l[f]] += obs[r].y - a[l[0]] - b[l[1]] - c[l[2]] + term[l[f]];
                                cnt[l[f]] += 1;
                        }
                        for (size_t k = 0; k < counts[f]; k++)
                                if (cnt[k] > 0) {
                                        moved = fmax(moved, fabs(sum[k] / cnt[k] - term[k]));
                                        term[k] = sum[k] / cnt[k];
                                        mean += term[k] * cnt[k];
                                        runs += cnt[k];
                                }
                        /* the sessions' terms sum to zero: the level is the heaps' */
                        if (f == 2 && runs > 0)
                                for (size_t k = 0; k < ns; k++)
                                        c[k] -= mean / runs;
                }
                if (moved < 1e-12)
                        break;
        }
        if (iter == 20000)
                fprintf(stderr, "tune-offline: the additive fit did not settle in %d sweeps\n",
                        iter);
        for (size_t i = 0; i < w->n && i < RUNS_MAX; i++)
                fitted[i] = exp(a[hi[i]] + b[pi[i]]);
        for (size_t r = 0; r < rows; r++) {
                const size_t *l = obs[r].level;
                squares += pow(obs[r].y - a[l[0]] - b[l[1]] - c[l[2]], 2);
        }
        free(obs);
        /* the terms the runs determine: the design's rank */
        return rows > rank ? sqrt(squares / (double)(rows - rank)) : NAN;
}

/* the least of fitted[] over the points where nothing failed, something was measured and
   (when fast is given) the run-time bound holds */
static double least_good(const struct world *w, const double *fitted, bool work, const bool *fast)
{
        double best = INFINITY;

        for (size_t i = 0; i < w->n && i < RUNS_MAX; i++) {
                bool measured = false;
                for (size_t j = 0; j < w->pts[i].n && !measured; j++)
                        measured = !isnan(figure_of(&w->pts[i].reps[j], work));
                if (!w->pts[i].failed && measured && (!fast || fast[i]) && fitted[i] < best)
                        best = fitted[i];
        }
        return best;
}

/* the run-time bound, then the work bound with its least taken among the points within the
   run-time bound (as stage 2 takes it: tuner-bo.md, "The work constraint") */
static void runtime_model(struct world *w)
{
        double dur[RUNS_MAX], work[RUNS_MAX], median_work[RUNS_MAX] = {0};
        bool fast[RUNS_MAX] = {0}; /* zeroed: GCC 12 cannot see w->n <= RUNS_MAX once inlined */

        w->sd_log = additive_fit(w, false, dur);
        w->sd_log_work = additive_fit(w, true, work);
        w->fastest_fitted = least_good(w, dur, false, NULL);
        for (size_t i = 0; i < w->n && i < RUNS_MAX; i++) {
                struct point *p = &w->pts[i];
                p->fitted = dur[i];
                p->work_fitted = work[i];
                median_work[i] = p->work;
                fast[i] = strict_runtime ? p->duration <= RUNTIME_MAX * w->fastest
                                         : p->fitted <= RUNTIME_MAX * w->fastest_fitted;
        }
        w->least_work = least_good(w, median_work, true, fast);
        w->least_work_fitted = least_good(w, work, true, fast);
        for (size_t i = 0; i < w->n && i < RUNS_MAX; i++) {
                struct point *p = &w->pts[i];
                p->within_bounds = fast[i];
                if (work_bound)
                        p->within_bounds =
                            p->within_bounds &&
                            (strict_runtime ? p->work <= RUNTIME_MAX * w->least_work
                                            : p->work_fitted <= RUNTIME_MAX * w->least_work_fitted);
        }
}

static bool every_good_run_has_cpu_seconds(const struct world *w)
{
        bool any = false;

        for (size_t i = 0; i < w->n; i++)
                for (size_t j = 0; j < w->pts[i].n; j++) {
                        const struct tuner_run *r = &w->pts[i].reps[j];
                        if (r->failure != TUNER_OK)
                                continue;
                        if (!(r->cpu_seconds > 0 && isfinite(r->cpu_seconds)))
                                return false;
                        any = true;
                }
        return any;
}

static void summarise(struct world *w)
{
        w->fastest = INFINITY;
        job_cpu = every_good_run_has_cpu_seconds(w);
        for (size_t i = 0; i < w->n; i++) {
                struct point *p = &w->pts[i];
                double d[RUNS_MAX], c[RUNS_MAX];
                size_t m = 0, k = 0;

                p->failed = false;
                for (size_t j = 0; j < p->n; j++) {
                        const struct tuner_run *r = &p->reps[j];
                        double work = work_of(r);
                        p->failed |= r->failure != TUNER_OK;
                        if (m < RUNS_MAX && isfinite(r->duration_seconds))
                                d[m++] = r->duration_seconds;
                        if (k < RUNS_MAX && r->failure == TUNER_OK && work > 0 && isfinite(work))
                                c[k++] = work;
                }
                p->duration = tuner_median(d, m);
                p->work = k ? tuner_median(c, k) : INFINITY;
                if (!p->failed && p->duration < w->fastest)
                        w->fastest = p->duration;
        }
        for (size_t i = 0; i < w->n; i++) {
                struct point *p = &w->pts[i];
                uint64_t ran_out = 0;

                for (size_t j = 0; j < w->n; j++) {
                        const struct point *q = &w->pts[j];

                        if (q->parts < p->parts || q->heap <= ran_out)
                                continue;
                        for (size_t k = 0; k < q->n; k++)
                                if (q->reps[k].failure == TUNER_FAIL_OOM ||
                                    q->reps[k].failure == TUNER_FAIL_EXECUTOR_LOST) {
                                        ran_out = q->heap;
                                        break;
                                }
                }
                p->clear_of_oom = (double)p->heap >= HEADROOM * (double)ran_out;
        }
        runtime_model(w);
}

/* ---- a run derived at what was asked ---- */

/* ByteDance's f = 1 / (cpu_util x mem_util), each capped at 1 (tuner.h) */
static double objective_of(double cpu_util, double mem_util)
{
        return cpu_util > 0 && mem_util > 0 ? 1.0 / (fmin(cpu_util, 1.0) * fmin(mem_util, 1.0))
                                            : NAN;
}

static void derive(const struct tuner_run *r, const struct tuner_params *ask, struct tuner_run *out)
{
        double cpu_scale = (double)r->params.millicores / (double)ask->millicores;
        double limit = (double)r->params.heap_bytes + (double)ask->overhead_bytes;

        *out = *r;
        out->params.millicores = ask->millicores;
        out->params.overhead_bytes = ask->overhead_bytes;
        out->params.burst_ratio = ask->burst_ratio;
        out->params.cores = CORES;
        out->cpu_util = r->cpu_util * cpu_scale;
        out->cpu_peak_util = r->cpu_peak_util * cpu_scale;
        out->mem_util = r->mem_util * request_bytes(&r->params) / request_bytes(&out->params);
        out->cpu_limit_ratio = CPU_LIMIT;
        /* the host the derivation models enforces the plan: a throttled run says so; the
           measured run-queue wait is this shared host's, not the request's doing */
        out->enforced = true;
        out->throttled_fraction = 0;
        out->runq_wait_per_cpu = NAN;
        out->objective = objective_of(out->cpu_util, out->mem_util);
        if (out->failure != TUNER_OK)
                return;
        if (r->memory_peak_bytes != TUNER_UNKNOWN && (double)r->memory_peak_bytes > limit) {
                out->failure = TUNER_FAIL_OOM;
                out->oom_kills = 1;
                snprintf(out->failure_detail, sizeof(out->failure_detail),
                         "derived: memory peak above heap + overhead");
        } else if (out->cpu_peak_util > CPU_LIMIT) {
                out->failure = TUNER_FAIL_RUNTIME;
                out->throttled_fraction = 1;
                /* a cgroup lets no run use more than its limit: a tuner reads the p90 at it,
                   not the need above it */
                out->cpu_peak_util = CPU_LIMIT;
                out->cpu_util = fmin(out->cpu_util, CPU_LIMIT);
                out->objective = objective_of(out->cpu_util, out->mem_util);
                snprintf(out->failure_detail, sizeof(out->failure_detail),
                         "derived: p90 CPU above the limit");
        }
}

static void score_of(const struct world *w, const struct point *p, const struct tuner_params *ask,
                     struct score *ret)
{
        double cpu[RUNS_MAX], mem[RUNS_MAX], p90[RUNS_MAX], peak[RUNS_MAX], ex[RUNS_MAX];
        double cores, limit, request;
        size_t m = 0;

        *ret = (struct score){.objective = NAN, .cost = NAN};
        for (size_t j = 0; j < p->n && m < RUNS_MAX; j++) {
                struct tuner_run d;

                derive(&p->reps[j], ask, &d);
                ret->failed |= d.failure != TUNER_OK;
                cpu[m] = d.cpu_util;
                mem[m] = d.mem_util;
                p90[m] = d.cpu_peak_util;
                peak[m] = (double)d.memory_peak_bytes;
                ex[m] = d.executors;
                m++;
        }
        cores = (double)ask->millicores / 1000.0;
        limit = (double)p->heap + (double)ask->overhead_bytes;
        request = (double)p->heap + (double)ask->overhead_bytes * (1.0 - ask->burst_ratio);
        {
                double c = tuner_median(cpu, m), u = tuner_median(mem, m), e = tuner_median(ex, m);

                ret->objective = objective_of(c, u);
                ret->core_s = cores * p->duration * e;
                ret->gib_s = request / (double)GIB * p->duration * e;
                ret->cost = ret->core_s + ret->gib_s / GIB_PER_CORE;
        }
        ret->safe = !ret->failed && !p->failed && isfinite(ret->objective) &&
                    tuner_median(p90, m) * HEADROOM <= CPU_LIMIT &&
                    tuner_median(peak, m) * HEADROOM <= limit && p->within_bounds &&
                    (!heap_margin || p->clear_of_oom);
}

/* ---- the reference: the best over a fine lattice within the bounds ---- */

struct reference {
        double objective, cost;
        const struct point *at;
        struct tuner_params ask;
};

static void reference(const struct world *w, const struct tuner_bounds *b, struct reference *ret)
{
        uint64_t mc_lo = b->millicores_min > 100 ? b->millicores_min : 100;
        uint64_t mc_hi = b->millicores_max < 1000 ? b->millicores_max : 1000;
        uint64_t ov_hi = b->overhead_max_bytes < 4 * GIB ? b->overhead_max_bytes : 4 * GIB;
        double burst_hi = fmin(b->burst_ratio_max, 0.95);

        *ret = (struct reference){.objective = INFINITY, .cost = INFINITY};
        for (size_t i = 0; i < w->n; i++) {
                const struct point *p = &w->pts[i];
                if (p->heap < b->heap_min_bytes || p->heap > b->heap_max_bytes ||
                    p->parts < b->partitions_min || p->parts > b->partitions_max)
                        continue;
                for (uint64_t mc = (mc_lo + 24) / 25 * 25; mc <= mc_hi; mc += 25)
                        for (uint64_t ov = b->overhead_min_bytes; ov <= ov_hi; ov += 64 * MIB)
                                for (double burst = 0; burst <= burst_hi + 1e-9; burst += 0.05) {
                                        struct tuner_params ask = {.cores = CORES,
                                                                   .millicores = mc,
                                                                   .heap_bytes = p->heap,
                                                                   .overhead_bytes = ov,
                                                                   .burst_ratio = burst,
                                                                   .spill_fraction = NAN,
                                                                   .shuffle_partitions = p->parts};
                                        struct score s;

                                        score_of(w, p, &ask, &s);
                                        if (!s.safe)
                                                continue;
                                        if (s.objective < ret->objective) {
                                                ret->objective = s.objective;
                                                ret->at = p;
                                                ret->ask = ask;
                                        }
                                        if (s.cost < ret->cost)
                                                ret->cost = s.cost;
                                }
        }
}

/* ---- running a proposal ---- */

static double log_heap(uint64_t v)
{
        return log((double)v);
}

/*
 * The measured value an asked one runs at, on one workload axis (log scale): beyond the
 * measured range the nearest end; between two measured values one of them, drawn with the
 * probability of its closeness (stochastic rounding: 17 partitions between 8 and 32 runs at
 * 32 with probability ln(17/8) / ln(32/8) = 0.54). Neither side is favoured: always the
 * nearer one held a tuner that asks for 17 from 32 at 32 for ever, always a step away ran
 * 8, where the CPU and memory use differ from what it asked for.
 *
 * --world-per-seed draws the episode's world instead of a coin per run: between two measured
 * values the boundary sits at a place drawn once per seed (u, the same for every tuner of
 * that seed), and an ask rounds up when its closeness to the upper value passes it, so an
 * ask runs at the same point each time. That models a sharp threshold between the measured
 * values (an OOM cliff: skew's heap) better, and a smooth response (run time over
 * partitions: mem-sort's) worse, as a step at a random place; the coin's expected response
 * is the smooth one. Neither is the truth between two measured values, and the tables move
 * with the choice (docs/tuner-bench.md, "Between the measured points"): the default is the
 * reviewed coin, the other is the sensitivity.
 */
static bool world_per_seed, record_ask;

static double round_to_axis(const double *axis, size_t n, double want, uint64_t world,
                            unsigned which)
{
        double below = -INFINITY, above = INFINITY, u;

        for (size_t i = 0; i < n; i++) {
                if (axis[i] <= want && axis[i] > below)
                        below = axis[i];
                if (axis[i] >= want && axis[i] < above)
                        above = axis[i];
        }
        if (below == -INFINITY)
                return above;
        if (above == INFINITY || above == below)
                return below;
        if (!world_per_seed)
                u = uniform();
        else { /* the gap's own stream: the seed's, the axis's, then the lower value's */
                struct tuner_rng gap;
                uint64_t bits;

                memcpy(&bits, &below, sizeof(bits));
                tuner_rng_seed(&gap, world);
                tuner_rng_seed(&gap, tuner_rng_next(&gap) ^ which);
                tuner_rng_seed(&gap, tuner_rng_next(&gap) ^ bits);
                u = tuner_rng_uniform(&gap);
        }
        return u < (want - below) / (above - below) ? above : below;
}

/*
 * The measured point a proposal runs at in the world of seed world: its partitions rounded
 * to a measured count, then its heap to a heap measured at that count. A grid need not be a
 * full product (skew's 4 and 6 partitions have 4 heaps): rounded on the heaps of every count,
 * an ask of 1344m at 32 partitions drew 1280m, measured at 4 and 6 only, and the nearest
 * point at 32 was 1536m, never 1g.
 */
static const struct point *snap(const struct world *w, const struct tuner_params *ask,
                                uint64_t world)
{
        double heaps[RUNS_MAX], parts[RUNS_MAX], h, p;
        size_t n = w->n < RUNS_MAX ? w->n : RUNS_MAX, nh = 0;

        for (size_t i = 0; i < n; i++)
                parts[i] = log(w->pts[i].parts);
        p = round_to_axis(parts, n, log(tuner_partitions(ask)), world, 1);
        for (size_t i = 0; i < n; i++)
                if (parts[i] == p)
                        heaps[nh++] = log_heap(w->pts[i].heap);
        h = round_to_axis(heaps, nh, log_heap(ask->heap_bytes), world, 0);
        for (size_t i = 0; i < n; i++)
                if (parts[i] == p && log_heap(w->pts[i].heap) == h)
                        return &w->pts[i];
        abort(); /* not reached: h is one of the heaps measured at p */
}

/*
 * The run of ask at its measured point, one replicate drawn. The history records the point's
 * heap and partitions: what ran, and what its usage figures are of. With --record-ask it
 * records the heap and partitions asked, as a cluster records what the tuner set, the
 * measured point standing in for them and the memory utilisation taken against the asked
 * request; but its memory peak is the point's JVM's (the rules' non-heap estimate, peak -
 * heap, reads low when the point's heap is under the ask). Either way the failure is the
 * point's: its JVM ran with the point's heap (derive).
 */
static void run_at(const struct point *p, const struct tuner_params *ask, unsigned k,
                   struct tuner_run *out)
{
        struct tuner_params a = *ask;

        a.cores = CORES;
        derive(&p->reps[next_random() % p->n], &a, out);
        out->params.heap_bytes = p->heap;
        out->params.shuffle_partitions = p->parts;
        if (record_ask) {
                double measured = request_bytes(&out->params);

                out->params.heap_bytes = ask->heap_bytes;
                out->params.shuffle_partitions = tuner_partitions(ask);
                /* a reading above the heap recorded is not believed, as ingest does */
                if (out->heap_after_gc_peak_bytes != TUNER_UNKNOWN &&
                    out->heap_after_gc_peak_bytes > out->params.heap_bytes)
                        out->heap_after_gc_peak_bytes = TUNER_UNKNOWN;
                out->mem_util *= measured / request_bytes(&out->params);
                out->objective = objective_of(out->cpu_util, out->mem_util);
        }
        out->params.spill_fraction = NAN;
        snprintf(out->app_id, sizeof(out->app_id), "sim-%u", k);
        out->start_ms = (int64_t)k * 1000;
}

/* a CPU limit under the p90 CPU of a completed run of the history (the same cores: the grid
   has one), or no larger than the limit of a run that was throttled (its p90 reads at the
   limit, derive()), as a heap no larger than one that ran out: a throttle the history
   measured */
static bool cpu_dominated(const struct tuner_run *hist, size_t n, const struct tuner_params *ask)
{
        for (size_t i = 0; i < n; i++) {
                const struct tuner_run *r = &hist[i];

                if (r->failure != TUNER_OK && r->failure != TUNER_FAIL_RUNTIME)
                        continue;
                if (r->throttled_fraction > 0 && ask->millicores <= r->params.millicores)
                        return true;
                if ((double)ask->millicores * CPU_LIMIT <
                    r->cpu_peak_util * (double)r->params.millicores)
                        return true;
        }
        return false;
}

/* ask has no more memory than a run that ran out of it, at no more partitions */
static bool dominated(const struct tuner_run *hist, size_t n, const struct tuner_params *ask)
{
        for (size_t i = 0; i < n; i++) {
                const struct tuner_params *o = &hist[i].params;
                if (hist[i].failure != TUNER_FAIL_OOM &&
                    hist[i].failure != TUNER_FAIL_EXECUTOR_LOST)
                        continue;
                if (ask->heap_bytes <= o->heap_bytes &&
                    ask->heap_bytes + ask->overhead_bytes <= o->heap_bytes + o->overhead_bytes &&
                    tuner_partitions(ask) <= tuner_partitions(o))
                        return true;
        }
        return false;
}

/* ---- the anchors ---- */

static double log_uniform(double lo, double hi)
{
        return exp(log(lo) + uniform() * (log(hi) - log(lo)));
}

static void random_params(const struct tuner_bounds *b, struct tuner_params *ret)
{
        *ret = (struct tuner_params){.cores = CORES, .spill_fraction = NAN};
        ret->millicores =
            (uint64_t)round((double)b->millicores_min +
                            uniform() * (double)(fmin((double)b->millicores_max, 1000.0 * CORES) -
                                                 (double)b->millicores_min));
        ret->heap_bytes =
            (uint64_t)log_uniform((double)b->heap_min_bytes, (double)b->heap_max_bytes) / MIB * MIB;
        ret->overhead_bytes =
            (uint64_t)log_uniform((double)b->overhead_min_bytes, (double)b->overhead_max_bytes) /
            MIB * MIB;
        ret->burst_ratio = round(uniform() * b->burst_ratio_max * 100) / 100;
        ret->shuffle_partitions =
            (uint32_t)round(log_uniform(b->partitions_min, b->partitions_max));
}

/*
 * A Kubernetes VPA's recommender, as a shop without sparkshim's tuner would run it: the CPU
 * request at the 90th percentile of usage (the runs' p90) + 15 %, the memory at the peak +
 * 15 %, after an OOM the peak x 1.2 (at least +100 MiB). It sizes the container, not the
 * JVM: the heap and the partitions stay as they were; the overhead is what the container
 * has beyond the heap, never under the policy's minimum; request = limit (burst 0).
 */
static void vpa(const struct tuner_run *hist, size_t n, const struct tuner_bounds *b,
                struct tuner_params *ret)
{
        double cpu = 0, peak = 0, memory;
        bool oom = hist[0].failure == TUNER_FAIL_OOM || hist[0].failure == TUNER_FAIL_EXECUTOR_LOST;

        *ret = hist[0].params;
        for (size_t i = 0; i < n; i++) {
                double cores = (double)hist[i].params.millicores / 1000.0;
                if (isfinite(hist[i].cpu_peak_util))
                        cpu = fmax(cpu, hist[i].cpu_peak_util * cores);
                if (hist[i].memory_peak_bytes != TUNER_UNKNOWN)
                        peak = fmax(peak, (double)hist[i].memory_peak_bytes);
        }
        if (cpu > 0)
                ret->millicores =
                    (uint64_t)ceil(fmax(cpu * 1.15 * 1000.0, (double)b->millicores_min));
        memory = oom ? fmax(peak * 1.2, peak + 100.0 * MIB) : peak * 1.15;
        if (memory > 0) {
                double over = ceil((memory - (double)ret->heap_bytes) / MIB) * MIB;
                ret->overhead_bytes = (uint64_t)fmax(over, (double)b->overhead_min_bytes);
        }
        ret->burst_ratio = 0;
}

/* ---- one episode ---- */

struct outcome {
        double best[RUNS_MAX]; /* the best safe objective after k runs (INFINITY: none) */
        double best_cost;
        unsigned failures, dominated, cpu_dominated;
        unsigned rounded_down; /* memory failures of runs whose heap the grid gave below the ask */
};

static int recommend(enum tuner_kind kind, struct tuner_run *hist, size_t n,
                     const struct tuner_bounds *b, double allowance, uint64_t seed,
                     struct tuner_params *ret, char *why, size_t why_size)
{
        struct tuner_run work[RUNS_MAX];
        struct tuner_recommendation rec;
        struct tuner_bo_recommend_options fixed = {.fixed = 1u << TUNER_P_CORES};
        struct util_error err = {0};
        int r = -ENODATA;

        memcpy(work, hist, n * sizeof(hist[0]));
        tuner_mark_runtime(work, n, allowance);
        switch (kind) {
        case T_RULES:
                r = tuner_rules_recommend(work, n, b, &rec);
                break;
        case T_TWO_STAGE:
                r = tuner_recommend(work, n, b, &rec, &err);
                break;
        case T_BO_SAFE:
                r = tuner_bo_recommend_with(work, n, b, NULL, &fixed, &rec, &err);
                break;
        case T_BO_UNSAFE: {
                struct tuner_bo_options bo;
                struct tuner_bo_recommend_options unsafe = fixed;

                tuner_bo_options_default(&bo);
                bo.seed = seed;
                bo.safety = false;
                unsafe.bo = &bo;
                r = tuner_bo_recommend_with(work, n, b, NULL, &unsafe, &rec, &err);
                break;
        }
        case T_VPA:
                vpa(work, n, b, ret);
                snprintf(why, why_size, "vpa");
                return 0;
        case T_RANDOM:
        case T_COUNT:
                break;
        }
        if (r == 0) {
                *ret = rec.params;
                snprintf(why, why_size, "%s", rec.stage == TUNER_STAGE_BO ? "bo" : "rules");
                if (trace == seed)
                        printf("    asked %" PRIu64 "m, heap %" PRIu64 "m, overhead %" PRIu64
                               "m, burst %.3f, %u partitions: %s\n",
                               rec.params.millicores, rec.params.heap_bytes / MIB,
                               rec.params.overhead_bytes / MIB, rec.params.burst_ratio,
                               rec.params.shuffle_partitions, rec.reasons[TUNER_P_MILLICORES].text);
        } else {
                /* random search; a BO tuner's warm-up (too little history: -ENODATA), the
                   benchmark's initial design; or a tuner's error, a random point */
                random_params(b, ret);
                snprintf(why, why_size, "%s",
                         kind == T_RANDOM ? "random"
                         : r == -ENODATA  ? "warm-up"
                                          : "error");
        }
        return 0;
}

static void episode(const struct world *w, enum tuner_kind kind, const struct tuner_bounds *base,
                    const struct tuner_params *start, uint64_t seed, unsigned runs,
                    double allowance, struct outcome *out)
{
        struct tuner_run hist[RUNS_MAX];
        struct tuner_bounds b = *base;
        double so_far = INFINITY;
        size_t n = 0;

        *out = (struct outcome){.best_cost = INFINITY};
        b.seed = seed;
        /* xoshiro256** (rng.h), not splitmix64 alone: every other output of one splitmix64
           stream (a draw each for the heap and the replicate) is a weak generator of its own,
           and drew 8 heaps in a row on the same side */
        tuner_rng_seed(&rng, seed * UINT64_C(7919) + 1);
        for (unsigned k = 0; k <= runs && k < RUNS_MAX; k++) {
                struct tuner_params ask = *start;
                const struct point *p;
                struct score s;
                char why[16] = "start";

                if (k > 0) {
                        recommend(kind, hist, n, &b, allowance, seed, &ask, why, sizeof(why));
                        /* a BO tuner's warm-up draws (too little history) are the
                           benchmark's initial design, not its proposals */
                        if (strcmp(why, "warm-up") != 0) {
                                out->dominated += dominated(hist, n, &ask);
                                out->cpu_dominated += cpu_dominated(hist, n, &ask);
                        }
                }
                p = snap(w, &ask, seed);
                memmove(hist + 1, hist, n * sizeof(hist[0]));
                run_at(p, &ask, k, &hist[0]);
                n++;
                score_of(w, p, &hist[0].params, &s);
                if (k > 0 && hist[0].failure != TUNER_OK) {
                        out->failures++;
                        out->rounded_down += (hist[0].failure == TUNER_FAIL_OOM ||
                                              hist[0].failure == TUNER_FAIL_EXECUTOR_LOST) &&
                                             (double)p->heap < (1.0 - TUNER_RULES_DEAD_BAND) *
                                                                   (double)ask.heap_bytes;
                }
                if (s.safe) {
                        so_far = fmin(so_far, s.objective);
                        out->best_cost = fmin(out->best_cost, s.cost);
                }
                out->best[k] = so_far;
                if (trace == seed)
                        printf("  %-17s run %2u (%s): %" PRIu64 "m, heap %" PRIu64
                               "m (asked %" PRIu64 "m, run at %" PRIu64 "m), overhead %" PRIu64
                               "m, burst %.2f, %u partitions (asked %u, run at %u): %s, "
                               "objective %.3f (median %.3f%s), %.0f s\n",
                               kind_names[kind], k, why, hist[0].params.millicores,
                               hist[0].params.heap_bytes / MIB, ask.heap_bytes / MIB, p->heap / MIB,
                               hist[0].params.overhead_bytes / MIB, hist[0].params.burst_ratio,
                               tuner_partitions(&hist[0].params), tuner_partitions(&ask), p->parts,
                               tuner_failure_name(hist[0].failure), hist[0].objective, s.objective,
                               s.safe ? ", safe" : "", hist[0].duration_seconds);
        }
}

/* ---- output ---- */

/* the points in the order of heap, then partitions (qsort on indices) */
static const struct world *order_world;
static int by_heap_then_partitions(const void *a, const void *b)
{
        const struct point *p = &order_world->pts[*(const size_t *)a];
        const struct point *q = &order_world->pts[*(const size_t *)b];

        if (p->heap != q->heap)
                return p->heap < q->heap ? -1 : 1;
        return p->parts < q->parts ? -1 : p->parts > q->parts;
}

static void spread(const struct world *w)
{
        size_t order[RUNS_MAX], n = w->n < RUNS_MAX ? w->n : RUNS_MAX;

        for (size_t i = 0; i < n; i++)
                order[i] = i;
        order_world = w;
        qsort(order, n, sizeof(order[0]), by_heap_then_partitions);
        printf("| heap | partitions | runs | failed | run time, s (min / median / max; fitted) | "
               "memory peak, MiB (min / median / max) | cpu_util at 1000m (median) | "
               "work, core-s (median of the good runs / fitted) | heap after GC, MiB "
               "(median) |\n"
               "|---:|---:|---:|---:|---|---|---:|---:|---:|\n");
        for (size_t o = 0; o < n; o++) {
                const struct point *p = &w->pts[order[o]];
                double d[RUNS_MAX], m[RUNS_MAX], c[RUNS_MAX], a[RUNS_MAX];
                unsigned failed = 0;
                size_t k = 0, na = 0;
                char work[48] = "-", fit[24] = "-", after_gc[24] = "-";

                for (size_t j = 0; j < p->n && k < RUNS_MAX; j++, k++) {
                        d[k] = p->reps[j].duration_seconds;
                        m[k] = (double)p->reps[j].memory_peak_bytes / MIB;
                        c[k] = p->reps[j].cpu_util;
                        failed += p->reps[j].failure != TUNER_OK;
                        if (p->reps[j].heap_after_gc_peak_bytes != TUNER_UNKNOWN &&
                            p->reps[j].heap_after_gc_peak_bytes > 0)
                                a[na++] = (double)p->reps[j].heap_after_gc_peak_bytes / MIB;
                }
                if (k == 0)
                        continue;
                tuner_median(d, k);
                tuner_median(m, k);
                if (isfinite(p->work)) { /* no good run: neither a median nor a fit */
                        snprintf(work, sizeof(work), "%.2f / %.2f", p->work, p->work_fitted);
                        snprintf(fit, sizeof(fit), "%.1f", p->fitted);
                }
                if (na)
                        snprintf(after_gc, sizeof(after_gc), "%.0f", tuner_median(a, na));
                printf("| %" PRIu64 "m | %u | %zu | %u | %.1f / %.1f / %.1f; %s | "
                       "%.0f / %.0f / %.0f | %.2f | %s | %s |\n",
                       p->heap / MIB, p->parts, p->n, failed, d[0], tuner_median(d, k), d[k - 1],
                       fit, m[0], tuner_median(m, k), m[k - 1], tuner_median(c, k), work, after_gc);
        }
        printf("fastest good point: median %.1f s, fitted %.1f s; run-time limit %.1f s (%s); "
               "sd of log run time about the fit %.3f; ",
               w->fastest, w->fastest_fitted,
               RUNTIME_MAX * (strict_runtime ? w->fastest : w->fastest_fitted),
               strict_runtime ? "medians" : "fits", w->sd_log);
        if (work_bound)
                printf("least work of a good point within the run-time limit: median %.2f core-s, "
                       "fitted %.2f; work limit %.2f core-s (%s); sd of log work about the fit "
                       "%.3f; ",
                       w->least_work, w->least_work_fitted,
                       RUNTIME_MAX * (strict_runtime ? w->least_work : w->least_work_fitted),
                       strict_runtime ? "medians" : "fits", w->sd_log_work);
        printf("points within the run-time%s constraint:", work_bound ? " and work" : "");
        for (size_t o = 0; o < n; o++)
                if (w->pts[order[o]].within_bounds && !w->pts[order[o]].failed)
                        printf(" %" PRIu64 "m/%u", w->pts[order[o]].heap / MIB,
                               w->pts[order[o]].parts);
        printf("\n");
}

static void bounds_of(const char *which, const struct world *w, struct tuner_bounds *b)
{
        tuner_bounds_default(b);
        if (strcmp(which, "grid") != 0)
                return;
        /* the grid's axes: what was measured, and the derived axes of issue 13's fine grid */
        b->heap_min_bytes = b->heap_max_bytes = w->pts[0].heap;
        b->partitions_min = b->partitions_max = w->pts[0].parts;
        for (size_t i = 1; i < w->n; i++) {
                const struct point *p = &w->pts[i];
                b->heap_min_bytes = p->heap < b->heap_min_bytes ? p->heap : b->heap_min_bytes;
                b->heap_max_bytes = p->heap > b->heap_max_bytes ? p->heap : b->heap_max_bytes;
                b->partitions_min = p->parts < b->partitions_min ? p->parts : b->partitions_min;
                b->partitions_max = p->parts > b->partitions_max ? p->parts : b->partitions_max;
        }
        b->millicores_min = 250;
        b->millicores_max = 1000;
        b->overhead_min_bytes = 384 * MIB;
        b->overhead_max_bytes = 2 * GIB;
        b->burst_ratio_max = 0.5;
}

static void usage(void)
{
        fprintf(stderr, "usage: tune-offline [--runs K] [--seeds N] [--start-partitions P]... "
                        "[--bounds policy|grid] [--first-seed S] [--strict-runtime] "
                        "[--no-work-bound] [--world-per-seed] [--record-ask] "
                        "[--after-gc READINGS.runs]... [--heap-margin] [--spread] "
                        "[--trace SEED] JOB.runs...\n");
        exit(120);
}

int main(int argc, char **argv)
{
        struct world w = {0}, readings = {0};
        struct tuner_bounds b;
        struct after_gc_count after_gc;
        int reading_files = 0;
        struct reference ref;
        unsigned runs = 10, seeds = 50, n_starts = 0, first_seed = 1;
        uint32_t starts[8];
        double allowance = 1.5;
        const char *which = "policy";
        bool show_spread = false;
        int files = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
                        runs = (unsigned)strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
                        seeds = (unsigned)strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--start-partitions") == 0 && i + 1 < argc &&
                         n_starts < ELEMENTSOF(starts))
                        starts[n_starts++] = (uint32_t)strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--first-seed") == 0 && i + 1 < argc)
                        first_seed = (unsigned)strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--bounds") == 0 && i + 1 < argc)
                        which = argv[++i];
                else if (strcmp(argv[i], "--strict-runtime") == 0)
                        strict_runtime = true;
                else if (strcmp(argv[i], "--no-work-bound") == 0)
                        work_bound = false;
                else if (strcmp(argv[i], "--world-per-seed") == 0)
                        world_per_seed = true;
                else if (strcmp(argv[i], "--record-ask") == 0)
                        record_ask = true;
                else if (strcmp(argv[i], "--spread") == 0)
                        show_spread = true;
                else if (strcmp(argv[i], "--heap-margin") == 0)
                        heap_margin = true;
                else if (strcmp(argv[i], "--after-gc") == 0 && i + 1 < argc) {
                        if (load(argv[++i], (unsigned)reading_files++, &readings) < 0)
                                return 1;
                } else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc)
                        trace = strtoull(argv[++i], NULL, 10);
                else if (argv[i][0] != '-') {
                        if (files >= RUNS_MAX) {
                                fprintf(stderr, "tune-offline: more than %d files\n", RUNS_MAX);
                                return 1;
                        }
                        if (load(argv[i], files, &w) < 0)
                                return 1;
                        files++;
                } else
                        usage();
        }
        if (!files || runs < 1 || runs >= RUNS_MAX || seeds < 1 || seeds > SEEDS_MAX ||
            (strcmp(which, "policy") != 0 && strcmp(which, "grid") != 0))
                usage();
        if (w.n == 0) {
                fprintf(stderr, "tune-offline: no measured runs\n");
                return 1;
        }
        attach_after_gc(&w, &readings, &after_gc);
        if (n_starts == 0) {
                starts[n_starts++] = 200; /* Spark's default */
                starts[n_starts++] = 2;
        }
        summarise(&w);
        if (show_spread)
                spread(&w);
        bounds_of(which, &w, &b);
        reference(&w, &b, &ref);
        if (!ref.at) {
                fprintf(stderr, "tune-offline: no safe configuration within the bounds\n");
                return 1;
        }
        size_t total = 0;
        for (size_t i = 0; i < w.n; i++)
                total += w.pts[i].n;
        printf("%zu points (%zu runs); bounds %s: heap %" PRIu64 "..%" PRIu64
               " MiB, partitions %u..%u, millicores %" PRIu64 "..%" PRIu64 ", overhead %" PRIu64
               "..%" PRIu64 " MiB, burst 0..%.2f\n",
               w.n, total, which, b.heap_min_bytes / MIB, b.heap_max_bytes / MIB, b.partitions_min,
               b.partitions_max, b.millicores_min, b.millicores_max, b.overhead_min_bytes / MIB,
               b.overhead_max_bytes / MIB, b.burst_ratio_max);
        if (reading_files)
                printf("heap after GC (--after-gc, %d file%s): given to %zu of %zu points, %zu of "
                       "%zu runs (%zu of them from a run of the other outcome); %zu points of "
                       "the readings not in the grid\n",
                       reading_files, reading_files == 1 ? "" : "s", after_gc.points, w.n,
                       after_gc.runs, total, after_gc.crossed, after_gc.unmatched);
        printf("best safe point: objective %.3f at heap %" PRIu64 "m, %u partitions, %" PRIu64
               "m, overhead %" PRIu64 "m, burst %.2f; least safe cost %.1f\n",
               ref.objective, ref.at->heap / MIB, ref.at->parts, ref.ask.millicores,
               ref.ask.overhead_bytes / MIB, ref.ask.burst_ratio, ref.cost);
        for (unsigned s0 = 0; s0 < n_starts; s0++) {
                struct tuner_params start = {.cores = CORES,
                                             .millicores = 1000,
                                             .heap_bytes = 2 * GIB,
                                             .overhead_bytes = GIB,
                                             .burst_ratio = 0,
                                             .spill_fraction = NAN,
                                             .shuffle_partitions = starts[s0]};

                printf("\nStart: 1000m, heap 2g, overhead 1g, burst 0, %u partitions.\n\n",
                       starts[s0]);
                printf("| tuner | quality (median) | within 1.10x | cost (median) | "
                       "within 1.10x | failures (mean / max) | of them at a heap rounded down | "
                       "dominated (memory / CPU) |\n"
                       "|---|---:|---:|---:|---:|---:|---:|---:|\n");
                for (int kind = 0; kind < T_COUNT; kind++) {
                        double q[SEEDS_MAX], c[SEEDS_MAX];
                        unsigned qin = 0, cin = 0, fmax_ = 0, dom = 0, cdom = 0;
                        double fsum = 0, down = 0;

                        for (unsigned s = 0; s < seeds; s++) {
                                struct outcome o;

                                episode(&w, (enum tuner_kind)kind, &b, &start, s + first_seed, runs,
                                        allowance, &o);
                                q[s] = o.best[runs] / ref.objective;
                                c[s] = o.best_cost / ref.cost;
                                qin += q[s] <= 1.10;
                                cin += c[s] <= 1.10;
                                fsum += o.failures;
                                down += o.rounded_down;
                                fmax_ = o.failures > fmax_ ? o.failures : fmax_;
                                dom += o.dominated;
                                cdom += o.cpu_dominated;
                        }
                        printf("| %s | %.2fx | %.0f %% | %.2fx | %.0f %% | %.2f / %u | %.2f | %u / "
                               "%u |\n",
                               kind_names[kind], tuner_median(q, seeds), 100.0 * qin / seeds,
                               tuner_median(c, seeds), 100.0 * cin / seeds, fsum / seeds, fmax_,
                               down / seeds, dom, cdom);
                }
        }
        printf(
            "\nquality: the best safe configuration's median objective after %u runs over the "
            "best safe point's; cost: the least reserved cost (core-s + GiB-s / %.0f) of a "
            "safe configuration over the least; safe: no replicate failed, >= %.0f %% "
            "headroom on the median p90 CPU and memory peak, median run time <= %.2fx the "
            "fastest good point's%s%s%s; %u seeds; dominated: proposals with no more memory and "
            "partitions than a run that ran out of memory, and proposals whose CPU limit is no "
            "larger than a throttled run's or under the p90 CPU of a completed run (all seeds); "
            "of them at a heap rounded "
            "down: mean memory failures of runs the grid gave less heap than asked, below "
            "the ask's dead band (a measured point under the ask: the ask itself was not "
            "measured)\n",
            runs, GIB_PER_CORE, (HEADROOM - 1) * 100, RUNTIME_MAX,
            strict_runtime ? " (medians)" : " (the additive fit of heap, partitions and session)",
            work_bound ? ", median core-seconds <= 1.10x the least of a good point's" : "",
            heap_margin ? ", heap >= 1.10x every heap that ran out at its partitions or more" : "",
            seeds);
        for (size_t i = 0; i < w.n; i++) {
                free(w.pts[i].reps);
                free(w.pts[i].session);
        }
        free(w.pts);
        for (size_t i = 0; i < readings.n; i++) {
                free(readings.pts[i].reps);
                free(readings.pts[i].session);
        }
        free(readings.pts);
        return 0;
}
