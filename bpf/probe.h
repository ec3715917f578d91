/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe: eBPF measurement of watched cgroups (CO-RE, libbpf skeletons, raw tracepoints).
 *
 * Three probes, each switched on per kernel by looking its tracepoints up in the kernel's
 * BTF: cpu (sched_switch, sched_wakeup, sched_wakeup_new), memory (mark_victim,
 * mm_vmscan_memcg_reclaim_begin/end, mm_vmscan_direct_reclaim_begin/end) and disk
 * (block_rq_issue/block_rq_complete, or block_io_start/done). The watched cgroup ids
 * (cgroup v2 inode numbers) are set before load; aggregation is in per-CPU maps, read by
 * probe_read(); rare events (OOM kills) also go through a ring buffer.
 *
 * Library: no logging; int returns >= 0 or -errno with detail in struct util_error.
 * Not thread-safe: one probe set per thread.
 */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROBE_HIST_SLOTS  32   /* log2 buckets: slot i counts values in [2^i, 2^(i+1)) us */
#define PROBE_CGROUPS_MAX 16   /* cgroups of one probe_open() */
#define PROBE_NODE_MAX    1024 /* cgroups the node's set watches (probe_open_node) */
#define PROBE_PATH_MAX    256
/* Where sparkshim pins the node's set: one directory per build of the programs below it. */
#define PROBE_NODE_ROOT "/sys/fs/bpf/sparkshim"

enum probe_kind {
        PROBE_CPU = 1u << 0,
        PROBE_MEMORY = 1u << 1,
        PROBE_DISK = 1u << 2,
        PROBE_ALL = PROBE_CPU | PROBE_MEMORY | PROBE_DISK,
};

/* Totals for one watched cgroup since the probes were attached. */
struct probe_usage {
        /* cpu */
        uint64_t oncpu_ns;                    /* time its tasks ran */
        uint64_t runq_wait_ns;                /* queued -> on CPU, summed (sched_info) */
        uint64_t runq_count;                  /* waits measured */
        uint64_t runq_hist[PROBE_HIST_SLOTS]; /* wait in us, log2 */
        uint64_t wakeups;                     /* sched_wakeup(_new) that queued a task */
        /* memory */
        uint64_t oom_kills;  /* mark_victim with a victim in the cgroup */
        uint64_t reclaim_ns; /* memcg + direct reclaim stall, summed */
        uint64_t reclaim_count;
        uint64_t reclaim_pages; /* nr_reclaimed */
        /* disk, attributed to the issuing task's cgroup */
        uint64_t read_bytes, write_bytes;
        uint64_t read_ops, write_ops;
        uint64_t disk_lat_hist[PROBE_HIST_SLOTS]; /* issue -> complete in us, log2 */
        uint64_t disk_requests_lost;              /* not followed: no room (docs/probes.md) */
        /*
         * Run-queue bookkeeping (docs/probes.md): a queue start is a wakeup that queued a task
         * of the cgroup or a preemption of one; every start ends as one wait, counted at the
         * task's next switch-out. Once every task that started has switched out again (they
         * all exited, say): wakeups + runq_preemptions == runq_count. The sum of runq_hist is
         * runq_count.
         */
        uint64_t runq_preemptions; /* switched out while still runnable */
        uint64_t runq_unseen;      /* switch-outs not measured (no task-local storage) */
        uint64_t oom_events_lost;  /* OOM kills counted whose ring buffer event was dropped */
};

struct probe;

/*
 * Let the SPARKSHIM_PROBE_* test variables of docs/probes.md (older kernels' code paths,
 * libbpf's output on stderr) take effect in this process. Off by default: sparkshim runs as
 * root in the user's environment and never turns them on; probe-dump, a test tool, does.
 */
void probe_set_test_hooks(bool on);

/*
 * Open, load and attach the probes of `kinds` that this kernel supports, watching the
 * given cgroup ids (1..PROBE_CGROUPS_MAX). Returns NULL on failure with err set:
 * -EPERM (not root / no CAP_BPF), -ENOENT (no BTF), -EOPNOTSUPP (no probe kind attachable).
 */
struct probe *probe_open(const uint64_t *cgroup_ids, size_t n, unsigned kinds,
                         struct util_error *err);

/* Which kinds are attached (enum probe_kind bits), and why the others are not. */
unsigned probe_attached(const struct probe *p);
const char *probe_missing_reason(const struct probe *p, enum probe_kind kind);

/* Sum the per-CPU maps for cgroup_id into *ret. -ENOENT if it is not watched. */
int probe_read(struct probe *p, uint64_t cgroup_id, struct probe_usage *ret);

/*
 * Watch cgroup_id with the node's probe set (docs/probes.md, "One set per node"): one set of
 * programs for every executor on the node, pinned in a bpf filesystem under root (sparkshim:
 * PROBE_NODE_ROOT, with the bpf filesystem mounted on /sys/fs/bpf when it is not). Loads and
 * pins the set when this build's is not there; registers cgroup_id in its map of watched
 * cgroups, under a lock on root, after removing the entries of shims that died. root must
 * be a directory only root can use. probe_close() unregisters; the last one out unpins the
 * set. Returns NULL with err set: -EOPNOTSUPP (no bpf filesystem), -EPERM (root not safe,
 * not privileged), -ETIMEDOUT (another shim held the lock for PROBE_NODE_LOCK_MS), -ENOSPC
 * (PROBE_NODE_MAX cgroups watched), -EBUSY (a live shim watches cgroup_id), or probe_open's.
 */
/*
 * The lock on the node's root (only root can open it) is waited for up to 30 s to join: as
 * long as a load of the set takes on a loaded node, with room (about 60 ms on an idle host,
 * seconds in an emulated guest under load); a shim that gives up loads a set of its own,
 * which costs as much. A shim that leaves waits 5 s, then removes its entry without the lock
 * (its exit is not held up; the next start rebuilds the filter and sweeps). The mount
 * point's lock, which a user can take before the bpf filesystem is there, is waited for 5 s.
 */
#define PROBE_NODE_LOCK_MS       30000
#define PROBE_NODE_LEAVE_LOCK_MS 5000
#define PROBE_NODE_MOUNT_LOCK_MS 5000
struct probe *probe_open_node(const char *root, uint64_t cgroup_id, struct util_error *err);

/* Is p a registration with the node's set (probe_open_node)? */
bool probe_is_node(const struct probe *p);

/* One registration of the node's set (probe_node_list). */
struct probe_node_entry {
        uint64_t cgroup_id;
        uint32_t slot;
        uint32_t owner_pid;
        bool owner_alive; /* false: its shim died; the next registration removes it */
};

/*
 * The registrations of this build's node set under root: up to max into ret. Returns how
 * many there are (may exceed max), 0 when no set is pinned, or -errno with err set.
 */
int probe_node_list(const char *root, struct probe_node_entry *ret, size_t max,
                    struct util_error *err);

/* Detach and free; a node registration is removed (probe_open_node). NULL-safe. */
void probe_close(struct probe *p);

/* The cgroup v2 id of a cgroup directory (its inode number, as bpf_get_current_cgroup_id()). */
int probe_cgroup_id(const char *path, uint64_t *ret);

/* Percentile (0..100) of a log2 histogram in us: the upper bound of the slot reached. */
uint64_t probe_hist_percentile_us(const uint64_t hist[PROBE_HIST_SLOTS], double percentile);

/* ---- additions beyond the first contract ---- */

/* "cpu", "memory", "disk"; NULL for anything else. */
const char *probe_kind_name(enum probe_kind kind);

/*
 * What an attached kind hooks on this kernel, e.g. "sched_switch sched_wakeup
 * sched_wakeup_new" or "mark_victim(pid) signal_generate ...". NULL when not attached.
 * Owned by p.
 */
const char *probe_kind_detail(const struct probe *p, enum probe_kind kind);

/* How an OOM victim was tied to its cgroup (docs/probes.md, "memory"). */
enum probe_oom_attribution {
        PROBE_OOM_TASK = 0,    /* mark_victim passed the victim task: its own cgroup */
        PROBE_OOM_SIGNAL = 1,  /* mark_victim(pid): the SIGKILL the OOM killer sent that pid */
        PROBE_OOM_CURRENT = 2, /* mark_victim(pid) of current: its own cgroup */
        PROBE_OOM_KILLER = 3,  /* mark_victim(pid), no SIGKILL seen: the killing task's cgroup */
};

/* One OOM kill of a task of a watched cgroup (the ring buffer's event). */
struct probe_oom_event {
        uint64_t cgroup_id;
        uint64_t t_ns; /* CLOCK_MONOTONIC */
        uint32_t pid;  /* victim thread id (global pid namespace) */
        enum probe_oom_attribution attribution;
        char comm[16]; /* victim's command name; empty for PROBE_OOM_KILLER */
};

/*
 * Hand every queued OOM event to fn (in order), without blocking. fn returning < 0 stops
 * and that value is returned. Returns the number of events consumed, or -EOPNOTSUPP when
 * the memory kind is not attached.
 */
int probe_consume_oom(struct probe *p,
                      int (*fn)(const struct probe_oom_event *event, void *userdata),
                      void *userdata);

/* An fd that polls readable when OOM events are queued (owned by p), or -EOPNOTSUPP. */
int probe_oom_fd(const struct probe *p);

/* Kernel run-time statistics of one loaded BPF program (kernel.bpf_stats_enabled). */
struct probe_program_stats {
        char name[16];
        enum probe_kind kind;
        uint32_t id;      /* kernel program id, as `bpftool prog show id` takes */
        uint64_t run_cnt; /* 0 unless kernel.bpf_stats_enabled was 1 */
        uint64_t run_time_ns;
};

/*
 * Fill up to max entries for the attached programs. Returns how many programs there are
 * (may exceed max), or -errno.
 */
int probe_program_stats(const struct probe *p, struct probe_program_stats *ret, size_t max);
