/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Start the executor and supervise it, tini-style: every asynchronous signal is blocked
 * and taken synchronously with sigtimedwait(); forwardable signals go to the child;
 * every zombie is reaped; the exit status is the child's, or 128+signal.
 */
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "shim.h"
#include "util.h"

static sigset_t original_mask;
/* what the caller gave for the signals the shim ignores itself */
static struct sigaction original_ttin, original_ttou;

/* Signals passed on to the executor. */
static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

/* Signals that start the grace period after which the cgroup is killed. */
static bool starts_grace(int sig)
{
        return sig == SIGTERM || sig == SIGINT;
}

static bool is_forwarded(int sig)
{
        for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
                if (forwarded[i] == sig)
                        return true;
        return false;
}

int shim_signals_block(void)
{
        static const int synchronous[] = {SIGFPE,  SIGILL,  SIGSEGV, SIGBUS,
                                          SIGABRT, SIGTRAP, SIGSYS};
        sigset_t all;

        sigfillset(&all);
        for (size_t i = 0; i < ELEMENTSOF(synchronous); i++)
                sigdelset(&all, synchronous[i]);
        if (sigprocmask(SIG_SETMASK, &all, &original_mask) < 0)
                return -errno;
        /* a shim in a terminal's background group must not be stopped by reads/writes */
        if (sigaction(SIGTTIN, &(struct sigaction){.sa_handler = SIG_IGN}, &original_ttin) < 0 ||
            sigaction(SIGTTOU, &(struct sigaction){.sa_handler = SIG_IGN}, &original_ttou) < 0)
                return -errno;
        return 0;
}

enum spawn_stage { STAGE_ATTACH = 1, STAGE_EXEC = 2 };

struct spawn_failure {
        int stage;
        int error;
};

static _Noreturn void child_fail(int fd, int stage, int error, int code)
{
        struct spawn_failure f = {.stage = stage, .error = error};
        ssize_t n = write(fd, &f, sizeof(f));

        (void)n;
        _exit(code);
}

/* In the child: runs between fork/clone3 and exec; only async-signal-safe calls. */
static _Noreturn void child_exec(const struct shim_supervise_opts *o, bool attach, int errfd,
                                 pid_t shim)
{
        /*
         * An executor must not outlive its supervisor: with nobody to enforce its grace,
         * report on it or remove its cgroup it would run on unseen. If the shim is killed,
         * the kernel kills the executor (and the next start sweeps the leaf; see
         * docs/security.md). The check after it covers a shim that died before the prctl.
         */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != shim)
                _exit(SHIM_EXIT_INTERNAL);
        /*
         * The shim installs no handlers (exec would reset them anyway) and ignores only TTIN
         * and TTOU: the executor gets the caller's dispositions and mask back, as if started
         * directly.
         */
        sigaction(SIGTTIN, &original_ttin, NULL);
        sigaction(SIGTTOU, &original_ttou, NULL);
        sigprocmask(SIG_SETMASK, &original_mask, NULL);
        if (o->signal_group)
                setpgid(0, 0);
        if (attach) {
                int r = util_write_at(o->cgroup_fd, "cgroup.procs", "0");
                if (r < 0)
                        child_fail(errfd, STAGE_ATTACH, -r, SHIM_EXIT_CGROUP);
        }
        execvp(o->argv[0], o->argv);
        child_fail(errfd, STAGE_EXEC, errno,
                   errno == ENOENT ? SHIM_EXIT_NOT_FOUND : SHIM_EXIT_CANNOT_RUN);
}

static pid_t clone_into_cgroup(int cgroup_fd)
{
        struct clone_args args = {
            .flags = CLONE_INTO_CGROUP,
            .exit_signal = SIGCHLD,
            .cgroup = (uint64_t)cgroup_fd,
        };

        return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/*
 * Start the command. Returns the pid, or -errno when it could not be started (err says
 * why; err->error is ENOENT for "not found", other values mean "cannot execute" for
 * STAGE_EXEC and an enforcement failure for STAGE_ATTACH: *ret_stage tells).
 */
static pid_t spawn(const struct shim_supervise_opts *o, int *ret_stage, struct util_error *err)
{
        _cleanup_close_ int rd = -1, wr = -1;
        struct spawn_failure f;
        int fds[2];
        bool attach = false;
        pid_t pid = -1, shim = getpid();
        ssize_t n;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return util_error_set(err, errno, "pipe: %s", strerror(errno));
        rd = fds[0];
        wr = fds[1];

        if (o->cgroup_fd >= 0) {
                pid = clone_into_cgroup(o->cgroup_fd);
                if (pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
                        log_debug("clone3(CLONE_INTO_CGROUP) unavailable (%s); fork + attach",
                                  strerror(errno));
                        attach = true;
                        pid = fork();
                }
        } else {
                pid = fork();
        }
        if (pid < 0)
                return util_error_set(err, errno, "cannot start %s: fork: %s", o->argv[0],
                                      strerror(errno));
        if (pid == 0) {
                util_closep(&rd);
                child_exec(o, attach, wr, shim);
        }
        util_closep(&wr);
        wr = -1;
        do
                n = read(rd, &f, sizeof(f));
        while (n < 0 && errno == EINTR);
        if (n == 0)
                return pid;
        /* the child failed before or at exec: collect it now */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t)sizeof(f))
                return util_error_set(err, EIO, "cannot start %s: lost the child's status",
                                      o->argv[0]);
        *ret_stage = f.stage;
        if (f.stage == STAGE_ATTACH)
                return util_error_set(err, f.error, "cannot move %s into its cgroup: %s",
                                      o->argv[0], strerror(f.error));
        return util_error_set(err, f.error, "cannot execute %s: %s", o->argv[0], strerror(f.error));
}

static int status_to_code(int status)
{
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return SHIM_EXIT_INTERNAL;
}

int shim_supervise(const struct shim_supervise_opts *o, struct util_error *err)
{
        uint64_t grace_deadline = 0;
        bool killed = false, child_done = false;
        int code = SHIM_EXIT_INTERNAL, stage = 0;
        sigset_t wait_set;
        pid_t child;

        child = spawn(o, &stage, err);
        if (child < 0) {
                if (stage == STAGE_EXEC)
                        return err->error == ENOENT ? SHIM_EXIT_NOT_FOUND : SHIM_EXIT_CANNOT_RUN;
                return child;
        }
        log_debug("started %s as pid %d", o->argv[0], (int)child);
        if (o->on_start)
                o->on_start(o->data, child);

        sigfillset(&wait_set);
        for (;;) {
                /* poll faster while a grace period runs, to notice an empty cgroup */
                struct timespec timeout = {.tv_sec = grace_deadline ? 0 : 1,
                                           .tv_nsec = grace_deadline ? 50000000 : 0};
                siginfo_t info;
                int sig, status;
                pid_t pid;

                sig = sigtimedwait(&wait_set, &info, &timeout);
                if (sig < 0 && errno != EAGAIN && errno != EINTR)
                        return util_error_set(err, errno, "sigtimedwait: %s", strerror(errno));
                if (sig > 0 && is_forwarded(sig) && !child_done) {
                        log_debug("forwarding signal %d to %d", sig, (int)child);
                        if (kill(o->signal_group ? -child : child, sig) < 0 && errno != ESRCH)
                                log_warn("cannot forward signal %d to %d: %s", sig, (int)child,
                                         strerror(errno));
                }
                if (sig > 0 && starts_grace(sig) && !grace_deadline)
                        grace_deadline = util_now_ns() + (uint64_t)o->grace_seconds * 1000000000ULL;

                if (o->on_tick)
                        o->on_tick(o->data);
                /* rolling's TERM: what a TERM received does, unless one already did */
                if (o->on_rolling_term && !child_done && o->on_rolling_term(o->data) &&
                    !grace_deadline) {
                        log_debug("rolling: TERM to %d", (int)child);
                        if (kill(o->signal_group ? -child : child, SIGTERM) < 0 && errno != ESRCH)
                                log_warn("cannot send TERM to %d: %s", (int)child, strerror(errno));
                        grace_deadline = util_now_ns() + (uint64_t)o->grace_seconds * 1000000000ULL;
                }
                while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
                        if (pid != child)
                                continue;
                        child_done = true;
                        code = status_to_code(status);
                        log_debug("pid %d ended, exit status %d", (int)child, code);
                }

                if (child_done) {
                        /* after TERM the executor's other processes get the rest of the grace */
                        if (!grace_deadline || killed || !o->cgroup ||
                            shim_cgroup_populated(o->cgroup) <= 0 ||
                            util_now_ns() >= grace_deadline)
                                return code;
                        continue;
                }
                if (grace_deadline && !killed && util_now_ns() >= grace_deadline) {
                        log_warn("%s did not exit within the grace period of %u s; killing it",
                                 o->argv[0], o->grace_seconds);
                        if (o->cgroup)
                                shim_cgroup_kill(o->cgroup);
                        kill(o->signal_group ? -child : child, SIGKILL);
                        killed = true;
                }
        }
}
