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
 * Library: no logging; int returns >= 0 or -errno with detail in struct probe_error.
 * Not thread-safe: one probe set per thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROBE_ERROR_TEXT_MAX 512
#define PROBE_HIST_SLOTS     32 /* log2 buckets: slot i counts values in [2^i, 2^(i+1)) us */
#define PROBE_CGROUPS_MAX    16

struct probe_error {
        int error;
        char text[PROBE_ERROR_TEXT_MAX];
};

enum probe_kind {
        PROBE_CPU    = 1u << 0,
        PROBE_MEMORY = 1u << 1,
        PROBE_DISK   = 1u << 2,
        PROBE_ALL    = PROBE_CPU | PROBE_MEMORY | PROBE_DISK,
};

/* Totals for one watched cgroup since the probes were attached. */
struct probe_usage {
        /* cpu */
        uint64_t oncpu_ns;                       /* time its tasks ran */
        uint64_t runq_wait_ns;                   /* wakeup -> on CPU, summed */
        uint64_t runq_count;                     /* waits measured */
        uint64_t runq_hist[PROBE_HIST_SLOTS];    /* wait in us, log2 */
        uint64_t wakeups;                        /* sched_wakeup + sched_wakeup_new seen */
        /* memory */
        uint64_t oom_kills;                      /* mark_victim with a victim in the cgroup */
        uint64_t reclaim_ns;                     /* memcg + direct reclaim stall, summed */
        uint64_t reclaim_count;
        uint64_t reclaim_pages;                  /* nr_reclaimed */
        /* disk, attributed to the issuing task's cgroup */
        uint64_t read_bytes, write_bytes;
        uint64_t read_ops, write_ops;
        uint64_t disk_lat_hist[PROBE_HIST_SLOTS]; /* issue -> complete in us, log2 */
};

struct probe;

/*
 * Open, load and attach the probes of `kinds` that this kernel supports, watching the
 * given cgroup ids (1..PROBE_CGROUPS_MAX). Returns NULL on failure with err set:
 * -EPERM (not root / no CAP_BPF), -ENOENT (no BTF), -EOPNOTSUPP (no probe kind attachable).
 */
struct probe *probe_open(const uint64_t *cgroup_ids, size_t n, unsigned kinds,
                         struct probe_error *err);

/* Which kinds are attached (enum probe_kind bits), and why the others are not. */
unsigned probe_attached(const struct probe *p);
const char *probe_missing_reason(const struct probe *p, enum probe_kind kind);

/* Sum the per-CPU maps for cgroup_id into *ret. -ENOENT if it is not watched. */
int probe_read(struct probe *p, uint64_t cgroup_id, struct probe_usage *ret);

/* Detach and free. NULL-safe. */
void probe_close(struct probe *p);

/* The cgroup v2 id of a cgroup directory (its inode number, as bpf_get_current_cgroup_id()). */
int probe_cgroup_id(const char *path, uint64_t *ret);

/* Percentile (0..100) of a log2 histogram in us: the upper bound of the slot reached. */
uint64_t probe_hist_percentile_us(const uint64_t hist[PROBE_HIST_SLOTS], double percentile);
