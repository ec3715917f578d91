/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Declarations shared by the agent's files. log.c, pressure.c and stats.c are plain C with
 * no JVM in them (unit tested); agent.c is the JVMTI glue.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "options.h"

/* ---- log.c: the agent's one logger, "sparkshim-agent: <level>: <message>" on stderr ---- */

void jva_log_set_level(enum jva_log_level level);
bool jva_log_enabled(enum jva_log_level level);
__attribute__((format(printf, 2, 3))) void jva_log(enum jva_log_level level, const char *format,
                                                   ...);

#define log_error(...) jva_log(JVA_LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  jva_log(JVA_LOG_WARN, __VA_ARGS__)
#define log_info(...)  jva_log(JVA_LOG_INFO, __VA_ARGS__)
#define log_debug(...) jva_log(JVA_LOG_DEBUG, __VA_ARGS__)

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t jva_now_ns(void);

/* ---- pressure.c: anonymous memory of the executor ---- */

/* Decimal digits at p (at least one) as a number; *ret_rest (optional) after them.
 * 0 or -EINVAL (no digit, or above UINT64_MAX). */
int jva_parse_decimal_u64(const char *p, uint64_t *ret_value, const char **ret_rest);

/* The "anon N" line of a cgroup v2 memory.stat text, in bytes. 0 or -ENOENT / -EINVAL. */
int jva_parse_memory_stat_anon(const char *text, uint64_t *ret_bytes);

/* The "RssAnon: N kB" line of a /proc/<pid>/status text, in bytes. 0 or -ENOENT / -EINVAL. */
int jva_parse_proc_status_anon(const char *text, uint64_t *ret_bytes);

/* Read anon bytes from <cgroup_dir>/memory.stat, or /proc/self/status when cgroup_dir is
 * NULL or "". 0 or -errno (the file's open/read error, or a parse error). */
int jva_read_anon(const char *cgroup_dir, uint64_t *ret_bytes);

/* ---- stats.c: per-operator statistics, written as JSON lines ---- */

#define JVA_OPERATORS_MAX 64
#define JVA_NAME_MAX      96
#define JVA_HOOKS_MAX     8

enum jva_reason {
        JVA_REASON_FORCE,    /* force-bytes */
        JVA_REASON_PERIODIC, /* periodic */
        JVA_REASON_PRESSURE, /* allow-bytes / allow-fraction under pressure */
        JVA_REASON_COUNT,
};

struct jva_operator {
        char name[JVA_NAME_MAX]; /* the consumer's simple class name */
        uint64_t calls;          /* acquireExecutionMemory calls for this operator type */
        uint64_t requested_bytes;
        uint64_t forced_spills[JVA_REASON_COUNT];
        uint64_t denials;      /* forced spills made by answering "0 bytes granted" */
        uint64_t empty_spills; /* spill() released nothing */
        uint64_t failed_spills;
        uint64_t released_bytes; /* getUsed() before - after; for denials, the holding */
        uint64_t spill_ns_total, spill_ns_max;
        uint64_t reactions;                          /* pressure spills with a reaction latency */
        uint64_t reaction_ns_total, reaction_ns_max; /* pressure seen -> spill end */
        uint64_t decision_ns_total, decision_ns_max; /* pressure seen -> spill start */
        uint64_t capped; /* spills not forced: the task had had max-spills of them */
};

enum jva_hook_state {
        JVA_HOOK_PENDING, /* class not prepared (yet) */
        JVA_HOOK_ON,
        JVA_HOOK_OFF,
};

struct jva_hook {
        const char *name;
        enum jva_hook_state state;
        char reason[256]; /* why it is off */
};

struct jva_pressure {
        const char *source; /* "cgroup" or "proc" */
        const char *path;
        uint64_t anon_bytes, peak_anon_bytes;
        uint64_t threshold_bytes; /* 0: no threshold */
        uint64_t crossings;       /* times anon went above the threshold */
        bool anon_over;           /* anon is above it (until 5% below) */
        bool under_pressure;      /* any source says so */
        uint64_t episodes;        /* times under_pressure became true */
        uint64_t read_errors;
        uint64_t execution_memory_bytes; /* allow-fraction's base; 0: not read (yet) */
        /* psi-stall-ms: memory PSI */
        bool psi_on;
        const char *psi_path;
        bool psi_trigger;                     /* a kernel trigger, else totals polled */
        uint64_t psi_stall_us, psi_window_us; /* as in force */
        uint64_t psi_events;
        bool psi_over; /* an event within the last window */
        /* heap-threshold: the Java heap in use after the last GC */
        bool heap_on;
        uint64_t heap_after_gc_bytes, peak_heap_after_gc_bytes, heap_max_bytes;
        uint64_t heap_threshold_bytes;
        uint64_t heap_crossings;
        bool heap_over;
};

/* Thread-safe: one mutex guards the table. */
struct jva_stats {
        pthread_mutex_t lock;
        unsigned n_operators;
        struct jva_operator operators[JVA_OPERATORS_MAX];
        uint64_t dropped_operators; /* calls for types beyond JVA_OPERATORS_MAX */
};

void jva_stats_init(struct jva_stats *stats);

/* Count one acquireExecutionMemory call of operator type `name`. */
void jva_stats_count_call(struct jva_stats *stats, const char *name, uint64_t requested_bytes);

/* Count one forced spill: `released` bytes in `spill_ns`; reaction_ns 0 when not measured;
 * failed when spill() threw. */
void jva_stats_count_spill(struct jva_stats *stats, const char *name, enum jva_reason reason,
                           uint64_t released, uint64_t spill_ns, uint64_t reaction_ns, bool failed);

/* Count one forced spill made by answering an operator's request with "0 bytes granted":
 * Spark spills it after the agent returns, so it is not timed; `holding` is what the operator
 * held when told, counted as released. reaction_ns as above. */
void jva_stats_count_denial(struct jva_stats *stats, const char *name, enum jva_reason reason,
                            uint64_t holding, uint64_t reaction_ns);

/* Count the decision latency of a reaction: from the pressure episode's start to the start
 * of its first spill (the spill's own time is the rest of the reaction latency). */
void jva_stats_count_decision(struct jva_stats *stats, const char *name, uint64_t decision_ns);

/* A spill the agent would have forced but did not, its task having had max-spills. */
void jva_stats_count_capped(struct jva_stats *stats, const char *name);

/* A copy of one operator's counters; false when the type was never seen. */
bool jva_stats_get(struct jva_stats *stats, const char *name, struct jva_operator *ret);

/*
 * Replace `path` with a snapshot, one JSON object a line: an "agent" record, one "hook"
 * record per hook, a "pressure" record, one "operator" record per operator type. Written to
 * a temporary file beside it and renamed, so readers never see half a snapshot.
 * Returns 0 or -errno.
 */
int jva_stats_write(struct jva_stats *stats, const char *path, bool final,
                    const struct jva_hook *hooks, unsigned n_hooks,
                    const struct jva_pressure *pressure);
