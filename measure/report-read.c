/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sparkshim report's reader: bounded lines of untrusted report files, validated, summarised
 * into rows and totals. Nothing here trusts a value of the file: every member read is
 * checked for its type and range, every string printed is made printable.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lines.h"
#include "report-read.h"
#include "report-schema.h"
#include "util.h"

void shim_report_reader_init(struct shim_report_reader *r, FILE *out, bool as_json, bool all)
{
        *r = (struct shim_report_reader){
            .out = out,
            .as_json = as_json,
            .all = all,
            .line_max = SHIM_REPORT_LINE_MAX,
            .input_max = SHIM_REPORT_INPUT_MAX,
        };
}

/* ---------------------------------------------------------------- formatting */

/* doc.a.b(.c) as a number, NAN when absent or not a number */
static double number(json_t *doc, const char *a, const char *b, const char *c)
{
        json_t *v = json_object_get(json_object_get(doc, a), b);

        if (c)
                v = json_object_get(v, c);
        return json_is_number(v) ? json_number_value(v) : NAN;
}

static double member(json_t *obj, const char *key)
{
        json_t *v = json_object_get(obj, key);

        return json_is_number(v) ? json_number_value(v) : NAN;
}

static void human_bytes(double v, char *buf, size_t size)
{
        if (!isfinite(v))
                snprintf(buf, size, "-");
        else if (v >= 1024.0 * 1024 * 1024)
                snprintf(buf, size, "%.2fG", v / (1024.0 * 1024 * 1024));
        else if (v > 0 && v < 1024.0 * 1024)
                snprintf(buf, size, "%.0fK", v / 1024.0);
        else
                snprintf(buf, size, "%.0fM", v / (1024.0 * 1024));
}

static void fixed(double v, int decimals, char *buf, size_t size)
{
        if (isfinite(v) && fabs(v) < 1e15)
                snprintf(buf, size, "%.*f", decimals, v);
        else
                snprintf(buf, size, "-");
}

/* s as it may go to a terminal: control characters (a newline forges a row) become '?' */
static const char *printable(const char *s, char *buf, size_t size)
{
        size_t n = 0;

        for (; s && *s && n + 1 < size; s++, n++)
                buf[n] = (unsigned char)*s < ' ' || *s == 0x7f ? '?' : *s;
        buf[n] = '\0';
        return buf;
}

#define ROW_FORMAT "%-44s %8s %6s %9s %5s %8s %8s %5s %9s %4s %4s %-8s %s\n"

void shim_report_print_header(const struct shim_report_reader *r)
{
        fprintf(r->out, ROW_FORMAT, "EXECUTOR", "WALL_S", "CPU_RQ", "CPU_USED_S", "CPU_U", "MEM_RQ",
                "MEM_PEAK", "MEM_U", "OBJECTIVE", "OOM", "EXIT", "ENFORCED", "SPILLS");
}

/* One line per operator type the JVM agent made spill, below the executor's row. */
static void print_spills(FILE *out, json_t *doc)
{
        json_t *operators = json_object_get(json_object_get(doc, "agent"), "operators"), *op;
        size_t i;

        json_array_foreach(operators, i, op)
        {
                json_int_t forced = json_integer_value(json_object_get(op, "forced_spills"));
                json_int_t failed = json_integer_value(json_object_get(op, "failed_spills"));
                json_t *by = json_object_get(op, "forced_by"), *count;
                char released[16], modes[128] = "", spill[16], reaction[16], name[128], key[48];
                const char *mode;
                size_t used = 0;

                if (forced == 0 && failed == 0)
                        continue;
                json_object_foreach(by, mode, count)
                {
                        int n;

                        if (json_integer_value(count) <= 0 || used >= sizeof(modes))
                                continue;
                        n = snprintf(modes + used, sizeof(modes) - used,
                                     "%s%s %" JSON_INTEGER_FORMAT, used ? ", " : "",
                                     printable(mode, key, sizeof(key)), json_integer_value(count));
                        used += n > 0 ? (size_t)n : 0;
                }
                human_bytes(member(op, "released_bytes"), released, sizeof(released));
                fixed(member(op, "spill_seconds"), 3, spill, sizeof(spill));
                fixed(member(op, "reaction_max_seconds") * 1000.0, 1, reaction, sizeof(reaction));
                fprintf(out,
                        "  spills %s: %" JSON_INTEGER_FORMAT " forced%s%s%s, %" JSON_INTEGER_FORMAT
                        " failed, %s released, %s s spilling, reaction max %s ms\n",
                        printable(json_string_value(json_object_get(op, "operator")), name,
                                  sizeof(name)),
                        forced, used ? " (" : "", modes, used ? ")" : "", failed, released, spill,
                        reaction);
        }
}

static void add_spills(struct shim_report_totals *t, int64_t v)
{
        if (__builtin_add_overflow(t->spills, v, &t->spills)) {
                t->spills = INT64_MAX;
                t->spills_saturated = true;
        }
        t->have_spills = true;
}

/*
 * One row per report; only final reports are executors and add to the totals (a sample line
 * of --all is a row marked "(sample)": its figures are part of its executor's final report).
 */
static void print_row(struct shim_report_reader *r, json_t *doc, bool final)
{
        struct shim_report_totals *t = &r->totals;
        json_t *id = json_object_get(doc, "identity");
        const char *app = json_string_value(json_object_get(id, "app_id"));
        const char *exec = json_string_value(json_object_get(id, "executor_id"));
        /* the executor's cgroup name (--name), the label of a run without an app id */
        const char *cgroup_name = json_string_value(json_object_get(id, "name"));
        double wall = number(doc, "identity", "wall_seconds", NULL);
        double req_m = number(doc, "plan", "cpu", "request_millicores");
        double cpu = number(doc, "usage", "cpu", "seconds");
        double peak = number(doc, "usage", "memory", "peak_bytes");
        double req = number(doc, "plan", "memory", "request_bytes");
        double oom = number(doc, "usage", "memory", "oom_kills");
        double status = number(doc, "exit", "status", NULL);
        json_t *spills = json_object_get(json_object_get(doc, "spills"), "forced_spills");
        char forced[24] = "-", app_text[64], exec_text[32];
        char name[112], c1[16], c2[16], c3[16], m1[16], m2[16], m3[16], obj[16], w[16], ex[16];

        if (!(app && *app) && cgroup_name && *cgroup_name)
                app = cgroup_name, exec = NULL;
        snprintf(name, sizeof(name), "%s%s%s%s",
                 app && *app ? printable(app, app_text, sizeof(app_text)) : "-",
                 exec && *exec ? "/" : "", printable(exec, exec_text, sizeof(exec_text)),
                 final ? "" : " (sample)");
        fixed(wall, 1, w, sizeof(w));
        fixed(req_m / 1000.0, 2, c1, sizeof(c1));
        fixed(cpu, 1, c2, sizeof(c2));
        fixed(number(doc, "utilization", "cpu", NULL), 2, c3, sizeof(c3));
        human_bytes(req, m1, sizeof(m1));
        human_bytes(peak, m2, sizeof(m2));
        fixed(number(doc, "utilization", "memory", NULL), 2, m3, sizeof(m3));
        fixed(number(doc, "utilization", "objective", NULL), 2, obj, sizeof(obj));
        fixed(status, 0, ex, sizeof(ex));
        if (json_is_integer(spills)) {
                snprintf(forced, sizeof(forced), "%" JSON_INTEGER_FORMAT,
                         json_integer_value(spills));
                if (final)
                        add_spills(t, json_integer_value(spills));
        }
        if (!r->header_done)
                shim_report_print_header(r);
        r->header_done = true;
        fprintf(r->out, ROW_FORMAT, name, w, c1, c2, c3, m1, m2, m3, obj,
                isfinite(oom) ? (oom > 0 ? "yes" : "no") : "-", ex,
                json_is_true(json_object_get(json_object_get(doc, "enforcement"), "enforced"))
                    ? "yes"
                    : "no",
                forced);
        print_spills(r->out, doc);
        if (!final)
                return;
        if (isfinite(cpu) && isfinite(req_m) && isfinite(wall)) {
                t->cpu_seconds += cpu;
                t->cpu_capacity += req_m / 1000.0 * wall;
        }
        if (isfinite(peak) && isfinite(req)) {
                t->peak += peak;
                t->request += req;
        }
        t->oom += isfinite(oom) && oom > 0;
        t->executors++;
}

void shim_report_print_total(const struct shim_report_reader *r)
{
        const struct shim_report_totals *t = &r->totals;
        double cu = t->cpu_capacity > 0 ? t->cpu_seconds / t->cpu_capacity : NAN;
        double mu = t->request > 0 ? t->peak / t->request : NAN;
        char name[64], c2[16], c3[16], m2[16], m3[16], obj[16], oom[16], spills[32] = "-";

        snprintf(name, sizeof(name), "TOTAL (%u executors)", t->executors);
        fixed(t->cpu_seconds, 1, c2, sizeof(c2));
        fixed(cu, 2, c3, sizeof(c3));
        human_bytes(t->peak, m2, sizeof(m2));
        fixed(mu, 2, m3, sizeof(m3));
        fixed(cu > 0 && mu > 0 ? 1.0 / (cu * mu) : NAN, 2, obj, sizeof(obj));
        snprintf(oom, sizeof(oom), "%u", t->oom);
        if (t->have_spills)
                snprintf(spills, sizeof(spills), "%" PRId64 "%s", t->spills,
                         t->spills_saturated ? "+" : "");
        fprintf(r->out, ROW_FORMAT, name, "", "", c2, c3, "", m2, m3, obj, oom, "", "", spills);
}

/* ---------------------------------------------------------------- one line */

static bool count_ok(json_t *v)
{
        return !v || json_is_null(v) || (json_is_integer(v) && json_integer_value(v) >= 0);
}

/*
 * What the table reads beyond shim_report_validate(): spills.forced_spills and the agent's
 * operators (agent.operators[i].operator, forced_spills, failed_spills, forced_by).
 */
static int check_summarised_members(json_t *doc, struct util_error *err)
{
        json_t *spills = json_object_get(doc, "spills");
        json_t *agent = json_object_get(doc, "agent");
        json_t *operators = json_object_get(agent, "operators"), *op, *v;
        const char *key;
        size_t i;

        if (spills && !json_is_null(spills) && !json_is_object(spills))
                return util_error_set(err, EINVAL, "spills is not an object or null");
        if (!count_ok(json_object_get(spills, "forced_spills")))
                return util_error_set(err, EINVAL,
                                      "spills.forced_spills is not a non-negative integer");
        if (agent && !json_is_null(agent) && !json_is_object(agent))
                return util_error_set(err, EINVAL, "agent is not an object or null");
        if (operators && !json_is_null(operators) && !json_is_array(operators))
                return util_error_set(err, EINVAL, "agent.operators is not an array or null");
        json_array_foreach(operators, i, op)
        {
                const char *name = json_string_value(json_object_get(op, "operator"));
                json_t *by = json_object_get(op, "forced_by");

                if (!json_is_object(op))
                        return util_error_set(err, EINVAL, "agent.operators[%zu] is not an object",
                                              i);
                if (!name || !*name)
                        return util_error_set(
                            err, EINVAL, "agent.operators[%zu].operator is missing or not a name",
                            i);
                if (!count_ok(json_object_get(op, "forced_spills")) ||
                    !count_ok(json_object_get(op, "failed_spills")))
                        return util_error_set(
                            err, EINVAL,
                            "agent.operators[%zu]: forced_spills or failed_spills is "
                            "not a non-negative integer",
                            i);
                if (by && !json_is_null(by) && !json_is_object(by))
                        return util_error_set(err, EINVAL,
                                              "agent.operators[%zu].forced_by is not an object", i);
                json_object_foreach(by, key, v) if (!count_ok(v)) return util_error_set(
                    err, EINVAL,
                    "agent.operators[%zu].forced_by: a count is not a "
                    "non-negative integer",
                    i);
        }
        return 0;
}

static int emit_json(struct shim_report_reader *r, json_t *doc)
{
        _cleanup_free_ char *text = json_dumps(doc, JSON_COMPACT);

        if (!text)
                return -ENOMEM;
        fprintf(r->out, "%s\n", text);
        return 0;
}

int shim_report_reader_line(struct shim_report_reader *r, const char *line, size_t len,
                            struct util_error *err)
{
        json_t *doc;
        json_error_t jerr;
        const char *kind;
        size_t blank = 0;
        int ret;

        while (blank < len && strchr(" \t\r\n", line[blank]) && line[blank])
                blank++;
        if (blank == len)
                return 0;
        /* json_loadb: a NUL byte in the line is an error, not the end of the text */
        doc = json_loadb(line, len, 0, &jerr);
        if (!doc)
                return util_error_set(err, EINVAL, "not JSON: %s (column %d)", jerr.text,
                                      jerr.column);
        if (shim_report_validate(doc, err) < 0 || check_summarised_members(doc, err) < 0) {
                char why[UTIL_ERROR_TEXT_MAX];

                snprintf(why, sizeof(why), "%s", err ? err->text : "");
                ret = util_error_set(err, EINVAL, "not a %s report: %s", REPORT_SCHEMA, why);
                goto out;
        }
        kind = json_string_value(json_object_get(doc, "kind"));
        ret = 0;
        if (!r->all && strcmp(kind, "final") != 0)
                goto out;
        if (r->as_json) {
                ret = emit_json(r, doc);
                if (ret < 0) {
                        util_error_set(err, ENOMEM, "out of memory");
                        goto out;
                }
        } else {
                print_row(r, doc, strcmp(kind, "final") == 0);
        }
        r->taken++;
        ret = 1;
out:
        json_decref(doc);
        return ret;
}

/* ---------------------------------------------------------------- files */

int shim_report_open(const char *path, struct util_error *err)
{
        struct stat st;
        int fd, ret;

        if (strcmp(path, "-") == 0) {
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return util_error_set(err, errno, "standard input: %s", strerror(errno));
                return fd;
        }
        /*
         * O_NONBLOCK: a FIFO without a writer must not block the open; it is refused below.
         * O_NOFOLLOW: root runs this over files of the job's users (the report directory of
         * a template), and reads no file that a symlink names.
         */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0 && errno == ELOOP)
                return util_error_set(err, ELOOP,
                                      "%s: a symbolic link (refused): root reads no file a link "
                                      "names; give the file itself",
                                      path);
        if (fd < 0)
                return util_error_set(err, errno, "%s: cannot open: %s", path, strerror(errno));
        if (fstat(fd, &st) < 0)
                ret = util_error_set(err, errno, "%s: cannot stat: %s", path, strerror(errno));
        else if (S_ISDIR(st.st_mode))
                ret = util_error_set(err, EISDIR, "%s: is a directory, not a report file", path);
        else if (!S_ISREG(st.st_mode))
                ret =
                    util_error_set(err, EINVAL,
                                   "%s: is a %s, not a regular file; give a report file, or - for "
                                   "standard input",
                                   path,
                                   S_ISFIFO(st.st_mode)   ? "FIFO"
                                   : S_ISCHR(st.st_mode)  ? "character device"
                                   : S_ISBLK(st.st_mode)  ? "block device"
                                   : S_ISSOCK(st.st_mode) ? "socket"
                                                          : "special file");
        else
                return fd;
        close(fd);
        return ret;
}

static void warn_line(struct shim_report_reader *r, unsigned *warned, const char *path,
                      unsigned lineno, const char *what)
{
        r->bad_lines++;
        if (++*warned <= SHIM_REPORT_WARNINGS_MAX)
                log_warn("%s:%u: %s; skipped", path, lineno, what);
        if (*warned == SHIM_REPORT_WARNINGS_MAX + 1)
                log_warn("%s: more bad lines; no more named", path);
}

struct reading {
        struct shim_report_reader *r;
        const char *path;
        struct util_lines lines;
        unsigned warned;
        struct util_error *err;
};

static int take_line(void *userdata, const char *line, size_t len)
{
        struct reading *rd = userdata;
        struct util_error bad = {0};
        unsigned lineno = (unsigned)rd->lines.lineno;
        int ret = shim_report_reader_line(rd->r, line, len, &bad);

        if (ret == -ENOMEM)
                return util_error_set(rd->err, ENOMEM, "%s:%u: out of memory", rd->path, lineno);
        if (ret < 0)
                warn_line(rd->r, &rd->warned, rd->path, lineno, bad.text);
        return 0;
}

static int skip_long_line(void *userdata)
{
        struct reading *rd = userdata;
        char what[96];

        snprintf(what, sizeof(what), "line longer than %zu bytes", rd->r->line_max);
        warn_line(rd->r, &rd->warned, rd->path, (unsigned)rd->lines.lineno, what);
        return 0;
}

int shim_report_reader_fd(struct shim_report_reader *r, int fd, const char *path,
                          struct util_error *err)
{
        static const struct util_lines_ops ops = {.line = take_line, .too_long = skip_long_line};
        struct reading rd = {
            .r = r,
            .path = path,
            .lines = {.line_max = r->line_max, .input_max = r->input_max},
            .err = err,
        };
        const char *line;
        size_t len;
        int ret;

        ret = util_lines_read_fd(&rd.lines, fd, &ops, &rd);
        /* a last line without its newline */
        if (ret == 0 && util_lines_rest(&rd.lines, &line, &len) > 0)
                ret = take_line(&rd, line, len);
        util_lines_free(&rd.lines);
        if (ret == -EFBIG)
                return util_error_set(err, EFBIG,
                                      "%s: longer than %" PRIu64 " bytes; stopped at line %u", path,
                                      r->input_max, (unsigned)util_lines_at(&rd.lines));
        if (ret == -ENOMEM && (!err || err->error != ENOMEM))
                return util_error_set(err, ENOMEM, "%s:%u: out of memory", path,
                                      (unsigned)util_lines_at(&rd.lines));
        if (ret < 0 && ret != -ENOMEM)
                return util_error_set(err, -ret, "%s:%u: read error: %s", path,
                                      (unsigned)util_lines_at(&rd.lines), strerror(-ret));
        return ret;
}
