// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * cpu probe: shared between cpu.bpf.c and its loader cpu.c: the per-CPU counters of a watched
 * cgroup.
 */
#pragma once

#include "probe-limits.h"

/* One watched cgroup's counters on one CPU (cpu_stats, a per-CPU array indexed by slot). */
struct probe_cpu_stat {
        __u64 oncpu_ns;
        __u64 runq_wait_ns;
        __u64 runq_count;
        __u64 wakeups;     /* sched_wakeup(_new) that queued a task of the cgroup: a queue start */
        __u64 preemptions; /* switched out while still runnable: a queue start */
        __u64 unseen;      /* switch-outs not measured: no task-local storage for the task */
        __u64 runq_hist[PROBE_LIMIT_HIST];
};
