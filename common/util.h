/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers shared by every module: cleanup attributes, strict number parsing and
 * dirfd-relative file access. Nothing here logs; functions return >= 0 or -errno.
 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

static inline void util_freep(void *p)
{
        free(*(void **)p);
}

static inline void util_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}

static inline void util_fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

static inline void util_closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}

/* n bytes as 2n lowercase hex digits and a NUL into out (2n + 1 bytes); returns out. */
static inline char *util_hex(const unsigned char *in, size_t n, char *out)
{
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[in[i] >> 4];
                out[2 * i + 1] = digits[in[i] & 15];
        }
        out[2 * n] = '\0';
        return out;
}

/* The value of a hexadecimal digit, -1 for any other character. */
static inline int util_hex_digit(int c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

#define _cleanup_(f)       __attribute__((cleanup(f)))
#define _cleanup_free_     _cleanup_(util_freep)
#define _cleanup_close_    _cleanup_(util_closep)
#define _cleanup_fclose_   _cleanup_(util_fclosep)
#define _cleanup_closedir_ _cleanup_(util_closedirp)

/* Steal ownership: returns the value and leaves the variable empty. */
#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _taken = (p);                                                        \
                (p) = NULL;                                                                        \
                _taken;                                                                            \
        })
#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _taken = (fd);                                                                 \
                (fd) = -1;                                                                         \
                _taken;                                                                            \
        })

/*
 * Strict parsers: the whole string must be consumed, no sign, no leading space.
 * Return 0 and set *ret on success; -EINVAL for malformed text, -ERANGE on overflow.
 */
int util_parse_u64(const char *s, uint64_t *ret);
int util_parse_int(const char *s, int *ret);
int util_parse_double(const char *s, double *ret);

/*
 * Read a small file below dirfd (O_NOFOLLOW|O_CLOEXEC) into buf, NUL-terminated, with a
 * single trailing newline stripped. Returns the length or -errno: -EFBIG if it does not fit,
 * and then buf holds "" (a cut-off file is never half-used).
 */
ssize_t util_read_at(int dirfd, const char *name, char *buf, size_t size);

/*
 * Read a whole file below dirfd (O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK) into a new NUL-terminated
 * buffer (*ret, the caller frees it), as crun reads cgroup files: no line is ever cut. More
 * than max bytes is -EFBIG. Returns the length or -errno; *ret is set only on success.
 */
ssize_t util_read_file_at(int dirfd, const char *name, size_t max, char **ret);

/* Write value to a file below dirfd in one write(2). Returns 0 or -errno. */
int util_write_at(int dirfd, const char *name, const char *value);

/* Read a "key value" file (memory.events, cpu.stat) and return the value of key. */
int util_read_keyed_u64_at(int dirfd, const char *name, const char *key, uint64_t *ret);

/* The start time of a process: field 22 of /proc/PID/stat, in clock ticks after boot. */
int util_process_start_time(pid_t pid, uint64_t *ret);

/* Monotonic clock in nanoseconds. */
uint64_t util_now_ns(void);

/*
 * Is path a regular file that only root (or the effective user) can change: owned by one of
 * them and not writable by group or others, in directories likewise (a sticky directory,
 * such as /tmp, is accepted)? The path is resolved (realpath: lstat and readlink) and each
 * component of the result is looked at with O_PATH | O_NOFOLLOW: the file itself is never
 * opened, so a device node is refused before any driver sees an open. Returns 0 with the
 * resolved path in resolved, or -errno with the reason in why (one phrase, no path prefix).
 */
int util_trusted_file(const char *path, char *resolved, size_t size, struct util_error *why);

/*
 * Files root creates or appends to in directories others may write (report sinks): no
 * symlink is followed, temporary names are random and exclusive, replacement is an atomic
 * rename. On failure why (if not NULL) gets the reason, for a caller's "<path>: <why>" line
 * ("refused: a symlink", "directory /x: No such file or directory").
 * -EPERM means refused as unsafe (the caller should not go on as if it were a mere
 * outage); other errors are the system's.
 */

/*
 * Open the directory of path (O_DIRECTORY, its last component not a symlink) for *at()
 * calls; ret_name points at path's last component. Refused: a directory writable by group
 * or others without the sticky bit. Returns the fd or -errno.
 */
int util_open_dir_of(const char *path, const char **ret_name, struct util_error *why);

/*
 * Open path for appending (created with mode if absent) without following a symlink.
 * Refused: a symlink, anything but a regular file, a file with more than one link, a file
 * not owned by the effective uid, and the directory cases above. Returns the fd
 * (O_CLOEXEC | O_NONBLOCK) or -errno.
 */
int util_open_append_safe(const char *path, mode_t mode, struct util_error *why);

/*
 * Replace path with data: written to an exclusive temporary file with a random name
 * (getrandom) in the same directory, then renamed over path. Returns 0 or -errno.
 */
int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                           struct util_error *why);

/*
 * The same in a directory already opened (util_open_dir_of): name is a file name. With
 * ret_st, the new file's stat (its device and inode, for util_unlink_if_same).
 */
int util_write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len,
                              mode_t mode, struct stat *ret_st, struct util_error *why);

/*
 * Remove name from dirfd when it is still the file st describes (same device and inode),
 * not one another writer renamed over it since. Returns 0, -ESTALE (another file) or -errno.
 */
int util_unlink_if_same(int dirfd, const char *name, const struct stat *st);
