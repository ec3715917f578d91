/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay PATH...: run a harness once over each seed (files, or every file of a directory),
 * without libFuzzer, so that any compiler builds the corpora into a test suite (meson suite
 * 'fuzz-corpus', in the sanitizer build of scripts/sanitize too). A finding aborts, as under
 * libFuzzer (assert, or the sanitizer of the build).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static int run_file(int dirfd, const char *name, const char *shown)
{
        struct stat st;
        uint8_t *data;
        size_t len = 0;
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || fstat(fd, &st) < 0) {
                fprintf(stderr, "replay: %s: %s\n", shown, strerror(errno));
                return -1;
        }
        /* exactly the seed's size, so that a read past its end is caught */
        data = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
        if (!data) {
                close(fd);
                return -1;
        }
        while (len < (size_t)st.st_size) {
                ssize_t n = read(fd, data + len, (size_t)st.st_size - len);

                if (n <= 0) {
                        fprintf(stderr, "replay: %s: short read\n", shown);
                        close(fd);
                        free(data);
                        return -1;
                }
                len += (size_t)n;
        }
        close(fd);
        LLVMFuzzerTestOneInput(data, len);
        free(data);
        return 0;
}

int main(int argc, char **argv)
{
        unsigned runs = 0;
        int status = 0;

        for (int i = 1; i < argc; i++) {
                DIR *d = opendir(argv[i]);

                if (!d) {
                        if (run_file(AT_FDCWD, argv[i], argv[i]) < 0)
                                status = 1;
                        else
                                runs++;
                        continue;
                }
                for (struct dirent *e; (e = readdir(d));) {
                        char shown[4096];

                        if (e->d_name[0] == '.')
                                continue;
                        snprintf(shown, sizeof(shown), "%s/%s", argv[i], e->d_name);
                        printf("%s\n", shown);
                        fflush(stdout);
                        if (run_file(dirfd(d), e->d_name, shown) < 0)
                                status = 1;
                        else
                                runs++;
                }
                closedir(d);
        }
        printf("replay: %u inputs\n", runs);
        return status;
}
