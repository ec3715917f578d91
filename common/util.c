/* SPDX-License-Identifier: Apache-2.0 */
#include "util.h"

#include <ctype.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

int util_parse_u64(const char *s, uint64_t *ret)
{
        char *end = NULL;
        unsigned long long v;

        if (!s || !isdigit((unsigned char)s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int util_parse_int(const char *s, int *ret)
{
        char *end = NULL;
        long v;

        if (!s || !(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
                return -EINVAL;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        *ret = (int)v;
        return 0;
}

int util_parse_double(const char *s, double *ret)
{
        char *end = NULL;
        double v;

        if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || *end != '\0' || !isfinite(v))
                return -EINVAL;
        *ret = v;
        return 0;
}

ssize_t util_read_at(int dirfd, const char *name, char *buf, size_t size)
{
        _cleanup_close_ int fd = -1;
        size_t len = 0;

        if (size == 0)
                return -EINVAL;
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t n = read(fd, buf + len, size - 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len == size - 1) {
                        char extra;
                        if (read(fd, &extra, 1) > 0) {
                                /* nothing of a file that did not fit may be used */
                                buf[0] = '\0';
                                return -EFBIG;
                        }
                        break;
                }
        }
        if (len > 0 && buf[len - 1] == '\n')
                len--;
        buf[len] = '\0';
        return (ssize_t)len;
}

int util_write_at(int dirfd, const char *name, const char *value)
{
        _cleanup_close_ int fd = -1;
        size_t len = strlen(value);
        ssize_t n;

        fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return -errno;
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t)n != len)
                return -EIO;
        return 0;
}

int util_read_keyed_u64_at(int dirfd, const char *name, const char *key, uint64_t *ret)
{
        char buf[8192];
        size_t keylen = strlen(key);
        ssize_t r;

        r = util_read_at(dirfd, name, buf, sizeof(buf));
        if (r < 0)
                return (int)r;
        for (char *line = buf; line && *line;) {
                char *next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strncmp(line, key, keylen) == 0 && line[keylen] == ' ')
                        return util_parse_u64(line + keylen + 1, ret);
                line = next;
        }
        return -ENOENT;
}

uint64_t util_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

ssize_t util_read_file_at(int dirfd, const char *name, size_t max, char **ret)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t n;

                if (cap - len < 2) {
                        size_t grown = cap ? cap * 2 : 4096;
                        char *p;

                        /* room for max bytes, one more to tell a longer file, and the NUL */
                        if (cap >= max + 2)
                                return -EFBIG;
                        if (grown > max + 2)
                                grown = max + 2;
                        p = realloc(buf, grown);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        cap = grown;
                }
                n = read(fd, buf + len, cap - 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > max)
                        return -EFBIG;
        }
        if (!buf && !(buf = malloc(1)))
                return -ENOMEM;
        buf[len] = '\0';
        *ret = buf;
        buf = NULL;
        return (ssize_t)len;
}

int util_process_start_time(pid_t pid, uint64_t *ret)
{
        char path[64], buf[1024], *p;
        _cleanup_close_ int fd = -1;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return n < 0 ? -errno : -EIO;
        buf[n] = '\0';
        /* the command name may hold anything: fields start after its last ')' */
        p = strrchr(buf, ')');
        if (!p)
                return -EIO;
        for (int field = 2; p && field < 22; field++)
                p = strchr(p + 1, ' ');
        if (!p || sscanf(p + 1, "%" SCNu64, ret) != 1)
                return -EIO;
        return 0;
}
