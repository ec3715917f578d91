/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's options: `-agentpath:/path/libsparkshim-agent.so=key=value,key=value,...`.
 * Pure C (no JVM), so the parser is unit tested on its own. Not thread-safe; the agent
 * parses once in Agent_OnLoad and only reads the result afterwards.
 */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stdint.h>

#define JVA_PATH_MAX 4096

/* max-spills: each forced spill is one more file for the task to merge, and the merge of an
 * UnsafeExternalSorter holds about 3 MiB of buffers per file (docs/sparkshim-agent.7.md). */
#define JVA_MAX_SPILLS_DEFAULT 32

enum jva_log_level {
        JVA_LOG_ERROR,
        JVA_LOG_WARN,
        JVA_LOG_INFO,
        JVA_LOG_DEBUG,
};

/* A failed parse: errno-style code and the one line the agent prints after
 * "sparkshim-agent: error: ", shaped "<key>=<value>: <problem>; allowed: <what>". */

/* Every size is in bytes; 0 means "not given" for the optional ones. */
struct jva_options {
        uint64_t force_bytes;    /* force-bytes: spill an operator holding >= this */
        uint64_t allow_bytes;    /* allow-bytes: under pressure, spill operators holding >= this */
        double allow_fraction;   /* allow-fraction: ... or >= this share of execution memory */
        uint64_t periodic_bytes; /* periodic: spill each time an operator grows past this */
        uint64_t records;        /* records: Spark's numElementsForceSpillThreshold */
        char cgroup[JVA_PATH_MAX]; /* cgroup: v2 directory whose memory.stat anon is read */
        uint64_t threshold_bytes;  /* threshold as given in bytes, or resolved from the fraction */
        double threshold_fraction; /* threshold as a fraction of limit (or request) */
        uint64_t limit_bytes;      /* limit: the executor's memory limit */
        uint64_t request_bytes;    /* request: the executor's memory request */
        char stats[JVA_PATH_MAX];  /* stats: JSON-lines statistics file ("" = none) */
        uint64_t stats_interval_s; /* stats-interval: rewrite stats every N s (0 = at exit) */
        uint64_t cooldown_ms;      /* cooldown-ms: least time between pressure spills */
        uint64_t min_spill_bytes;  /* min-spill: never spill an operator holding less */
        uint64_t max_spills;       /* max-spills: forced spills per task (0 = no cap) */
        uint64_t psi_stall_ms;     /* psi-stall-ms: memory "some" stall per window (0 = off) */
        uint64_t psi_window_ms;    /* psi-window-ms: its window */
        double heap_threshold;     /* heap-threshold: heap in use after GC / max heap (0 = off) */
        enum jva_log_level log_level;
};

/* The defaults: no spill mode, log=warn, cooldown-ms=500, max-spills=32, stats-interval=10,
 * psi-window-ms=1000. */
void jva_options_init(struct jva_options *options);

/*
 * Parse the option string that follows '=' in -agentpath (NULL or "" = defaults).
 * Returns 0 and fills *ret_options, or -EINVAL / -ERANGE with ret_error (optional) set;
 * *ret_options is then unspecified. Keys may come in any order, each at most once.
 */
int jva_options_parse(const char *text, struct jva_options *ret_options,
                      struct util_error *ret_error);

/*
 * A Spark byte string ("512", "64k", "8m", "1g", "2t", "1p"; b/kb/mb/gb/tb/pb too; case and
 * surrounding blanks ignored; bytes when there is no suffix), like JavaUtils.byteStringAsBytes.
 * Returns 0, -EINVAL (malformed or fractional) or -ERANGE (above a Java long).
 */
int jva_parse_bytes(const char *text, uint64_t *ret_bytes);

/* "error", "warn", "info", "debug". */
const char *jva_log_level_name(enum jva_log_level level);

/* True when any mode may make the agent spill an operator. */
bool jva_options_spill_enabled(const struct jva_options *options);

/* True when any pressure source is given (threshold=, psi-stall-ms=, heap-threshold=). */
bool jva_options_pressure_source(const struct jva_options *options);
