/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the sparkshim executable's modules share beyond util.h: the reserved exit codes, the
 * one-line error struct and the few cgroup facts measure/ reads; the logger is log.h's.
 * shim/ and measure/ include this; nothing below measure/ includes a shim/ header.
 */
#pragma once

#include "error.h"

#include <stdarg.h>
#include <stdint.h>

/* Exit codes of the shim's own failures (sparkshim(1), EXIT STATUS). */
enum {
        SHIM_EXIT_USAGE = 120,      /* bad flag, argument or environment value */
        SHIM_EXIT_POLICY = 121,     /* policy file missing, unreadable, unsafe or invalid */
        SHIM_EXIT_PLAN = 122,       /* executor settings rejected by the policy */
        SHIM_EXIT_CGROUP = 123,     /* plan could not be enforced and fail_mode is closed */
        SHIM_EXIT_INTERNAL = 124,   /* the shim itself failed (fork, signals, memory) */
        SHIM_EXIT_REPORT = 125,     /* a report sink cannot be opened */
        SHIM_EXIT_CANNOT_RUN = 126, /* command found but not executable */
        SHIM_EXIT_NOT_FOUND = 127,  /* command not found */
};

/* the logger, for the modules that include this file (new code includes log.h itself) */
#include "log.h"

/* ---- cgroup facts shared with measure/ ---- */

/* memory.events counters, for OOM reporting. */
struct shim_memory_events {
        uint64_t low, high, max, oom, oom_kill;
};

enum shim_cgroup_layout {
        SHIM_CGROUP_NONE = 0, /* no cgroup2 mount found */
        SHIM_CGROUP_UNIFIED,  /* pure cgroup v2 at /sys/fs/cgroup */
        SHIM_CGROUP_HYBRID,   /* v2 at /sys/fs/cgroup/unified, controllers on v1 */
        SHIM_CGROUP_LEGACY,   /* v1 only */
};

struct shim_cgroup_host {
        enum shim_cgroup_layout layout;
        char mount[256]; /* cgroup2 mount point, "" when none */
};

/*
 * Find the cgroup2 mount under root ("/sys/fs/cgroup" normally). Defined in shim/cgroup.c:
 * `sparkshim probe` (measure/report.c) uses it, so only the sparkshim executable links it.
 */
int shim_cgroup_detect(const char *root, struct shim_cgroup_host *ret);
const char *shim_cgroup_layout_name(enum shim_cgroup_layout l);
