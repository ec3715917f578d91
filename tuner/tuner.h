/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tuner's shared data model (issue 13, docs/tuner.md): what one run of a recurring
 * Spark job asked for and used, assembled from the history store, and what the next run
 * should ask for. The stages (rules.h, bo.h), the store (store.h) and the event-log reader
 * (eventlog.h) all speak these structs; none of them logs (the executable does).
 *
 * Units: bytes, millicores, seconds (double), milliseconds since the epoch (int64_t).
 * Utilisations are fractions (0.8 = 80 %). A figure that is unknown is NAN (doubles) or
 * TUNER_UNKNOWN (integers), never 0: a 0 is a measurement.
 *
 * Nothing here is thread-safe beyond "one thread per struct".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "shim-common.h"

#define TUNER_UNKNOWN     UINT64_MAX
#define TUNER_APP_ID_MAX  128
#define TUNER_JOB_MAX     256
#define TUNER_EXEC_ID_MAX 64
#define TUNER_REASON_MAX  512

/* The settings of one run that the tuner reads and recommends (one executor's worth). */
struct tuner_params {
        uint32_t cores;              /* spark.executor.cores: task slots per executor */
        uint64_t millicores;         /* CPU request per executor */
        uint64_t heap_bytes;         /* spark.executor.memory */
        uint64_t overhead_bytes;     /* spark.executor.memoryOverhead (as the plan made it) */
        double burst_ratio;          /* spark.executor.memoryBurst.ratio, [0,1] */
        double spill_fraction;       /* the agent's threshold, x the memory request; NAN = unset */
        uint32_t shuffle_partitions; /* spark.sql.shuffle.partitions; 0 = not set (Spark: 200) */
};

/* Why a run counts as failed (most severe first); TUNER_OK for a success. */
enum tuner_failure {
        TUNER_OK = 0,
        TUNER_FAIL_OOM, /* an executor OOM-killed (kernel) or java.lang.OutOfMemoryError */
        TUNER_FAIL_EXECUTOR_LOST, /* an executor lost mid-application (not ended by the app's end)
                                   */
        TUNER_FAIL_TASKS,         /* failed task attempts (other reasons) */
        TUNER_FAIL_APP,           /* the application failed or never ended */
        TUNER_FAIL_RUNTIME, /* ran longer than the job's allowance (tuner.runtime_allowance) */
};

const char *tuner_failure_name(enum tuner_failure f); /* "ok", "oom", "executor_lost", ... */

/* What the event log of one application says (eventlog.h fills it, store.h keeps it). */
struct tuner_stage {
        int32_t stage_id, attempt;
        uint32_t tasks;        /* "Number of Tasks" */
        uint32_t failed_tasks; /* task attempts that ended in failure (killed ones not counted) */
        uint64_t input_bytes, shuffle_read_bytes, shuffle_write_bytes;
        uint64_t memory_spill_bytes, disk_spill_bytes;
        double run_seconds;      /* sum of Executor Run Time */
        double cpu_seconds;      /* sum of Executor CPU Time */
        double gc_seconds;       /* sum of JVM GC Time */
        double task_max_seconds; /* longest successful task (duration), for skew */
        double task_median_seconds;
        int64_t submit_ms, complete_ms;
        bool failed; /* the stage attempt failed */
};

struct tuner_app_executor {
        char executor_id[TUNER_EXEC_ID_MAX];
        uint32_t cores;
        int64_t added_ms, removed_ms; /* removed_ms 0 = not removed before the app's end */
        char removed_reason[TUNER_REASON_MAX];
        bool lost; /* removed before the application ended, for a reason other than the app's end
                      or dynamic allocation's idle release */
        /* peaks over the run from the executor metrics Spark logs (TUNER_UNKNOWN if none) */
        uint64_t jvm_heap_peak, jvm_offheap_peak, rss_peak;
};

struct tuner_app {
        char app_id[TUNER_APP_ID_MAX];
        char app_name[TUNER_JOB_MAX];
        char spark_version[32];
        int64_t start_ms, end_ms; /* end_ms 0: no ApplicationEnd */
        bool ended;
        /* "Spark Properties" of the environment update, as a JSON object text (owned, malloc) */
        char *conf_json;
        struct tuner_stage *stages; /* owned */
        size_t n_stages;
        struct tuner_app_executor *executors; /* owned */
        size_t n_executors;
        uint32_t jobs, failed_jobs;
        uint32_t tasks, failed_tasks, killed_tasks;
        uint32_t oom_task_failures;  /* ExceptionFailure with java.lang.OutOfMemoryError */
        uint32_t lost_task_failures; /* ExecutorLostFailure */
        double gc_seconds;
        /* who wrote the event log (its file's owner): the run is that user's; 0 for root */
        uint32_t owner_uid;
};

void tuner_app_free(struct tuner_app *app); /* frees what it owns; app itself is the caller's */

/* One executor of one run, from its sparkshim report (the store keeps it). */
struct tuner_executor {
        char app_id[TUNER_APP_ID_MAX];
        char executor_id[TUNER_EXEC_ID_MAX];
        char host[256];
        int64_t start_ms, end_ms;
        double wall_seconds;
        uint32_t cores; /* --cores of the backend's argv; 0 when absent */
        uint64_t request_millicores, limit_millicores;
        uint64_t heap_bytes, offheap_bytes, pyspark_bytes, overhead_bytes;
        double burst_ratio;
        uint64_t request_bytes, limit_bytes;
        bool enforced;
        double cpu_seconds, throttled_seconds, runq_wait_seconds; /* NAN when unknown */
        uint64_t memory_peak_bytes, memory_average_bytes, memory_p95_bytes, anon_peak_bytes;
        uint64_t oom_kills, high_events;
        int exit_status; /* -1 when killed by a signal */
        int exit_signal; /* 0 when it exited */
        bool oom_killed;
        /* the 90th percentile (nearest rank) of the sample-to-sample CPU use / request, as the
         * VPA recommender takes its CPU target (the JVM's start-up burst lies above it); NAN
         * with fewer than 2 samples */
        double cpu_peak_util;
        int64_t forced_spills;           /* agent; -1 unknown */
        double spill_threshold_fraction; /* the agent's threshold / the memory request; NAN */
        /* the agent's Java heap in use right after a collection, its peak over the run
         * (agent.pressure.heap.peak_after_gc_bytes: only with the policy's
         * agent.heap_threshold); TUNER_UNKNOWN without */
        uint64_t heap_after_gc_peak_bytes;
        /* the uid the executor ran as (identity.run_as_uid); -1 when the report has none */
        int64_t run_as_uid;
        /* the user the executor's figures are of: the report file's owner, or for a file of
         * root's (sparkshim's own) the uid the executor ran as; 0 when neither is known */
        uint32_t owner_uid;
};

/*
 * One run of a job as the stages see it: the history store assembles it from the run's
 * executor reports and its event log (either may be missing).
 */
struct tuner_run {
        char app_id[TUNER_APP_ID_MAX];
        char job[TUNER_JOB_MAX];
        int64_t start_ms;
        double duration_seconds;    /* application wall time; NAN unknown */
        struct tuner_params params; /* what the run asked for */
        uint32_t executors;         /* executors with a report */

        /*
         * Utilisation, over the executors with a report:
         *   cpu    = sum cpu_seconds / sum (wall_seconds x request_millicores / 1000)
         *   memory = sum memory_peak_bytes / sum request_bytes
         *   objective = 1 / (min(cpu, 1) x min(memory, 1)), ByteDance's f(x) with each
         *   utilisation capped at 1 (use beyond the request borrows from the limit, it is not
         *   better packing); NAN when a term is unknown or 0
         */
        double cpu_util, mem_util, objective;
        double cpu_peak_util;       /* max over executors */
        double cpu_seconds;         /* the CPU the job's executors burned: the sum of cpu_util's
                                       numerator; NAN unknown (a run record without it) */
        double throttled_fraction;  /* sum throttled_seconds / sum wall_seconds */
        double runq_wait_per_cpu;   /* sum runq_wait_seconds / sum cpu_seconds */
        uint64_t memory_peak_bytes; /* max over executors */
        uint64_t heap_peak_bytes;   /* max JVM heap peak (event log); TUNER_UNKNOWN */
        uint64_t offheap_peak_bytes;
        /* max over executors of the heap in use right after a collection (the agent's, in
         * the reports); TUNER_UNKNOWN when no report has it */
        uint64_t heap_after_gc_peak_bytes;
        uint64_t high_events, oom_kills;
        int64_t forced_spills;

        /* event log (zero when there is none; has_eventlog says which) */
        bool has_eventlog, has_reports;
        uint32_t stages, tasks, failed_tasks, oom_task_failures;
        uint32_t executors_lost;  /* the event log's lost executors and those the reports show */
        uint32_t max_stage_tasks; /* most tasks of one stage */
        double max_stage_skew;    /* max over stages of task_max / task_median; NAN */
        uint64_t memory_spill_bytes, disk_spill_bytes, shuffle_read_bytes, shuffle_write_bytes;
        double gc_seconds, executor_run_seconds;

        enum tuner_failure failure;
        char failure_detail[TUNER_REASON_MAX];
        /* every executor with a report ran with its plan enforced (cgroup limits written):
         * only then do throttling and run-queue wait say the CPU request was too small */
        bool enforced;
        /* the CPU limit / request of the run's plan (its overcommit); NAN when unknown or
         * unlimited */
        double cpu_limit_ratio;
        /* the user whose event log (or, without one, whose report files) made the run; 0 for
         * root */
        uint32_t owner_uid;
        /* the published settings the run was submitted with (its spark.sparkshim.config,
         * "next-<16 hex>" or "safe-<16 hex>"); "" for none or any other value */
        char config[24];
};

/*
 * Admin bounds of the policy's "tuner" section (and of its plan bounds) that no
 * recommendation exceeds, and the tuner's knobs. tuner_bounds_default() fills the
 * built-in values.
 */
struct tuner_bounds {
        uint64_t millicores_min, millicores_max; /* per executor */
        uint64_t heap_min_bytes, heap_max_bytes;
        uint64_t overhead_min_bytes, overhead_max_bytes;
        uint64_t memory_limit_max; /* heap + overhead; 0 = none */
        double burst_ratio_max;
        double spill_fraction_min, spill_fraction_max;
        uint32_t partitions_min, partitions_max;
        double failure_bound;     /* stage 2 proposes only P(failure) below this; default 0.1 */
        double runtime_allowance; /* a run longer than this x the first successful run's time
                                     is a failure (TUNER_FAIL_RUNTIME); default 1.5 */
        double cpu_target, mem_target; /* utilisation the rules aim at; default 0.85, 0.7 */
        unsigned history_runs;         /* runs read per job, newest first; default 20 */
        uint64_t seed;                 /* stage 2's random stream */
        double runtime_target;         /* the rules raise the CPU (and hold memory) when a run
                                          is slower than this x the best successful run; default
                                          1.1 (tuner.runtime_target) */
        double work_target;            /* stage 2 keeps the CPU a run burns within this x the
                                          least of a configuration within the run-time bound;
                                          0 (default): runtime_target (tuner.work_target) */
};

void tuner_bounds_default(struct tuner_bounds *b);

/* What one recommended value is and why. */
struct tuner_reason {
        char source[32];             /* "rule:<name>", "bo", "hold", "bound", "unchanged" */
        char text[TUNER_REASON_MAX]; /* the numbers: "cpu_util 0.31 < 0.85 over 3 runs: ..." */
};

enum tuner_param_index {
        TUNER_P_CORES = 0,
        TUNER_P_MILLICORES,
        TUNER_P_HEAP,
        TUNER_P_OVERHEAD,
        TUNER_P_BURST_RATIO,
        TUNER_P_SPILL_FRACTION,
        TUNER_P_PARTITIONS,
        TUNER_P_COUNT,
};

/* The parameter's name in reports and reasons: "heap", "shuffle_partitions", ...; "?" past them. */
const char *tuner_param_name(enum tuner_param_index p);

enum tuner_stage_used {
        TUNER_STAGE_NONE = 0, /* no usable history: the last run's settings, unchanged */
        TUNER_STAGE_RULES,
        TUNER_STAGE_BO,
};

struct tuner_recommendation {
        struct tuner_params params;
        struct tuner_reason reasons[TUNER_P_COUNT];
        enum tuner_stage_used stage;
        bool converged;             /* stage 1 had nothing more to change */
        double predicted_objective; /* stage 2's GP mean; NAN for stage 1 */
        double failure_probability; /* stage 2's failure model; NAN for stage 1 */
        unsigned runs_used;
};

struct policy;
/* The bounds of a policy: its "tuner" section and its plan bounds (cpu.millicores,
 * memory.burst_ratio.max, memory.limit_max, memory.overhead.min). */
void tuner_bounds_from_policy(const struct policy *p, struct tuner_bounds *b);

/*
 * Mark the successful runs (newest first) that ran longer than allowance x the oldest
 * successful run's duration as TUNER_FAIL_RUNTIME (the job's allowance). Runs without a
 * duration are left alone.
 */
void tuner_mark_runtime(struct tuner_run *runs, size_t n, double allowance);

/* spark.sql.shuffle.partitions as Spark runs them: an unset value (0) is Spark's 200 */
uint32_t tuner_partitions(const struct tuner_params *p);

/* the executors of a run that ran at once: those reported less those lost (their
   replacements stand in for them), at least 0 */
uint32_t tuner_executors_at_once(const struct tuner_run *r);

/* the median of v[0..n) (sorts v); NAN for n 0 */
double tuner_median(double *v, size_t n);

/* a and b are one configuration: every value within the rules' dead band of the other's
   (TUNER_RULES_DEAD_BAND: 5 % of a size, a count or millicores; 0.05 of a ratio) */
bool tuner_params_close(const struct tuner_params *a, const struct tuner_params *b);

/*
 * What a run's request held (issue 24: reported beside the objective, which alone rewards a
 * slower run that uses more of the same request): core-seconds (millicores / 1000) and
 * GiB-seconds (heap + overhead x (1 - burst ratio)) over its duration, times the executors
 * that ran at once (those reported less those lost, whose replacements stand in for them).
 * NAN where the run has no duration or no executor count.
 */
void tuner_reserved(const struct tuner_run *r, double *ret_core_seconds, double *ret_gib_seconds);

/*
 * The job's run-time yardstick (docs/tuner.md, "Run time"): the median duration of the
 * successful runs of each configuration (tuner_params_close), the least of those medians,
 * among the newest n runs. A single lucky run sets it only where its configuration never ran
 * again. NAN when no successful run has a duration.
 */
#define TUNER_FASTEST_RUNS 256 /* the newest runs it reads */
double tuner_fastest_duration(const struct tuner_run *runs, size_t n);

/* Clamp every value of rec->params into b; a clamped value's reason becomes source "bound"
 * with the bound named. Returns how many values were clamped. */
unsigned tuner_clamp(struct tuner_params *params, struct tuner_reason reasons[TUNER_P_COUNT],
                     const struct tuner_bounds *b);

/*
 * The two stages: stage 1 (rules) for the job's runs (newest first); when the rules have
 * converged and there are enough successful runs, stage 2 (safe BO) within the rules' safety
 * floor. The result is clamped into b. 0, or -ENODATA for no runs, or -ENOMEM / -EINVAL with
 * err filled.
 */
int tuner_recommend(struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                    struct tuner_recommendation *ret, struct util_error *err);
/* The same with the stage forced: TUNER_STAGE_RULES (stage 1 only) or TUNER_STAGE_BO (stage 2
 * whether or not the rules have converged, still within their floor; -ENODATA with fewer
 * than 2 successful runs); TUNER_STAGE_NONE is tuner_recommend(). */
int tuner_recommend_stage(struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                          enum tuner_stage_used stage, struct tuner_recommendation *ret,
                          struct util_error *err);

/*
 * Whether stage 1 is done with a job (runs newest first, now = tuner_rules_recommend() of
 * them): the rules converged; or the newest two runs succeeded and the rules asked for the
 * same settings after each, within their dead band, holding nothing (a target the host
 * cannot give exactly); or the newest 5 runs all succeeded. tuner_recommend() hands over to
 * stage 2 then (docs/tuner.md, "The two stages together").
 */
bool tuner_recommend_rules_done(const struct tuner_run *runs, size_t n,
                                const struct tuner_bounds *b,
                                const struct tuner_recommendation *now);

/* A run as one JSON object (`sparkshim report --job --json`, the offline benchmark's data):
 * every field of struct tuner_run, unknown figures as null. NULL only for ENOMEM. */
json_t *tuner_run_to_json(const struct tuner_run *run);
/* The inverse; -EINVAL with err naming the field for a document it did not write. */
int tuner_run_from_json(const json_t *doc, struct tuner_run *ret, struct util_error *err);
