/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collect: usage from files and netlink, always available (the fallback of bpf/ and its
 * cross-check). Reads a cgroup v2 directory (cpu.stat, memory.current/peak/stat/events,
 * io.stat, cpu/memory/io.pressure), /proc/<pid>/io and /proc/<pid>/status of every process
 * of the executor, and taskstats over libnl-genl (per task, and exit records of tasks
 * that ended, which needs CAP_NET_ADMIN).
 *
 * No logging; int returns >= 0 or -errno with detail in struct util_error. A figure
 * that could not be read is left at COLLECT_UNSET and its source at NULL.
 */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define COLLECT_UNSET UINT64_MAX

/*
 * cpu/memory/io.pressure: "some" and "full" lines. The avg* fields of a line that is absent
 * (the file, or "full" in cpu.pressure before 5.13) are NAN; test the *_total_us field.
 */
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
 * Keys a file lacks are COLLECT_UNSET (nr_periods etc. without the cpu controller); unknown
 * keys are ignored; a malformed line is -EINVAL (-ERANGE for an overflowing number) naming
 * the file and the line. has_psi: at least one *.pressure file was read.
 * *ret is written only on success. Cost: one openat+read per file (at most 9).
 */
int collect_cgroup_read(int cgroup_fd, struct collect_cgroup *ret, struct util_error *err);

/* /proc/<pid>/io and /proc/<pid>/status, summed over the pids of cgroup.procs. */
struct collect_procs {
        uint64_t read_bytes, write_bytes; /* storage I/O (read_bytes/write_bytes) */
        uint64_t rchar, wchar;
        uint64_t vm_rss, vm_hwm; /* bytes, summed */
        uint64_t threads;
        unsigned nprocs;
};

/*
 * A pid that ends (or becomes unreadable: ENOENT, ESRCH, EACCES, EPERM) between cgroup.procs
 * and its files is skipped, not counted in nprocs; a pid listed twice is counted once.
 * A missing cgroup is -ENOENT. *ret is written only on success.
 */
int collect_procs_read(int cgroup_fd, struct collect_procs *ret, struct util_error *err);

/* The same with the proc file system given as a directory fd (tests use fixture trees). */
int collect_procs_read_at(int cgroup_fd, int proc_fd, struct collect_procs *ret,
                          struct util_error *err);

/* ---- taskstats (libnl-genl) ---- */

struct collect_taskstats_totals {
        /*
         * ac_utime, ac_stime: tick samples (task_cputime, not scaled to the scheduler's
         * runtime as /proc/<pid>/stat is). A CPU hog on a busy machine is over-sampled: on
         * the 2-vCPU host +0..5.5% for a 1 s burn, +12% with both vCPUs busy. For CPU
         * seconds use cpu_run_virtual_ns; these two give the user/system split.
         */
        uint64_t cpu_user_us, cpu_system_us;
        uint64_t cpu_run_real_ns; /* cpu_run_real_total (= utime + stime on 6.18) */
        /*
         * cpu_run_virtual_total: the scheduler's sum_exec_runtime (ns), the precise figure
         * behind cgroup cpu.stat usage and CLOCK_*_CPUTIME_ID. Filled with the delay fields
         * (on 6.18 even with task_delayacct=0; 0 on kernels that gate them on it).
         */
        uint64_t cpu_run_virtual_ns;
        /*
         * cpu_delay_*: run-queue wait (sched_info). Documented as 0 unless delay accounting
         * is on, but 6.18 fills them with task_delayacct=0 too.
         */
        uint64_t cpu_delay_ns, cpu_delay_count;
        uint64_t read_bytes, write_bytes;
        uint64_t hiwater_rss_bytes; /* max over tasks */
        unsigned tasks;             /* records summed */
};

struct collect_taskstats;

/*
 * Connect to the TASKSTATS genetlink family; when listen_exits is true also register for
 * exit records on every CPU (needs CAP_NET_ADMIN), so tasks that end are not lost.
 * NULL with err set on failure (-EPERM, -ENOENT if the family is missing).
 */
struct collect_taskstats *collect_taskstats_open(bool listen_exits, struct util_error *err);

/*
 * Query one task (a tgid gives the whole process) and add its record to *totals.
 *
 * "The whole process" is the sum of one TASKSTATS_CMD_ATTR_PID record per live thread
 * (listed in /proc/<tgid>/task); threads that already exited are not included, because
 * their records come from collect_taskstats_drain_exits. So live queries plus drained exit
 * records count every thread exactly once on any kernel (see taskstats.c for why a single
 * TGID query cannot do that). Zombie threads (no mm any more, already reported at exit) are
 * skipped. Returns the number of records added (tasks), -ESRCH if the process does not
 * exist, -EPERM without CAP_NET_ADMIN. *totals is changed only on success.
 * Not thread-safe: one handle per thread.
 */
int collect_taskstats_query(struct collect_taskstats *t, pid_t tgid,
                            struct collect_taskstats_totals *totals, struct util_error *err);

/*
 * Drain pending exit records without blocking and add those whose tgid is in pids[] (or all,
 * when pids is NULL) to *totals. Returns the number of records taken.
 *
 * One per-task record is taken per exited thread (the extra per-process record the kernel
 * sends with the last thread is ignored: it would count the threads twice). Records of
 * other tgids are consumed and dropped. If the kernel reports a receive-buffer overflow
 * (ENOBUFS) records were lost: draining goes on and collect_taskstats_overflows() counts it.
 * -EINVAL if the handle was opened without listen_exits. Records taken before a socket
 * error are still added to *totals.
 */
int collect_taskstats_drain_exits(struct collect_taskstats *t, const pid_t *pids, size_t npids,
                                  struct collect_taskstats_totals *totals, struct util_error *err);

/* The fd to poll for exit records, or -1. */
int collect_taskstats_fd(const struct collect_taskstats *t);

/* How many times exit records were lost to a full receive buffer since open. */
uint64_t collect_taskstats_overflows(const struct collect_taskstats *t);

/* Deregisters the exit listener and frees everything; NULL-safe. */
void collect_taskstats_close(struct collect_taskstats *t);
