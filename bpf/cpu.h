// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * cpu probe: shared between cpu.bpf.c and its loader cpu.c. Per-CPU counters per watched
 * slot, and the pending run-queue starts of watched tasks keyed by task_struct address.
 */
#pragma once

#include "probe-limits.h"

/* One watched cgroup's counters on one CPU (cpu_stats, a per-CPU array indexed by slot). */
struct probe_cpu_stat {
        __u64 oncpu_ns;
        __u64 runq_wait_ns;
        __u64 runq_count;
        __u64 wakeups;     /* sched_wakeup(_new) of a task of the cgroup: a queue start */
        __u64 preemptions; /* switched out while still runnable: a queue start */
        __u64 discarded;   /* queue starts that never became a measured wait */
        __u64 runq_hist[PROBE_LIMIT_HIST];
};

/* A task of a watched cgroup (runq_start hash, until the task is freed). */
struct probe_runq_start {
        __u64 ts; /* it became runnable then and has not run since; 0: not waiting */
        __u32 slot;
        __u32 pad;
};

#define CPU_RUNQ_TASKS_MAX 16384
