/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "log.h"
#include "shim-common.h"
#include "utf8.h"
#include "util.h"

static enum util_log_level max_level = UTIL_LOG_WARN;

void util_log_set_level(enum util_log_level level)
{
        max_level = level;
}

enum util_log_level util_log_get_level(void)
{
        return max_level;
}

void util_log(enum util_log_level level, const char *fmt, ...)
{
        static const char *const names[] = {"error", "warning", "info", "debug"};
        char line[1280], message[1024];
        int saved = errno;
        va_list ap;
        int n;

        if (level > max_level)
                return;
        n = snprintf(line, sizeof(line), "sparkshim[%d]: %s: ", (int)getpid(), names[level]);
        va_start(ap, fmt);
        errno = saved;
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        /*
         * Messages carry user strings (a command, a name, a path, a token of a file): a
         * control character among them (C0, DEL, and C1 such as CSI U+009B, which terminals
         * obey too) and each byte that is not part of valid UTF-8 are shown escaped (\xNN),
         * so that no input can forge or split a log line or reach a terminal raw, and the
         * line is UTF-8 (a message cut by its buffer ends in escapes, not half a character).
         */
        for (const unsigned char *c = (const unsigned char *)message; *c;) {
                size_t len = util_utf8_length(c), bytes = len ? len : 1;
                bool escape = len == 0 || *c < 0x20 || *c == 0x7f ||
                              (len == 2 && c[0] == 0xc2 && c[1] < 0xa0);

                if ((size_t)n + (escape ? 4 * bytes : bytes) >= sizeof(line))
                        break;
                for (size_t i = 0; i < bytes; i++) {
                        if (escape)
                                n += snprintf(line + n, sizeof(line) - (size_t)n, "\\x%02x", c[i]);
                        else
                                line[n++] = (char)c[i];
                }
                c += bytes;
        }
        line[n] = '\0';
        /* one write per line so lines of concurrent writers do not interleave */
        fprintf(stderr, "%s\n", line);
        errno = saved;
}
