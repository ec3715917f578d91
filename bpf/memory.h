// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* memory probe: shared between memory.bpf.c and its loader memory.c. */
#pragma once

#include "probe-limits.h"

struct probe_memory_stat {
        __u64 oom_kills;
        __u64 reclaim_ns;
        __u64 reclaim_count;
        __u64 reclaim_pages;
        __u64 oom_events_lost; /* ring buffer full */
};

/* A reclaim in progress, keyed by thread id (reclaim_start hash). */
struct probe_reclaim_start {
        __u64 ts;
        __u32 slot;
        __u32 pad;
};

/* A SIGKILL sent to a task of a watched cgroup, keyed by its thread id (old mark_victim). */
struct probe_kill_target {
        __u32 slot;
        char comm[16];
};

/* What mark_victim passes (rodata victim_shape). */
enum probe_victim_shape {
        VICTIM_TASK = 0,        /* (struct task_struct *task, uid_t uid): 6.8+, some backports */
        VICTIM_PID = 1,         /* (int pid): before */
        VICTIM_TASK_AS_PID = 2, /* a task, handled as its pid: tests the VICTIM_PID path */
};

/* How the victim's cgroup was found (oom_event.how). */
enum probe_oom_victim_how {
        OOM_VICTIM_TASK = 0,    /* mark_victim(task, uid): the victim's own cgroup */
        OOM_VICTIM_SIGNAL = 1,  /* mark_victim(pid): the SIGKILL just sent to that pid */
        OOM_VICTIM_CURRENT = 2, /* mark_victim(pid) on the victim itself (exiting task) */
        OOM_VICTIM_KILLER = 3,  /* mark_victim(pid), no SIGKILL seen: the killer's cgroup */
};

/* Ring buffer record, one per OOM kill of a task in a watched cgroup. */
struct probe_oom_record {
        __u64 ts;
        __u32 slot;
        __u32 pid;
        __u32 how;
        __u32 pad;
        char comm[16];
};

#define MEMORY_RECLAIM_TASKS_MAX 8192
#define MEMORY_KILL_TARGETS_MAX  256
#define MEMORY_RINGBUF_BYTES     (64 * 1024)
