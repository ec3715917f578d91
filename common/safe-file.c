/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Root's writes into directories others may write (util.h): the report file and the
 * Prometheus file of a run. Everything is relative to one directory fd opened without
 * following its last component, so nothing swapped in between two calls is followed.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "util.h"

int util_open_dir_of(const char *path, const char **ret_name, struct util_error *why)
{
        const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
        char dir[4096];
        struct stat st;
        int fd;

        if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return util_error_set(why, EISDIR, "names a directory, not a file");
        if (!slash)
                snprintf(dir, sizeof(dir), ".");
        else if ((size_t)(slash - path) >= sizeof(dir))
                return util_error_set(why, ENAMETOOLONG, "path too long");
        else
                snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ELOOP)
                return util_error_set(why, EPERM, "refused: directory %s is a symlink", dir);
        if (fd < 0)
                return util_error_set(why, errno, "directory %s: %s", dir, strerror(errno));
        if (fstat(fd, &st) < 0) {
                int r = errno;
                close(fd);
                return util_error_set(why, r, "directory %s: %s", dir, strerror(r));
        }
        /* anyone who may rename entries here could swap a file root is about to write */
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
                close(fd);
                return util_error_set(
                    why, EPERM,
                    "refused: directory %s is writable by group or others (mode %04o) "
                    "without the sticky bit",
                    dir, (unsigned)(st.st_mode & 07777));
        }
        *ret_name = name;
        return fd;
}

int util_open_append_safe(const char *path, mode_t mode, struct util_error *why)
{
        _cleanup_close_ int dirfd = -1, fd = -1;
        const char *name;
        struct stat st;
        int r;

        dirfd = util_open_dir_of(path, &name, why);
        if (dirfd < 0)
                return dirfd;
        fd = openat(dirfd, name,
                    O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
                    mode);
        if (fd < 0 && errno == ELOOP)
                return util_error_set(why, EPERM, "refused: a symlink");
        if (fd < 0)
                return util_error_set(why, errno, "cannot open for appending: %s", strerror(errno));
        if (fstat(fd, &st) < 0)
                return util_error_set(why, errno, "fstat: %s", strerror(errno));
        if (!S_ISREG(st.st_mode))
                return util_error_set(why, EPERM, "refused: not a regular file");
        if (st.st_nlink > 1)
                return util_error_set(why, EPERM, "refused: %ju hard links",
                                      (uintmax_t)st.st_nlink);
        if (st.st_uid != geteuid())
                return util_error_set(why, EPERM,
                                      "refused: owned by uid %u, not by sparkshim (uid %u)",
                                      (unsigned)st.st_uid, (unsigned)geteuid());
        r = fd;
        fd = -1;
        return r;
}

static int write_all(int fd, const char *p, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

int util_write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len,
                              mode_t mode, struct stat *ret_st, struct util_error *why)
{
        _cleanup_close_ int fd = -1;
        struct stat st = {0};
        char tmp[300];
        int r;

        for (int attempt = 0; fd < 0 && attempt < 8; attempt++) {
                uint64_t suffix;

                if (getrandom(&suffix, sizeof(suffix), 0) != (ssize_t)sizeof(suffix))
                        return util_error_set(why, errno ? errno : EIO, "getrandom: %s",
                                              strerror(errno));
                if (snprintf(tmp, sizeof(tmp), ".%s.%016" PRIx64 ".tmp", name, suffix) >=
                    (int)sizeof(tmp))
                        return util_error_set(why, ENAMETOOLONG, "name too long");
                fd = openat(dirfd, tmp,
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
                if (fd < 0 && errno != EEXIST)
                        return util_error_set(why, errno, "cannot create a temporary file: %s",
                                              strerror(errno));
        }
        if (fd < 0)
                return util_error_set(why, EEXIST, "no free temporary name");
        r = write_all(fd, data, len);
        if (r == 0 && ret_st && fstat(fd, &st) < 0)
                r = -errno;
        if (r == 0) {
                int closing = fd;
                fd = -1;
                if (close(closing) < 0)
                        r = -errno;
        }
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r < 0) {
                unlinkat(dirfd, tmp, 0);
                return util_error_set(why, -r, "%s", strerror(-r));
        }
        if (ret_st)
                *ret_st = st;
        return 0;
}

int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                           struct util_error *why)
{
        _cleanup_close_ int dirfd = -1;
        const char *name;

        dirfd = util_open_dir_of(path, &name, why);
        if (dirfd < 0)
                return dirfd;
        return util_write_file_atomic_at(dirfd, name, data, len, mode, NULL, why);
}

int util_unlink_if_same(int dirfd, const char *name, const struct stat *st)
{
        struct stat now;

        if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (now.st_dev != st->st_dev || now.st_ino != st->st_ino)
                return -ESTALE;
        return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
}
