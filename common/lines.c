/* SPDX-License-Identifier: Apache-2.0 */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lines.h"

/* Room for len + more bytes and a NUL, doubling from 4 KiB up to line_max + 1. */
static int reserve(struct util_lines *l, size_t more)
{
        size_t want = l->len + more + 1, n = l->cap ? l->cap : 4096;
        char *p;

        if (want <= l->cap)
                return 0;
        while (n < want)
                n = n > l->line_max / 2 ? l->line_max + 1 : n * 2;
        p = realloc(l->line, n);
        if (!p)
                return -ENOMEM;
        l->line = p;
        l->cap = n;
        return 0;
}

/* The first byte of a line: number it. */
static void begin(struct util_lines *l)
{
        if (l->begun)
                return;
        l->begun = true;
        l->lineno++;
        l->line_start = l->offset;
}

int util_lines_take(struct util_lines *l, const char **p, const char *end, const char **ret_line,
                    size_t *ret_len)
{
        assert(l && p && *p && end && ret_line && ret_len);
        if (l->ended) { /* the line given last time is over */
                l->ended = false;
                l->begun = false;
                l->len = 0;
        }
        while (*p < end) {
                const char *nl = memchr(*p, '\n', (size_t)(end - *p));
                size_t seg = (size_t)((nl ? nl : end) - *p);

                begin(l);
                if (!l->skipping && seg > l->line_max - l->len) {
                        l->skipping = true;
                        l->len = 0;
                        return -EMSGSIZE;
                }
                if (!l->skipping && seg > 0) {
                        if (reserve(l, seg) < 0)
                                return -ENOMEM;
                        memcpy(l->line + l->len, *p, seg);
                        l->len += seg;
                }
                *p += seg;
                l->offset += seg;
                if (!nl)
                        return 0;
                (*p)++;
                l->offset++;
                l->done = l->offset;
                if (l->skipping) {
                        l->skipping = false;
                        l->begun = false;
                        continue;
                }
                if (reserve(l, 0) < 0)
                        return -ENOMEM;
                l->line[l->len] = '\0';
                l->ended = true;
                *ret_line = l->line;
                *ret_len = l->len;
                return 1;
        }
        return 0;
}

int util_lines_rest(struct util_lines *l, const char **ret_line, size_t *ret_len)
{
        assert(l && ret_line && ret_len);
        if (l->ended || l->skipping || l->len == 0)
                return 0;
        if (reserve(l, 0) < 0)
                return -ENOMEM;
        l->line[l->len] = '\0';
        l->ended = true;
        *ret_line = l->line;
        *ret_len = l->len;
        return 1;
}

int util_lines_read_fd(struct util_lines *l, int fd, const struct util_lines_ops *ops,
                       void *userdata)
{
        char chunk[65536];
        uint64_t total = 0;

        assert(l && ops && ops->line);
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof(chunk));
                const char *p = chunk, *line;
                size_t len;
                int r;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, -1);
                        continue;
                }
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                total += (uint64_t)n;
                if (l->input_max && total > l->input_max)
                        return -EFBIG;
                while ((r = util_lines_take(l, &p, chunk + n, &line, &len)) != 0) {
                        if (r == -EMSGSIZE)
                                r = ops->too_long ? ops->too_long(userdata) : -EMSGSIZE;
                        else if (r == 1)
                                r = ops->line(userdata, line, len);
                        if (r != 0)
                                return r;
                }
        }
}

uint64_t util_lines_at(const struct util_lines *l)
{
        assert(l);
        return l->begun && !l->ended ? l->lineno : l->lineno + 1;
}

void util_lines_free(struct util_lines *l)
{
        if (!l)
                return;
        free(l->line);
        l->line = NULL;
        l->len = l->cap = 0;
}
