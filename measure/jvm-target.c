/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executor's JVM among the processes of its cgroup (jvm-target.h). Only the monitor
 * thread uses it; the supervisor gets a pidfd of its own to signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "jvm-target.h"
#include "shim-common.h"
#include "util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

struct jvm_target {
        int proc_fd; /* /proc */
        int pidfd;   /* the JVM held; -1: none */
        pid_t pid;
        int child_pidfd; /* the shim's child; -1: not known yet */
        pid_t child;
        char cgroup[4096]; /* the child's "0::PATH" line of /proc/PID/cgroup; "": unknown */
        uid_t child_uid;   /* the child's real uid, read at the scan that found the JVM */
        enum policy_decommission command_line;
        char *cmdline; /* JVM_TARGET_CMDLINE_MAX + 1 bytes, reused */
        char **argv;   /* JVM_TARGET_ARGS_MAX + 1 pointers, reused */
};

struct jvm_target *jvm_target_new(void)
{
        struct jvm_target *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        t->pidfd = t->child_pidfd = -1;
        t->cmdline = malloc(JVM_TARGET_CMDLINE_MAX + 1);
        t->argv = calloc(JVM_TARGET_ARGS_MAX + 1, sizeof(char *));
        t->proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (!t->cmdline || !t->argv || t->proc_fd < 0) {
                int e = t->proc_fd < 0 && t->cmdline && t->argv ? errno : ENOMEM;
                jvm_target_free(t);
                errno = e;
                return NULL;
        }
        return t;
}

void jvm_target_free(struct jvm_target *t)
{
        if (!t)
                return;
        util_closep(&t->pidfd);
        util_closep(&t->child_pidfd);
        util_closep(&t->proc_fd);
        free(t->cmdline);
        free(t->argv);
        free(t);
}

pid_t jvm_target_pid(const struct jvm_target *t)
{
        return t->pidfd >= 0 ? t->pid : 0;
}

enum policy_decommission jvm_target_command_line(const struct jvm_target *t)
{
        return t->pidfd >= 0 ? t->command_line : POLICY_DECOMMISSION_UNSET;
}

int jvm_target_dup_pidfd(const struct jvm_target *t)
{
        int fd;

        if (t->pidfd < 0)
                return -ESRCH;
        fd = fcntl(t->pidfd, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? -errno : fd;
}

int jvm_pidfd_open(pid_t pid)
{
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);

        return fd < 0 ? -errno : fd;
}

int jvm_pidfd_send_signal(int pidfd, int sig)
{
        return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

/* ---------------------------------------------------------------- pure parts */

/* "Key:\t<4 decimal ids>\n" at the start of a line; 1 when found and valid, -EINVAL when malformed.
 */
static int ids_line(const char *line, const char *end, const char *key, unsigned long v[4])
{
        size_t klen = strlen(key);
        const char *p = line + klen;

        if ((size_t)(end - line) < klen || memcmp(line, key, klen) != 0)
                return 0;
        for (int i = 0; i < 4; i++) {
                unsigned long x = 0;
                const char *digits;

                if (p >= end || *p != '\t')
                        return -EINVAL;
                digits = ++p;
                while (p < end && *p >= '0' && *p <= '9') {
                        if (x > (0xffffffffUL - (unsigned long)(*p - '0')) / 10)
                                return -EINVAL;
                        x = x * 10 + (unsigned long)(*p++ - '0');
                }
                if (p == digits)
                        return -EINVAL;
                v[i] = x;
        }
        return p == end ? 1 : -EINVAL;
}

int jvm_status_ids(const char *text, size_t len, uid_t uid[4], gid_t gid[4])
{
        const char *p = text, *end = text + len;
        unsigned long u[4], g[4];
        int nu = 0, ng = 0;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
                int r;

                if ((r = ids_line(p, eol, "Uid:", u)) < 0 || (r > 0 && ++nu > 1))
                        return -EINVAL;
                if ((r = ids_line(p, eol, "Gid:", g)) < 0 || (r > 0 && ++ng > 1))
                        return -EINVAL;
                p = nl ? nl + 1 : end;
        }
        if (nu != 1 || ng != 1)
                return -EINVAL;
        for (int i = 0; i < 4; i++) {
                uid[i] = (uid_t)u[i];
                gid[i] = (gid_t)g[i];
        }
        return 0;
}

bool jvm_target_ids_ok(const uid_t uid[4], const gid_t gid[4], uid_t child_uid)
{
        for (int i = 1; i < 4; i++)
                if (uid[i] != uid[0] || gid[i] != gid[0])
                        return false;
        return child_uid == 0 || uid[0] == child_uid;
}

size_t jvm_cmdline_split(char *buf, size_t len, char **argv, size_t max)
{
        size_t n = 0, i = 0;

        if (max == 0)
                return 0;
        while (i < len && n + 1 < max) {
                char *nul = memchr(buf + i, '\0', len - i);

                if (!nul)
                        break; /* cut off: not an argument */
                argv[n++] = buf + i;
                i = (size_t)(nul - buf) + 1;
        }
        argv[n] = NULL;
        return n;
}

/* ---------------------------------------------------------------- /proc */

static bool alive(int pidfd)
{
        return jvm_pidfd_send_signal(pidfd, 0) == 0;
}

int jvm_process_uid(int pidfd, pid_t pid, uid_t *ret)
{
        _cleanup_free_ char *status = NULL;
        char path[64];
        uid_t uid[4];
        gid_t gid[4];
        ssize_t len;
        int r;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        len = util_read_file_at(AT_FDCWD, path, JVM_TARGET_STATUS_MAX, &status);
        if (len < 0)
                return alive(pidfd) ? (int)len : -ESRCH;
        r = jvm_status_ids(status, (size_t)len, uid, gid);
        if (!alive(pidfd))
                return -ESRCH;
        if (r < 0)
                return r;
        *ret = uid[0];
        return 0;
}

/* /proc/PID/NAME into buf (util_read_at: no symlink followed, cut-off files refused) */
static ssize_t read_proc(const struct jvm_target *t, pid_t pid, const char *name, char *buf,
                         size_t size)
{
        char path[64];

        snprintf(path, sizeof(path), "%d/%s", (int)pid, name);
        return util_read_at(t->proc_fd, path, buf, size);
}

/* /proc/PID/NAME whole, up to max bytes (status grows with the supplementary groups) */
static ssize_t read_proc_whole(const struct jvm_target *t, pid_t pid, const char *name, size_t max,
                               char **ret)
{
        char path[64];

        snprintf(path, sizeof(path), "%d/%s", (int)pid, name);
        return util_read_file_at(t->proc_fd, path, max, ret);
}

/* The "0::PATH" line of /proc/PID/cgroup (the unified hierarchy), into buf. */
static int proc_cgroup(const struct jvm_target *t, pid_t pid, char *buf, size_t size)
{
        _cleanup_free_ char *text = NULL;
        ssize_t len = read_proc_whole(t, pid, "cgroup", 64 * 1024, &text);

        if (len < 0)
                return (int)len;
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strncmp(line, "0::", 3) == 0 && strlen(line) < size) {
                        snprintf(buf, size, "%s", line);
                        return 0;
                }
        }
        return -ENOENT;
}

static int proc_ids(const struct jvm_target *t, pid_t pid, uid_t uid[4], gid_t gid[4])
{
        _cleanup_free_ char *status = NULL;
        ssize_t len = read_proc_whole(t, pid, "status", JVM_TARGET_STATUS_MAX, &status);

        if (len < 0)
                return (int)len;
        return jvm_status_ids(status, (size_t)len, uid, gid);
}

/* The command line, up to JVM_TARGET_CMDLINE_MAX bytes (what lies beyond is not used). */
static size_t proc_argv(struct jvm_target *t, pid_t pid)
{
        _cleanup_close_ int fd = -1;
        char path[64];
        size_t len = 0;

        snprintf(path, sizeof(path), "%d/cmdline", (int)pid);
        fd = openat(t->proc_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return 0;
        while (len < JVM_TARGET_CMDLINE_MAX) {
                ssize_t n = read(fd, t->cmdline + len, JVM_TARGET_CMDLINE_MAX - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        return jvm_cmdline_split(t->cmdline, len, t->argv, JVM_TARGET_ARGS_MAX + 1);
}

int jvm_target_set_child(struct jvm_target *t, int child_pidfd, pid_t child)
{
        if (t->child_pidfd >= 0)
                close(t->child_pidfd);
        t->child_pidfd = child_pidfd;
        t->child = child;
        t->cgroup[0] = '\0';
        /* the child's cgroup, read while the pid is certainly the child's */
        if (proc_cgroup(t, child, t->cgroup, sizeof(t->cgroup)) < 0 || !alive(child_pidfd)) {
                t->cgroup[0] = '\0';
                return -ESRCH;
        }
        return 0;
}

/*
 * pid as the JVM: its comm is "java", it is the child (whose pidfd is held) or a process of
 * the child's cgroup, its credentials pass, it runs an executor, and all of it still holds
 * after the reads. Returns a pidfd, or -1.
 */
static int try_pid(struct jvm_target *t, pid_t pid, unsigned *candidates)
{
        _cleanup_close_ int fd = -1;
        char comm[32], cgroup[sizeof(t->cgroup)];
        uid_t uid[4];
        gid_t gid[4];
        size_t argc;

        if (read_proc(t, pid, "comm", comm, sizeof(comm)) < 0 || strcmp(comm, "java") != 0)
                return -1;
        if (*candidates >= JVM_TARGET_CANDIDATES_MAX)
                return -1;
        (*candidates)++;
        fd = pid == t->child ? fcntl(t->child_pidfd, F_DUPFD_CLOEXEC, 3) : jvm_pidfd_open(pid);
        if (fd < 0)
                return -1;
        if (proc_ids(t, pid, uid, gid) < 0 || !jvm_target_ids_ok(uid, gid, t->child_uid))
                return -1;
        argc = proc_argv(t, pid);
        if (argc == 0 || !policy_java_runs_executor((int)argc, t->argv, false))
                return -1;
        /*
         * A pid read from cgroup.procs may have been reused by the time its pidfd was opened:
         * its cgroup must be the child's, read after the pidfd was. And comm again: an exec
         * between the reads gives another program.
         */
        if (pid != t->child &&
            (proc_cgroup(t, pid, cgroup, sizeof(cgroup)) < 0 || strcmp(cgroup, t->cgroup) != 0))
                return -1;
        if (read_proc(t, pid, "comm", comm, sizeof(comm)) < 0 || strcmp(comm, "java") != 0 ||
            !alive(fd))
                return -1;
        {
                struct policy_decommission_conf conf;
                policy_decommission_from_command((int)argc, t->argv, &conf);
                t->command_line = conf.enabled;
        }
        {
                int held = fd;
                fd = -1;
                return held;
        }
}

static void drop(struct jvm_target *t)
{
        if (t->pidfd >= 0)
                close(t->pidfd);
        t->pidfd = -1;
        t->pid = 0;
}

static void hold(struct jvm_target *t, int fd, pid_t pid)
{
        drop(t);
        t->pidfd = fd;
        t->pid = pid;
        log_debug("rolling: the executor's JVM is pid %d", (int)pid);
}

/* Up to JVM_TARGET_SCAN_MAX pids of cgroup.procs (its first 64 KiB, whole lines only). */
static size_t read_procs(int cgroup_fd, pid_t *pids)
{
        _cleanup_close_ int fd =
            openat(cgroup_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        char buf[64 * 1024];
        size_t len = 0, n = 0;

        if (fd < 0)
                return 0;
        while (len < sizeof(buf) - 1) {
                ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                len += (size_t)r;
        }
        buf[len] = '\0';
        for (char *line = buf, *nl; (nl = strchr(line, '\n')) && n < JVM_TARGET_SCAN_MAX;
             line = nl + 1) {
                int pid;

                *nl = '\0';
                if (util_parse_int(line, &pid) == 0 && pid > 0)
                        pids[n++] = pid;
        }
        return n;
}

static void scan(struct jvm_target *t, int cgroup_fd)
{
        pid_t pids[JVM_TARGET_SCAN_MAX];
        unsigned candidates = 0;
        size_t n;
        int fd;

        uid_t uid[4];
        gid_t gid[4];

        /*
         * The child's real uid now (a root launch may have become the job's user, e.g.
         * through runuser), read while its pidfd says it is not reaped: after that its pid
         * may be another process's, and nothing is looked for.
         */
        if (t->child_pidfd < 0 || !t->cgroup[0] || proc_ids(t, t->child, uid, gid) < 0 ||
            !alive(t->child_pidfd))
                return;
        t->child_uid = uid[0];
        fd = try_pid(t, t->child, &candidates);
        if (fd >= 0) {
                hold(t, fd, t->child);
                return;
        }
        if (cgroup_fd < 0)
                return;
        n = read_procs(cgroup_fd, pids);
        for (size_t i = 0; i < n; i++) {
                if (pids[i] == t->child || (fd = try_pid(t, pids[i], &candidates)) < 0)
                        continue;
                hold(t, fd, pids[i]);
                return;
        }
}

/* The held JVM's SigCgt, read while it is alive and still java with the same ids. */
static enum rolling_sigpwr held_sigpwr(struct jvm_target *t)
{
        _cleanup_free_ char *status = NULL;
        ssize_t len = read_proc_whole(t, t->pid, "status", JVM_TARGET_STATUS_MAX, &status);
        char comm[32];
        uint64_t mask;
        uid_t uid[4];
        gid_t gid[4];
        enum rolling_sigpwr s;

        if (len < 0 || rolling_status_sigcgt(status, (size_t)len, &mask) < 0 ||
            jvm_status_ids(status, (size_t)len, uid, gid) < 0 ||
            !jvm_target_ids_ok(uid, gid, t->child_uid) ||
            read_proc(t, t->pid, "comm", comm, sizeof(comm)) < 0 || strcmp(comm, "java") != 0)
                return ROLLING_SIGPWR_UNKNOWN;
        s = rolling_sigpwr_from_mask(mask, SIGPWR);
        return alive(t->pidfd) ? s : ROLLING_SIGPWR_UNKNOWN;
}

enum rolling_sigpwr jvm_target_update(struct jvm_target *t, int cgroup_fd)
{
        enum rolling_sigpwr s;

        if (t->pidfd >= 0) {
                s = held_sigpwr(t);
                if (s != ROLLING_SIGPWR_UNKNOWN)
                        return s;
                log_debug("rolling: pid %d is no longer the executor's JVM", (int)t->pid);
                drop(t);
        }
        scan(t, cgroup_fd);
        return t->pidfd >= 0 ? held_sigpwr(t) : ROLLING_SIGPWR_UNKNOWN;
}
