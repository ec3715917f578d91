/* SPDX-License-Identifier: Apache-2.0 */
/*
 * monitor: measures one executor run and writes its reports (schema sparkshim.report/v1,
 * docs/sparkshim-report.5.md). Sources, best first per figure: the executor's cgroup v2
 * files, eBPF probes (bpf/probe.h), /proc and taskstats (measure/collect.h); every figure
 * names its source. Sinks (file of JSON lines, unix socket, stdout, a Prometheus
 * text-exposition file) are opened before the executor starts, so an unusable sink is
 * known then (refused or warned about, report.sink_failure). Measurement and sink writes
 * run off the supervision path: in the monitor's own thread (own_thread), behind a
 * start / pid / finish interface that never waits on a sink.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "policy.h"
#include "shim-common.h"

/*
 * After the executor ends, the sinks get this long to take the final report (and what they
 * still queue); what they did not take by then is dropped and counted. A fixed bound, not
 * a setting: the exit of the shim never waits longer on a sink.
 */
#define MONITOR_FLUSH_SECONDS 5

struct shim_monitor_config {
        const char *file;   /* JSON lines, appended; NULL = none */
        const char *socket; /* unix stream socket; NULL = none */
        /*
         * Text-exposition file in node_exporter's textfile directory, replaced atomically at
         * every sample line (and once at the start), removed when the run ends; NULL = none.
         * file and prometheus are templates (policy_template_expand). Opening the monitor
         * also removes the Prometheus files of that directory whose sparkshim is gone.
         */
        const char *prometheus;
        bool to_stdout; /* also write every line to stdout */
        unsigned interval_seconds;
        bool use_bpf;           /* try the eBPF probes */
        const char *probe_root; /* the node's probe set's pin root; NULL: PROBE_NODE_ROOT */
        bool use_taskstats;     /* try taskstats */
        /*
         * report.sink_failure refuse: a sink that cannot be opened fails shim_monitor_open.
         * Otherwise (warn, the default) the run goes on without it: the failure is logged,
         * its lines are counted as dropped in the report's "sinks", and a socket is
         * connected again by the monitor before each line until a listener takes it.
         */
        bool sink_failure_refuse;
        /*
         * Sample and write in a thread of the monitor's own (sparkshim run: the supervisor
         * never waits on measurement or a sink). Without it the caller drives the monitor
         * with shim_monitor_tick (sparkshim probe, which supervises nothing).
         */
        bool own_thread;
        /*
         * What the file name templates of file and prometheus expand to
         * (policy_template_expand): the executor's app id, executor id and cgroup name.
         */
        struct policy_template_values names;
        /*
         * Executor rolling (docs/rolling.md): with rolling.enabled and own_thread the
         * monitor feeds the trigger machine at every sample, sends SIGPWR to the executor's
         * JVM itself (through a pidfd, measure/jvm-target.h) and hands the TERM that follows
         * the rolling grace to the supervisor (shim_monitor_rolling_term).
         */
        struct policy_rolling rolling;
};

struct shim_monitor_identity {
        const char *app_id, *executor_id; /* "" when unknown */
        const char *name;                 /* the executor's cgroup name; "" when unknown */
        const char *command;              /* argv[0] of the executor */
        char *const *argv;                /* its command line as started (NULL-terminated) */
        const char *mode;                 /* "wrap" or "init" */
};

struct shim_monitor;

/*
 * Open the sinks (and nothing else). Fails with one line in err when a sink is unusable and
 * cfg->sink_failure_refuse is set; otherwise logs a warning per unusable sink and goes on.
 */
int shim_monitor_open(const struct shim_monitor_config *cfg, struct shim_monitor **ret,
                      struct util_error *err);

/*
 * Start measuring: cgroup_fd is the executor's cgroup (dup'ed; -1 when there is none),
 * cgroup_path names it. The plan (NULL: none, for `sparkshim probe`) and the enforcement
 * status go into every report. Probes
 * and taskstats that cannot be had are noted in the report, never fatal. With own_thread
 * the monitor thread starts here, with every signal blocked (call after the supervisor
 * has blocked its signals, or not: the thread blocks them itself); from here on only
 * shim_monitor_pid, shim_monitor_lines and shim_monitor_finish may be called until finish
 * returns, and none of them waits on a sink.
 */
void shim_monitor_start(struct shim_monitor *m, const struct shim_monitor_identity *id,
                        const struct policy_plan *plan, bool enforced, const char *reason,
                        int cgroup_fd, const char *cgroup_path);

struct shim_agent_run;

/*
 * The JVMTI agent's injection (shim/inject.h), copied: reports then carry an "agent" object
 * with the agent's statistics, read again for every report line. Without it "agent" is null.
 */
int shim_monitor_set_agent(struct shim_monitor *m, const struct shim_agent_run *run);

/* The executor's pid, once started. Takes a mutex the monitor never holds across I/O. */
void shim_monitor_pid(struct shim_monitor *m, pid_t pid);

/*
 * Without own_thread, called about once a second: samples, and queues a sample line when one
 * is due, writing what the sinks take without waiting. A no-op with own_thread.
 */
void shim_monitor_tick(struct shim_monitor *m);

/*
 * The executor ended with exit_code (128+N for signal N; -1: not ours to know, for
 * `sparkshim probe`); take the final readings (before
 * the cgroup is removed) and write the final report to every sink. Returns within
 * MONITOR_FLUSH_SECONDS (plus a second to build the report): 0, or -errno with err naming
 * the sinks that did not take the final report (logged by the caller). If the monitor
 * thread does not end in time (a write to a hung disk), it is left behind and
 * shim_monitor_free leaves the monitor to it: the caller is about to exit.
 */
int shim_monitor_finish(struct shim_monitor *m, int exit_code, const struct util_memory_events *ev,
                        struct util_error *err);

void shim_monitor_free(struct shim_monitor *m);

/*
 * Rolling's grace after SIGPWR is over and the executor still runs: true once, then false
 * (any thread; a lock never held across I/O). The caller goes the normal TERM path.
 */
bool shim_monitor_rolling_term(struct shim_monitor *m);

/* How many sample lines were queued so far (any thread). */
unsigned shim_monitor_lines(const struct shim_monitor *m);
