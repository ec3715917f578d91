/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collect_procs_read_at() over a fixture tree the input writes: cgroup.procs, and
 * proc/100/io and proc/100/status (the pid a seed lists). Input: the three texts separated
 * by NUL bytes, in that order (missing ones are absent files). The files are rewritten in
 * a private directory under $TMPDIR for each input.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"
#include "fuzz.h"

static int cgroup_fd = -1, proc_fd = -1, pid_fd = -1;
static char root[4096];

/* the tree goes with the process */
static void cleanup(void)
{
        if (pid_fd >= 0) {
                unlinkat(pid_fd, "io", 0);
                unlinkat(pid_fd, "status", 0);
                unlinkat(proc_fd, "100", AT_REMOVEDIR);
                unlinkat(cgroup_fd, "proc", AT_REMOVEDIR);
                unlinkat(cgroup_fd, "cgroup.procs", 0);
                rmdir(root);
        }
}

static void setup(void)
{
        const char *tmp = getenv("TMPDIR");
        char path[4096];

        snprintf(path, sizeof(path), "%s/fuzz-procs.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(path))
                abort();
        snprintf(root, sizeof(root), "%s", path);
        atexit(cleanup);
        cgroup_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cgroup_fd < 0 || mkdirat(cgroup_fd, "proc", 0700) < 0)
                abort();
        proc_fd = openat(cgroup_fd, "proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0 || mkdirat(proc_fd, "100", 0700) < 0)
                abort();
        pid_fd = openat(proc_fd, "100", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pid_fd < 0)
                abort();
}

static void put(int dirfd, const char *name, const char *text, size_t len)
{
        int fd;

        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
                abort();
        if (!text)
                return;
        fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, text, len) != (ssize_t)len || close(fd) < 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *part[3] = {NULL, NULL, NULL};
        size_t len[3] = {0, 0, 0};
        struct util_error err = {0};
        struct collect_procs procs;
        size_t start = 0;
        int r;

        if (cgroup_fd < 0)
                setup();
        for (unsigned i = 0; i < 3 && start <= size; i++) {
                const uint8_t *nul = memchr(data + start, '\0', size - start);
                size_t end = nul ? (size_t)(nul - data) : size;

                part[i] = (const char *)data + start;
                len[i] = end - start;
                start = end + 1;
        }
        put(cgroup_fd, "cgroup.procs", part[0], len[0]);
        put(pid_fd, "io", part[1], len[1]);
        put(pid_fd, "status", part[2], len[2]);

        r = collect_procs_read_at(cgroup_fd, proc_fd, &procs, &err);
        if (r < 0) {
                assert(err.error == -r);
                for (const char *s = err.text; *s; s++)
                        assert((unsigned char)*s >= ' ' && *s != 0x7f);
        } else
                assert(procs.nprocs <= 1 || !"only pid 100 exists");
        return 0;
}
