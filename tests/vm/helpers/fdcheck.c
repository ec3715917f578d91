/* SPDX-License-Identifier: Apache-2.0 */
/* fdcheck: exit 0 when the only open fds are 0, 1 and 2; print any others. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int leaked = 0;

        if (!d)
                return 2;
        while ((de = readdir(d))) {
                char path[64], target[PATH_MAX];
                ssize_t n;
                int fd;
                if (de->d_name[0] == '.')
                        continue;
                fd = atoi(de->d_name);
                if (fd <= 2 || fd == dirfd(d))
                        continue;
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                n = readlink(path, target, sizeof(target) - 1);
                target[n > 0 ? n : 0] = '\0';
                printf("fdcheck: leaked fd %d -> %s\n", fd, target);
                leaked++;
        }
        closedir(d);
        printf("fdcheck: %d leaked fds\n", leaked);
        return leaked ? 1 : 0;
}
