/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the sparkshim executable's modules share beyond util.h: the reserved exit codes, the
 * error carrier (error.h), the logger (log.h) and the one cgroup fact measure/ reads.
 * shim/ and measure/ include this; nothing below measure/ includes a shim/ header.
 */
#pragma once

#include <stdarg.h>
#include <stdint.h>

#include "error.h"

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
struct util_memory_events {
        uint64_t low, high, max, oom, oom_kill;
};
