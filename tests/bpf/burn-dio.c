/* SPDX-License-Identifier: Apache-2.0 */
/*
 * burn-dio FILE MIB: write MIB mebibytes to FILE with O_DIRECT in 1 MiB aligned chunks,
 * fsync, then read them back with O_DIRECT; print the byte counts. FILE must be on a real
 * block device (O_DIRECT on tmpfs fails or never reaches a disk). FILE is left in place.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (1024 * 1024)

static int fail(const char *what, const char *path)
{
        fprintf(stderr, "burn-dio: %s %s: %s\n", what, path, strerror(errno));
        return 1;
}

int main(int argc, char **argv)
{
        long long written = 0, read_back = 0;
        const char *path;
        long mib;
        void *buf;
        int fd;

        if (argc != 3 || (mib = atol(argv[2])) <= 0) {
                fprintf(stderr, "usage: burn-dio FILE MIB\n");
                return 2;
        }
        path = argv[1];
        if (posix_memalign(&buf, 4096, CHUNK) != 0) {
                fprintf(stderr, "burn-dio: out of memory\n");
                return 1;
        }
        memset(buf, 0x5a, CHUNK);

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
        if (fd < 0)
                return fail("cannot create", path);
        for (long i = 0; i < mib; i++) {
                ssize_t n = write(fd, buf, CHUNK);

                if (n != CHUNK)
                        return fail("short write to", path);
                written += n;
        }
        if (fsync(fd) < 0)
                return fail("cannot fsync", path);
        close(fd);

        fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0)
                return fail("cannot open", path);
        for (;;) {
                ssize_t n = read(fd, buf, CHUNK);

                if (n < 0)
                        return fail("cannot read", path);
                if (n == 0)
                        break;
                read_back += n;
        }
        close(fd);
        free(buf);
        printf("burn-dio: wrote %lld read %lld bytes\n", written, read_back);
        return 0;
}
