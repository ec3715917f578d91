/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sparkshim report: read report files (JSON lines) and summarise the final reports per
 * executor, with a total; --json re-emits them. sparkshim probe: watch an existing cgroup
 * or process with the run's collectors and print sample lines.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "monitor.h"
#include "util.h"

/* doc.a.b(.c) as a number, NAN when absent or not a number */
static double number(json_t *doc, const char *a, const char *b, const char *c)
{
        json_t *v = json_object_get(json_object_get(doc, a), b);

        if (c)
                v = json_object_get(v, c);
        return json_is_number(v) ? json_number_value(v) : NAN;
}

static double member(json_t *obj, const char *key)
{
        json_t *v = json_object_get(obj, key);

        return json_is_number(v) ? json_number_value(v) : NAN;
}

static void human_bytes(double v, char *buf, size_t size)
{
        if (!isfinite(v))
                snprintf(buf, size, "-");
        else if (v >= 1024.0 * 1024 * 1024)
                snprintf(buf, size, "%.2fG", v / (1024.0 * 1024 * 1024));
        else if (v > 0 && v < 1024.0 * 1024)
                snprintf(buf, size, "%.0fK", v / 1024.0);
        else
                snprintf(buf, size, "%.0fM", v / (1024.0 * 1024));
}

static void fixed(double v, int decimals, char *buf, size_t size)
{
        if (isfinite(v))
                snprintf(buf, size, "%.*f", decimals, v);
        else
                snprintf(buf, size, "-");
}

struct totals {
        double cpu_seconds, cpu_capacity, peak, request;
        unsigned n, oom;
        json_int_t spills;
        bool have_spills;
};

static void print_header(void)
{
        printf("%-44s %8s %6s %9s %5s %8s %8s %5s %9s %4s %4s %-8s %s\n", "EXECUTOR", "WALL_S", "CPU_RQ",
               "CPU_USED_S", "CPU_U", "MEM_RQ", "MEM_PEAK", "MEM_U", "OBJECTIVE", "OOM", "EXIT",
               "ENFORCED", "SPILLS");
}

/* One line per operator type the JVM agent made spill, below the executor's row. */
static void print_spills(json_t *doc)
{
        json_t *operators = json_object_get(json_object_get(doc, "agent"), "operators"), *op;
        size_t i;

        json_array_foreach (operators, i, op) {
                json_int_t forced = json_integer_value(json_object_get(op, "forced_spills"));
                json_int_t failed = json_integer_value(json_object_get(op, "failed_spills"));
                json_t *by = json_object_get(op, "forced_by"), *count;
                char released[16], modes[128] = "", spill[16], reaction[16];
                const char *mode;
                size_t used = 0;

                if (forced == 0 && failed == 0)
                        continue;
                json_object_foreach (by, mode, count) {
                        if (json_integer_value(count) > 0 && used < sizeof(modes))
                                used += (size_t)snprintf(modes + used, sizeof(modes) - used, "%s%s %" JSON_INTEGER_FORMAT,
                                                         used ? ", " : "", mode, json_integer_value(count));
                }
                human_bytes(member(op, "released_bytes"), released, sizeof(released));
                fixed(member(op, "spill_seconds"), 3, spill, sizeof(spill));
                fixed(member(op, "reaction_max_seconds") * 1000.0, 1, reaction, sizeof(reaction));
                printf("  spills %s: %" JSON_INTEGER_FORMAT " forced%s%s%s, %" JSON_INTEGER_FORMAT
                       " failed, %s released, %s s spilling, reaction max %s ms\n",
                       json_string_value(json_object_get(op, "operator")), forced, used ? " (" : "", modes,
                       used ? ")" : "", failed, released, spill, reaction);
        }
}

static void print_row(json_t *doc, struct totals *t)
{
        json_t *id = json_object_get(doc, "identity");
        const char *app = json_string_value(json_object_get(id, "app_id"));
        const char *exec = json_string_value(json_object_get(id, "executor_id"));
        double wall = number(doc, "identity", "wall_seconds", NULL);
        double req_m = number(doc, "plan", "cpu", "request_millicores");
        double cpu = number(doc, "usage", "cpu", "seconds");
        double peak = number(doc, "usage", "memory", "peak_bytes");
        double req = number(doc, "plan", "memory", "request_bytes");
        double oom = number(doc, "usage", "memory", "oom_kills");
        double status = number(doc, "exit", "status", NULL);
        json_t *spills = json_object_get(json_object_get(doc, "spills"), "forced_spills");
        char forced[24] = "-";
        char name[96], c1[16], c2[16], c3[16], m1[16], m2[16], m3[16], obj[16], w[16], ex[16];

        snprintf(name, sizeof(name), "%s%s%s", app && *app ? app : "-", exec && *exec ? "/" : "",
                 exec ? exec : "");
        fixed(wall, 1, w, sizeof(w));
        fixed(req_m / 1000.0, 2, c1, sizeof(c1));
        fixed(cpu, 1, c2, sizeof(c2));
        fixed(number(doc, "utilization", "cpu", NULL), 2, c3, sizeof(c3));
        human_bytes(req, m1, sizeof(m1));
        human_bytes(peak, m2, sizeof(m2));
        fixed(number(doc, "utilization", "memory", NULL), 2, m3, sizeof(m3));
        fixed(number(doc, "utilization", "objective", NULL), 2, obj, sizeof(obj));
        fixed(status, 0, ex, sizeof(ex));
        if (json_is_integer(spills)) {
                snprintf(forced, sizeof(forced), "%" JSON_INTEGER_FORMAT, json_integer_value(spills));
                t->spills += json_integer_value(spills);
                t->have_spills = true;
        }
        printf("%-44s %8s %6s %9s %5s %8s %8s %5s %9s %4s %4s %-8s %s\n", name, w, c1, c2, c3, m1, m2, m3,
               obj, isfinite(oom) ? (oom > 0 ? "yes" : "no") : "-", ex,
               json_is_true(json_object_get(json_object_get(doc, "enforcement"), "enforced")) ? "yes"
                                                                                              : "no",
               forced);
        print_spills(doc);
        if (isfinite(cpu) && isfinite(req_m) && isfinite(wall)) {
                t->cpu_seconds += cpu;
                t->cpu_capacity += req_m / 1000.0 * wall;
        }
        if (isfinite(peak) && isfinite(req)) {
                t->peak += peak;
                t->request += req;
        }
        t->oom += isfinite(oom) && oom > 0;
        t->n++;
}

static void print_total(const struct totals *t)
{
        double cu = t->cpu_capacity > 0 ? t->cpu_seconds / t->cpu_capacity : NAN;
        double mu = t->request > 0 ? t->peak / t->request : NAN;
        char name[64], c2[16], c3[16], m2[16], m3[16], obj[16], oom[16], spills[24] = "-";

        snprintf(name, sizeof(name), "TOTAL (%u executors)", t->n);
        fixed(t->cpu_seconds, 1, c2, sizeof(c2));
        fixed(cu, 2, c3, sizeof(c3));
        human_bytes(t->peak, m2, sizeof(m2));
        fixed(mu, 2, m3, sizeof(m3));
        fixed(cu > 0 && mu > 0 ? 1.0 / (cu * mu) : NAN, 2, obj, sizeof(obj));
        snprintf(oom, sizeof(oom), "%u", t->oom);
        if (t->have_spills)
                snprintf(spills, sizeof(spills), "%" JSON_INTEGER_FORMAT, t->spills);
        printf("%-44s %8s %6s %9s %5s %8s %8s %5s %9s %4s %4s %-8s %s\n", name, "", "", c2, c3, "", m2, m3, obj,
               oom, "", "", spills);
}

/* Calls fn for every valid report line of path; returns the number taken or -errno. */
static int each_report(const char *path, bool finals_only, void (*fn)(json_t *, void *), void *data)
{
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        unsigned lineno = 0;
        int taken = 0;

        f = strcmp(path, "-") == 0 ? fdopen(dup(STDIN_FILENO), "r") : fopen(path, "re");
        if (!f)
                return -errno;
        while (getline(&line, &size, f) > 0) {
                struct shim_error err = { 0 };
                json_error_t jerr;
                json_t *doc;

                lineno++;
                if (line[strspn(line, " \t\r\n")] == '\0')
                        continue;
                doc = json_loads(line, 0, &jerr);
                if (!doc) {
                        log_warn("%s:%u: not JSON: %s; skipped", path, lineno, jerr.text);
                        continue;
                }
                if (shim_report_validate(doc, &err) < 0) {
                        log_warn("%s:%u: not a %s report: %s; skipped", path, lineno, REPORT_SCHEMA, err.text);
                } else if (!finals_only ||
                           strcmp(json_string_value(json_object_get(doc, "kind")), "final") == 0) {
                        fn(doc, data);
                        taken++;
                }
                json_decref(doc);
        }
        return taken;
}

static void emit_json(json_t *doc, void *data)
{
        char *text = json_dumps(doc, JSON_COMPACT);

        if (text) {
                puts(text);
                free(text);
        }
}

static void emit_row(json_t *doc, void *data)
{
        print_row(doc, data);
}

int shim_cmd_report(int argc, char **argv, bool as_json, bool all)
{
        struct totals t = { 0 };
        int total = 0;

        if (argc == 0) {
                log_error("report: no file given; usage: sparkshim report [--json] [--all] FILE...");
                return SHIM_EXIT_USAGE;
        }
        if (!as_json)
                print_header();
        for (int i = 0; i < argc; i++) {
                int r = each_report(argv[i], !all, as_json ? emit_json : emit_row, &t);
                if (r < 0) {
                        log_error("report: %s: cannot read: %s", argv[i], strerror(-r));
                        return SHIM_EXIT_USAGE;
                }
                total += r;
        }
        if (total == 0) {
                log_error("report: no %s%s reports in %s%s", all ? "" : "final ", REPORT_SCHEMA, argv[0],
                          argc > 1 ? " and the other files" : "");
                return 1;
        }
        if (!as_json)
                print_total(&t);
        return fflush(stdout) == 0 ? 0 : SHIM_EXIT_INTERNAL;
}

/* ---------------------------------------------------------------- probe */

/* The cgroup v2 directory of a process: <mount><path from /proc/PID/cgroup "0::">. */
static int pid_cgroup(const char *cgroup_root, pid_t pid, char *buf, size_t size)
{
        char path[64], content[4096], mount[256];
        _cleanup_close_ int fd = -1;
        struct shim_cgroup_host host;
        char *line;
        int r;

        snprintf(path, sizeof(path), "/proc/%d", (int)pid);
        fd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = (int)util_read_at(fd, "cgroup", content, sizeof(content));
        if (r < 0)
                return r;
        line = strstr(content, "0::");
        if (line != content && (!line || line[-1] != '\n'))
                return -ENOENT;
        line += 3;
        line[strcspn(line, "\n")] = '\0';
        r = shim_cgroup_detect(cgroup_root, &host);
        if (r < 0 || !host.mount[0])
                return r < 0 ? r : -ENOENT;
        snprintf(mount, sizeof(mount), "%s", host.mount);
        snprintf(buf, size, "%s%s", mount, strcmp(line, "/") == 0 ? "" : line);
        return 0;
}

int shim_cmd_probe(const char *cgroup, pid_t pid, const char *cgroup_root, unsigned interval,
                   unsigned count, bool use_bpf)
{
        char path[4096];
        _cleanup_close_ int fd = -1;
        struct shim_monitor *m = NULL;
        struct shim_error err = { 0 };
        sigset_t set;
        struct statfs fs;
        int r;

        if (cgroup)
                snprintf(path, sizeof(path), "%s", cgroup);
        else if ((r = pid_cgroup(cgroup_root, pid, path, sizeof(path))) < 0) {
                log_error("probe: --pid %d: cannot find its cgroup v2: %s", (int)pid, strerror(-r));
                return SHIM_EXIT_USAGE;
        }
        fd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstatfs(fd, &fs) < 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
                log_error("probe: %s: not a cgroup v2 directory%s%s", path, fd < 0 ? ": " : "",
                          fd < 0 ? strerror(errno) : "");
                return SHIM_EXIT_USAGE;
        }
        r = shim_monitor_open(&(struct shim_monitor_config){ .to_stdout = true,
                                                             .interval_seconds = interval,
                                                             .use_bpf = use_bpf,
                                                             .use_taskstats = true },
                              &m, &err);
        if (r < 0) {
                log_error("%s", err.text);
                return SHIM_EXIT_REPORT;
        }
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigprocmask(SIG_BLOCK, &set, NULL);
        shim_monitor_start(m, &(struct shim_monitor_identity){ .command = "", .mode = "probe" }, NULL,
                           false, "sparkshim probe watches, it does not enforce", fd, path);
        if (pid > 0)
                shim_monitor_pid(m, pid);
        for (unsigned lines = 0; count == 0 || lines < count;) {
                struct timespec second = { .tv_sec = 1 };
                int sig = sigtimedwait(&set, NULL, &second);
                struct stat st;

                if (sig == SIGINT || sig == SIGTERM)
                        break;
                /* cgroup.procs exists in every cgroup, the root included, until rmdir */
                if (fstatat(fd, "cgroup.procs", &st, 0) < 0)
                        break;
                if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH)
                        break;
                shim_monitor_tick(m);
                lines = shim_monitor_lines(m);
        }
        r = shim_monitor_finish(m, -1, NULL, &err);
        shim_monitor_free(m);
        if (r < 0) {
                log_error("%s", err.text);
                return SHIM_EXIT_REPORT;
        }
        return 0;
}
