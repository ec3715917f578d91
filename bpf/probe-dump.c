/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe-dump: attach the probes to cgroups, run a command in the first one (or wait), then
 * print what they measured, one JSON object per cgroup. A test and diagnostic tool (not
 * installed); the bpf test suite, tests/vm/cases/85-bpf.sh and bench/probes drive it.
 *
 *   probe-dump [--seconds S] [--kinds cpu,memory,disk] [--ready FILE] [--snapshot-at-stop]
 *              [--node ROOT] CGROUP_DIR... [-- CMD [ARG...]]
 *   probe-dump --node-list ROOT
 *
 * --node ROOT: register each CGROUP_DIR (up to PROBE_NODE_MAX) with the node's set pinned
 * under ROOT, as a shim registers its one (bpf/node.c), instead of loading a set of its own
 * (which watches up to PROBE_CGROUPS_MAX); --kinds does not apply (the set has every kind
 * the kernel supports); the figures carry "node": true.
 * --node-list ROOT: print the registrations of this build's node set under ROOT, one JSON
 * object a line ({"cgroup_id", "slot", "owner_pid", "owner_alive"}), and exit.
 *
 * With CMD: the child moves itself into the first CGROUP_DIR (writes its pid to
 * cgroup.procs) and execs CMD; probe-dump waits for it, forwarding SIGINT/SIGTERM. Without:
 * it waits S seconds (default: until SIGINT/SIGTERM). --ready FILE: once attached, write
 * {"pid", "attached", "programs": [{"id", "name", "kind"}]} to FILE (atomically).
 * --snapshot-at-stop (with CMD): the figures printed are those read when CMD first stops
 * (raise(SIGSTOP)) with every thread stopped, next to "schedstat", the sums of
 * /proc/CMD/task/x/schedstat read at that moment; CMD is then continued. Both accounts then
 * cover the same window, whatever the load (a thread that read its own schedstat could
 * still queue on its way out).
 *
 * Exit: 0 (whatever CMD's status, which is in the JSON), 1 error, 2 usage, 77 when this
 * build has no BPF (the stub).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sched.h>

#include <jansson.h>

#include "probe.h"
#include "util.h"

#define PROG           "probe-dump"
#define EXIT_NO_BPF    77
#define MAX_PROGRAMS   32
#define MAX_OOM_EVENTS 64
#define MAX_DIRS       PROBE_NODE_MAX /* --node; PROBE_CGROUPS_MAX for a set of its own */

struct options {
        double seconds; /* < 0: until a signal */
        unsigned kinds;
        const char *ready;
        bool snapshot_at_stop;
        const char *node;      /* --node ROOT */
        const char *node_list; /* --node-list ROOT */
        const char *dirs[MAX_DIRS];
        size_t ndirs;
        char **command;
};

struct oom_list {
        json_t *by_cgroup[MAX_DIRS]; /* arrays of events */
        const uint64_t *ids;
        size_t n;
};

static void usage(FILE *f)
{
        fprintf(f, "usage: " PROG " [--seconds S] [--kinds cpu,memory,disk] [--ready FILE] "
                   "[--snapshot-at-stop] [--node ROOT] CGROUP_DIR... [-- CMD [ARG...]]\n"
                   "       " PROG " --node-list ROOT\n");
}

static int parse_kinds(const char *text, unsigned *ret)
{
        _cleanup_free_ char *copy = strdup(text);
        unsigned kinds = 0;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (strcmp(w, "cpu") == 0)
                        kinds |= PROBE_CPU;
                else if (strcmp(w, "memory") == 0)
                        kinds |= PROBE_MEMORY;
                else if (strcmp(w, "disk") == 0)
                        kinds |= PROBE_DISK;
                else if (strcmp(w, "all") == 0)
                        kinds |= PROBE_ALL;
                else
                        return -EINVAL;
        }
        if (!kinds)
                return -EINVAL;
        *ret = kinds;
        return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
        int i;

        o->seconds = -1;
        o->kinds = PROBE_ALL;
        for (i = 1; i < argc; i++) {
                const char *a = argv[i];

                if (strcmp(a, "--") == 0) {
                        if (i + 1 >= argc)
                                return -EINVAL;
                        o->command = argv + i + 1;
                        break;
                } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                        usage(stdout);
                        exit(0);
                } else if (strcmp(a, "--seconds") == 0 && i + 1 < argc) {
                        if (util_parse_double(argv[++i], &o->seconds) < 0 || !isfinite(o->seconds))
                                return -EINVAL;
                } else if (strcmp(a, "--kinds") == 0 && i + 1 < argc) {
                        if (parse_kinds(argv[++i], &o->kinds) < 0)
                                return -EINVAL;
                } else if (strcmp(a, "--ready") == 0 && i + 1 < argc) {
                        o->ready = argv[++i];
                } else if (strcmp(a, "--snapshot-at-stop") == 0) {
                        o->snapshot_at_stop = true;
                } else if (strcmp(a, "--node") == 0 && i + 1 < argc) {
                        o->node = argv[++i];
                } else if (strcmp(a, "--node-list") == 0 && i + 1 < argc) {
                        o->node_list = argv[++i];
                } else if (a[0] == '-') {
                        return -EINVAL;
                } else {
                        if (o->ndirs == MAX_DIRS)
                                return -E2BIG;
                        o->dirs[o->ndirs++] = a;
                }
        }
        if (o->node_list)
                return o->ndirs == 0 && !o->command && !o->node ? 0 : -EINVAL;
        if (o->ndirs == 0)
                return -EINVAL;
        if (!o->node && o->ndirs > PROBE_CGROUPS_MAX)
                return -E2BIG;
        if (o->command && o->seconds >= 0)
                return -EINVAL;
        if (o->snapshot_at_stop && !o->command)
                return -EINVAL;
        return 0;
}

static double now_s(void)
{
        return (double)util_now_ns() / 1e9;
}

static json_t *kinds_array(unsigned kinds)
{
        json_t *a = json_array();

        for (unsigned k = PROBE_CPU; k <= PROBE_DISK; k <<= 1)
                if (kinds & k)
                        json_array_append_new(a, json_string(probe_kind_name((enum probe_kind)k)));
        return a;
}

static json_t *programs_json(const struct probe *p)
{
        struct probe_program_stats stats[MAX_PROGRAMS];
        json_t *a = json_array();
        int n = probe_program_stats(p, stats, MAX_PROGRAMS);

        for (int i = 0; i < n && i < MAX_PROGRAMS; i++)
                json_array_append_new(
                    a, json_pack("{s:s, s:I, s:s, s:I, s:I}", "name", stats[i].name, "id",
                                 (json_int_t)stats[i].id, "kind", probe_kind_name(stats[i].kind),
                                 "run_cnt", (json_int_t)stats[i].run_cnt, "run_time_ns",
                                 (json_int_t)stats[i].run_time_ns));
        return a;
}

static int write_ready(const char *path, const struct probe *p)
{
        _cleanup_free_ char *tmp = NULL;
        json_t *doc;
        int r;

        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        doc = json_pack("{s:I, s:o, s:o}", "pid", (json_int_t)getpid(), "attached",
                        kinds_array(probe_attached(p)), "programs", programs_json(p));
        if (!doc)
                return -ENOMEM;
        r = json_dump_file(doc, tmp, JSON_COMPACT);
        json_decref(doc);
        if (r < 0)
                return -EIO;
        if (rename(tmp, path) < 0)
                return -errno;
        return 0;
}

static int collect_oom(const struct probe_oom_event *ev, void *userdata)
{
        static const char *const how[] = {"task", "signal", "current", "killer"};
        struct oom_list *list = userdata;

        for (size_t i = 0; i < list->n; i++) {
                if (list->ids[i] != ev->cgroup_id)
                        continue;
                if (json_array_size(list->by_cgroup[i]) >= MAX_OOM_EVENTS)
                        break;
                json_array_append_new(
                    list->by_cgroup[i],
                    json_pack("{s:I, s:s, s:s, s:I}", "pid", (json_int_t)ev->pid, "comm", ev->comm,
                              "attribution",
                              (unsigned)ev->attribution < 4 ? how[ev->attribution] : "?", "t_ns",
                              (json_int_t)ev->t_ns));
                break;
        }
        return 0;
}

static json_t *hist_json(const uint64_t hist[PROBE_HIST_SLOTS])
{
        json_t *a = json_array();

        for (size_t i = 0; i < PROBE_HIST_SLOTS; i++)
                json_array_append_new(a, json_integer((json_int_t)hist[i]));
        return a;
}

#define SET_U64(obj, u, field)                                                                     \
        json_object_set_new(obj, #field, json_integer((json_int_t)(u)->field))

static json_t *usage_json(const struct probe_usage *u)
{
        json_t *o = json_object();

        SET_U64(o, u, oncpu_ns);
        SET_U64(o, u, runq_wait_ns);
        SET_U64(o, u, runq_count);
        json_object_set_new(o, "runq_hist", hist_json(u->runq_hist));
        SET_U64(o, u, wakeups);
        SET_U64(o, u, runq_preemptions);
        SET_U64(o, u, runq_unseen);
        json_object_set_new(o, "runq_p50_us",
                            json_integer((json_int_t)probe_hist_percentile_us(u->runq_hist, 50)));
        json_object_set_new(o, "runq_p99_us",
                            json_integer((json_int_t)probe_hist_percentile_us(u->runq_hist, 99)));
        SET_U64(o, u, oom_kills);
        SET_U64(o, u, oom_events_lost);
        SET_U64(o, u, reclaim_ns);
        SET_U64(o, u, reclaim_count);
        SET_U64(o, u, reclaim_pages);
        SET_U64(o, u, read_bytes);
        SET_U64(o, u, write_bytes);
        SET_U64(o, u, read_ops);
        SET_U64(o, u, write_ops);
        json_object_set_new(o, "disk_lat_hist", hist_json(u->disk_lat_hist));
        SET_U64(o, u, disk_requests_lost);
        json_object_set_new(
            o, "disk_p99_us",
            json_integer((json_int_t)probe_hist_percentile_us(u->disk_lat_hist, 99)));
        return o;
}

/* The child: into the first cgroup unless born there, then exec. Only async-signal-safe
 * calls. */
static void run_child(const char *cgroup_dir, bool born_there, char **command, const sigset_t *mask)
{
        char path[4096];
        int fd;

        sigprocmask(SIG_SETMASK, mask, NULL);
        if (born_there)
                goto exec;
        if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup_dir) >= sizeof(path))
                _exit(127);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0\n", 2) != 2) {
                dprintf(STDERR_FILENO, PROG ": error: cannot join %s: %s\n", cgroup_dir,
                        strerror(errno));
                _exit(127);
        }
        close(fd);
exec:
        execvp(command[0], command);
        dprintf(STDERR_FILENO, PROG ": error: cannot run %s: %s\n", command[0], strerror(errno));
        _exit(127);
}

/* What --snapshot-at-stop read while the command was stopped. */
struct snapshot {
        bool taken;
        int error; /* of the first probe_read that failed, or 0 */
        struct probe_usage usage[MAX_DIRS];
        unsigned long long oncpu_ns, run_delay_ns, pcount, tasks;
};

/*
 * Calls fn on /proc/PID/task/TID/NAME of each thread of pid, opened, until fn returns true;
 * returns what the last call returned (false when there was none).
 */
static bool each_thread_file(pid_t pid, const char *name, bool (*fn)(FILE *, void *), void *arg)
{
        char path[64], file[160];
        bool stop = false;
        struct dirent *de;
        DIR *d;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        d = opendir(path);
        if (!d)
                return false;
        while (!stop && (de = readdir(d))) {
                FILE *f;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(file, sizeof(file), "%s/%s/%s", path, de->d_name, name);
                f = fopen(file, "re");
                if (!f)
                        continue;
                stop = fn(f, arg);
                fclose(f);
        }
        closedir(d);
        return stop;
}

static bool add_schedstat(FILE *f, void *arg)
{
        struct snapshot *s = arg;
        unsigned long long v[3];

        if (fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]) == 3) {
                s->oncpu_ns += v[0];
                s->run_delay_ns += v[1];
                s->pcount += v[2];
                s->tasks++;
        }
        return false;
}

/* The sums of the schedstat of every thread of pid (all stopped: the values hold still). */
static void read_schedstat(pid_t pid, struct snapshot *s)
{
        each_thread_file(pid, "schedstat", add_schedstat, s);
}

/* The probe set reading cgroup i: one registration per cgroup with --node, else one set. */
static struct probe *probes[MAX_DIRS];
static size_t nprobes;

static struct probe *probe_of(size_t i)
{
        return nprobes > 1 ? probes[i] : probes[0];
}

static void close_probes(void)
{
        for (size_t i = 0; i < nprobes; i++)
                probe_close(probes[i]);
        nprobes = 0;
}

/*
 * Is any thread of pid still on a CPU? waitpid reports a group stop when the last thread has
 * stopped, which that thread does before it switches out: the cpu probe adds a thread's last
 * slice at that switch-out, so a snapshot taken at once can miss it (the vm suite saw 412
 * waits for the scheduler's 413 under load). /proc/TID/syscall waits for the thread to be
 * off its CPU (wait_task_inactive) and says "running" while it is not.
 */
static bool says_running(FILE *f, void *arg)
{
        char line[16];

        (void)arg;
        return fgets(line, sizeof(line), f) && strncmp(line, "running", 7) == 0;
}

static bool any_thread_running(pid_t pid)
{
        return each_thread_file(pid, "syscall", says_running, NULL);
}

static void take_snapshot(const uint64_t *ids, size_t n, pid_t child, struct snapshot *s)
{
        /* every thread's last switch-out seen first, for at most about 5 s */
        for (int i = 0; i < 5000 && any_thread_running(child); i++)
                nanosleep(&(struct timespec){.tv_nsec = 1000 * 1000}, NULL);
        for (size_t i = 0; i < n; i++) {
                int r = probe_read(probe_of(i), ids[i], &s->usage[i]);

                if (r < 0 && !s->error)
                        s->error = r;
        }
        read_schedstat(child, s);
        s->taken = true;
}

/* Run the command to its end; *ret_status is its wait status. */
static int run_command(const struct options *o, const uint64_t *ids, struct snapshot *snap,
                       const sigset_t *old_mask, int *ret_status)
{
        struct clone_args args = {.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD};
        bool born_there = false;
        siginfo_t info;
        pid_t child, r;
        int status, dir;

        /*
         * Born in the cgroup (clone3 CLONE_INTO_CGROUP, Linux 5.7+), so that the probes see the
         * child's whole life there, its first wakeup included; else fork and join.
         */
        dir = open(o->dirs[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        child = -1;
        if (dir >= 0) {
                args.cgroup = (__u64)dir;
                child = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
                born_there = child >= 0;
                close(dir);
        }
        if (child < 0)
                child = fork();
        if (child < 0)
                return -errno;
        if (child == 0)
                run_child(o->dirs[0], born_there, o->command, old_mask);
        for (;;) {
                sigset_t wait_set;

                sigemptyset(&wait_set);
                sigaddset(&wait_set, SIGCHLD);
                sigaddset(&wait_set, SIGINT);
                sigaddset(&wait_set, SIGTERM);
                r = waitpid(child, &status, WNOHANG | (o->snapshot_at_stop ? WUNTRACED : 0));
                if (r == child && WIFSTOPPED(status)) {
                        if (!snap->taken)
                                take_snapshot(ids, o->ndirs, child, snap);
                        kill(child, SIGCONT);
                        continue;
                }
                if (r == child)
                        break;
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (sigwaitinfo(&wait_set, &info) < 0)
                        continue;
                if (info.si_signo == SIGINT || info.si_signo == SIGTERM)
                        kill(child, info.si_signo);
        }
        *ret_status = status;
        return 0;
}

static int list_node(const char *root)
{
        struct probe_node_entry entries[PROBE_NODE_MAX];
        struct util_error perr = {0};
        int n = probe_node_list(root, entries, PROBE_NODE_MAX, &perr);

        if (n < 0) {
                fprintf(stderr, PROG ": error: %s\n", perr.text);
                return 1;
        }
        for (int i = 0; i < n && i < PROBE_NODE_MAX; i++)
                printf("{\"cgroup_id\":%llu,\"slot\":%u,\"owner_pid\":%u,\"owner_alive\":%s}\n",
                       (unsigned long long)entries[i].cgroup_id, (unsigned)entries[i].slot,
                       (unsigned)entries[i].owner_pid, entries[i].owner_alive ? "true" : "false");
        return 0;
}

static void wait_seconds(double seconds)
{
        sigset_t wait_set;
        struct timespec ts;
        double end = now_s() + seconds;

        sigemptyset(&wait_set);
        sigaddset(&wait_set, SIGINT);
        sigaddset(&wait_set, SIGTERM);
        for (;;) {
                double left = seconds < 0 ? 3600 : end - now_s();

                if (left <= 0)
                        return;
                ts.tv_sec = (time_t)left;
                ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
                if (sigtimedwait(&wait_set, NULL, &ts) > 0)
                        return;
        }
}

/* --node with PROBE_NODE_MAX leaves holds a few fds per registration */
static void raise_nofile(void)
{
        struct rlimit nofile;

        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
                nofile.rlim_cur = nofile.rlim_max;
                setrlimit(RLIMIT_NOFILE, &nofile);
        }
}

/* One set for all the directories, or one node registration each. Returns 0 or an exit code. */
static int open_probes(const struct options *o, const uint64_t *ids)
{
        struct util_error perr = {0};

        for (size_t i = 0; i < (o->node ? o->ndirs : 1); i++) {
                struct probe *p = o->node ? probe_open_node(o->node, ids[i], &perr)
                                          : probe_open(ids, o->ndirs, o->kinds, &perr);

                if (!p) {
                        fprintf(stderr, PROG ": error: cannot attach the probes: %s\n", perr.text);
                        close_probes();
                        return strncmp(perr.text, "built without BPF", 17) == 0 ? EXIT_NO_BPF : 1;
                }
                probes[nprobes++] = p;
        }
        return 0;
}

/*
 * Run the command (its exit in *ret_command) or wait --seconds. Returns 0, 1 when the
 * command could not run, and sets *exit_code when --snapshot-at-stop saw no stop.
 */
static int run_or_wait(const struct options *o, const uint64_t *ids, struct snapshot *snap,
                       const sigset_t *old_mask, json_t **ret_command, int *exit_code)
{
        int r, status = 0;

        if (!o->command) {
                wait_seconds(o->seconds);
                return 0;
        }
        r = run_command(o, ids, snap, old_mask, &status);
        if (r < 0) {
                fprintf(stderr, PROG ": error: cannot run %s: %s\n", o->command[0], strerror(-r));
                return 1;
        }
        if (WIFEXITED(status))
                *ret_command =
                    json_pack("{s:s, s:i}", "argv0", o->command[0], "exit", WEXITSTATUS(status));
        else
                *ret_command =
                    json_pack("{s:s, s:i}", "argv0", o->command[0], "signal", WTERMSIG(status));
        if (o->snapshot_at_stop && !snap->taken) {
                fprintf(stderr, PROG ": error: %s never stopped (--snapshot-at-stop)\n",
                        o->command[0]);
                *exit_code = 1;
        }
        return 0;
}

/* What every cgroup's line shares: the kinds, the OOM events, the programs, the command. */
struct shared {
        unsigned attached;
        json_t *missing, *detail, *programs, *command;
        struct oom_list ooms;
        double start;
};

static void shared_collect(struct shared *sh, struct probe *p, const uint64_t *ids, size_t n)
{
        memset(&sh->ooms, 0, sizeof(sh->ooms));
        sh->ooms.ids = ids;
        sh->ooms.n = n;
        for (size_t i = 0; i < n; i++)
                sh->ooms.by_cgroup[i] = json_array();
        if (sh->attached & PROBE_MEMORY)
                probe_consume_oom(p, collect_oom, &sh->ooms);
        sh->missing = json_object();
        sh->detail = json_object();
        for (unsigned k = PROBE_CPU; k <= PROBE_DISK; k <<= 1) {
                const char *name = probe_kind_name((enum probe_kind)k);

                if (sh->attached & k)
                        json_object_set_new(sh->detail, name,
                                            json_string(probe_kind_detail(p, (enum probe_kind)k)));
                else
                        json_object_set_new(
                            sh->missing, name,
                            json_string(probe_missing_reason(p, (enum probe_kind)k)));
        }
        sh->programs = programs_json(p);
}

static void shared_free(struct shared *sh, size_t n)
{
        for (size_t i = 0; i < n; i++)
                json_decref(sh->ooms.by_cgroup[i]);
        json_decref(sh->missing);
        json_decref(sh->detail);
        json_decref(sh->programs);
        json_decref(sh->command);
}

/* The line of cgroup i. Returns 0, or 1 when its probes could not be read. */
static int print_cgroup(const struct options *o, size_t i, uint64_t id, const struct shared *sh,
                        const struct snapshot *snap, struct probe *p)
{
        struct probe_usage u;
        json_t *obj, *usage;
        char *text;
        int r;

        if (snap->taken) {
                u = snap->usage[i];
                r = snap->error;
        } else {
                r = probe_read(probe_of(i), id, &u);
        }
        if (r < 0) {
                fprintf(stderr, PROG ": error: reading the probes of %s: %s\n", o->dirs[i],
                        strerror(-r));
                return 1;
        }
        obj = json_pack("{s:s, s:I, s:o, s:O, s:O, s:f, s:b}", "cgroup", o->dirs[i], "cgroup_id",
                        (json_int_t)id, "attached", kinds_array(sh->attached), "missing",
                        sh->missing, "detail", sh->detail, "seconds", now_s() - sh->start, "node",
                        probe_is_node(p));
        usage = usage_json(&u);
        json_object_update(obj, usage);
        json_decref(usage);
        json_object_set(obj, "oom_events", sh->ooms.by_cgroup[i]);
        json_object_set(obj, "programs", sh->programs);
        if (snap->taken)
                json_object_set_new(
                    obj, "schedstat",
                    json_pack("{s:I, s:I, s:I, s:I}", "oncpu_ns", (json_int_t)snap->oncpu_ns,
                              "run_delay_ns", (json_int_t)snap->run_delay_ns, "pcount",
                              (json_int_t)snap->pcount, "tasks", (json_int_t)snap->tasks));
        if (sh->command)
                json_object_set(obj, "command", sh->command);
        text = json_dumps(obj, JSON_COMPACT);
        if (text)
                printf("%s\n", text);
        free(text);
        json_decref(obj);
        return 0;
}

int main(int argc, char **argv)
{
        struct options o = {0};
        static uint64_t ids[MAX_DIRS];
        static struct snapshot snap;
        struct shared sh = {0};
        sigset_t mask, old_mask;
        int r, exit_code = 0;
        struct probe *p;

        probe_set_test_hooks(true); /* a test tool: docs/probes.md */
        raise_nofile();
        r = parse_args(argc, argv, &o);
        if (r < 0) {
                usage(stderr);
                return 2;
        }
        if (o.node_list)
                return list_node(o.node_list);
        for (size_t i = 0; i < o.ndirs; i++) {
                r = probe_cgroup_id(o.dirs[i], &ids[i]);
                if (r < 0) {
                        fprintf(stderr, PROG ": error: %s is not a cgroup v2 directory: %s\n",
                                o.dirs[i], strerror(-r));
                        return 1;
                }
        }

        /* signals are taken synchronously from here on; the child gets the old mask back */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, &old_mask);

        r = open_probes(&o, ids);
        if (r != 0)
                return r;
        p = probes[0];
        sh.attached = probe_attached(p);
        if (o.ready) {
                r = write_ready(o.ready, p);
                if (r < 0) {
                        fprintf(stderr, PROG ": error: cannot write %s: %s\n", o.ready,
                                strerror(-r));
                        close_probes();
                        return 1;
                }
        }

        sh.start = now_s();
        if (run_or_wait(&o, ids, &snap, &old_mask, &sh.command, &exit_code) != 0) {
                close_probes();
                return 1;
        }
        /* a task's last slice is charged at its final switch, which may trail its exit */
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);

        shared_collect(&sh, p, ids, o.ndirs);
        for (size_t i = 0; i < o.ndirs; i++)
                if (print_cgroup(&o, i, ids[i], &sh, &snap, p) != 0)
                        exit_code = 1;
        fflush(stdout);
        shared_free(&sh, o.ndirs);
        close_probes();
        return exit_code;
}
