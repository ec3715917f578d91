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

#include "measure.h"
#include "shim.h"
#include "util.h"

/* The exit status: 0, 1 when no report was found, 120 when a file could not be read whole. */
int shim_cmd_report(int argc, char **argv, bool as_json, bool all)
{
        struct shim_report_reader r;
        bool unreadable = false;

        if (argc == 0) {
                log_error(
                    "report: no file given; usage: sparkshim report [--json] [--all] FILE...");
                return SHIM_EXIT_USAGE;
        }
        shim_report_reader_init(&r, stdout, as_json, all);
        for (int i = 0; i < argc; i++) {
                struct util_error err = {0};
                _cleanup_close_ int fd = shim_report_open(argv[i], &err);

                if (fd < 0 || shim_report_reader_fd(&r, fd, argv[i], &err) < 0) {
                        log_error("report: %s", err.text);
                        if (err.error == ENOMEM)
                                return SHIM_EXIT_INTERNAL;
                        unreadable = true;
                }
        }
        if (r.totals.spills_saturated)
                log_warn("report: the total of forced spills passes %" PRId64
                         " (int64); the TOTAL row shows %" PRId64 "+",
                         INT64_MAX, INT64_MAX);
        if (r.taken == 0 && !unreadable) {
                log_error("report: no %s%s reports in %s%s", all ? "" : "final ", REPORT_SCHEMA,
                          argv[0], argc > 1 ? " and the other files" : "");
                return 1;
        }
        if (!as_json && r.taken > 0)
                shim_report_print_total(&r);
        if (fflush(stdout) != 0)
                return SHIM_EXIT_INTERNAL;
        return unreadable ? SHIM_EXIT_USAGE : 0;
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
        struct util_error err = {0};
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
        r = shim_monitor_open(&(struct shim_monitor_config){.to_stdout = true,
                                                            .interval_seconds = interval,
                                                            .use_bpf = use_bpf,
                                                            .use_taskstats = true},
                              &m, &err);
        if (r < 0) {
                log_error("%s", err.text);
                return SHIM_EXIT_REPORT;
        }
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigprocmask(SIG_BLOCK, &set, NULL);
        shim_monitor_start(m, &(struct shim_monitor_identity){.command = "", .mode = "probe"}, NULL,
                           false, "sparkshim probe watches, it does not enforce", fd, path);
        if (pid > 0)
                shim_monitor_pid(m, pid);
        for (unsigned lines = 0; count == 0 || lines < count;) {
                struct timespec second = {.tv_sec = 1};
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
