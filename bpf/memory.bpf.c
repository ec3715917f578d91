// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * memory probe: OOM kills of tasks of watched cgroups, and the time their tasks spend
 * stalled in memcg or direct reclaim.
 *
 * mark_victim has two shapes. Newer kernels (and distribution kernels that took the
 * backport) pass the victim task: its own cgroup is read. Older ones pass only its pid; the
 * OOM killer sends the victim SIGKILL just before, so signal_generate remembers the cgroup
 * of every task of a watched cgroup that gets a SIGKILL, by pid, and mark_victim looks the
 * pid up there. See docs/probes.md for the remaining cases.
 *
 * Reclaim is charged to the cgroup of current, the task that stalled in it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "memory.h"
#include "probe.bpf.h"

#define SIGKILL 9

char LICENSE[] SEC("license") = "GPL";

/* enum probe_victim_shape */
const volatile __u32 victim_shape = VICTIM_TASK;
/* One event per OOM kill in the ring buffer: a set of its own, whose loader reads it; not the
 * node's set, where nobody does (the counters count the kills either way). */
const volatile bool ring_events = true;

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, PROBE_LIMIT_CGROUPS);
        __type(key, __u32);
        __type(value, struct probe_memory_stat);
} memory_stats SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, MEMORY_RECLAIM_TASKS_MAX);
        __type(key, __u32);
        __type(value, struct probe_reclaim_start);
} reclaim_start SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, MEMORY_KILL_TARGETS_MAX);
        __type(key, __u32);
        __type(value, struct probe_kill_target);
} kill_targets SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, MEMORY_RINGBUF_BYTES);
} oom_events SEC(".maps");

static __always_inline struct probe_memory_stat *stat_of(__u32 slot)
{
        return bpf_map_lookup_elem(&memory_stats, &slot);
}

/* comm: 16 bytes on the BPF stack */
static __always_inline void oom_kill(__u32 slot, __u32 pid, const char *comm, __u32 how)
{
        struct probe_memory_stat *st = stat_of(slot);
        struct probe_oom_record *ev;

        if (!st)
                return;
        st->oom_kills++;
        if (!ring_events)
                return;
        ev = bpf_ringbuf_reserve(&oom_events, sizeof(*ev), 0);
        if (!ev) {
                st->oom_events_lost++;
                return;
        }
        ev->ts = bpf_ktime_get_ns();
        ev->slot = slot;
        ev->pid = pid;
        ev->how = how;
        ev->pad = 0;
        __builtin_memcpy(ev->comm, comm, sizeof(ev->comm));
        bpf_ringbuf_submit(ev, 0);
}

static __always_inline int victim_by_pid(__u32 pid)
{
        struct probe_kill_target *target = bpf_map_lookup_elem(&kill_targets, &pid);
        struct probe_kill_target copy;
        char comm[16] = {};
        int slot;

        if (target) {
                copy = *target;
                bpf_map_delete_elem(&kill_targets, &pid);
                oom_kill(copy.slot, pid, copy.comm, OOM_VICTIM_SIGNAL);
                return 0;
        }
        /* no SIGKILL was sent: the victim is current, or an exiting task elsewhere */
        slot = watched_slot(bpf_get_current_cgroup_id());
        if (slot < 0)
                return 0;
        if (pid == (__u32)bpf_get_current_pid_tgid()) {
                bpf_get_current_comm(comm, sizeof(comm));
                oom_kill(slot, pid, comm, OOM_VICTIM_CURRENT);
        } else {
                oom_kill(slot, pid, comm, OOM_VICTIM_KILLER);
        }
        return 0;
}

/* args[0] is the victim task, or its pid on older kernels */
SEC("raw_tp/mark_victim")
int BPF_PROG(mem_victim, __u64 victim)
{
        struct task_struct *task = (void *)victim;
        char comm[16] = {};
        int slot;

        if (victim_shape == VICTIM_PID)
                return victim_by_pid((__u32)victim);
        if (victim_shape == VICTIM_TASK_AS_PID)
                return victim_by_pid(BPF_CORE_READ(task, pid));
        slot = watched_slot(task_cgroup_id(task));
        if (slot < 0)
                return 0;
        BPF_CORE_READ_STR_INTO(&comm, task, comm);
        oom_kill(slot, BPF_CORE_READ(task, pid), comm, OOM_VICTIM_TASK);
        return 0;
}

/* signal_generate(sig, info, task, group, result): only needed with mark_victim(pid) */
SEC("raw_tp/signal_generate")
int BPF_PROG(mem_sigkill, int sig, void *info, struct task_struct *task)
{
        struct probe_kill_target target = {};
        __u32 pid;
        int slot;

        if (sig != SIGKILL)
                return 0;
        slot = watched_slot(task_cgroup_id(task));
        if (slot < 0)
                return 0;
        target.slot = slot;
        BPF_CORE_READ_STR_INTO(&target.comm, task, comm);
        pid = BPF_CORE_READ(task, pid);
        bpf_map_update_elem(&kill_targets, &pid, &target, BPF_ANY);
        return 0;
}

static __always_inline int reclaim_begin(void)
{
        int slot = watched_slot(bpf_get_current_cgroup_id());
        struct probe_reclaim_start start = {};
        __u32 tid;

        if (slot < 0)
                return 0;
        tid = (__u32)bpf_get_current_pid_tgid();
        start.ts = bpf_ktime_get_ns();
        start.slot = slot;
        bpf_map_update_elem(&reclaim_start, &tid, &start, BPF_ANY);
        return 0;
}

static __always_inline int reclaim_end(unsigned long nr_reclaimed)
{
        __u32 tid = (__u32)bpf_get_current_pid_tgid();
        struct probe_reclaim_start *start = bpf_map_lookup_elem(&reclaim_start, &tid);
        struct probe_memory_stat *st;
        __u64 now, ts;
        __u32 slot;

        if (!start)
                return 0;
        ts = start->ts;
        slot = start->slot;
        bpf_map_delete_elem(&reclaim_start, &tid);
        st = stat_of(slot);
        if (!st)
                return 0;
        now = bpf_ktime_get_ns();
        st->reclaim_ns += now > ts ? now - ts : 0;
        st->reclaim_count++;
        st->reclaim_pages += nr_reclaimed;
        return 0;
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(mem_memcg_begin)
{
        return reclaim_begin();
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(mem_memcg_end, unsigned long nr_reclaimed)
{
        return reclaim_end(nr_reclaimed);
}

SEC("raw_tp/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(mem_direct_begin)
{
        return reclaim_begin();
}

SEC("raw_tp/mm_vmscan_direct_reclaim_end")
int BPF_PROG(mem_direct_end, unsigned long nr_reclaimed)
{
        return reclaim_end(nr_reclaimed);
}
