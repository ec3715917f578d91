/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report of one executor run (schema sparkshim.report/v1, docs/sparkshim-report.5.md),
 * built from the monitor's readings: every figure from its best source (the cgroup's
 * files, the eBPF probes, taskstats, /proc, rusage), and the source named next to it; a
 * figure that no source gives is null, never 0. Sample lines and the final report are the
 * same document of another kind.
 */
#include <assert.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "agent-stats.h"
#include "collect.h"
#include "monitor-internal.h"
#include "probe.h"
#include "report-schema.h"
#include "rolling.h"
#include "utf8.h"
#include "util.h"

#define SAMPLES_IN_REPORT 360

static json_t *u64_or_null(uint64_t v)
{
        return v == COLLECT_UNSET ? json_null() : json_integer((json_int_t)v);
}

static json_t *real_or_null(double v)
{
        return isfinite(v) ? json_real(v) : json_null();
}

static void iso8601(const struct timespec *ts, char *buf, size_t size)
{
        struct tm tm;

        gmtime_r(&ts->tv_sec, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

/* average and p95 of the memory samples */
static void memory_stats(const struct shim_monitor *m, uint64_t *ret_avg, uint64_t *ret_p95,
                         uint64_t *ret_max, uint64_t *ret_anon_max)
{
        _cleanup_free_ uint64_t *v = calloc(m->nsamples ? m->nsamples : 1, sizeof(*v));
        size_t n = 0;
        long double sum = 0;
        uint64_t anon = COLLECT_UNSET;

        *ret_avg = *ret_p95 = *ret_max = COLLECT_UNSET;
        for (size_t i = 0; v && i < m->nsamples; i++) {
                if (m->samples[i].mem_bytes != COLLECT_UNSET) {
                        v[n++] = m->samples[i].mem_bytes;
                        sum += m->samples[i].mem_bytes;
                }
                if (m->samples[i].anon_bytes != COLLECT_UNSET &&
                    (anon == COLLECT_UNSET || m->samples[i].anon_bytes > anon))
                        anon = m->samples[i].anon_bytes;
        }
        *ret_anon_max = anon;
        if (n == 0)
                return;
        qsort(v, n, sizeof(*v), cmp_u64);
        *ret_avg = (uint64_t)(sum / n);
        *ret_p95 = v[(size_t)ceil(0.95 * (double)n) - 1];
        *ret_max = v[n - 1];
}

static json_t *psi_json(const struct collect_psi *p)
{
        return json_pack("{s:o, s:o, s:o, s:o}", "some_avg10", real_or_null(p->some_avg10),
                         "some_total_us", u64_or_null(p->some_total_us), "full_avg10",
                         real_or_null(p->full_avg10), "full_total_us",
                         u64_or_null(p->full_total_us));
}

static json_t *hist_json(const uint64_t hist[PROBE_HIST_SLOTS])
{
        json_t *a = json_array();
        size_t last = 0;

        for (size_t i = 0; i < PROBE_HIST_SLOTS; i++)
                if (hist[i])
                        last = i + 1;
        for (size_t i = 0; a && i < last; i++)
                json_array_append_new(a, json_integer((json_int_t)hist[i]));
        return a;
}

/*
 * What the executor read and wrote, without io.stat: the larger of the block probe and
 * /proc/PID/io (proc_write_bytes), each direction on its own. The block probe
 * attributes a write to the task that issues the request, and buffered writes (shuffle
 * files) are issued by the kernel's flusher threads: a standalone executor that wrote ~160 MB
 * was reported as 0.04-1.0 MB by it alone. /proc's write_bytes counts a page when the task
 * dirties it. Returns the source's name for the report; NULL when neither is there.
 */
const char *measure_disk_without_io_stat(const struct shim_monitor *m, const struct probe_usage *pu,
                                         uint64_t *rbytes, uint64_t *wbytes)
{
        uint64_t pr, pw;

        if (!m->have_procs) {
                if (!pu)
                        return NULL;
                *rbytes = pu->read_bytes, *wbytes = pu->write_bytes;
                return "bpf:block_rq";
        }
        pr = m->proc_read_bytes;
        pw = m->proc_write_bytes;
        if (!pu) {
                *rbytes = pr, *wbytes = pw;
                return "proc:io";
        }
        *rbytes = pr > pu->read_bytes ? pr : pu->read_bytes;
        *wbytes = pw > pu->write_bytes ? pw : pu->write_bytes;
        return "max(bpf:block_rq,proc:io)";
}

/* The report's "sinks" object: what each line sink did not take so far. */
static json_t *sinks_json(const struct shim_monitor *m)
{
        json_t *o = json_object();

        for (size_t i = 0; o && i < m->nsinks; i++) {
                const struct sink *s = &m->sinks[i];
                json_object_set_new(o, s->name,
                                    json_pack("{s:I, s:s?}", "dropped_lines",
                                              (json_int_t)s->dropped, "error",
                                              s->error[0] ? s->error : NULL));
        }
        if (o && m->prometheus[0])
                json_object_set_new(o, "prometheus",
                                    json_pack("{s:I, s:s?}", "dropped_lines",
                                              (json_int_t)m->prometheus_failed, "error",
                                              m->prometheus_error[0] ? m->prometheus_error : NULL));
        return o;
}

/* The report's "rolling": null when off. */
static json_t *monitor_rolling_json(const struct shim_monitor *m)
{
        struct rolling_counts n;
        json_t *decisions, *doc;

        if (!m->rolling)
                return json_null();
        rolling_counts(m->rolling, &n);
        decisions = json_array();
        for (size_t i = 0; i < m->ndecisions && decisions; i++) {
                const struct rolling_decision *d = &m->decisions[i];
                char reason[ROLLING_REASON_MAX];

                snprintf(reason, sizeof(reason), "%s", d->reason);
                util_utf8_sanitize(reason);
                json_array_append_new(
                    decisions,
                    json_pack("{s:f, s:s, s:s, s:f, s:f, s:s, s:o, s:s}", "age_seconds",
                              (double)d->age_ns / 1e9, "action", rolling_action_name(d->action),
                              "trigger", rolling_trigger_name(d->trigger), "value", d->value,
                              "threshold", d->threshold, "unit", d->unit, "window_seconds",
                              d->window_ns ? json_real((double)d->window_ns / 1e9) : json_null(),
                              "reason", reason));
        }
        doc = json_pack(
            "{s:o, s:s, s:s, s:o, s:I, s:{s:I, s:I, s:I}}", "sigpwr_caught",
            m->sigpwr == ROLLING_SIGPWR_UNKNOWN ? json_null()
                                                : json_boolean(m->sigpwr == ROLLING_SIGPWR_CAUGHT),
            "command_line", policy_decommission_name(m->command_line), "state",
            n.terminate                           ? "terminating"
            : rolling_decommissioning(m->rolling) ? "decommissioning"
                                                  : "watching",
            "decisions", decisions ? decisions : json_null(), "decisions_dropped",
            (json_int_t)m->decisions_dropped, "counts", "decommission", (json_int_t)n.decommission,
            "unavailable", (json_int_t)n.unavailable, "terminate", (json_int_t)n.terminate);
        return doc ? doc : json_null();
}

/* What one report is computed from: read once, shared by the parts below. */
struct report_ctx {
        const struct shim_monitor *m;
        const struct collect_cgroup *f, *l; /* first and last cgroup readings */
        const struct util_memory_events *ev;
        bool final, have_probe, have_ru;
        unsigned attached; /* PROBE_* */
        struct probe_usage pu;
        struct rusage ru; /* of the reaped children, final reports only */
        uint64_t start_ns;
        double wall;
};

/* The figures and the source each came from (NULL: none). */
struct figures {
        uint64_t cpu_us, user_us, sys_us;
        uint64_t mem_avg, mem_p95, mem_max, anon_max, peak, oom;
        uint64_t rbytes, wbytes, rops, wops;
        const char *cpu_src, *peak_src, *disk_src, *oom_src, *runq_src;
};

static uint64_t timeval_us(const struct timeval *tv)
{
        return (uint64_t)tv->tv_sec * 1000000 + (uint64_t)tv->tv_usec;
}

/* CPU: the cgroup's own account, else taskstats exit records, else rusage */
static void cpu_figures(const struct report_ctx *c, struct figures *fg)
{
        const struct shim_monitor *m = c->m;

        if (m->have_cgroup && c->l->has_cpu) {
                fg->cpu_us = measure_delta(c->f->cpu_usage_us, c->l->cpu_usage_us);
                fg->user_us = measure_delta(c->f->cpu_user_us, c->l->cpu_user_us);
                fg->sys_us = measure_delta(c->f->cpu_system_us, c->l->cpu_system_us);
                fg->cpu_src = "cgroup:cpu.stat";
        } else if (m->exits.tasks > 0) {
                fg->user_us = m->exits.cpu_user_us;
                fg->sys_us = m->exits.cpu_system_us;
                /* the scheduler's runtime; utime/stime are tick samples */
                fg->cpu_us = m->exits.cpu_run_virtual_ns ? m->exits.cpu_run_virtual_ns / 1000
                                                         : fg->user_us + fg->sys_us;
                fg->cpu_src = "taskstats";
        } else if (c->have_ru) {
                fg->user_us = timeval_us(&c->ru.ru_utime);
                fg->sys_us = timeval_us(&c->ru.ru_stime);
                fg->cpu_us = fg->user_us + fg->sys_us;
                fg->cpu_src = "rusage:children";
        }
        if (c->have_probe && (c->attached & PROBE_CPU))
                fg->runq_src = "bpf:sched_switch"; /* sched_info.run_delay, read at switch-out */
}

/* memory peak: memory.peak, else the samples, else the largest RSS seen */
static void memory_peak(const struct report_ctx *c, struct figures *fg)
{
        const struct shim_monitor *m = c->m;

        if (m->have_cgroup && c->l->has_memory && c->l->memory_peak != COLLECT_UNSET) {
                fg->peak = c->l->memory_peak;
                fg->peak_src = "cgroup:memory.peak";
                return;
        }
        if (m->have_cgroup && c->l->has_memory) {
                fg->peak = fg->mem_max;
                fg->peak_src = "cgroup:memory.current";
                return;
        }
        fg->peak = m->rss_peak;
        if (m->exits.hiwater_rss_bytes > fg->peak)
                fg->peak = m->exits.hiwater_rss_bytes;
        fg->peak_src = m->exits.hiwater_rss_bytes ? "taskstats+proc:VmRSS" : "proc:VmRSS";
        if (c->have_ru && (uint64_t)c->ru.ru_maxrss * 1024 > fg->peak) {
                fg->peak = (uint64_t)c->ru.ru_maxrss * 1024;
                fg->peak_src = "rusage:children";
        }
        if (fg->peak == 0) {
                fg->peak = COLLECT_UNSET;
                fg->peak_src = NULL;
        }
}

static void memory_figures(const struct report_ctx *c, struct figures *fg)
{
        memory_stats(c->m, &fg->mem_avg, &fg->mem_p95, &fg->mem_max, &fg->anon_max);
        memory_peak(c, fg);
        if (c->ev) {
                fg->oom = c->ev->oom_kill;
                fg->oom_src = "cgroup:memory.events";
        } else if (c->m->have_cgroup && c->l->has_memory) {
                fg->oom = c->l->events_oom_kill;
                fg->oom_src = "cgroup:memory.events";
        } else if (c->attached & PROBE_MEMORY) {
                fg->oom = c->pu.oom_kills;
                fg->oom_src = "bpf:mark_victim";
        }
}

/*
 * disk: io.stat, else the larger of the block probe and /proc with taskstats (each
 * direction; measure_disk_without_io_stat), else rusage. Operations come from io.stat or the probe.
 */
static void disk_figures(const struct report_ctx *c, struct figures *fg)
{
        const struct shim_monitor *m = c->m;
        bool have_probe = c->have_probe && (c->attached & PROBE_DISK);
        const char *src;

        if (m->have_cgroup && c->l->has_io) {
                fg->rbytes = measure_delta(c->f->io_rbytes, c->l->io_rbytes);
                fg->wbytes = measure_delta(c->f->io_wbytes, c->l->io_wbytes);
                fg->rops = measure_delta(c->f->io_rios, c->l->io_rios);
                fg->wops = measure_delta(c->f->io_wios, c->l->io_wios);
                fg->disk_src = "cgroup:io.stat";
        } else if ((src = measure_disk_without_io_stat(m, have_probe ? &c->pu : NULL, &fg->rbytes,
                                                       &fg->wbytes))) {
                if (have_probe)
                        fg->rops = c->pu.read_ops, fg->wops = c->pu.write_ops;
                fg->disk_src = src;
        } else if (c->have_ru) {
                /* the kernel counts these in 512-byte units of read_bytes/write_bytes */
                fg->rbytes = (uint64_t)c->ru.ru_inblock * 512;
                fg->wbytes = (uint64_t)c->ru.ru_oublock * 512;
                fg->disk_src = "rusage:children";
        }
}

static json_t *seconds_or_null(uint64_t us)
{
        return real_or_null(us == COLLECT_UNSET ? NAN : (double)us / 1e6);
}

/* A run-queue wait percentile, or null without the probe. */
static json_t *runq_percentile(const struct report_ctx *c, const struct figures *fg, unsigned p)
{
        return fg->runq_src ? json_integer((json_int_t)probe_hist_percentile_us(c->pu.runq_hist, p))
                            : json_null();
}

static json_t *runq_json(const struct report_ctx *c, const struct figures *fg)
{
        return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "seconds",
                         real_or_null(fg->runq_src ? (double)c->pu.runq_wait_ns / 1e9 : NAN),
                         "count",
                         fg->runq_src ? json_integer((json_int_t)c->pu.runq_count) : json_null(),
                         "p50_us", runq_percentile(c, fg, 50), "p95_us", runq_percentile(c, fg, 95),
                         "p99_us", runq_percentile(c, fg, 99), "histogram_log2_us",
                         fg->runq_src ? hist_json(c->pu.runq_hist) : json_null());
}

/* A pressure file's figures, or null without them. */
static json_t *psi_or_null(const struct report_ctx *c, const struct collect_psi *p)
{
        return c->m->have_cgroup && c->l->has_psi ? psi_json(p) : json_null();
}

static json_t *cpu_json(const struct report_ctx *c, const struct figures *fg)
{
        const struct shim_monitor *m = c->m;
        bool throttled = m->have_cgroup && c->l->cpu_throttled_us != COLLECT_UNSET;

        return json_pack(
            "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "seconds", seconds_or_null(fg->cpu_us),
            "user_seconds", seconds_or_null(fg->user_us), "system_seconds",
            seconds_or_null(fg->sys_us), "throttled_seconds",
            real_or_null(
                throttled
                    ? (double)measure_delta(c->f->cpu_throttled_us, c->l->cpu_throttled_us) / 1e6
                    : NAN),
            "nr_throttled",
            u64_or_null(m->have_cgroup
                            ? measure_delta(c->f->cpu_nr_throttled, c->l->cpu_nr_throttled)
                            : COLLECT_UNSET),
            "bpf_oncpu_seconds",
            real_or_null(c->have_probe && (c->attached & PROBE_CPU) ? (double)c->pu.oncpu_ns / 1e9
                                                                    : NAN),
            "runq_wait", runq_json(c, fg), "psi", psi_or_null(c, &c->l->psi_cpu));
}

static json_t *memory_json(const struct report_ctx *c, const struct figures *fg)
{
        const struct shim_monitor *m = c->m;
        uint64_t high = c->ev                                ? c->ev->high
                        : m->have_cgroup && c->l->has_memory ? c->l->events_high
                                                             : COLLECT_UNSET;

        return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "peak_bytes",
                         u64_or_null(fg->peak), "average_bytes", u64_or_null(fg->mem_avg),
                         "p95_bytes", u64_or_null(fg->mem_p95), "anon_peak_bytes",
                         u64_or_null(fg->anon_max), "oom_kills", u64_or_null(fg->oom),
                         "high_events", u64_or_null(high), "reclaim_stall_seconds",
                         real_or_null(c->have_probe && (c->attached & PROBE_MEMORY)
                                          ? (double)c->pu.reclaim_ns / 1e9
                                          : NAN),
                         "psi", psi_or_null(c, &c->l->psi_memory));
}

/* A block-latency percentile, or null without the probe. */
static json_t *disk_percentile(const struct report_ctx *c, unsigned p)
{
        return c->have_probe && (c->attached & PROBE_DISK)
                   ? json_integer((json_int_t)probe_hist_percentile_us(c->pu.disk_lat_hist, p))
                   : json_null();
}

static json_t *disk_json(const struct report_ctx *c, const struct figures *fg)
{
        return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "read_bytes",
                         u64_or_null(fg->rbytes), "write_bytes", u64_or_null(fg->wbytes),
                         "read_ops", u64_or_null(fg->rops), "write_ops", u64_or_null(fg->wops),
                         "latency_p50_us", disk_percentile(c, 50), "latency_p95_us",
                         disk_percentile(c, 95), "psi", psi_or_null(c, &c->l->psi_io));
}

static json_t *sources_json(const struct report_ctx *c, const struct figures *fg)
{
        const struct shim_monitor *m = c->m;
        const char *average = m->have_cgroup && c->l->has_memory ? "cgroup:memory.current"
                              : fg->mem_avg != COLLECT_UNSET     ? "proc:VmRSS"
                                                                 : NULL;

        return json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?}", "cpu", fg->cpu_src,
                         "cpu.runq_wait", fg->runq_src, "memory.peak", fg->peak_src,
                         "memory.average", average, "memory.oom_kills", fg->oom_src, "disk",
                         fg->disk_src, "psi",
                         m->have_cgroup && c->l->has_psi ? "cgroup:*.pressure" : NULL);
}

static json_t *usage_json(const struct report_ctx *c, const struct figures *fg)
{
        json_t *usage = json_pack("{s:o, s:o, s:o}", "cpu", cpu_json(c, fg), "memory",
                                  memory_json(c, fg), "disk", disk_json(c, fg));

        if (usage)
                json_object_set_new(usage, "sources", sources_json(c, fg));
        return usage;
}

/* Up to SAMPLES_IN_REPORT evenly spaced samples (final reports; [] in sample lines). */
static json_t *samples_json(const struct shim_monitor *m, bool final)
{
        json_t *samples = json_array();
        size_t stride = m->nsamples / SAMPLES_IN_REPORT + 1;

        for (size_t i = 0; final && samples && i < m->nsamples; i += stride) {
                const struct sample *s = &m->samples[i];
                json_array_append_new(samples, json_pack("{s:f, s:o, s:o, s:o, s:o}", "t_seconds",
                                                         (double)(s->t_ns - m->start_ns) / 1e9,
                                                         "cpu_usage_us", u64_or_null(s->cpu_us),
                                                         "memory_bytes", u64_or_null(s->mem_bytes),
                                                         "read_bytes", u64_or_null(s->rbytes),
                                                         "write_bytes", u64_or_null(s->wbytes)));
        }
        return samples;
}

static json_t *identity_json(const struct report_ctx *c)
{
        const struct shim_monitor *m = c->m;
        struct timespec end_rt;
        char start[32], end[32];
        json_t *argv;

        clock_gettime(CLOCK_REALTIME, &end_rt);
        iso8601(&m->start_rt, start, sizeof(start));
        iso8601(&end_rt, end, sizeof(end));
        argv = json_array();
        for (size_t i = 0; argv && i < m->argc; i++)
                json_array_append_new(argv, json_string(m->argv[i]));
        return json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:o?, s:b, s:s, s:s, s:s, s:f, s:I, s:o}", "app_id",
            m->app_id, "executor_id", m->executor_id, "name", m->name, "host", m->host, "command",
            m->command, "argv", argv, "argv_truncated", m->argv_truncated, "mode", m->mode, "start",
            start, "end", end, "wall_seconds", c->wall, "pid", (json_int_t)m->pid, "run_as_uid",
            m->run_as_uid >= 0 ? json_integer((json_int_t)m->run_as_uid) : json_null());
}

static json_t *collectors_json(const struct report_ctx *c)
{
        const struct shim_monitor *m = c->m;
        json_t *o = json_pack("{s:s?, s:s?}", "bpf", m->probe ? NULL : m->probe_reason, "taskstats",
                              m->taskstats ? NULL : m->taskstats_reason);

        if (!o)
                return NULL;
        json_object_set_new(o, "bpf_attached",
                            json_pack("{s:b, s:b, s:b}", "cpu", (c->attached & PROBE_CPU) != 0,
                                      "memory", (c->attached & PROBE_MEMORY) != 0, "disk",
                                      (c->attached & PROBE_DISK) != 0));
        json_object_set_new(o, "bpf_since_seconds",
                            m->probe ? json_real((double)(m->probe_attached_ns - m->start_ns) / 1e9)
                                     : json_null());
        json_object_set_new(o, "bpf_set",
                            !m->probe ? json_null()
                                      : json_string(probe_is_node(m->probe) ? "node" : "executor"));
        json_object_set_new(o, "bpf_node",
                            m->probe_node_reason[0] ? json_string(m->probe_node_reason)
                                                    : json_null());
        return o;
}

static json_t *exit_json(const struct report_ctx *c, int exit_code, uint64_t oom)
{
        if (!c->final || exit_code < 0)
                return json_null();
        return json_pack(
            "{s:i, s:o, s:b}", "status", exit_code, "signal",
            exit_code > 128 && exit_code < 128 + NSIG ? json_integer(exit_code - 128) : json_null(),
            "oom_killed", oom != COLLECT_UNSET && oom > 0 && exit_code == 128 + SIGKILL);
}

/* "agent" and its totals again as "spills" */
static void add_agent(json_t *doc, const struct shim_monitor *m)
{
        /* the agent's statistics file is read again for every line: the agent rewrites it */
        json_t *agent = m->agent ? shim_agent_report_json(m->agent) : NULL;
        json_t *totals;

        json_object_set_new(doc, "agent", agent ? agent : json_null());
        totals = json_object_get(agent, "totals");
        json_object_set_new(doc, "spills",
                            json_is_object(totals) ? json_deep_copy(totals) : json_null());
}

static void report_ctx_init(struct report_ctx *c, struct shim_monitor *m, bool final,
                            const struct util_memory_events *ev)
{
        *c = (struct report_ctx){.m = m, .f = &m->first, .l = &m->last, .ev = ev, .final = final};
        c->have_probe = m->probe && probe_read(m->probe, m->cgroup_id, &c->pu) == 0;
        c->attached = m->probe ? probe_attached(m->probe) : 0;
        c->wall = (double)(util_now_ns() - m->start_ns) / 1e9;
        /* sparkshim reaps every process of the executor: rusage covers them all */
        c->have_ru = final && getrusage(RUSAGE_CHILDREN, &c->ru) == 0;
}

/* The whole report: kind "final" or "sample". */
json_t *measure_report_build(struct shim_monitor *m, const char *kind, int exit_code,
                             const struct util_memory_events *ev)
{
        struct figures fg = {.cpu_us = COLLECT_UNSET,
                             .user_us = COLLECT_UNSET,
                             .sys_us = COLLECT_UNSET,
                             .peak = COLLECT_UNSET,
                             .oom = COLLECT_UNSET,
                             .rbytes = COLLECT_UNSET,
                             .wbytes = COLLECT_UNSET,
                             .rops = COLLECT_UNSET,
                             .wops = COLLECT_UNSET};
        struct policy_utilization util = {NAN, NAN, NAN};
        struct report_ctx c;
        json_t *doc;

        assert(m);
        assert(kind);
        report_ctx_init(&c, m, strcmp(kind, "final") == 0, ev);
        cpu_figures(&c, &fg);
        memory_figures(&c, &fg);
        disk_figures(&c, &fg);
        if (m->has_plan)
                policy_utilization(&m->plan,
                                   fg.cpu_us == COLLECT_UNSET ? NAN : (double)fg.cpu_us / 1e6,
                                   c.wall, fg.peak == COLLECT_UNSET ? NAN : (double)fg.peak, &util);

        doc = json_pack("{s:s, s:s, s:o, s:o?, s:{s:b, s:s?, s:s}, s:o}", "schema", REPORT_SCHEMA,
                        "kind", kind, "identity", identity_json(&c), "plan",
                        m->has_plan ? policy_plan_to_json(&m->plan) : NULL, "enforcement",
                        "enforced", m->enforced, "reason", m->reason[0] ? m->reason : NULL,
                        "cgroup", m->cgroup_path, "collectors", collectors_json(&c));
        if (!doc)
                return NULL;
        json_object_set_new(doc, "usage", usage_json(&c, &fg));
        json_object_set_new(doc, "utilization",
                            json_pack("{s:o, s:o, s:o}", "cpu", real_or_null(util.cpu), "memory",
                                      real_or_null(util.memory), "objective",
                                      real_or_null(util.objective)));
        json_object_set_new(doc, "exit", exit_json(&c, exit_code, fg.oom));
        add_agent(doc, m);
        json_object_set_new(doc, "rolling", monitor_rolling_json(m));
        json_object_set_new(doc, "samples", samples_json(m, c.final));
        json_object_set_new(doc, "sinks", sinks_json(m));
        return doc;
}
