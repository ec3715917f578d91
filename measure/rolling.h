/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rolling: when to retire an executor through Spark's graceful decommission
 * (docs/rolling.md). A state machine fed timestamped samples of the executor's figures
 * (disk writes, memory.events high, memory PSI, the agent's spill totals, whether the JVM
 * catches SIGPWR) that answers, per sample: nothing, send SIGPWR now (once), or go the
 * normal TERM path now (once, the policy's rolling grace after SIGPWR).
 *
 * Pure: no I/O, no clock, no logging, no global state; time comes in the samples. A
 * struct rolling is used by one thread at a time (the monitor's). The caller acts on the
 * decisions (shim/supervise.c sends the signals).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/* A figure that is not known in a sample (the source is missing or could not be read). */
#define ROLLING_UNKNOWN UINT64_MAX

/* Whether the executor's JVM catches SIGPWR (its /proc/<pid>/status SigCgt). */
enum rolling_sigpwr {
        ROLLING_SIGPWR_UNKNOWN = 0, /* not read (no JVM found yet, /proc unreadable) */
        ROLLING_SIGPWR_CAUGHT,      /* Spark registered its decommission handler */
        ROLLING_SIGPWR_NOT_CAUGHT,  /* SIGPWR would kill the JVM (its default action) */
};

/*
 * One sample. Counters are cumulative; a counter lower at a window's end than at its start
 * (a source that changed or restarted) makes that window's figure unknown.
 */
struct rolling_sample {
        uint64_t t_ns;               /* CLOCK_MONOTONIC; not before the previous sample's */
        uint64_t disk_write_bytes;   /* written by the executor since it started */
        uint64_t memory_high_events; /* memory.events "high" */
        uint64_t psi_some_us;        /* memory.pressure "some" total= (microseconds) */
        uint64_t psi_full_us;        /* memory.pressure "full" total= */
        uint64_t spills_forced;      /* the agent's totals.forced_spills + failed_spills */
        uint64_t spills_ineffective; /* the agent's totals.empty_spills + failed_spills */
        enum rolling_sigpwr sigpwr;
};

/* A sample with every figure unknown, at t_ns. */
struct rolling_sample rolling_sample_unknown(uint64_t t_ns);

enum rolling_trigger {
        ROLLING_TRIGGER_NONE = 0,
        ROLLING_TRIGGER_DISK_WRITE,
        ROLLING_TRIGGER_AGE,
        ROLLING_TRIGGER_MEMORY_HIGH,
        ROLLING_TRIGGER_PRESSURE_SOME,
        ROLLING_TRIGGER_PRESSURE_FULL,
        ROLLING_TRIGGER_SPILLS,
        ROLLING_TRIGGER_COUNT,
};

enum rolling_action {
        ROLLING_NONE = 0,
        /* send SIGPWR to the executor's JVM now; returned at most once */
        ROLLING_DECOMMISSION,
        /* a trigger fired, but the JVM does not catch SIGPWR (decommission is off): send
         * nothing; returned at most once per the trigger's cool-down */
        ROLLING_UNAVAILABLE,
        /* the grace after SIGPWR is over and the executor still runs: the normal TERM path
         * (TERM, the policy's grace_seconds, cgroup.kill); returned at most once */
        ROLLING_TERMINATE,
};

/* "disk_write", "age", "memory_high", "memory_pressure_some", "memory_pressure_full",
 * "spills"; "none" */
const char *rolling_trigger_name(enum rolling_trigger t);
/* "none", "decommission", "unavailable", "terminate" */
const char *rolling_action_name(enum rolling_action a);

#define ROLLING_REASON_MAX 384

/* What to do after a sample, and why. */
struct rolling_decision {
        enum rolling_action action;
        enum rolling_trigger trigger; /* the trigger that fired; for TERMINATE the one that
                                       * decommissioned */
        uint64_t t_ns;                /* the sample's time */
        uint64_t age_ns;              /* the executor's age at it */
        /* the trigger's figure and threshold, in unit: bytes, seconds, events, percent, spills */
        double value, threshold;
        const char *unit;
        uint64_t window_ns;              /* the span the figure is over; 0 for disk_write and age */
        struct rolling_sample sample;    /* the sample it was decided on */
        char reason[ROLLING_REASON_MAX]; /* one line for the log and the report */
};

struct rolling;

/*
 * A machine for one executor started at start_ns, with the policy's rolling section
 * (copied). NULL only on ENOMEM. With rolling off (p->enabled false) every sample gives
 * ROLLING_NONE.
 */
struct rolling *rolling_new(const struct policy_rolling *p, uint64_t start_ns);
void rolling_free(struct rolling *r); /* NULL-safe */

/*
 * Feed one sample; *ret says what to do now (ROLLING_NONE mostly). -EINVAL when the sample
 * is older than the previous one or than start_ns (it is ignored, *ret is ROLLING_NONE).
 * Triggers are checked in the order of enum rolling_trigger; the first that fires wins.
 */
int rolling_feed(struct rolling *r, const struct rolling_sample *s, struct rolling_decision *ret);

/*
 * The SIGPWR of the last DECOMMISSION decision could not be sent (the JVM exited, no fd):
 * back to watching, that decision counted as UNAVAILABLE instead, and *d (that decision)
 * rewritten to say so with why. The trigger keeps its cool-down. -EINVAL when the machine
 * is not decommissioning.
 */
int rolling_decommission_failed(struct rolling *r, struct rolling_decision *d, const char *why);

/* Counters for the report: how many times each action was decided so far. */
struct rolling_counts {
        uint64_t decommission, unavailable, terminate;
        uint64_t by_trigger[ROLLING_TRIGGER_COUNT]; /* firings, whatever their action */
};
void rolling_counts(const struct rolling *r, struct rolling_counts *ret);

/* True once SIGPWR was decided: the executor is decommissioning (or terminated). */
bool rolling_decommissioning(const struct rolling *r);

/*
 * The SigCgt mask of a /proc/<pid>/status text (len bytes, need not be NUL-terminated).
 * Exactly one "SigCgt:\t<16 hex digits>" line is accepted; none, two, or a malformed one is
 * -EINVAL (the Name: line is the process's own, but the kernel escapes its newlines).
 */
int rolling_status_sigcgt(const char *text, size_t len, uint64_t *ret_mask);

/* From a SigCgt mask: does the process catch signal sig (1..64)? */
enum rolling_sigpwr rolling_sigpwr_from_mask(uint64_t mask, int sig);
