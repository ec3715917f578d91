/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files that root takes from a path: is the path one that only root (or the shim's own
 * user) can change? Looked at without opening the file: an agent library that turns out
 * to be a device node must not have been opened by the time we know.
 */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

static bool trusted_owner(uid_t uid)
{
        return uid == 0 || uid == geteuid();
}

static const char *file_type(mode_t mode)
{
        return S_ISDIR(mode)    ? "a directory"
               : S_ISCHR(mode)  ? "a character device"
               : S_ISBLK(mode)  ? "a block device"
               : S_ISFIFO(mode) ? "a FIFO"
               : S_ISSOCK(mode) ? "a socket"
               : S_ISLNK(mode)  ? "a symbolic link"
                                : "not a regular file";
}

int util_trusted_file(const char *path, char *resolved, size_t size, struct util_error *why)
{
        char real[PATH_MAX];
        _cleanup_close_ int dir = -1;
        struct stat st;
        char *component, *next;

        if (!path || path[0] != '/') {
                return util_error_set(why, EINVAL, "not an absolute path");
        }
        /* lstat and readlink only: nothing is opened */
        if (!realpath(path, real)) {
                return util_error_set(why, errno, "%s", strerror(errno));
        }
        if (strlen(real) >= size) {
                return util_error_set(why, ENAMETOOLONG, "path too long");
        }
        if (strcmp(real, "/") == 0) {
                return util_error_set(why, EISDIR, "a directory");
        }
        dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) {
                return util_error_set(why, errno, "/: %s", strerror(errno));
        }
        /* walk the resolved path: every directory, then the file, with O_PATH | O_NOFOLLOW */
        for (component = real + 1; component && *component; component = next) {
                char shown[PATH_MAX];
                int fd;

                next = strchr(component, '/');
                if (next)
                        *next = '\0';
                fd = openat(dir, component, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        int r = -errno;
                        if (fd >= 0)
                                close(fd);
                        return util_error_set(why, r, "%s", strerror(-r));
                }
                close(dir);
                dir = fd;
                snprintf(shown, sizeof(shown), "%.*s", (int)(component + strlen(component) - real),
                         real);
                if (next)
                        *next++ = '/';
                if (!trusted_owner(st.st_uid)) {
                        return util_error_set(why, EPERM, "%s is owned by uid %u, not root", shown,
                                              (unsigned)st.st_uid);
                }
                if (next && S_ISDIR(st.st_mode)) {
                        /* a sticky directory keeps root's entries root's (as /tmp does) */
                        if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
                                return util_error_set(
                                    why, EPERM,
                                    "directory %s is writable by group or others (mode %04o)",
                                    shown, (unsigned)(st.st_mode & 07777));
                        }
                        continue;
                }
                if (next) {
                        return util_error_set(why, ENOTDIR, "%s is not a directory", shown);
                }
                if (!S_ISREG(st.st_mode)) {
                        return util_error_set(why, EINVAL, "%s", file_type(st.st_mode));
                }
                if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                        return util_error_set(why, EPERM, "writable by group or others (mode %04o)",
                                              (unsigned)(st.st_mode & 07777));
                }
        }
        snprintf(resolved, size, "%s", real);
        return 0;
}
