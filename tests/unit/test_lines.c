/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common/lines.h: the bounded line reader of report files and event logs. Every input is cut
 * into every pair of chunks, so a line split across reads is read as one.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lines.h"
#include "util.h"

struct got {
        char text[512]; /* the lines joined by '|', a refused one as '#<lineno>' */
        unsigned lines;
        uint64_t last_start;
};

/* Take all of s cut at cut, then the rest; the last line without '\n' as '<line>$'. */
static int take_all(size_t line_max, const char *s, size_t cut, struct got *g)
{
        struct util_lines l = {.line_max = line_max};
        const char *parts[2][2] = {{s, s + cut}, {s + cut, s + strlen(s)}};
        const char *line;
        size_t len;
        int r = 0;

        memset(g, 0, sizeof(*g));
        for (int k = 0; k < 2; k++) {
                const char *p = parts[k][0];

                while ((r = util_lines_take(&l, &p, parts[k][1], &line, &len)) != 0) {
                        size_t used = strlen(g->text);

                        if (r == -EMSGSIZE) {
                                snprintf(g->text + used, sizeof(g->text) - used, "#%u|",
                                         (unsigned)l.lineno);
                                continue;
                        }
                        cr_assert_eq(r, 1);
                        cr_assert_eq(strlen(line), len, "NUL-terminated at its length");
                        cr_assert_eq(l.line_start + len + 1, l.done);
                        snprintf(g->text + used, sizeof(g->text) - used, "%s|", line);
                        g->lines++;
                        g->last_start = l.line_start;
                }
        }
        if (util_lines_rest(&l, &line, &len) == 1) {
                size_t used = strlen(g->text);

                snprintf(g->text + used, sizeof(g->text) - used, "%s$", line);
                g->lines++;
        }
        cr_assert_eq(util_lines_rest(&l, &line, &len), 0, "the rest is given once");
        util_lines_free(&l);
        return r;
}

Test(lines, every_cut_reads_the_same)
{
        static const struct {
                size_t line_max;
                const char *in, *want;
        } cases[] = {
            {8, "", ""},
            {8, "a\n", "a|"},
            {8, "a\nbc\n\nd", "a|bc||d$"},
            {4, "abcd\nabcde\nx\n", "abcd|#2|x|"}, /* line_max exactly, then one more */
            {4, "abcdefghij\nk", "#1|k$"},         /* a long line cut anywhere */
            {4, "abcdefghij", "#1|"},              /* a long last line is no line */
            {1, "\n\n\n", "|||"},
            {3, "ab\ncdef\ngh\nijkl\n", "ab|#2|gh|#4|"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                for (size_t cut = 0; cut <= strlen(cases[i].in); cut++) {
                        struct got g;

                        take_all(cases[i].line_max, cases[i].in, cut, &g);
                        cr_expect_str_eq(g.text, cases[i].want, "case %zu cut at %zu", i, cut);
                }
}

Test(lines, offsets_count_from_where_the_caller_resumes)
{
        struct util_lines l = {.line_max = 16, .offset = 100, .done = 100};
        const char *in = "ab\ncd\nef", *p = in, *line;
        size_t len;

        cr_assert_eq(util_lines_take(&l, &p, in + strlen(in), &line, &len), 1);
        cr_expect_eq(l.line_start, 100);
        cr_expect_eq(l.done, 103);
        cr_assert_eq(util_lines_take(&l, &p, in + strlen(in), &line, &len), 1);
        cr_expect_eq(l.line_start, 103);
        cr_expect_eq(l.done, 106);
        cr_expect_eq(l.lineno, 2);
        cr_expect_eq(util_lines_at(&l), 3, "after a whole line, the next");
        cr_assert_eq(util_lines_take(&l, &p, in + strlen(in), &line, &len), 0);
        cr_expect_eq(l.done, 106, "a line without its newline is not done");
        cr_expect_eq(l.offset, 108);
        cr_expect_eq(util_lines_at(&l), 3, "within a line, that line");
        util_lines_free(&l);
}

struct counting {
        unsigned lines, long_lines;
        int stop_at;
};

static int count_line(void *userdata, const char *line, size_t len)
{
        struct counting *c = userdata;

        c->lines++;
        return c->stop_at && (int)c->lines == c->stop_at ? 42 : 0;
}

static int count_long(void *userdata)
{
        struct counting *c = userdata;

        c->long_lines++;
        return 0;
}

/* A pipe holding text, read end returned. */
static int pipe_with(const char *text)
{
        int fds[2];

        cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
        cr_assert_eq(write(fds[1], text, strlen(text)), (ssize_t)strlen(text));
        close(fds[1]);
        return fds[0];
}

Test(lines, read_fd_bounds)
{
        static const struct util_lines_ops skip = {.line = count_line, .too_long = count_long};
        static const struct util_lines_ops strict = {.line = count_line};
        struct counting c = {0};
        struct util_lines l = {.line_max = 4};
        int fd;

        fd = pipe_with("ab\nabcdefg\ncd\nrest");
        cr_expect_eq(util_lines_read_fd(&l, fd, &skip, &c), 0);
        cr_expect_eq(c.lines, 2);
        cr_expect_eq(c.long_lines, 1);
        cr_expect_eq(l.lineno, 4, "the last line begun");
        close(fd);
        util_lines_free(&l);

        l = (struct util_lines){.line_max = 4};
        c = (struct counting){0};
        fd = pipe_with("ab\nabcdefg\ncd\n");
        cr_expect_eq(util_lines_read_fd(&l, fd, &strict, &c), -EMSGSIZE);
        cr_expect_eq(l.lineno, 2);
        close(fd);
        util_lines_free(&l);

        l = (struct util_lines){.line_max = 4, .input_max = 5};
        c = (struct counting){0};
        fd = pipe_with("ab\ncd\n");
        cr_expect_eq(util_lines_read_fd(&l, fd, &skip, &c), -EFBIG);
        cr_expect_eq(util_lines_at(&l), 1, "stopped at line %u", (unsigned)util_lines_at(&l));
        close(fd);
        util_lines_free(&l);

        l = (struct util_lines){.line_max = 4};
        c = (struct counting){.stop_at = 2};
        fd = pipe_with("a\nb\nc\n");
        cr_expect_eq(util_lines_read_fd(&l, fd, &skip, &c), 42, "a callback stops the read");
        cr_expect_eq(c.lines, 2);
        close(fd);
        util_lines_free(&l);
}
