/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executor's JVM for executor rolling (measure/jvm-target.h): the pure parsers, and the
 * choice among real processes: a shell exec'd through a symlink named "java" (its comm is
 * "java") stands in for the JVM; the command line names the executor backend or not, and
 * the shell traps PWR or not (its SigCgt).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jvm-target.h"
#include "util.h"

#define BACKEND "org.apache.spark.executor.CoarseGrainedExecutorBackend"

Test(jvm_target, status_ids)
{
        static const char ok[] = "Name:\tjava\nUmask:\t0022\nUid:\t1000\t1001\t1002\t1003\n"
                                 "Gid:\t20\t21\t22\t23\nFDSize:\t64\n";
        uid_t uid[4];
        gid_t gid[4];

        cr_assert_eq(jvm_status_ids(ok, strlen(ok), uid, gid), 0);
        cr_assert(uid[0] == 1000 && uid[1] == 1001 && uid[2] == 1002 && uid[3] == 1003);
        cr_assert(gid[0] == 20 && gid[3] == 23);
        /* missing, doubled, short, overflowing, trailing junk */
        cr_assert_eq(jvm_status_ids("Uid:\t1\t1\t1\t1\n", 14, uid, gid), -EINVAL);
        {
                static const char *bad[] = {
                    "Uid:\t1\t1\t1\t1\nUid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\n",
                    "Uid:\t1\t1\t1\nGid:\t1\t1\t1\t1\n",
                    "Uid:\t1\t1\t1\t4294967296\nGid:\t1\t1\t1\t1\n",
                    "Uid:\t1\t1\t1\t1 \nGid:\t1\t1\t1\t1\n",
                    "Uid:\t1\t1\t\t1\nGid:\t1\t1\t1\t1\n",
                };
                for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                        cr_assert_eq(jvm_status_ids(bad[i], strlen(bad[i]), uid, gid), -EINVAL,
                                     "%s", bad[i]);
        }
        /* the job's Name: cannot fake a line: the kernel escapes its newlines, and a key
         * counts only at a line's start */
        {
                static const char named[] =
                    "Name:\tUid:\t0\t0\t0\t0\nUid:\t5\t5\t5\t5\nGid:\t5\t5\t5\t5\n";
                cr_assert_eq(jvm_status_ids(named, strlen(named), uid, gid), 0);
                cr_assert(uid[0] == 5 && gid[0] == 5);
        }
}

Test(jvm_target, ids_ok)
{
        uid_t user[4] = {1000, 1000, 1000, 1000}, root[4] = {0, 0, 0, 0},
              setuid[4] = {1000, 0, 0, 0};
        gid_t g[4] = {100, 100, 100, 100}, setgid[4] = {100, 0, 0, 0};

        cr_assert(jvm_target_ids_ok(user, g, 1000));
        cr_assert(jvm_target_ids_ok(user, g, 0));     /* root's executor running as a user */
        cr_assert(jvm_target_ids_ok(root, g, 0));     /* root's executor, root's JVM */
        cr_assert(!jvm_target_ids_ok(root, g, 1000)); /* a user's executor, a root process */
        cr_assert(!jvm_target_ids_ok(setuid, g, 1000));
        cr_assert(!jvm_target_ids_ok(user, setgid, 1000));
}

Test(jvm_target, cmdline_split)
{
        char buf[] = "java\0-cp\0x\0" BACKEND "\0tail-without-nul";
        char *argv[8];
        size_t n = jvm_cmdline_split(buf, sizeof(buf) - 1, argv, 8);

        cr_assert_eq(n, 4);
        cr_assert_str_eq(argv[3], BACKEND);
        cr_assert_null(argv[4]);
        cr_assert_eq(jvm_cmdline_split(buf, sizeof(buf) - 1, argv, 3), 2);
        cr_assert_null(argv[2]);
        cr_assert_eq(jvm_cmdline_split(buf, 0, argv, 8), 0);
}

static char dir[64];

/* A shell exec'd as DIR/java (or DIR/sh) running script; its pid. */
static pid_t start(const char *name, const char *script, bool backend)
{
        char path[128];
        pid_t pid;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (access(path, F_OK) != 0)
                cr_assert_eq(symlink("/bin/sh", path), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                /* a failed assertion ends the test's process: these end with it */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                execl(path, name, "-c", script, backend ? BACKEND : "not-an-executor",
                      (char *)NULL);
                _exit(127);
        }
        return pid;
}

/* the shim's child: its pidfd, opened before it can be reaped */
static void set_child(struct jvm_target *t, pid_t pid)
{
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);

        cr_assert_geq(fd, 0);
        cr_assert_eq(jvm_target_set_child(t, fd, pid), 0);
}

static void stop(pid_t pid)
{
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* jvm_target_update until it says want (the shell may not have exec'd or trapped yet). */
static enum rolling_sigpwr wait_for(struct jvm_target *t, pid_t pid, enum rolling_sigpwr want)
{
        enum rolling_sigpwr s = ROLLING_SIGPWR_UNKNOWN;

        for (int i = 0; i < 500 && s != want; i++) {
                s = jvm_target_update(t, -1);
                if (s != want)
                        usleep(10000);
        }
        return s;
}

static void setup(void)
{
        snprintf(dir, sizeof(dir), "/tmp/test-jvm-target.XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
        char path[128];

        snprintf(path, sizeof(path), "%s/java", dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/sh", dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
        unlink(path);
        rmdir(dir);
}

TestSuite(jvm_target_proc, .init = setup, .fini = teardown, .timeout = 30);

Test(jvm_target_proc, catches_sigpwr)
{
        struct jvm_target *t = jvm_target_new();
        pid_t pid = start("java", "trap 'echo pwr >&2' PWR; while :; do sleep 0.05; done", true);
        int fd;

        cr_assert_not_null(t);
        cr_assert_eq(jvm_target_update(t, -1), ROLLING_SIGPWR_UNKNOWN, "no child set yet");
        set_child(t, pid);
        cr_assert_eq(wait_for(t, pid, ROLLING_SIGPWR_CAUGHT), ROLLING_SIGPWR_CAUGHT);
        cr_assert_eq(jvm_target_pid(t), pid);
        cr_assert_eq(jvm_target_command_line(t), POLICY_DECOMMISSION_UNSET);
        fd = jvm_target_dup_pidfd(t);
        cr_assert_geq(fd, 0);
        cr_assert_eq(jvm_pidfd_send_signal(fd, SIGPWR), 0);
        /* it caught it: still running */
        usleep(100000);
        cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0);
        stop(pid);
        /* gone (reaped): the pidfd says so, and nothing is held any more */
        cr_assert_eq(jvm_pidfd_send_signal(fd, SIGPWR), -ESRCH);
        cr_assert_eq(jvm_target_update(t, -1), ROLLING_SIGPWR_UNKNOWN);
        cr_assert_eq(jvm_target_pid(t), 0);
        close(fd);
        jvm_target_free(t);
}

Test(jvm_target_proc, does_not_catch)
{
        struct jvm_target *t = jvm_target_new();
        pid_t pid = start("java", "while :; do sleep 0.05; done", true);

        set_child(t, pid);
        cr_assert_eq(wait_for(t, pid, ROLLING_SIGPWR_NOT_CAUGHT), ROLLING_SIGPWR_NOT_CAUGHT);
        cr_assert_eq(jvm_target_pid(t), pid);
        stop(pid);
        jvm_target_free(t);
}

/* not java by comm, or not an executor by its command line: never the target */
Test(jvm_target_proc, not_a_jvm)
{
        struct jvm_target *t = jvm_target_new();
        pid_t sh = start("sh", "trap 'echo pwr >&2' PWR; while :; do sleep 0.05; done", true);
        pid_t other = start("java", "trap 'echo pwr >&2' PWR; while :; do sleep 0.05; done", false);

        /* each has had the time to exec and trap when the other one is seen */
        usleep(300000);
        for (int i = 0; i < 20; i++) {
                set_child(t, sh);
                cr_assert_eq(jvm_target_update(t, -1), ROLLING_SIGPWR_UNKNOWN);
                set_child(t, other);
                cr_assert_eq(jvm_target_update(t, -1), ROLLING_SIGPWR_UNKNOWN);
                usleep(10000);
        }
        cr_assert_eq(jvm_target_pid(t), 0);
        stop(sh);
        stop(other);
        jvm_target_free(t);
}

/*
 * The child reaped, its pid another process's: nothing is looked at. Stood in for by a child
 * pidfd of a reaped process and, as its pid, a live JVM that catches SIGPWR.
 */
Test(jvm_target_proc, reaped_child)
{
        struct jvm_target *t = jvm_target_new();
        pid_t gone = start("sh", "exit 0", false);
        pid_t jvm = start("java", "trap 'echo pwr >&2' PWR; while :; do sleep 0.05; done", true);
        int fd = (int)syscall(SYS_pidfd_open, gone, 0);

        cr_assert_geq(fd, 0);
        waitpid(gone, NULL, 0);
        cr_assert_eq(jvm_target_set_child(t, fd, jvm), -ESRCH);
        usleep(300000);
        for (int i = 0; i < 20; i++) {
                cr_assert_eq(jvm_target_update(t, -1), ROLLING_SIGPWR_UNKNOWN);
                usleep(10000);
        }
        cr_assert_eq(jvm_target_pid(t), 0);
        /* the same JVM as the child: found */
        set_child(t, jvm);
        cr_assert_eq(wait_for(t, jvm, ROLLING_SIGPWR_CAUGHT), ROLLING_SIGPWR_CAUGHT);
        stop(jvm);
        jvm_target_free(t);
}

/*
 * A process of cgroup.procs that is not in the child's cgroup (a pid reused between the read
 * of cgroup.procs and its pidfd) is refused: stood in for by a plain directory whose
 * cgroup.procs names a JVM, and a child moved to a cgroup of its own (skipped where the test
 * cannot make one).
 */
Test(jvm_target_proc, other_cgroup)
{
        struct jvm_target *t = jvm_target_new();
        pid_t child = start("sh", "while :; do sleep 0.05; done", false);
        pid_t jvm = start("java", "trap 'echo pwr >&2' PWR; while :; do sleep 0.05; done", true);
        char path[128], line[32], cgdir[128];
        _cleanup_close_ int dirfd = -1;
        bool moved = false;
        FILE *f;

        usleep(300000);
        set_child(t, child);
        snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
        f = fopen(path, "w");
        cr_assert_not_null(f);
        fprintf(f, "%d\n", (int)jvm);
        fclose(f);
        dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(dirfd, 0);
        /* same cgroup as the child (both the test's): found */
        for (int i = 0; i < 100 && jvm_target_pid(t) != jvm; i++) {
                jvm_target_update(t, dirfd);
                usleep(10000);
        }
        cr_assert_eq(jvm_target_pid(t), jvm);
        jvm_target_free(t);

        /* the child moved to a cgroup of its own: the JVM is not the executor's */
        snprintf(line, sizeof(line), "%d", (int)child);
        snprintf(cgdir, sizeof(cgdir), "/sys/fs/cgroup/unified/test-jvm-target-%d", (int)getpid());
        if (mkdir(cgdir, 0755) < 0) {
                snprintf(cgdir, sizeof(cgdir), "/sys/fs/cgroup/test-jvm-target-%d", (int)getpid());
                if (mkdir(cgdir, 0755) < 0)
                        cgdir[0] = '\0';
        }
        if (cgdir[0]) {
                char procs[160];
                int fd;

                snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgdir);
                fd = open(procs, O_WRONLY | O_CLOEXEC);
                moved = fd >= 0 && write(fd, line, strlen(line)) > 0;
                if (fd >= 0)
                        close(fd);
        }
        t = jvm_target_new();
        if (moved) {
                set_child(t, child);
                for (int i = 0; i < 30; i++) {
                        cr_assert_eq(jvm_target_update(t, dirfd), ROLLING_SIGPWR_UNKNOWN);
                        usleep(10000);
                }
                cr_assert_eq(jvm_target_pid(t), 0);
        }
        jvm_target_free(t);
        unlink(path);
        stop(child);
        stop(jvm);
        /* a reaped process leaves its cgroup a moment later */
        for (int i = 0; i < 100 && cgdir[0] && rmdir(cgdir) < 0 && errno == EBUSY; i++)
                usleep(10000);
        if (!moved)
                cr_skip_test("cannot make a cgroup v2 here to move a process to");
}
