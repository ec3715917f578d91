/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bounded line reader (report files, event logs, anything a user wrote): lines are
 * collected across reads into one buffer that grows by doubling up to line_max, so a file
 * of short lines costs one small buffer and no line can take more than line_max.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct util_lines {
        /* set by the caller */
        size_t line_max;    /* the longest line kept, in bytes, without its '\n' */
        uint64_t input_max; /* util_lines_read_fd: the most bytes it reads; 0: no bound */
        uint64_t offset;    /* the offset of the next byte taken (a caller resuming sets it) */
        /* what was read */
        uint64_t lineno;     /* the line last given or refused, from 1 */
        uint64_t line_start; /* its offset */
        uint64_t done;       /* the offset past the last whole line (its '\n'), or its start */
        /* private */
        char *line;
        size_t len, cap;
        bool skipping, begun, ended;
};

/*
 * Take bytes from [*p, end) into the line being collected, advancing *p. Returns 1 with a
 * whole line in *ret_line (NUL-terminated, valid until the next call) and *ret_len; 0 when
 * the bytes ran out first (what was taken is kept for the next call); -EMSGSIZE when the
 * line passes line_max (lineno names it: the next call discards the rest of it, so the
 * caller may skip it or stop); -ENOMEM.
 */
int util_lines_take(struct util_lines *l, const char **p, const char *end, const char **ret_line,
                    size_t *ret_len);

/* At the end of input, the last line when it has no '\n': 1 with it, else 0. */
int util_lines_rest(struct util_lines *l, const char **ret_line, size_t *ret_len);

struct util_lines_ops {
        int (*line)(void *userdata, const char *line, size_t len); /* nonzero: stop with it */
        /* a line longer than line_max: 0 skips it, nonzero stops with it; NULL: -EMSGSIZE */
        int (*too_long)(void *userdata);
};

/*
 * Read fd to its end (EINTR retried; a non-blocking fd polled), each whole line to
 * ops->line. The last line without its '\n' is left for util_lines_rest. Returns 0, the
 * nonzero value a callback stopped with, -EFBIG past input_max, -EMSGSIZE, -ENOMEM or the
 * read's -errno; lineno and offset say where.
 */
int util_lines_read_fd(struct util_lines *l, int fd, const struct util_lines_ops *ops,
                       void *userdata);

/*
 * The number of the line the next byte belongs to: the one being collected, or the next one
 * when the last was whole (for "stopped at line N" after a read error or input_max).
 */
uint64_t util_lines_at(const struct util_lines *l);

void util_lines_free(struct util_lines *l);
