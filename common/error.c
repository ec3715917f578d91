/* SPDX-License-Identifier: Apache-2.0 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>

#include "error.h"

static void one_line(char *text)
{
        for (char *c = text; *c; c++)
                if ((unsigned char)*c < ' ' || *c == 0x7f)
                        *c = '?';
}

int util_error_setv(struct util_error *err, int error, const char *fmt, va_list ap)
{
        int saved = errno;

        assert(fmt);
        if (error < 0)
                error = -error;
        if (!err)
                return -error;
        err->error = error;
        vsnprintf(err->text, sizeof(err->text), fmt, ap);
        errno = saved;
        one_line(err->text);
        return -error;
}

int util_error_set(struct util_error *err, int error, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = util_error_setv(err, error, fmt, ap);
        va_end(ap);
        return r;
}
