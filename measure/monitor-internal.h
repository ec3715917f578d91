/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's state and what its files call of each other (measure/ only, never included
 * outside it): monitor.c (life cycle, thread, sampling, pid tracking, sinks, the executor
 * rolling glue), report-build.c (the report's JSON), prometheus.c (the text-exposition
 * file). Every function here runs in the monitor's thread, or in the caller's without one
 * (own_thread false); the fields' locking rules are in struct shim_monitor.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "collect.h"
#include "jvm-target.h"
#include "monitor.h"
#include "probe.h"
#include "rolling.h"
#include "sink.h"

#define KNOWN_PIDS_MAX 4096
/* rolling decisions kept for the report; the cool-downs bound them, the rest are counted */
#define ROLLING_DECISIONS_MAX 32

struct sample {
        uint64_t t_ns;
        uint64_t cpu_us;     /* cumulative, COLLECT_UNSET when unknown */
        uint64_t mem_bytes;  /* memory.current, else the sum of VmRSS */
        uint64_t anon_bytes; /* memory.stat anon, COLLECT_UNSET without memory */
        uint64_t rbytes, wbytes;
};

#define SINKS_MAX 3

struct shim_monitor {
        struct shim_monitor_config cfg;
        char file[4096];       /* the report file, its template expanded */
        char prometheus[4096]; /* the Prometheus file, its template expanded; "" = none */
        int prometheus_dirfd; /* its directory, held for the run (nothing swapped in is followed) */
        const char *prometheus_name; /* its file name, in prometheus */
        struct stat prometheus_st;   /* the file this run renamed there last */
        bool prometheus_written;     /* ... and not removed yet */
        char owner[192];             /* its first line: which sparkshim writes it (sweep_stale) */
        uint64_t prometheus_failed;  /* updates of the Prometheus file that failed */
        char prometheus_error[256];
        struct sink sinks[SINKS_MAX];
        size_t nsinks;

        /*
         * The monitor thread, and what the supervisor hands it: fields under `lock` are
         * written by the caller's thread and taken by the monitor's; the lock is never held
         * across I/O, so the supervisor never waits on a sink.
         */
        pthread_t thread;
        bool thread_started, abandoned;
        int wake_fd; /* eventfd: something changed under lock */
        pthread_mutex_t lock;
        pthread_cond_t done_cond;
        pid_t new_pid;                /* lock: 0 = none */
        int new_pidfd;                /* lock: its pidfd (rolling), -1 = none */
        int new_uid_pidfd;            /* lock: its pidfd (identity.run_as_uid), -1 = none */
        bool finish_requested, stop;  /* lock */
        bool done;                    /* lock: the thread has ended */
        int exit_code;                /* lock */
        struct util_memory_events ev; /* lock */
        bool have_ev;                 /* lock */
        uint64_t finish_deadline_ns;  /* lock */
        bool rolling_term;            /* lock: rolling's TERM, for the supervisor */
        char undelivered[1024];       /* lock (after done): sinks without the final report */
        atomic_uint lines;

        /* the run */
        char app_id[POLICY_NAME_MAX], executor_id[POLICY_NAME_MAX], name[POLICY_NAME_MAX];
        char command[256], mode[16], host[256], reason[512], cgroup_path[4096];
        char **argv; /* the command line as started, bounded (ARGV_BYTES_MAX) */
        size_t argc;
        bool argv_truncated;
        struct policy_plan plan;
        bool has_plan, started, enforced;
        int cgroup_fd;
        pid_t pid;
        /* the real uid the executor (the child) runs as, read at every sample while its
         * pidfd says it lives: a root launch may become the job's user (setpriv, gosu, an
         * entrypoint that execs as the user); -1 until read. Ingest attributes a report of
         * root's to this user. */
        int uid_pidfd;
        int64_t run_as_uid;
        uint64_t start_ns, last_sample_ns, last_line_ns;
        struct timespec start_rt;

        struct sample *samples;
        size_t nsamples, cap;
        struct collect_cgroup first, last;
        bool have_cgroup;
        uint64_t rss_peak;
        struct collect_procs procs_last;
        /*
         * The sum of the live processes' /proc/PID/io, the most seen at a sample. A
         * process's figures hold its exited threads and the children it reaped, so the
         * exited tasks' taskstats records are not added: they would count those twice.
         * What a process wrote after its last sample and before it exited unreaped by a
         * member of the cgroup is missed: a lower bound, never a double count.
         */
        uint64_t proc_read_bytes, proc_write_bytes;
        bool have_procs;

        struct collect_taskstats *taskstats;
        struct collect_taskstats_totals exits;
        char taskstats_reason[256];
        pid_t known[KNOWN_PIDS_MAX];
        size_t nknown;

        struct probe *probe;
        uint64_t cgroup_id, probe_attached_ns;
        bool probe_tried;
        char probe_reason[256];
        char probe_node_reason[256]; /* why not the node's set ("" when it is used) */

        struct shim_agent_run *agent; /* NULL: no agent object */

        /* executor rolling (monitor thread only); NULL: off */
        struct rolling *rolling;
        struct jvm_target *jvm;
        enum rolling_sigpwr sigpwr; /* at the last sample */
        enum policy_decommission command_line;
        bool rolling_warned;     /* the first "unavailable" was logged */
        uint64_t spills_read_ns; /* the agent's totals, read at the report interval */
        uint64_t spills_forced, spills_ineffective;
        struct rolling_decision decisions[ROLLING_DECISIONS_MAX];
        size_t ndecisions;
        uint64_t decisions_dropped;
        uint64_t decided[ROLLING_TRIGGER_COUNT][ROLLING_TERMINATE + 1]; /* by trigger, action */
};

/*
 * How much a counter grew from reading a to reading b; COLLECT_UNSET when either is unknown
 * or it went back.
 */
static inline uint64_t measure_delta(uint64_t a, uint64_t b)
{
        return a == COLLECT_UNSET || b == COLLECT_UNSET || b < a ? COLLECT_UNSET : b - a;
}

/* ---- report-build.c */

/*
 * The whole report: kind "final" or "sample" (a new reference; NULL when out of memory).
 * exit_code is the final report's (-1: not ours to know); ev the memory events read at the
 * end (NULL: the cgroup's last reading stands).
 */
json_t *measure_report_build(struct shim_monitor *m, const char *kind, int exit_code,
                             const struct util_memory_events *ev);

/*
 * What the executor read and wrote without io.stat (pu: the block probe's figures, NULL
 * without them), as the report says it; the source's name, NULL when there is none.
 */
const char *measure_disk_without_io_stat(const struct shim_monitor *m, const struct probe_usage *pu,
                                         uint64_t *rbytes, uint64_t *wbytes);

/* ---- prometheus.c */

/*
 * Hold the Prometheus file's directory for the run (m->prometheus, expanded), after sweeping
 * it of the files of sparkshims that are gone. 0, or -errno with err.
 */
int measure_prometheus_open(struct shim_monitor *m, struct util_error *err);

/*
 * Replace the Prometheus file with the metrics of doc (a report measure_report_build made)
 * and m; a failure is counted and kept for the report's "sinks", never returned.
 */
void measure_prometheus_write(struct shim_monitor *m, json_t *doc);

/* Remove the Prometheus file this run wrote, unless another run replaced it. */
void measure_prometheus_remove(struct shim_monitor *m);
