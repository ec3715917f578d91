/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one error carrier of sparkshim (as crun's libcrun_error_t, jansson's json_error_t):
 * a positive errno and one line of text, fixed size and owned by the caller. Functions that
 * cross a module boundary return -errno; the struct only carries the line a user reads.
 */
#pragma once

#include <stdarg.h>

#define UTIL_ERROR_TEXT_MAX 512

struct util_error {
        int error;                      /* positive errno; 0 when nothing failed */
        char text[UTIL_ERROR_TEXT_MAX]; /* one line, no control characters */
};

/*
 * Fill err (when not NULL) with |error| and the formatted line, control characters replaced
 * by '?' so that whatever a file, key or user value contained stays on one line; errno is
 * left as it was. Returns -|error|.
 */
int util_error_set(struct util_error *err, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int util_error_setv(struct util_error *err, int error, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
