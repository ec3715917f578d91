/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroup backend's file handling, on plain directories standing in for a cgroup. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim.h"
#include "util.h"

static char dir[] = "/tmp/sparkshim-test-cgroup.XXXXXX";

static void make_dir(void)
{
        cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void remove_dir(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        cr_assert_eq(system(cmd), 0);
}

static void write_file(const char *name, const char *text, size_t len)
{
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        cr_assert(f, "%s: %s", path, strerror(errno));
        cr_assert_eq(fwrite(text, 1, len, f), len);
        cr_assert_eq(fclose(f), 0);
}

TestSuite(cgroup, .init = make_dir, .fini = remove_dir);

/* Issue 11, defect 6: a file that does not fit is refused whole, the buffer terminated. */
Test(cgroup, read_at_does_not_half_use_a_long_file)
{
        char buf[8];
        _cleanup_close_ int fd = -1;

        write_file("big", "1234567890\n", 11);
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        memset(buf, 'x', sizeof(buf));
        cr_assert_eq(util_read_at(fd, "big", buf, sizeof(buf)), -EFBIG);
        cr_assert_str_eq(buf, "", "the buffer holds '%.8s' after -EFBIG", buf);
}

Test(cgroup, read_file_at_whole)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        static char big[100000];

        memset(big, 'a', sizeof(big));
        write_file("big", big, sizeof(big));
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        cr_assert_eq(util_read_file_at(fd, "big", sizeof(big), &text), (ssize_t)sizeof(big));
        cr_assert_eq(strlen(text), sizeof(big));
        cr_assert_eq(util_read_file_at(fd, "big", sizeof(big) - 1, &text), -EFBIG);
        write_file("empty", "", 0);
        free(text);
        text = NULL;
        cr_assert_eq(util_read_file_at(fd, "empty", 10, &text), 0);
        cr_assert_str_eq(text, "");
}

/*
 * Issue 11, defect 6: the pre-5.14 cgroup.kill fallback read cgroup.procs into 8 KiB and
 * parsed the cut-off last line. Here that line is a victim's pid followed by "0000000": cut
 * after the victim's digits, it named the victim; whole, it names no process (too large).
 */
Test(cgroup, kill_fallback_never_parses_a_cut_line)
{
        struct shim_cgroup cg = SHIM_CGROUP_INIT;
        char pid_text[32], *text;
        size_t pad, at = 0, len;
        pid_t victim;
        int status;

        victim = fork();
        cr_assert(victim >= 0);
        if (victim == 0) {
                pause();
                _exit(0);
        }
        len = (size_t)snprintf(pid_text, sizeof(pid_text), "%d", (int)victim);
        /* the old reader kept 8191 bytes: pad so that they end right after the victim's digits */
        pad = 8191 - len;
        text = malloc(pad + len + 16);
        cr_assert(text);
        while (pad - at >= 12) {
                /* no process has this pid: pid_max is at most 2^22 */
                memcpy(text + at, "2000000000\n", 11);
                at += 11;
        }
        memset(text + at, 'x', pad - at - 1);
        text[pad - 1] = '\n';
        memcpy(text + pad, pid_text, len);
        memcpy(text + pad + len, "0000000\n", 8);
        write_file("cgroup.procs", text, pad + len + 8);
        free(text);

        cg.leaf_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        cr_assert(cg.leaf_fd >= 0);
        /* no cgroup.kill here: the fallback runs */
        cr_assert_eq(shim_cgroup_kill(&cg), 0);
        usleep(100000);
        cr_assert_eq(waitpid(victim, &status, WNOHANG), 0,
                     "pid %d was killed from a cut-off line of cgroup.procs", (int)victim);
        kill(victim, SIGKILL);
        waitpid(victim, &status, 0);
        close(cg.leaf_fd);
}
