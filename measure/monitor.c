/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Measurement of one executor run and its reports. Sampling is cheap (a dozen small
 * files) and runs once a second so that averages and percentiles of short runs mean
 * something; sample lines go to the sinks at the policy's interval.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "agent-stats.h"
#include "jvm-target.h"
#include "monitor.h"
#include "probe.h"
#include "rolling.h"
#include "sink.h"
#include "utf8.h"
#include "util.h"

#define SAMPLES_IN_REPORT 360
#define KNOWN_PIDS_MAX    4096
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
        struct shim_memory_events ev; /* lock */
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

static void wake(struct shim_monitor *m);
static int start_thread(struct shim_monitor *m);
static void rolling_start(struct shim_monitor *m);

/* ---------------------------------------------------------------- sinks */

/* ---------------------------------------------------------------- the Prometheus file */

/*
 * Who writes a Prometheus file, as its first line (a comment to Prometheus): the pid, its
 * start time (clock ticks after boot, /proc/PID/stat field 22), the pid namespace the pid
 * means something in, and the boot. A file whose writer is gone is stale (sweep_stale).
 */
#define OWNER_FORMAT "# sparkshim-owner pid=%d start=%llu pidns=%llu boot=%36s"

static void boot_id(char *buf, size_t size)
{
        char text[64] = "";
        int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
        ssize_t len = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;

        if (fd >= 0)
                close(fd);
        text[len > 0 ? len : 0] = '\0';
        text[strcspn(text, "\n")] = '\0';
        snprintf(buf, size, "%s", text[0] ? text : "unknown");
}

static unsigned long long pid_namespace(void)
{
        struct stat st;

        return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

static void owner_line(char *buf, size_t size)
{
        uint64_t start = 0;
        char boot[64];

        util_process_start_time(getpid(), &start);
        boot_id(boot, sizeof(boot));
        snprintf(buf, size, "# sparkshim-owner pid=%d start=%llu pidns=%llu boot=%s", (int)getpid(),
                 (unsigned long long)start, pid_namespace(), boot);
}

/*
 * Whether the file dirfd/name is a Prometheus file of a sparkshim that is gone: its first
 * line is an owner line (OWNER_FORMAT) of another boot, or of this boot and pid namespace
 * naming a pid that is not running or started at another time. Owners in another pid
 * namespace (another container) cannot be told from here: never stale.
 */
static bool stale(int dirfd, const char *name, uid_t uid, const char *our_boot,
                  unsigned long long our_pidns)
{
        char text[256], boot[40];
        unsigned long long start, pidns;
        uint64_t now;
        struct stat st;
        ssize_t len;
        int pid, fd, r;

        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return false;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid || st.st_nlink != 1) {
                close(fd);
                return false;
        }
        len = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (len <= 0)
                return false;
        text[len] = '\0';
        if (sscanf(text, OWNER_FORMAT, &pid, &start, &pidns, boot) != 4 || pid <= 0)
                return false;
        if (strcmp(boot, our_boot) != 0)
                return true;
        if (pidns != our_pidns)
                return false;
        r = util_process_start_time(pid, &now);
        return r == -ENOENT || (r == 0 && now != start);
}

/*
 * Remove the *.prom files of dirfd that a sparkshim which is gone left (it was killed before
 * it could remove its own): their series would otherwise stay on the node for good. Only
 * regular files of our user with one link and an owner line are looked at; bounded.
 */
static void sweep_stale(int dirfd, const char *dir, const char *own_name)
{
        unsigned long long pidns = pid_namespace();
        char boot[64];
        unsigned seen = 0;
        struct dirent *de;
        DIR *d;
        int fd;

        boot_id(boot, sizeof(boot));
        fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        while ((de = readdir(d)) && seen++ < 4096) {
                size_t len = strlen(de->d_name);

                if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".prom") != 0 ||
                    strcmp(de->d_name, own_name) == 0 ||
                    (de->d_type != DT_REG && de->d_type != DT_UNKNOWN))
                        continue;
                if (stale(dirfd, de->d_name, geteuid(), boot, pidns) &&
                    unlinkat(dirfd, de->d_name, 0) == 0)
                        log_info("removed %s/%s, the Prometheus file of a sparkshim that is gone",
                                 dir, de->d_name);
        }
        closedir(d);
}

/* The Prometheus file is written next to its final name and renamed: its directory is held now. */
static int open_prometheus(struct shim_monitor *m, struct util_error *err)
{
        _cleanup_close_ int dirfd = -1;
        const char *name;
        struct util_error why = {0};
        char dir[4096];

        dirfd = util_open_dir_of(m->prometheus, &name, &why);
        if (dirfd < 0)
                return util_error_set(err, dirfd, "prometheus file %s: %s", m->prometheus,
                                      why.text);
        if (faccessat(dirfd, ".", W_OK, 0) < 0)
                return util_error_set(err, errno,
                                      "prometheus file %s: its directory is not writable: %s",
                                      m->prometheus, strerror(errno));
        snprintf(dir, sizeof(dir), "%.*s",
                 name > m->prometheus ? (int)(name - m->prometheus - 1) : 1,
                 name > m->prometheus ? m->prometheus : ".");
        sweep_stale(dirfd, dir[0] ? dir : "/", name);
        owner_line(m->owner, sizeof(m->owner));
        m->prometheus_name = name;
        m->prometheus_dirfd = dirfd;
        dirfd = -1;
        return 0;
}

/* The run is over (or never started): its series go with it, unless another run replaced the file.
 */
static void remove_prometheus(struct shim_monitor *m)
{
        int r;

        if (!m->prometheus_written)
                return;
        m->prometheus_written = false;
        r = util_unlink_if_same(m->prometheus_dirfd, m->prometheus_name, &m->prometheus_st);
        if (r < 0 && r != -ENOENT && r != -ESTALE)
                log_warn("prometheus file %s: cannot remove it: %s", m->prometheus, strerror(-r));
}

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
                r = open_prometheus(m, err);
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
        rolling_start(m);
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

/* ---------------------------------------------------------------- the report */

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

static uint64_t delta(uint64_t a, uint64_t b)
{
        return a == COLLECT_UNSET || b == COLLECT_UNSET || b < a ? COLLECT_UNSET : b - a;
}

/* ---------------------------------------------------------------- executor rolling */

static void rolling_start(struct shim_monitor *m)
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
static void rolling_spills(struct shim_monitor *m, struct rolling_sample *s)
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
 * What the executor read and wrote, without io.stat: the larger of the block probe and
 * /proc/PID/io (proc_write_bytes), each direction on its own. The block probe
 * attributes a write to the task that issues the request, and buffered writes (shuffle
 * files) are issued by the kernel's flusher threads: a standalone executor that wrote ~160 MB
 * was reported as 0.04-1.0 MB by it alone. /proc's write_bytes counts a page when the task
 * dirties it. Returns the source's name for the report; NULL when neither is there.
 */
static const char *disk_without_io_stat(const struct shim_monitor *m, const struct probe_usage *pu,
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

/*
 * Rolling's bytes written since the start: io.stat, which counts what reached the disk for
 * the cgroup, writeback included; without it, what the report says (disk_without_io_stat).
 */
static uint64_t rolling_disk_write(const struct shim_monitor *m)
{
        uint64_t rbytes, wbytes;
        struct probe_usage pu;
        bool have_probe;

        if (m->have_cgroup && m->last.has_io)
                return delta(m->first.io_wbytes, m->last.io_wbytes);
        have_probe = m->probe && (probe_attached(m->probe) & PROBE_DISK) &&
                     probe_read(m->probe, m->cgroup_id, &pu) == 0;
        if (!disk_without_io_stat(m, have_probe ? &pu : NULL, &rbytes, &wbytes))
                return ROLLING_UNKNOWN;
        return wbytes;
}

static void rolling_record(struct shim_monitor *m, const struct rolling_decision *d)
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
        s.disk_write_bytes = rolling_disk_write(m);
        if (m->have_cgroup && c->has_memory && c->events_high != COLLECT_UNSET)
                s.memory_high_events = c->events_high;
        if (m->have_cgroup && c->has_psi && c->psi_memory.some_total_us != COLLECT_UNSET)
                s.psi_some_us = c->psi_memory.some_total_us;
        if (m->have_cgroup && c->has_psi && c->psi_memory.full_total_us != COLLECT_UNSET)
                s.psi_full_us = c->psi_memory.full_total_us;
        rolling_spills(m, &s);
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
        rolling_record(m, &d);
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

/* The report's "rolling": null when off. */
static json_t *rolling_json(const struct shim_monitor *m)
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
        const struct shim_memory_events *ev;
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
                fg->cpu_us = delta(c->f->cpu_usage_us, c->l->cpu_usage_us);
                fg->user_us = delta(c->f->cpu_user_us, c->l->cpu_user_us);
                fg->sys_us = delta(c->f->cpu_system_us, c->l->cpu_system_us);
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
 * direction; disk_without_io_stat), else rusage. Operations come from io.stat or the probe.
 */
static void disk_figures(const struct report_ctx *c, struct figures *fg)
{
        const struct shim_monitor *m = c->m;
        bool have_probe = c->have_probe && (c->attached & PROBE_DISK);
        const char *src;

        if (m->have_cgroup && c->l->has_io) {
                fg->rbytes = delta(c->f->io_rbytes, c->l->io_rbytes);
                fg->wbytes = delta(c->f->io_wbytes, c->l->io_wbytes);
                fg->rops = delta(c->f->io_rios, c->l->io_rios);
                fg->wops = delta(c->f->io_wios, c->l->io_wios);
                fg->disk_src = "cgroup:io.stat";
        } else if ((src = disk_without_io_stat(m, have_probe ? &c->pu : NULL, &fg->rbytes,
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
            real_or_null(throttled
                             ? (double)delta(c->f->cpu_throttled_us, c->l->cpu_throttled_us) / 1e6
                             : NAN),
            "nr_throttled",
            u64_or_null(m->have_cgroup ? delta(c->f->cpu_nr_throttled, c->l->cpu_nr_throttled)
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
                            const struct shim_memory_events *ev)
{
        *c = (struct report_ctx){.m = m, .f = &m->first, .l = &m->last, .ev = ev, .final = final};
        c->have_probe = m->probe && probe_read(m->probe, m->cgroup_id, &c->pu) == 0;
        c->attached = m->probe ? probe_attached(m->probe) : 0;
        c->wall = (double)(util_now_ns() - m->start_ns) / 1e9;
        /* sparkshim reaps every process of the executor: rusage covers them all */
        c->have_ru = final && getrusage(RUSAGE_CHILDREN, &c->ru) == 0;
}

/* The whole report: kind "final" or "sample". */
static json_t *build_report(struct shim_monitor *m, const char *kind, int exit_code,
                            const struct shim_memory_events *ev)
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
        json_object_set_new(doc, "rolling", rolling_json(m));
        json_object_set_new(doc, "samples", samples_json(m, c.final));
        json_object_set_new(doc, "sinks", sinks_json(m));
        return doc;
}

/* ---------------------------------------------------------------- prometheus */

/*
 * A label value in the exposition format: backslash, quote and newline escaped; other
 * control characters and bytes that are not UTF-8 (the job's ids may hold anything, and one
 * bad byte makes node_exporter drop the whole file) become '?'.
 */
static void label_value(const char *s, char *buf, size_t size)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t n = 0;

        while (*p && n + 5 < size) {
                size_t len = util_utf8_length(p);

                if (*p == '\\' || *p == '"' || *p == '\n') {
                        buf[n++] = '\\';
                        buf[n++] = *p == '\n' ? 'n' : (char)*p;
                } else if (len == 0 || *p < ' ' || *p == 0x7f) {
                        buf[n++] = '?';
                } else {
                        memcpy(buf + n, p, len);
                        n += len;
                        p += len;
                        continue;
                }
                p++;
        }
        buf[n] = '\0';
}

/* The agent's forced spills and released bytes, one series per operator type. */
static void write_agent_metrics(FILE *f, json_t *operators, const char *labels)
{
        static const struct {
                const char *name, *help, *field;
        } metrics[] = {
            {"sparkshim_agent_forced_spills_total",
             "Spills the JVM agent forced, per operator type.", "forced_spills"},
            {"sparkshim_agent_released_bytes_total",
             "Bytes released by the spills the JVM agent forced.", "released_bytes"},
        };
        size_t i;
        json_t *op;

        /* declared without samples when the agent made no operator spill (or is off) */
        for (size_t k = 0; k < ELEMENTSOF(metrics); k++) {
                fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", metrics[k].name, metrics[k].help,
                        metrics[k].name);
                json_array_foreach(operators, i, op)
                {
                        const char *name = json_string_value(json_object_get(op, "operator"));
                        json_t *v = json_object_get(op, metrics[k].field);
                        char escaped[256];

                        if (!name || !json_is_integer(v))
                                continue;
                        label_value(name, escaped, sizeof(escaped));
                        fprintf(f, "%s{%s,operator=\"%s\"} %" JSON_INTEGER_FORMAT "\n",
                                metrics[k].name, labels, escaped, json_integer_value(v));
                }
        }
}

/* The value of doc.a.b.c (c may be NULL), or NULL when absent. */
static json_t *at(json_t *doc, const char *a, const char *b, const char *c)
{
        json_t *v = json_object_get(json_object_get(doc, a), b);

        return c ? json_object_get(v, c) : v;
}

/* A PSI total in microseconds as seconds (a new reference), NULL when unknown. */
static json_t *psi_seconds(json_t *doc, const char *resource, const char *key)
{
        json_t *v = json_object_get(at(doc, "usage", resource, "psi"), key);

        return json_is_integer(v) ? json_real((double)json_integer_value(v) / 1e6) : NULL;
}

static json_t *real_if(bool known, double v)
{
        return known && isfinite(v) ? json_real(v) : NULL;
}

/* One series per trigger and action that occurred; declared without samples otherwise. */
static void write_rolling_metrics(FILE *f, const struct shim_monitor *m, const char *labels)
{
        static const char name[] = "sparkshim_executor_rolling_decisions_total";

        fprintf(f,
                "# HELP %s Executor rolling decisions: SIGPWR sent (decommission), not possible "
                "(unavailable), TERM after the rolling grace (terminate).\n# TYPE %s counter\n",
                name, name);
        if (!m->rolling)
                return;
        for (int t = ROLLING_TRIGGER_NONE + 1; t < ROLLING_TRIGGER_COUNT; t++)
                for (int a = ROLLING_DECOMMISSION; a <= ROLLING_TERMINATE; a++)
                        if (m->decided[t][a])
                                fprintf(f, "%s{%s,trigger=\"%s\",action=\"%s\"} %" PRIu64 "\n",
                                        name, labels, rolling_trigger_name((enum rolling_trigger)t),
                                        rolling_action_name((enum rolling_action)a),
                                        m->decided[t][a]);
}

/*
 * The metrics of docs/sparkshim-report.5.md (PROMETHEUS), in Prometheus' conventions: base
 * units (seconds, bytes, cores), counters ending in _total, every series labelled app_id,
 * executor_id and name. Values that are unknown are left out, never written as 0.
 */
static void write_prometheus(struct shim_monitor *m, json_t *doc)
{
        const struct sample *last = m->nsamples ? &m->samples[m->nsamples - 1] : NULL;
        struct timespec now;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct util_error why = {0};
        char labels[1024];
        FILE *f;
        struct {
                const char *name, *help, *type;
                json_t *value; /* a new reference, or NULL */
        } metrics[] = {
            {"sparkshim_container_cpu_usage_seconds_total", "CPU time of the executor's cgroup.",
             "counter", json_incref(at(doc, "usage", "cpu", "seconds"))},
            {"sparkshim_container_cpu_cfs_throttled_seconds_total",
             "Time the executor was throttled by cpu.max.", "counter",
             json_incref(at(doc, "usage", "cpu", "throttled_seconds"))},
            {"sparkshim_container_cpu_cfs_throttled_periods_total",
             "Periods in which the executor was throttled.", "counter",
             json_incref(at(doc, "usage", "cpu", "nr_throttled"))},
            {"sparkshim_container_memory_usage_bytes",
             "Memory of the executor now (memory.current, else the sum of its processes' VmRSS).",
             "gauge",
             last && last->mem_bytes != COLLECT_UNSET ? json_integer((json_int_t)last->mem_bytes)
                                                      : NULL},
            {"sparkshim_container_memory_max_usage_bytes", "Peak memory of the executor.", "gauge",
             json_incref(at(doc, "usage", "memory", "peak_bytes"))},
            {"sparkshim_container_memory_average_bytes", "Average memory of the executor.", "gauge",
             json_incref(at(doc, "usage", "memory", "average_bytes"))},
            {"sparkshim_container_oom_events_total", "OOM kills in the executor's cgroup.",
             "counter", json_incref(at(doc, "usage", "memory", "oom_kills"))},
            {"sparkshim_container_memory_high_events_total",
             "Times the executor's cgroup went over memory.high.", "counter",
             json_incref(at(doc, "usage", "memory", "high_events"))},
            {"sparkshim_container_fs_reads_bytes_total", "Bytes read from block devices.",
             "counter", json_incref(at(doc, "usage", "disk", "read_bytes"))},
            {"sparkshim_container_fs_writes_bytes_total", "Bytes written to block devices.",
             "counter", json_incref(at(doc, "usage", "disk", "write_bytes"))},
            {"sparkshim_container_pressure_cpu_waiting_seconds_total",
             "Time some tasks of the executor waited for a CPU (cpu.pressure some).", "counter",
             psi_seconds(doc, "cpu", "some_total_us")},
            {"sparkshim_container_pressure_cpu_stalled_seconds_total",
             "Time all tasks of the executor waited for a CPU (cpu.pressure full).", "counter",
             psi_seconds(doc, "cpu", "full_total_us")},
            {"sparkshim_container_pressure_memory_waiting_seconds_total",
             "Time some tasks of the executor waited for memory (memory.pressure some).", "counter",
             psi_seconds(doc, "memory", "some_total_us")},
            {"sparkshim_container_pressure_memory_stalled_seconds_total",
             "Time all tasks of the executor waited for memory (memory.pressure full).", "counter",
             psi_seconds(doc, "memory", "full_total_us")},
            {"sparkshim_container_pressure_io_waiting_seconds_total",
             "Time some tasks of the executor waited for I/O (io.pressure some).", "counter",
             psi_seconds(doc, "disk", "some_total_us")},
            {"sparkshim_container_pressure_io_stalled_seconds_total",
             "Time all tasks of the executor waited for I/O (io.pressure full).", "counter",
             psi_seconds(doc, "disk", "full_total_us")},
            {"sparkshim_container_spec_cpu_request_cores", "Planned CPU request, in cores.",
             "gauge", real_if(m->has_plan, (double)m->plan.cpu_request_millicores / 1000.0)},
            {"sparkshim_container_spec_cpu_limit_cores",
             "Planned CPU limit (cpu.max), in cores; absent when unlimited.", "gauge",
             real_if(m->has_plan && m->plan.cpu_limit_millicores > 0,
                     (double)m->plan.cpu_limit_millicores / 1000.0)},
            {"sparkshim_container_spec_memory_limit_bytes", "Planned memory limit (memory.max).",
             "gauge", m->has_plan ? json_integer((json_int_t)m->plan.memory_limit_bytes) : NULL},
            {"sparkshim_container_spec_memory_request_bytes", "Planned memory request.", "gauge",
             m->has_plan ? json_integer((json_int_t)m->plan.memory_request_bytes) : NULL},
            {"sparkshim_cpu_utilization_ratio", "CPU seconds / (request cores x wall time).",
             "gauge", json_incref(json_object_get(json_object_get(doc, "utilization"), "cpu"))},
            {"sparkshim_memory_utilization_ratio", "Memory peak / memory request.", "gauge",
             json_incref(json_object_get(json_object_get(doc, "utilization"), "memory"))},
            {"sparkshim_enforced",
             "1 when the plan is enforced in the executor's cgroup, 0 when it runs unconstrained "
             "(fail_mode open).",
             "gauge", json_integer(m->enforced)},
            {"sparkshim_start_time_seconds",
             "When the executor started, in seconds since the epoch.", "gauge",
             json_real((double)m->start_rt.tv_sec + (double)m->start_rt.tv_nsec / 1e9)},
            {"sparkshim_last_update_timestamp_seconds",
             "When sparkshim wrote this file, in seconds since the epoch (older than a few "
             "intervals: the file is stale).",
             "gauge", NULL},
        };
        struct util_error err = {0};
        int r;

        clock_gettime(CLOCK_REALTIME, &now);
        metrics[ELEMENTSOF(metrics) - 1].value =
            json_real((double)now.tv_sec + (double)now.tv_nsec / 1e9);
        if (m->prometheus_dirfd < 0 && open_prometheus(m, &err) < 0) {
                m->prometheus_failed++;
                snprintf(m->prometheus_error, sizeof(m->prometheus_error), "%s", err.text);
                goto out;
        }
        /* composed in memory, then written under an exclusive random name and renamed */
        f = open_memstream(&text, &len);
        if (!f) {
                m->prometheus_failed++;
                snprintf(m->prometheus_error, sizeof(m->prometheus_error), "out of memory");
                goto out;
        }
        {
                /* every label value escaped, as the agent's operator label is */
                char app[256], executor[256], name[256];

                label_value(m->app_id, app, sizeof(app));
                label_value(m->executor_id, executor, sizeof(executor));
                label_value(m->name, name, sizeof(name));
                snprintf(labels, sizeof(labels), "app_id=\"%s\",executor_id=\"%s\",name=\"%s\"",
                         app, executor, name);
        }
        fprintf(f, "%s\n", m->owner);
        for (size_t i = 0; i < ELEMENTSOF(metrics); i++) {
                /* every family is declared, with no sample when its value is unknown here */
                fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metrics[i].name, metrics[i].help,
                        metrics[i].name, metrics[i].type);
                if (json_is_number(metrics[i].value))
                        fprintf(f, "%s{%s} %.17g\n", metrics[i].name, labels,
                                json_number_value(metrics[i].value));
        }
        write_agent_metrics(f, json_object_get(json_object_get(doc, "agent"), "operators"), labels);
        write_rolling_metrics(f, m, labels);
        if (fclose(f) != 0) {
                m->prometheus_failed++;
                snprintf(m->prometheus_error, sizeof(m->prometheus_error), "out of memory");
                goto out;
        }
        r = util_write_file_atomic_at(m->prometheus_dirfd, m->prometheus_name, text, len, 0644,
                                      &m->prometheus_st, &why);
        if (r < 0) {
                m->prometheus_failed++;
                snprintf(m->prometheus_error, sizeof(m->prometheus_error), "%s: %s", m->prometheus,
                         why.text);
        } else {
                m->prometheus_written = true;
                m->prometheus_error[0] = '\0';
        }
out:
        for (size_t i = 0; i < ELEMENTSOF(metrics); i++)
                json_decref(metrics[i].value);
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
                    (doc = build_report(m, "sample", 0, NULL))) {
                        write_prometheus(m, doc);
                        json_decref(doc);
                }
                return;
        }
        m->last_line_ns = now;
        atomic_fetch_add(&m->lines, 1);
        doc = build_report(m, "sample", 0, NULL);
        emit(m, doc, false);
        if (doc && m->prometheus[0])
                write_prometheus(m, doc);
        json_decref(doc);
}

/*
 * The final report: sample lines still waiting in a sink's queue are dropped (and counted)
 * first, so that the final report, which holds all they say, is next in line everywhere;
 * a sink that is closed (it failed, or never opened) counts the final report too.
 */
static void final_report(struct shim_monitor *m, int exit_code, const struct shim_memory_events *ev)
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
        doc = build_report(m, "final", exit_code, ev);
        emit(m, doc, true);
        json_decref(doc);
        /* node_exporter's textfile convention: the executor's series end with it */
        remove_prometheus(m);
}

/* What the supervisor handed over since the last look. Returns true once the final report is
 * queued. */
static bool take_events(struct shim_monitor *m, bool final_queued, uint64_t *ret_deadline)
{
        struct shim_memory_events ev;
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
static int finish_here(struct shim_monitor *m, int exit_code, const struct shim_memory_events *ev,
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

int shim_monitor_finish(struct shim_monitor *m, int exit_code, const struct shim_memory_events *ev,
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
        remove_prometheus(m); /* a run that ended without its final report */
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

/* ---------------------------------------------------------------- validation */

int shim_report_validate(json_t *doc, struct util_error *err)
{
        static const struct {
                const char *path;
                json_type type; /* JSON_NULL: any, null allowed */
        } required[] = {
            {"schema", JSON_STRING},
            {"kind", JSON_STRING},
            {"identity/app_id", JSON_STRING},
            {"identity/executor_id", JSON_STRING},
            {"identity/host", JSON_STRING},
            {"identity/start", JSON_STRING},
            {"identity/end", JSON_STRING},
            {"identity/wall_seconds", JSON_REAL},
            {"plan/cpu/request_millicores", JSON_INTEGER},
            {"plan/memory/request_bytes", JSON_INTEGER},
            {"plan/memory/limit_bytes", JSON_INTEGER},
            {"enforcement/enforced", JSON_TRUE},
            {"usage/cpu/seconds", JSON_NULL},
            {"usage/cpu/throttled_seconds", JSON_NULL},
            {"usage/cpu/runq_wait/p95_us", JSON_NULL},
            {"usage/memory/peak_bytes", JSON_NULL},
            {"usage/memory/average_bytes", JSON_NULL},
            {"usage/memory/p95_bytes", JSON_NULL},
            {"usage/memory/anon_peak_bytes", JSON_NULL},
            {"usage/memory/oom_kills", JSON_NULL},
            {"usage/memory/high_events", JSON_NULL},
            {"usage/disk/read_bytes", JSON_NULL},
            {"usage/disk/write_bytes", JSON_NULL},
            {"usage/sources", JSON_OBJECT},
            {"utilization/cpu", JSON_NULL},
            {"utilization/memory", JSON_NULL},
            {"utilization/objective", JSON_NULL},
            {"samples", JSON_ARRAY},
        };

        if (!json_is_object(doc))
                return util_error_set(err, EINVAL, "not a JSON object");
        if (!json_is_string(json_object_get(doc, "schema")) ||
            strcmp(json_string_value(json_object_get(doc, "schema")), REPORT_SCHEMA) != 0)
                return util_error_set(err, EINVAL, "schema is not %s", REPORT_SCHEMA);
        for (size_t i = 0; i < ELEMENTSOF(required); i++) {
                char path[128], *save = NULL;
                json_t *v = doc;

                /* sparkshim probe watches cgroups without a plan */
                if (strncmp(required[i].path, "plan/", 5) == 0 &&
                    json_is_null(json_object_get(doc, "plan")))
                        continue;
                snprintf(path, sizeof(path), "%s", required[i].path);
                for (char *k = strtok_r(path, "/", &save); k && v; k = strtok_r(NULL, "/", &save))
                        v = json_object_get(v, k);
                if (!v)
                        return util_error_set(err, EINVAL, "%s is missing", required[i].path);
                if (required[i].type == JSON_NULL)
                        continue;
                if (required[i].type == JSON_TRUE   ? !json_is_boolean(v)
                    : required[i].type == JSON_REAL ? !json_is_number(v)
                                                    : json_typeof(v) != required[i].type)
                        return util_error_set(err, EINVAL, "%s has the wrong type",
                                              required[i].path);
        }
        return 0;
}
