/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Measurement of one executor run and its reports. Sampling is cheap (a dozen small
 * files) and runs once a second so that averages and percentiles of short runs mean
 * something; sample lines go to the sinks at the policy's interval.
 *
 * Here: the monitor's life cycle and thread, sampling, pid tracking, the sinks and the
 * executor rolling glue. The report's JSON is built in report-build.c, the Prometheus file
 * written in prometheus.c (monitor-internal.h).
 */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "agent-stats.h"
#include "jvm-target.h"
#include "monitor-internal.h"
#include "monitor.h"
#include "probe.h"
#include "rolling.h"
#include "sink.h"
#include "utf8.h"
#include "util.h"

static void wake(struct shim_monitor *m);
static int start_thread(struct shim_monitor *m);
static void monitor_rolling_start(struct shim_monitor *m);

/* ---------------------------------------------------------------- sinks */

/* A template (report.path, report.prometheus_path, or a flag) for this executor. */
static int expand(const struct shim_monitor_config *cfg, const char *what, const char *template,
                  char *buf, size_t size, struct util_error *err)
{
        struct util_error perr = {0};

        if (policy_template_expand(template, &cfg->names, buf, size, &perr) < 0)
                return util_error_set(err, perr.error, "%s %s: %s", what, template, perr.text);
        return 0;
}

static void add_sink(struct shim_monitor *m, enum sink_kind kind, const char *path)
{
        sink_init(&m->sinks[m->nsinks++], kind, path);
}

/*
 * An unusable sink: refused, or (report.sink_failure warn) run without, said once. A sink
 * that is unsafe for root to write (unsafe) is refused whatever the policy says.
 */
static int sink_unusable(const struct shim_monitor_config *cfg, bool unsafe, bool retried,
                         struct util_error *err)
{
        if (cfg->sink_failure_refuse || unsafe)
                return err->error ? -err->error : -EINVAL;
        log_warn("%s; running without it%s (report.sink_failure warn)", err->text,
                 retried ? " until it accepts" : "");
        *err = (struct util_error){0};
        return 0;
}

int shim_monitor_open(const struct shim_monitor_config *cfg, struct shim_monitor **ret,
                      struct util_error *err)
{
        struct util_error local = {0};
        struct shim_monitor *m;
        int r = 0;

        assert(cfg);
        assert(ret);
        if (!err)
                err = &local;
        m = calloc(1, sizeof(*m));
        if (!m)
                return util_error_set(err, ENOMEM, "out of memory");
        m->cfg = *cfg;
        m->cgroup_fd = m->wake_fd = m->prometheus_dirfd = m->new_pidfd = m->new_uid_pidfd =
            m->uid_pidfd = -1;
        m->run_as_uid = -1;
        pthread_mutex_init(&m->lock, NULL);
        if (m->cfg.interval_seconds == 0)
                m->cfg.interval_seconds = 10;
        if (cfg->file) {
                r = expand(cfg, "report file", cfg->file, m->file, sizeof(m->file), err);
                if (r < 0) {
                        shim_monitor_free(m);
                        return r;
                }
                add_sink(m, SINK_FILE, m->file);
        }
        if (cfg->socket)
                add_sink(m, SINK_SOCKET, cfg->socket);
        if (cfg->to_stdout)
                add_sink(m, SINK_STDOUT, NULL);
        for (size_t i = 0; i < m->nsinks && r >= 0; i++)
                if (sink_open(&m->sinks[i], err) < 0)
                        r = sink_unusable(cfg, m->sinks[i].refused, m->sinks[i].kind == SINK_SOCKET,
                                          err);
        if (r >= 0 && cfg->prometheus) {
                r = expand(cfg, "prometheus file", cfg->prometheus, m->prometheus,
                           sizeof(m->prometheus), err);
                if (r < 0) {
                        shim_monitor_free(m);
                        return r;
                }
                r = measure_prometheus_open(m, err);
                if (r < 0) {
                        snprintf(m->prometheus_error, sizeof(m->prometheus_error), "%s", err->text);
                        r = sink_unusable(cfg, r == -EPERM, false, err);
                }
        }
        if (r < 0) {
                shim_monitor_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

/* A socket without a listener (or with a full backlog) is tried again before each line. */
static void reconnect(struct sink *s)
{
        if (s->kind != SINK_SOCKET || s->fd >= 0)
                return;
        if (sink_open(s, NULL) == 0)
                log_info("report socket %s: connected", s->path);
}

/*
 * One JSON line queued for every sink; each sink writes it whole, in order, when it can.
 * A closed sink counts it as dropped (the final report counted itself: see final_report).
 */
static void emit(struct shim_monitor *m, json_t *doc, bool final)
{
        _cleanup_free_ char *text = NULL, *line = NULL;
        int len;

        text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        if (!text || (len = asprintf(&line, "%s\n", text)) < 0) {
                line = NULL;
                for (size_t i = 0; i < m->nsinks; i++)
                        m->sinks[i].dropped++;
                return;
        }
        for (size_t i = 0; i < m->nsinks; i++) {
                if (!final)
                        reconnect(&m->sinks[i]);
                if (!final || m->sinks[i].fd >= 0)
                        sink_push(&m->sinks[i], line, (size_t)len);
        }
}

/* ---------------------------------------------------------------- sampling */

static bool known_pid(const struct shim_monitor *m, pid_t pid)
{
        for (size_t i = 0; i < m->nknown; i++)
                if (m->known[i] == pid)
                        return true;
        return false;
}

static void remember_pid(struct shim_monitor *m, pid_t pid)
{
        if (pid > 0 && !known_pid(m, pid) && m->nknown < KNOWN_PIDS_MAX)
                m->known[m->nknown++] = pid;
}

/* Every pid of the cgroup, so that their taskstats exit records are recognised later. */
static void remember_cgroup_pids(struct shim_monitor *m)
{
        char procs[16384];
        ssize_t len;

        if (m->cgroup_fd < 0)
                return;
        len = util_read_at(m->cgroup_fd, "cgroup.procs", procs, sizeof(procs));
        if (len < 0)
                return;
        for (char *line = procs, *next; line && *line; line = next) {
                int pid;
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (util_parse_int(line, &pid) == 0)
                        remember_pid(m, pid);
        }
}

static void read_run_as(struct shim_monitor *m);

static void sample(struct shim_monitor *m)
{
        struct util_error cerr;
        struct collect_cgroup c;
        struct collect_procs procs;
        struct sample s = {.t_ns = util_now_ns(),
                           .cpu_us = COLLECT_UNSET,
                           .mem_bytes = COLLECT_UNSET,
                           .anon_bytes = COLLECT_UNSET,
                           .rbytes = COLLECT_UNSET,
                           .wbytes = COLLECT_UNSET};

        read_run_as(m);
        if (m->cgroup_fd >= 0 && collect_cgroup_read(m->cgroup_fd, &c, &cerr) == 0) {
                if (!m->have_cgroup)
                        m->first = c;
                m->last = c;
                m->have_cgroup = true;
                if (c.has_cpu)
                        s.cpu_us = c.cpu_usage_us;
                if (c.has_memory) {
                        s.mem_bytes = c.memory_current;
                        s.anon_bytes = c.memory_anon;
                }
                if (c.has_io) {
                        s.rbytes = c.io_rbytes;
                        s.wbytes = c.io_wbytes;
                }
        }
        if (m->cgroup_fd >= 0 && collect_procs_read(m->cgroup_fd, &procs, &cerr) == 0) {
                m->procs_last = procs;
                m->have_procs = true;
                if (procs.vm_rss > m->rss_peak)
                        m->rss_peak = procs.vm_rss;
                if (s.mem_bytes == COLLECT_UNSET && procs.nprocs > 0)
                        s.mem_bytes = procs.vm_rss;
        }
        remember_cgroup_pids(m);
        if (m->taskstats)
                collect_taskstats_drain_exits(m->taskstats, m->known, m->nknown, &m->exits, &cerr);
        if (m->have_procs) {
                if (m->procs_last.read_bytes > m->proc_read_bytes)
                        m->proc_read_bytes = m->procs_last.read_bytes;
                if (m->procs_last.write_bytes > m->proc_write_bytes)
                        m->proc_write_bytes = m->procs_last.write_bytes;
        }

        if (m->nsamples == m->cap) {
                size_t cap = m->cap ? m->cap * 2 : 64;
                struct sample *grown = realloc(m->samples, cap * sizeof(*grown));
                if (!grown)
                        return;
                m->samples = grown;
                m->cap = cap;
        }
        m->samples[m->nsamples++] = s;
        m->last_sample_ns = s.t_ns;
}

/*
 * Bytes that are not UTF-8 become '?': the job's ids and command may hold anything, and
 * jansson refuses a string that is not UTF-8 (the whole report would be lost with it).
 */
/* The report's copy of the command line: whole arguments, up to this many bytes in all. */
#define ARGV_BYTES_MAX (64 * 1024)

static void copy_argv(struct shim_monitor *m, char *const *argv)
{
        size_t n = 0, bytes = 0;

        if (!argv)
                return;
        while (argv[n])
                n++;
        m->argv = calloc(n + 1, sizeof(char *));
        if (!m->argv)
                return;
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(argv[i]);

                if (bytes + len > ARGV_BYTES_MAX || !(m->argv[i] = strdup(argv[i]))) {
                        m->argv_truncated = true;
                        break;
                }
                bytes += len;
                m->argc++;
        }
}

int shim_monitor_set_agent(struct shim_monitor *m, const struct shim_agent_run *run)
{
        struct shim_agent_run *copy = malloc(sizeof(*copy));

        assert(m);
        assert(run);
        if (!copy)
                return -ENOMEM;
        *copy = *run;
        free(m->agent);
        m->agent = copy;
        return 0;
}

void shim_monitor_start(struct shim_monitor *m, const struct shim_monitor_identity *id,
                        const struct policy_plan *plan, bool enforced, const char *reason,
                        int cgroup_fd, const char *cgroup_path)
{
        struct util_error cerr = {0};
        int r;

        assert(m);
        assert(id);
        snprintf(m->app_id, sizeof(m->app_id), "%s", id->app_id ? id->app_id : "");
        snprintf(m->executor_id, sizeof(m->executor_id), "%s",
                 id->executor_id ? id->executor_id : "");
        snprintf(m->name, sizeof(m->name), "%s", id->name ? id->name : "");
        snprintf(m->command, sizeof(m->command), "%s", id->command ? id->command : "");
        snprintf(m->mode, sizeof(m->mode), "%s", id->mode ? id->mode : "wrap");
        snprintf(m->reason, sizeof(m->reason), "%s", reason ? reason : "");
        snprintf(m->cgroup_path, sizeof(m->cgroup_path), "%s", cgroup_path ? cgroup_path : "");
        util_utf8_sanitize(m->app_id);
        util_utf8_sanitize(m->executor_id);
        util_utf8_sanitize(m->name);
        util_utf8_sanitize(m->command);
        util_utf8_sanitize(m->reason);
        util_utf8_sanitize(m->cgroup_path);
        copy_argv(m, id->argv);
        for (size_t i = 0; i < m->argc; i++)
                util_utf8_sanitize(m->argv[i]);
        if (gethostname(m->host, sizeof(m->host)) < 0)
                snprintf(m->host, sizeof(m->host), "unknown");
        if (plan)
                m->plan = *plan;
        m->has_plan = plan != NULL;
        m->enforced = enforced;
        m->cgroup_fd = cgroup_fd >= 0 ? fcntl(cgroup_fd, F_DUPFD_CLOEXEC, 3) : -1;
        m->start_ns = util_now_ns();
        clock_gettime(CLOCK_REALTIME, &m->start_rt);
        m->started = true;

        if (m->cfg.use_taskstats) {
                m->taskstats = collect_taskstats_open(true, &cerr);
                if (!m->taskstats)
                        snprintf(m->taskstats_reason, sizeof(m->taskstats_reason), "%s", cerr.text);
        } else {
                snprintf(m->taskstats_reason, sizeof(m->taskstats_reason), "disabled");
        }
        /* the probes attach at the first tick (attach_probes), not here */
        if (!m->cfg.use_bpf)
                snprintf(m->probe_reason, sizeof(m->probe_reason), "disabled (--no-bpf)");
        else if (!cgroup_path || !cgroup_path[0])
                snprintf(m->probe_reason, sizeof(m->probe_reason), "no cgroup to watch");
        else if (probe_cgroup_id(cgroup_path, &m->cgroup_id) < 0)
                snprintf(m->probe_reason, sizeof(m->probe_reason), "cannot find the id of %s",
                         cgroup_path);
        else
                snprintf(m->probe_reason, sizeof(m->probe_reason),
                         "the executor ended before the probes attached");
        sample(m);
        m->last_line_ns = m->start_ns;
        if (!m->cfg.own_thread)
                return;
        monitor_rolling_start(m);
        r = start_thread(m);
        if (r < 0)
                log_warn("cannot start the monitor thread: %s; no reports for this run",
                         strerror(-r));
}

/* The executor's uid now, when its pidfd says it lives (identity.run_as_uid). */
static void read_run_as(struct shim_monitor *m)
{
        uid_t uid;
        int r;

        if (m->uid_pidfd < 0 || m->pid <= 0)
                return;
        r = jvm_process_uid(m->uid_pidfd, m->pid, &uid);
        /* root only until a user is seen: a root launch read before it dropped (setpriv,
         * gosu and entrypoints exec as the user) never takes back the user's uid */
        if (r == 0 && (uid != 0 || m->run_as_uid < 0))
                m->run_as_uid = (int64_t)uid;
        else if (r == -ESRCH) /* reaped: its pid may be another's from now on */
                util_closep(&m->uid_pidfd);
}

void shim_monitor_pid(struct shim_monitor *m, pid_t pid)
{
        int fd = -1, uid_fd;

        if (!m || !m->started)
                return;
        /*
         * The pidfds of the child, opened here, by the supervisor before it can reap the
         * child: the monitor then knows the pid is the child's, not a reused one.
         */
        uid_fd = jvm_pidfd_open(pid);
        if (!m->cfg.own_thread) {
                m->pid = pid;
                remember_pid(m, pid);
                util_closep(&m->uid_pidfd);
                m->uid_pidfd = uid_fd;
                read_run_as(m);
                return;
        }
        if (!m->thread_started) {
                if (uid_fd >= 0)
                        close(uid_fd);
                return;
        }
        if (m->rolling)
                fd = jvm_pidfd_open(pid);
        pthread_mutex_lock(&m->lock);
        m->new_pid = pid;
        if (fd >= 0) {
                if (m->new_pidfd >= 0)
                        close(m->new_pidfd);
                m->new_pidfd = fd;
        }
        if (uid_fd >= 0) {
                if (m->new_uid_pidfd >= 0)
                        close(m->new_uid_pidfd);
                m->new_uid_pidfd = uid_fd;
        }
        pthread_mutex_unlock(&m->lock);
        wake(m);
}

/* ---------------------------------------------------------------- executor rolling */

static void monitor_rolling_start(struct shim_monitor *m)
{
        if (!m->cfg.rolling.enabled)
                return;
        m->rolling = rolling_new(&m->cfg.rolling, m->start_ns);
        m->jvm = m->rolling ? jvm_target_new() : NULL;
        if (!m->jvm) {
                log_warn("rolling: cannot watch the executor: %s; it is not rolled",
                         strerror(errno));
                rolling_free(m->rolling);
                m->rolling = NULL;
                return;
        }
        {
                struct policy_decommission_conf conf;
                policy_decommission_from_command((int)m->argc, m->argv, &conf);
                m->command_line = conf.enabled;
        }
}

/* The agent's spill totals (its statistics file), when it parsed. */
static void monitor_rolling_spills(struct shim_monitor *m, struct rolling_sample *s)
{
        json_t *agent, *totals, *forced, *empty, *failed;
        const char *status;

        if (!m->agent || m->cfg.rolling.spills_ineffective == 0)
                return;
        /* the file is parsed at the report interval; windows measure growth, so the
         * totals read last stand for the samples in between */
        if (m->spills_read_ns &&
            s->t_ns - m->spills_read_ns < (uint64_t)m->cfg.interval_seconds * 1000000000ULL) {
                s->spills_forced = m->spills_forced;
                s->spills_ineffective = m->spills_ineffective;
                return;
        }
        m->spills_read_ns = s->t_ns;
        m->spills_forced = m->spills_ineffective = ROLLING_UNKNOWN;
        agent = shim_agent_report_json(m->agent);
        status = json_string_value(json_object_get(json_object_get(agent, "stats"), "status"));
        totals = json_object_get(agent, "totals");
        forced = json_object_get(totals, "forced_spills");
        empty = json_object_get(totals, "empty_spills");
        failed = json_object_get(totals, "failed_spills");
        if (status && (strcmp(status, "ok") == 0 || strcmp(status, "partial") == 0) &&
            json_is_integer(forced) && json_is_integer(empty) && json_is_integer(failed) &&
            json_integer_value(forced) >= 0 && json_integer_value(empty) >= 0 &&
            json_integer_value(failed) >= 0) {
                s->spills_forced =
                    (uint64_t)json_integer_value(forced) + (uint64_t)json_integer_value(failed);
                s->spills_ineffective =
                    (uint64_t)json_integer_value(empty) + (uint64_t)json_integer_value(failed);
                m->spills_forced = s->spills_forced;
                m->spills_ineffective = s->spills_ineffective;
        }
        json_decref(agent);
}

/*
 * Rolling's bytes written since the start: io.stat, which counts what reached the disk for
 * the cgroup, writeback included; without it, what the report says (measure_disk_without_io_stat).
 */
static uint64_t monitor_rolling_disk_write(const struct shim_monitor *m)
{
        uint64_t rbytes, wbytes;
        struct probe_usage pu;
        bool have_probe;

        if (m->have_cgroup && m->last.has_io)
                return measure_delta(m->first.io_wbytes, m->last.io_wbytes);
        have_probe = m->probe && (probe_attached(m->probe) & PROBE_DISK) &&
                     probe_read(m->probe, m->cgroup_id, &pu) == 0;
        if (!measure_disk_without_io_stat(m, have_probe ? &pu : NULL, &rbytes, &wbytes))
                return ROLLING_UNKNOWN;
        return wbytes;
}

static void monitor_rolling_record(struct shim_monitor *m, const struct rolling_decision *d)
{
        if (d->trigger < ROLLING_TRIGGER_COUNT && d->action <= ROLLING_TERMINATE)
                m->decided[d->trigger][d->action]++;
        if (m->ndecisions < ROLLING_DECISIONS_MAX)
                m->decisions[m->ndecisions++] = *d;
        else
                m->decisions_dropped++;
}

/* After a sample: feed the machine, and act on what it decides. */
static void roll(struct shim_monitor *m)
{
        const struct collect_cgroup *c = &m->last;
        struct rolling_decision d;
        struct rolling_sample s;
        int r;

        if (!m->rolling || m->pid <= 0)
                return;
        s = rolling_sample_unknown(m->last_sample_ns);
        s.disk_write_bytes = monitor_rolling_disk_write(m);
        if (m->have_cgroup && c->has_memory && c->events_high != COLLECT_UNSET)
                s.memory_high_events = c->events_high;
        if (m->have_cgroup && c->has_psi && c->psi_memory.some_total_us != COLLECT_UNSET)
                s.psi_some_us = c->psi_memory.some_total_us;
        if (m->have_cgroup && c->has_psi && c->psi_memory.full_total_us != COLLECT_UNSET)
                s.psi_full_us = c->psi_memory.full_total_us;
        monitor_rolling_spills(m, &s);
        s.sigpwr = m->sigpwr = jvm_target_update(m->jvm, m->cgroup_fd);
        if (jvm_target_pid(m->jvm) > 0 &&
            jvm_target_command_line(m->jvm) != POLICY_DECOMMISSION_UNSET)
                m->command_line = jvm_target_command_line(m->jvm);

        if (rolling_feed(m->rolling, &s, &d) < 0 || d.action == ROLLING_NONE)
                return;
        if (d.action == ROLLING_DECOMMISSION) {
                _cleanup_close_ int fd = jvm_target_dup_pidfd(m->jvm);
                pid_t pid = jvm_target_pid(m->jvm);

                /* the JVM itself, never its process group: a shell in it dies of SIGPWR */
                r = fd < 0 ? fd : jvm_pidfd_send_signal(fd, SIGPWR);
                if (r < 0) {
                        /* not sent: recorded as such, and no TERM follows it */
                        rolling_decommission_failed(m->rolling, &d, strerror(-r));
                        log_warn("rolling: %s (pid %d)", d.reason, (int)pid);
                } else {
                        log_warn("rolling: %s to pid %d", d.reason, (int)pid);
                }
        } else if (d.action == ROLLING_UNAVAILABLE) {
                if (!m->rolling_warned)
                        log_warn("rolling: %s", d.reason);
                else
                        log_debug("rolling: %s", d.reason);
                m->rolling_warned = true;
        } else if (d.action == ROLLING_TERMINATE) {
                log_warn("rolling: %s", d.reason);
                pthread_mutex_lock(&m->lock);
                m->rolling_term = true;
                pthread_mutex_unlock(&m->lock);
        }
        monitor_rolling_record(m, &d);
}

bool shim_monitor_rolling_term(struct shim_monitor *m)
{
        bool term;

        if (!m || !m->thread_started)
                return false;
        pthread_mutex_lock(&m->lock);
        term = m->rolling_term;
        m->rolling_term = false;
        pthread_mutex_unlock(&m->lock);
        return term;
}

/* ---------------------------------------------------------------- ticks and the end */

/*
 * Loading and attaching the probes takes a hundred milliseconds or more (BTF, verifier):
 * the executor is not kept waiting for it, and a command that ends within its first second
 * does not pay for it at all. Executors run for minutes; cpu.stat covers the first second.
 */
/*
 * The node's set first (docs/probes.md, "One set per node"): registering a leaf costs less
 * than loading, and the node pays for one set whatever the number of executors. Where it
 * cannot be used, a set of the executor's own, as before; but not for the executor past the
 * node's PROBE_NODE_MAX: a set of its own each would be the cost the node's set avoids, so
 * that one measures through its collectors and says why.
 */
static void attach_probes(struct shim_monitor *m, uint64_t now)
{
        struct util_error perr = {0};

        m->probe_tried = true;
        m->probe = probe_open_node(m->cfg.probe_root ? m->cfg.probe_root : PROBE_NODE_ROOT,
                                   m->cgroup_id, &perr);
        if (!m->probe) {
                snprintf(m->probe_node_reason, sizeof(m->probe_node_reason), "%s", perr.text);
                if (perr.error == ENOSPC) {
                        snprintf(m->probe_reason, sizeof(m->probe_reason), "%s", perr.text);
                        return;
                }
                perr = (struct util_error){0};
                m->probe = probe_open(&m->cgroup_id, 1, PROBE_ALL, &perr);
        }
        if (!m->probe) {
                snprintf(m->probe_reason, sizeof(m->probe_reason), "%s", perr.text);
                return;
        }
        m->probe_attached_ns = now;
        log_debug("probes attached after %.3f s", (double)(now - m->start_ns) / 1e9);
}

/* A sample every second; a sample line (and the Prometheus file) at the interval. */
static void tick(struct shim_monitor *m)
{
        uint64_t now = util_now_ns();
        json_t *doc;

        if (now - m->last_sample_ns < 900000000ULL)
                return;
        if (m->cfg.use_bpf && m->cgroup_id && !m->probe_tried)
                attach_probes(m, now);
        sample(m);
        roll(m);
        if (now - m->last_line_ns < (uint64_t)m->cfg.interval_seconds * 1000000000ULL) {
                /* the executor's series appear at its first second, not at its first interval */
                if (m->prometheus[0] && !m->prometheus_written && m->prometheus_failed == 0 &&
                    (doc = measure_report_build(m, "sample", 0, NULL))) {
                        measure_prometheus_write(m, doc);
                        json_decref(doc);
                }
                return;
        }
        m->last_line_ns = now;
        atomic_fetch_add(&m->lines, 1);
        doc = measure_report_build(m, "sample", 0, NULL);
        emit(m, doc, false);
        if (doc && m->prometheus[0])
                measure_prometheus_write(m, doc);
        json_decref(doc);
}

/*
 * The final report: sample lines still waiting in a sink's queue are dropped (and counted)
 * first, so that the final report, which holds all they say, is next in line everywhere;
 * a sink that is closed (it failed, or never opened) counts the final report too.
 */
static void final_report(struct shim_monitor *m, int exit_code, const struct util_memory_events *ev)
{
        json_t *doc;

        sample(m);
        for (size_t i = 0; i < m->nsinks; i++) {
                struct sink *s = &m->sinks[i];
                reconnect(s);
                sink_discard_pending(s);
                if (s->fd < 0)
                        s->dropped++; /* this final report, which the sink cannot take */
        }
        doc = measure_report_build(m, "final", exit_code, ev);
        emit(m, doc, true);
        json_decref(doc);
        /* node_exporter's textfile convention: the executor's series end with it */
        measure_prometheus_remove(m);
}

/* What the supervisor handed over since the last look. Returns true once the final report is
 * queued. */
static bool take_events(struct shim_monitor *m, bool final_queued, uint64_t *ret_deadline)
{
        struct util_memory_events ev;
        bool finish, have_ev, stop;
        int exit_code, pidfd, uid_pidfd;
        pid_t pid;

        pthread_mutex_lock(&m->lock);
        pid = m->new_pid;
        m->new_pid = 0;
        pidfd = m->new_pidfd;
        m->new_pidfd = -1;
        uid_pidfd = m->new_uid_pidfd;
        m->new_uid_pidfd = -1;
        finish = m->finish_requested && !final_queued;
        stop = m->stop;
        exit_code = m->exit_code;
        ev = m->ev;
        have_ev = m->have_ev;
        *ret_deadline = m->finish_deadline_ns;
        pthread_mutex_unlock(&m->lock);

        if (pid > 0) {
                m->pid = pid;
                remember_pid(m, pid);
        }
        if (uid_pidfd >= 0) {
                util_closep(&m->uid_pidfd);
                m->uid_pidfd = uid_pidfd;
                read_run_as(m);
        }
        /* set_child takes the pidfd over */
        if (pidfd >= 0 && jvm_target_set_child(m->jvm, pidfd, m->pid) < 0)
                log_debug("rolling: the executor ended before it was watched");
        if (finish)
                final_report(m, exit_code, have_ev ? &ev : NULL);
        return final_queued || finish || stop;
}

/* Write what each sink takes now; returns whether lines remain, and fills the poll set. */
static bool flush_sinks(struct shim_monitor *m, struct pollfd *pfd, size_t *n)
{
        bool pending = false;

        for (size_t i = 0; i < m->nsinks; i++) {
                struct sink *s = &m->sinks[i];
                int r = sink_flush(s);

                if (r < 0)
                        log_warn("report %s%s%s: %s; its lines are counted as dropped", s->name,
                                 s->path[0] ? " " : "", s->path, s->error);
                if (r > 0 && s->may_block)
                        pfd[(*n)++] = (struct pollfd){.fd = s->fd, .events = POLLOUT};
                pending |= sink_pending(s) > 0;
        }
        return pending;
}

/* Sinks that did not take the final report within the flush time, for the caller's log. */
static void note_undelivered(struct shim_monitor *m)
{
        size_t len = 0;

        for (size_t i = 0; i < m->nsinks; i++) {
                struct sink *s = &m->sinks[i];
                if (sink_pending(s) == 0 && s->fd >= 0)
                        continue;
                sink_close(s);
                len += (size_t)snprintf(
                    m->undelivered + len, sizeof(m->undelivered) - len,
                    "%sreport %s%s%s: %" PRIu64 " lines dropped, the final report with them",
                    len ? "; " : "", s->name, s->path[0] ? " " : "", s->path, s->dropped);
                if (len >= sizeof(m->undelivered))
                        break;
        }
}

static int poll_timeout_ms(const struct shim_monitor *m, bool final_queued, uint64_t deadline)
{
        uint64_t now = util_now_ns(),
                 next = final_queued ? deadline : m->last_sample_ns + 1000000000ULL;

        return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

static void *monitor_thread(void *data)
{
        struct shim_monitor *m = data;
        bool final_queued = false;
        uint64_t deadline = 0;

        for (;;) {
                struct pollfd pfd[1 + SINKS_MAX] = {{.fd = m->wake_fd, .events = POLLIN}};
                size_t n = 1;
                bool pending;

                final_queued = take_events(m, final_queued, &deadline);
                if (!final_queued)
                        tick(m);
                pending = flush_sinks(m, pfd, &n);
                if (final_queued && (!pending || util_now_ns() >= deadline))
                        break;
                if (poll(pfd, n, poll_timeout_ms(m, final_queued, deadline)) > 0 &&
                    pfd[0].revents) {
                        uint64_t v;
                        ssize_t r = read(m->wake_fd, &v, sizeof(v));
                        (void)r;
                }
        }
        note_undelivered(m);
        pthread_mutex_lock(&m->lock);
        m->done = true;
        pthread_cond_broadcast(&m->done_cond);
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

static void wake(struct shim_monitor *m)
{
        uint64_t one = 1;
        ssize_t r = write(m->wake_fd, &one, sizeof(one));

        (void)r; /* EAGAIN: the counter is full, the thread is woken anyway */
}

/* The thread takes every signal blocked: the supervisor alone receives them (sigtimedwait). */
static int start_thread(struct shim_monitor *m)
{
        pthread_condattr_t attr;
        sigset_t all, old;
        int r;

        m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (m->wake_fd < 0)
                return -errno;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&m->done_cond, &attr);
        pthread_condattr_destroy(&attr);
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = pthread_create(&m->thread, NULL, monitor_thread, m);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0)
                return -r;
        m->thread_started = true;
        return 0;
}

/* Without a thread of its own: sample, and write what the sinks take now. */
void shim_monitor_tick(struct shim_monitor *m)
{
        struct pollfd pfd[1 + SINKS_MAX];
        size_t n = 0;

        if (!m || !m->started || m->cfg.own_thread)
                return;
        tick(m);
        flush_sinks(m, pfd, &n);
}

/* Without a thread: the final report, and the sinks get MONITOR_FLUSH_SECONDS to take it. */
static int finish_here(struct shim_monitor *m, int exit_code, const struct util_memory_events *ev,
                       struct util_error *err)
{
        uint64_t deadline = util_now_ns() + MONITOR_FLUSH_SECONDS * 1000000000ULL;

        final_report(m, exit_code, ev);
        for (;;) {
                struct pollfd pfd[SINKS_MAX];
                size_t n = 0;

                if (!flush_sinks(m, pfd, &n) || util_now_ns() >= deadline)
                        break;
                poll(pfd, n, poll_timeout_ms(m, true, deadline));
        }
        note_undelivered(m);
        return m->undelivered[0] ? util_error_set(err, EAGAIN, "%s", m->undelivered) : 0;
}

int shim_monitor_finish(struct shim_monitor *m, int exit_code, const struct util_memory_events *ev,
                        struct util_error *err)
{
        struct timespec until;
        bool done;

        if (!m || !m->started)
                return 0;
        if (!m->cfg.own_thread)
                return finish_here(m, exit_code, ev, err);
        if (!m->thread_started)
                return 0;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += MONITOR_FLUSH_SECONDS + 1;
        pthread_mutex_lock(&m->lock);
        m->finish_requested = true;
        m->exit_code = exit_code;
        m->have_ev = ev != NULL;
        if (ev)
                m->ev = *ev;
        m->finish_deadline_ns = util_now_ns() + MONITOR_FLUSH_SECONDS * 1000000000ULL;
        pthread_mutex_unlock(&m->lock);
        wake(m);

        pthread_mutex_lock(&m->lock);
        while (!m->done && pthread_cond_timedwait(&m->done_cond, &m->lock, &until) != ETIMEDOUT)
                ;
        done = m->done;
        pthread_mutex_unlock(&m->lock);
        if (!done) {
                /* a write to a sink hangs (a file on a dead disk): exit without the thread */
                m->abandoned = true;
                return util_error_set(
                    err, ETIMEDOUT,
                    "the monitor did not end within %d s of the executor (a report sink hangs)",
                    MONITOR_FLUSH_SECONDS);
        }
        pthread_join(m->thread, NULL);
        m->thread_started = false;
        if (m->undelivered[0])
                return util_error_set(err, EAGAIN, "%s", m->undelivered);
        return 0;
}

unsigned shim_monitor_lines(const struct shim_monitor *m)
{
        return m ? atomic_load(&((struct shim_monitor *)m)->lines) : 0;
}

void shim_monitor_free(struct shim_monitor *m)
{
        if (!m || m->abandoned)
                return; /* the thread still uses it: the process is about to exit */
        if (m->thread_started) {
                pthread_mutex_lock(&m->lock);
                m->stop = true;
                pthread_mutex_unlock(&m->lock);
                wake(m);
                pthread_join(m->thread, NULL);
        }
        measure_prometheus_remove(m); /* a run that ended without its final report */
        util_closep(&m->prometheus_dirfd);
        probe_close(m->probe);
        rolling_free(m->rolling);
        jvm_target_free(m->jvm);
        free(m->agent);
        if (m->taskstats)
                collect_taskstats_close(m->taskstats);
        for (size_t i = 0; i < m->nsinks; i++)
                sink_close(&m->sinks[i]);
        util_closep(&m->wake_fd);
        util_closep(&m->cgroup_fd);
        util_closep(&m->new_pidfd);
        util_closep(&m->new_uid_pidfd);
        util_closep(&m->uid_pidfd);
        free(m->samples);
        for (size_t i = 0; i < m->argc; i++)
                free(m->argv[i]);
        free(m->argv);
        free(m);
}
