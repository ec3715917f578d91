/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory PSI of the executor's cgroup (<cgroup>/memory.pressure) or of the system
 * (/proc/pressure/memory) as a pressure source of the agent. Plain C, no JVM; the agent
 * thread polls it at every tick.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct jva_psi {
        int fd;
        bool trigger;                 /* a kernel trigger; else totals are compared at each poll */
        int trigger_error;            /* why there is no trigger (errno), 0 with one */
        uint64_t stall_us, window_us; /* as asked */
        uint64_t trigger_stall_us, trigger_window_us; /* as the kernel took them */
        uint64_t last_total_us, last_ns;              /* the polling fallback's previous reading */
        uint64_t events;                              /* polls that found the stall rate reached */
        char path[4096];
};

/* The "total=" of the "some" line of a pressure file's text, in us. 0, -ENOENT, -EINVAL. */
int jva_parse_psi_some_total(const char *text, uint64_t *ret_us);

/*
 * Watch for STALL us of "some" memory stall within WINDOW us (0 < stall <= window), on
 * cgroup_dir's memory.pressure, or the system's when cgroup_dir is NULL or "". Returns 0, or
 * -errno when the file cannot be opened or read.
 */
int jva_psi_open(struct jva_psi *psi, const char *cgroup_dir, uint64_t stall_us,
                 uint64_t window_us);

/* Did the stall rate get reached since the last poll? Never blocks. 0 or -errno (-ENODEV:
 * the cgroup was removed). */
int jva_psi_poll(struct jva_psi *psi, bool *ret_fired);

void jva_psi_close(struct jva_psi *psi);
