/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading report files for `sparkshim report` (sparkshim(1)): JSON lines of schema
 * sparkshim.report/v1, written by any number of runs and so not trusted. Lines are read
 * with a bounded length and a bounded total; each valid final report becomes a row of the
 * table (or a JSON line with --json) and adds to the totals, which saturate instead of
 * overflowing. A bad line is named (file:line) and skipped; reading goes on.
 *
 * Not thread-safe; one reader per `sparkshim report`.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "shim-common.h"

/* A longer line is skipped (never held in memory); a longer file or stream is an error. */
#define SHIM_REPORT_LINE_MAX  ((size_t)16 * 1024 * 1024)
#define SHIM_REPORT_INPUT_MAX ((uint64_t)16 * 1024 * 1024 * 1024)
/* bad lines named per file; the rest are counted */
#define SHIM_REPORT_WARNINGS_MAX 100

struct shim_report_totals {
        double cpu_seconds, cpu_capacity, peak, request;
        unsigned executors, oom;
        int64_t spills; /* saturated at INT64_MAX */
        bool have_spills, spills_saturated;
};

struct shim_report_reader {
        FILE *out;          /* rows or JSON lines go here */
        bool as_json;       /* re-emit the reports instead of the table */
        bool all;           /* sample lines too, not only final reports */
        size_t line_max;    /* SHIM_REPORT_LINE_MAX unless a test says otherwise */
        uint64_t input_max; /* SHIM_REPORT_INPUT_MAX likewise */
        unsigned taken;     /* reports summarised or re-emitted */
        unsigned bad_lines;
        bool header_done; /* the table's header is printed before the first row */
        struct shim_report_totals totals;
};

void shim_report_reader_init(struct shim_report_reader *r, FILE *out, bool as_json, bool all);

/*
 * One line of a report file (without its newline; need not be NUL-terminated). Returns 1
 * when it was taken (a row printed, or the JSON re-emitted), 0 when it is blank or a
 * sample without `all`, -EINVAL for a line that is not a valid report (err says why), or
 * -ENOMEM.
 */
int shim_report_reader_line(struct shim_report_reader *r, const char *line, size_t len,
                            struct util_error *err);

/*
 * Every line of an open fd, named path in messages; bad and over-long lines are logged
 * (path:line: what is wrong) and skipped. Returns 0, or -errno with err filled: -EFBIG
 * past input_max, a read error.
 */
int shim_report_reader_fd(struct shim_report_reader *r, int fd, const char *path,
                          struct util_error *err);

/*
 * Open a report file to read: "-" is standard input (whatever it is); anything else must
 * be a regular file (opened O_NONBLOCK so that a FIFO cannot block, then refused) and not
 * a symbolic link (O_NOFOLLOW). Returns an fd (O_CLOEXEC) or -errno with err filled:
 * -ELOOP (a symlink), -EISDIR, -EINVAL (not a regular file), open errors.
 */
int shim_report_open(const char *path, struct util_error *err);

void shim_report_print_header(const struct shim_report_reader *r);
/* The TOTAL row (after the rows; the header comes with the first row). */
void shim_report_print_total(const struct shim_report_reader *r);
