// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * cpu probe: on-CPU time and run-queue wait of the tasks of watched cgroups.
 *
 * The scheduler already keeps both per task: se.sum_exec_runtime (the run time cpu.stat
 * sums) and, in sched_info, run_delay (time spent waiting on a run queue) and pcount (how
 * many times the task arrived on a CPU after waiting). So this probe reads no clock and
 * stamps nothing. At every switch-out of a task of a watched cgroup (sched_switch, where that
 * task is still current) it takes the difference of those counters since the task's previous
 * switch-out, kept in task-local storage: the slice it just ran, and the one wait that came
 * before the slice (pcount grows by one per arrival). Only current is ever read, through the
 * trusted pointer bpf_get_current_task_btf() returns: plain loads, no helper per field.
 *
 * Queue starts, counted to cross-check the waits: a wakeup of a task of a watched cgroup that
 * put it on a run queue (sched_wakeup, sched_wakeup_new: the wakee's own cgroup and
 * sched_info, read from its task_struct, since current is the waker), and a switch-out of a
 * task still runnable (a preemption). Every start ends as a wait at the task's next switch-out.
 *
 * A task first seen after its cgroup was registered (the watch's start_ns), but started
 * before, is taken from then on: its earlier waits are not counted; its current slice is,
 * from when it was picked (se.prev_sum_exec_runtime).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "cpu.h"
#include "probe.bpf.h"

#define TASK_RUNNING 0

char LICENSE[] SEC("license") = "GPL";

/*
 * Two builds of this file (bpf/meson.build). The wakeup programs read a task that is not
 * current: the portable build with bpf_probe_read_kernel() (BPF_CORE_READ), a helper call per
 * field; the direct one (PROBE_DIRECT, kernels with the bpf_rdonly_cast kfunc, 6.2+) with
 * plain loads, as the verifier allows for a pointer it knows the BTF type of. cpu.c picks the
 * direct one when the kernel's BTF has the kfunc.
 */
#ifdef PROBE_DIRECT
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define AS_TASK(p)                                                                                 \
        ((struct task_struct *)bpf_rdonly_cast((p), bpf_core_type_id_kernel(struct task_struct)))
#define TASK_FIELD(p, field) (AS_TASK(p)->field)
#define TASK_CGROUP_ID(p)    (AS_TASK(p)->cgroups->dfl_cgrp->kn->id)
#else
#define TASK_FIELD(p, field) BPF_CORE_READ((p), field)
#define TASK_CGROUP_ID(p)    task_cgroup_id(p)
#endif

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, PROBE_LIMIT_CGROUPS);
        __type(key, __u32);
        __type(value, struct probe_cpu_stat);
} cpu_stats SEC(".maps");

/* A task of a watched cgroup: its counters at its last switch-out. Freed with the task. */
struct task_base {
        __u64 runtime;   /* se.sum_exec_runtime */
        __u64 run_delay; /* sched_info.run_delay */
        __u64 pcount;    /* sched_info.pcount */
        __u64 seen;      /* 0: the entry was just created */
};

struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, struct task_base);
} task_bases SEC(".maps");

/* Kernels before 5.14 named the field `state`. */
struct task_struct___pre514 {
        long state;
} __attribute__((preserve_access_index));

static __always_inline struct probe_cpu_stat *stat_of(__u32 slot)
{
        return bpf_map_lookup_elem(&cpu_stats, &slot);
}

static __always_inline int on_switch(unsigned int prev_state)
{
        struct task_struct *task;
        struct probe_cpu_stat *st;
        struct probe_watch *watch;
        struct task_base *base;
        __u64 runtime, run_delay = 0, pcount = 0, waits;

        /* current is still prev here */
        watch = watch_of(bpf_get_current_cgroup_id());
        if (!watch)
                return 0;
        st = stat_of(watch->slot);
        if (!st)
                return 0;
        if (prev_state == TASK_RUNNING)
                st->preemptions++;

        task = bpf_get_current_task_btf();
        base = bpf_task_storage_get(&task_bases, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
        if (!base) {
                st->unseen++; /* no memory for the entry, or the storage is busy */
                return 0;
        }
        runtime = task->se.sum_exec_runtime;
        if (bpf_core_field_exists(task->sched_info)) {
                run_delay = task->sched_info.run_delay;
                pcount = task->sched_info.pcount;
        }
        if (!base->seen) {
                base->seen = 1;
                if (task->start_time < watch->start_ns) {
                        /* older than the probe: from now on, and this whole slice */
                        base->runtime = task->se.prev_sum_exec_runtime;
                        base->run_delay = run_delay;
                        base->pcount = pcount;
                }
        }
        if (runtime > base->runtime)
                st->oncpu_ns += runtime - base->runtime;
        waits = pcount - base->pcount;
        if (pcount > base->pcount && run_delay >= base->run_delay) {
                __u64 wait = run_delay - base->run_delay;

                st->runq_wait_ns += wait;
                st->runq_count += waits;
                /* one wait per slice; more when switches went unseen (the mean of them) */
                st->runq_hist[hist_slot(wait / waits / 1000)] += waits;
        }
        base->runtime = runtime;
        base->run_delay = run_delay;
        base->pcount = pcount;
        return 0;
}

/* sched_switch(preempt, prev, next, prev_state): kernels >= 5.18 */
SEC("raw_tp/sched_switch")
int BPF_PROG(cpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
        return on_switch(prev_state);
}

/* sched_switch(preempt, prev, next): older kernels, the state read from prev (current) */
SEC("raw_tp/sched_switch")
int BPF_PROG(cpu_switch_nost, bool preempt, struct task_struct *prev, struct task_struct *next)
{
        unsigned int state;

        if (bpf_core_field_exists(prev->__state)) {
                state = BPF_CORE_READ(prev, __state);
        } else {
                struct task_struct___pre514 *old = (void *)prev;

                state = (unsigned int)BPF_CORE_READ(old, state);
        }
        return on_switch(state);
}

/*
 * The wakee is on a run queue now, its queueing time stamped (sched_info.last_queued) unless it
 * was still running (woken before it got to sleep): only the former starts a wait.
 */
static __always_inline int on_wakeup(struct task_struct *p)
{
        int slot = watched_slot(TASK_CGROUP_ID(p));
        struct probe_cpu_stat *st;

        if (slot < 0)
                return 0;
        st = stat_of(slot);
        if (!st)
                return 0;
        if (!bpf_core_field_exists(p->sched_info) || TASK_FIELD(p, sched_info.last_queued))
                st->wakeups++;
        return 0;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(cpu_wakeup, struct task_struct *p)
{
        return on_wakeup(p);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(cpu_wakeup_new, struct task_struct *p)
{
        return on_wakeup(p);
}
