// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * cpu probe: on-CPU time and run-queue wait of the tasks of watched cgroups.
 *
 * On-CPU: each CPU remembers which task it switched to and that task's run time then; at
 * the next switch on that CPU the previous task (current) is charged the difference, if its
 * cgroup is watched.
 *
 * Run-queue wait: a task of a watched cgroup starts queueing when it is woken
 * (sched_wakeup, sched_wakeup_new: the wakee's own cgroup, read from its task_struct, since
 * current is the waker) or when it is switched out while still runnable (preempted). The
 * wait ends when it is switched in. Every queue start ends exactly once: as a measured wait,
 * as "discarded" (replaced by a newer start before the task ran, or no room in the map), or
 * it is still pending (cpu.c counts those); a task that exits with a start pending discards it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "cpu.h"
#include "probe.bpf.h"

#define TASK_RUNNING 0

char LICENSE[] SEC("license") = "GPL";

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, PROBE_LIMIT_CGROUPS);
        __type(key, __u32);
        __type(value, struct probe_cpu_stat);
} cpu_stats SEC(".maps");

/* What this CPU switched to, and that task's run time (se.sum_exec_runtime) then. */
struct oncpu {
        __u64 task;
        __u64 runtime;
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct oncpu);
} oncpu SEC(".maps");

/* Keyed by task_struct address: no pid read needed on the hot path. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, CPU_RUNQ_TASKS_MAX);
        __type(key, __u64);
        __type(value, struct probe_runq_start);
} runq_start SEC(".maps");

/* Kernels before 5.14 named the field `state`. */
struct task_struct___pre514 {
        long state;
} __attribute__((preserve_access_index));

static __always_inline struct probe_cpu_stat *stat_of(__u32 slot)
{
        return bpf_map_lookup_elem(&cpu_stats, &slot);
}

static __always_inline void discard(__u32 slot)
{
        struct probe_cpu_stat *st = stat_of(slot);

        if (st)
                st->discarded++;
}

/*
 * Entries stay in runq_start while their task lives, ts = 0 when no start is pending:
 * in-place updates of an existing entry take no lock, unlike inserts and deletes.
 */
static __always_inline void queue_start(__u64 task, __u32 slot, __u64 now,
                                        struct probe_cpu_stat *st, bool preempted)
{
        struct probe_runq_start *pending, fresh = {};

        if (preempted)
                st->preemptions++;
        else
                st->wakeups++;

        pending = bpf_map_lookup_elem(&runq_start, &task);
        if (pending) {
                /* the task had not run since its last start: that start never becomes a wait */
                if (pending->ts)
                        discard(pending->slot);
                pending->ts = now;
                pending->slot = slot;
                return;
        }
        fresh.ts = now;
        fresh.slot = slot;
        if (bpf_map_update_elem(&runq_start, &task, &fresh, BPF_NOEXIST))
                st->discarded++; /* the map is full */
}

static __always_inline void queue_end(__u64 task)
{
        struct probe_runq_start *pending = bpf_map_lookup_elem(&runq_start, &task);
        struct probe_cpu_stat *st;
        __u64 ts, wait, now;

        if (!pending || !pending->ts)
                return;
        now = bpf_ktime_get_ns();
        ts = pending->ts;
        pending->ts = 0;
        st = stat_of(pending->slot);
        if (!st)
                return;
        wait = now > ts ? now - ts : 0;
        st->runq_wait_ns += wait;
        st->runq_count++;
        st->runq_hist[hist_slot(wait / 1000)]++;
}

/*
 * How long prev ran since this CPU switched to it, by the scheduler's own account
 * (se.sum_exec_runtime, which the switch-out has just brought up to date; the clock that
 * cpu.stat sums, and cheaper to read than bpf_ktime_get_ns()). Should the switch to prev have
 * gone unseen (on 6.18 the program occasionally misses one; cur then names another task),
 * fall back on prev_sum_exec_runtime, which the fair class sets when it picks a task.
 */
static __always_inline __u64 slice_ns(const struct oncpu *cur, struct task_struct *prev)
{
        __u64 runtime = BPF_CORE_READ(prev, se.sum_exec_runtime);
        __u64 start;

        if (cur->task == (__u64)prev)
                start = cur->runtime;
        else
                start = BPF_CORE_READ(prev, se.prev_sum_exec_runtime);
        return runtime > start ? runtime - start : 0;
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev,
                                     struct task_struct *next, unsigned int prev_state)
{
        __u32 zero = 0;
        struct oncpu *cur = bpf_map_lookup_elem(&oncpu, &zero);
        int slot;

        if (!cur)
                return 0;
        /* current is still prev here */
        slot = watched_slot(bpf_get_current_cgroup_id());
        if (slot >= 0) {
                struct probe_cpu_stat *st = stat_of(slot);

                if (st) {
                        st->oncpu_ns += slice_ns(cur, prev);
                        /*
                         * A task that blocks keeps a start it got while still running
                         * (woken before it slept): its next wakeup replaces it.
                         */
                        if (preempt || prev_state == TASK_RUNNING)
                                queue_start((__u64)prev, slot, bpf_ktime_get_ns(), st, true);
                }
        }
        cur->task = (__u64)next;
        cur->runtime = BPF_CORE_READ(next, se.sum_exec_runtime);
        queue_end((__u64)next);
        return 0;
}

/* sched_switch(preempt, prev, next, prev_state): kernels >= 5.18 */
SEC("raw_tp/sched_switch")
int BPF_PROG(cpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
        return on_switch(preempt, prev, next, prev_state);
}

/* sched_switch(preempt, prev, next): older kernels, the state read from prev */
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
        return on_switch(preempt, prev, next, state);
}

static __always_inline int on_wakeup(struct task_struct *p)
{
        int slot = watched_slot(task_cgroup_id(p));
        struct probe_cpu_stat *st;

        if (slot < 0)
                return 0;
        st = stat_of(slot);
        if (st)
                queue_start((__u64)p, slot, bpf_ktime_get_ns(), st, false);
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

/* The task is gone: drop its entry (a start still pending never became a wait). */
SEC("raw_tp/sched_process_free")
int BPF_PROG(cpu_task_free, struct task_struct *p)
{
        __u64 task = (__u64)p;
        struct probe_runq_start *pending = bpf_map_lookup_elem(&runq_start, &task);

        if (!pending)
                return 0;
        if (pending->ts)
                discard(pending->slot);
        bpf_map_delete_elem(&runq_start, &task);
        return 0;
}
