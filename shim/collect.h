/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collect: usage from files and netlink, always available (the fallback of bpf/ and its
 * cross-check). Reads a cgroup v2 directory (cpu.stat, memory.current/peak/stat/events,
 * io.stat, cpu/memory/io.pressure), /proc/<pid>/io and /proc/<pid>/status of every process
 * of the executor, and taskstats over libnl-genl (per task, and exit records of tasks
 * that ended, which needs CAP_NET_ADMIN).
 *
 * No logging; int returns >= 0 or -errno with detail in struct collect_error. A figure
 * that could not be read is left at COLLECT_UNSET and its source at NULL.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define COLLECT_ERROR_TEXT_MAX 512
#define COLLECT_UNSET          UINT64_MAX

struct collect_error {
        int error;
        char text[COLLECT_ERROR_TEXT_MAX];
};

/* cpu/memory/io.pressure: "some" and "full" lines */
struct collect_psi {
        double some_avg10, some_avg60, some_avg300;
        uint64_t some_total_us;
        double full_avg10, full_avg60, full_avg300;
        uint64_t full_total_us; /* COLLECT_UNSET where the file has no "full" line */
};

/* One reading of a cgroup. */
struct collect_cgroup {
        uint64_t t_ns; /* CLOCK_MONOTONIC */
        /* cpu.stat */
        uint64_t cpu_usage_us, cpu_user_us, cpu_system_us;
        uint64_t cpu_nr_periods, cpu_nr_throttled, cpu_throttled_us;
        /* memory */
        uint64_t memory_current, memory_peak; /* memory.peak: COLLECT_UNSET before 5.19 */
        uint64_t memory_anon, memory_file;    /* memory.stat */
        uint64_t events_low, events_high, events_max, events_oom, events_oom_kill;
        /* io.stat, summed over devices */
        uint64_t io_rbytes, io_wbytes, io_rios, io_wios;
        struct collect_psi psi_cpu, psi_memory, psi_io;
        bool has_cpu, has_memory, has_io, has_psi; /* which files could be read */
};

/*
 * Read the cgroup directory (an fd from open(O_DIRECTORY)). Files of controllers that are
 * not enabled are skipped (has_* false), not an error; a missing cgroup is -ENOENT.
 */
int collect_cgroup_read(int cgroup_fd, struct collect_cgroup *ret, struct collect_error *err);

/* /proc/<pid>/io and /proc/<pid>/status, summed over the pids of cgroup.procs. */
struct collect_procs {
        uint64_t read_bytes, write_bytes;   /* storage I/O (read_bytes/write_bytes) */
        uint64_t rchar, wchar;
        uint64_t vm_rss, vm_hwm;            /* bytes, summed */
        uint64_t threads;
        unsigned nprocs;
};

int collect_procs_read(int cgroup_fd, struct collect_procs *ret, struct collect_error *err);

/* ---- taskstats (libnl-genl) ---- */

struct collect_taskstats_totals {
        uint64_t cpu_user_us, cpu_system_us;  /* ac_utime, ac_stime */
        uint64_t cpu_run_real_ns;             /* cpu_run_real_total */
        uint64_t cpu_delay_ns, cpu_delay_count; /* 0 unless delay accounting is on */
        uint64_t read_bytes, write_bytes;
        uint64_t hiwater_rss_bytes;           /* max over tasks */
        unsigned tasks;                       /* records summed */
};

struct collect_taskstats;

/*
 * Connect to the TASKSTATS genetlink family; when listen_exits is true also register for
 * exit records on every CPU (needs CAP_NET_ADMIN), so tasks that end are not lost.
 * NULL with err set on failure (-EPERM, -ENOENT if the family is missing).
 */
struct collect_taskstats *collect_taskstats_open(bool listen_exits, struct collect_error *err);

/* Query one task (a tgid gives the whole process) and add its record to *totals. */
int collect_taskstats_query(struct collect_taskstats *t, pid_t tgid,
                            struct collect_taskstats_totals *totals, struct collect_error *err);

/*
 * Drain pending exit records without blocking and add those whose tgid is in pids[] (or all,
 * when pids is NULL) to *totals. Returns the number of records taken.
 */
int collect_taskstats_drain_exits(struct collect_taskstats *t, const pid_t *pids, size_t npids,
                                  struct collect_taskstats_totals *totals,
                                  struct collect_error *err);

/* The fd to poll for exit records, or -1. */
int collect_taskstats_fd(const struct collect_taskstats *t);

void collect_taskstats_close(struct collect_taskstats *t);
