/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JVMTI agent in `sparkshim run`: injection into the launch and the statistics it
 * leaves. The option string follows sparkshim-agent(7); the statistics file is the agent's
 * JSON lines (jvmagent/stats.c), replaced as a whole by the agent at each interval.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject.h"
#include "util.h"


const char *shim_agent_method_name(enum shim_agent_method m)
{
        switch (m) {
        case SHIM_AGENT_METHOD_AGENTPATH:
                return "agentpath";
        case SHIM_AGENT_METHOD_JAVA_TOOL_OPTIONS:
                return "java_tool_options";
        case SHIM_AGENT_METHOD_NONE:
        default:
                return NULL;
        }
}

static const char *base_name(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

bool shim_agent_is_java_launcher(const char *argv0)
{
        return argv0 && strcmp(base_name(argv0), "java") == 0;
}

int shim_agent_choose_method(enum policy_agent_injection injection, const char *argv0,
                             enum shim_agent_method *ret)
{
        switch (injection) {
        case POLICY_AGENT_INJECT_AGENTPATH:
                if (!shim_agent_is_java_launcher(argv0))
                        return -EINVAL;
                *ret = SHIM_AGENT_METHOD_AGENTPATH;
                return 0;
        case POLICY_AGENT_INJECT_JAVA_TOOL_OPTIONS:
                *ret = SHIM_AGENT_METHOD_JAVA_TOOL_OPTIONS;
                return 0;
        case POLICY_AGENT_INJECT_AUTO:
        default:
                *ret = shim_agent_is_java_launcher(argv0) ? SHIM_AGENT_METHOD_AGENTPATH
                                                          : SHIM_AGENT_METHOD_JAVA_TOOL_OPTIONS;
                return 0;
        }
}

/* ---------------------------------------------------------------- an agent already there */

static bool same_file(const char *a, const char *b)
{
        struct stat sa, sb;

        return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
               sa.st_ino == sb.st_ino;
}

/* The value of key= among the comma-separated options, copied to ret ("" when absent). */
static void option_value(const char *options, const char *key, char *ret, size_t size)
{
        size_t klen = strlen(key);

        ret[0] = '\0';
        for (const char *p = options; p && *p;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);

                if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=')
                        snprintf(ret, size, "%.*s", (int)(len - klen - 1), p + klen + 1);
                p = end ? end + 1 : NULL;
        }
}

/* Does one JVM argument load a sparkshim agent? Its options (after '=') in *ret_options. */
static bool loads_agent(const char *arg, const char *agent_path, const char **ret_options)
{
        const char *lib, *eq;
        char file[4096];
        size_t len;

        /*
         * Only the policy's own file is the agent (a stat of the user's path opens nothing).
         * A library of the same name elsewhere, or -agentlib:, which the JVM looks up on a
         * path the user chooses, is some other library as far as the policy is concerned.
         */
        if (strncmp(arg, "-agentpath:", 11) != 0 || !agent_path)
                return false;
        lib = arg + 11;
        eq = strchr(lib, '=');
        len = eq ? (size_t)(eq - lib) : strlen(lib);
        if (len == 0 || len >= sizeof(file))
                return false;
        memcpy(file, lib, len);
        file[len] = '\0';
        if (!same_file(file, agent_path))
                return false;
        *ret_options = eq ? eq + 1 : "";
        return true;
}

/*
 * The next word of a JVM option variable as the JVM splits it: blanks separate, single or
 * double quotes group. Returns a pointer past it, or NULL at the end.
 */
static const char *next_word(const char *p, char *word, size_t size)
{
        size_t n = 0;
        char quote = 0;

        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
                p++;
        if (!*p)
                return NULL;
        for (; *p; p++) {
                if (quote) {
                        if (*p == quote) {
                                quote = 0;
                                continue;
                        }
                } else if (*p == '\'' || *p == '"') {
                        quote = *p;
                        continue;
                } else if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
                        break;
                }
                if (n + 1 < size)
                        word[n++] = *p;
        }
        word[n] = '\0';
        return p;
}

static const char *env_value(char *const envp[], const char *name)
{
        size_t n = strlen(name);

        for (size_t i = 0; envp && envp[i]; i++)
                if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
                        return envp[i] + n + 1;
        return NULL;
}

int shim_agent_find_loaded(const char *agent_path, char *const argv[], char *const envp[],
                           char *ret_where, size_t where_size, char *ret_stats,
                           size_t stats_size)
{
        static const char *const variables[] = { "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS",
                                                  "_JAVA_OPTIONS" };
        const char *options;

        for (size_t i = 1; argv && argv[0] && argv[i]; i++) {
                if (loads_agent(argv[i], agent_path, &options)) {
                        snprintf(ret_where, where_size, "argv[%zu]", i);
                        option_value(options, "stats", ret_stats, stats_size);
                        return 1;
                }
        }
        for (size_t v = 0; v < ELEMENTSOF(variables); v++) {
                const char *value = env_value(envp, variables[v]);
                _cleanup_free_ char *word = NULL;

                if (!value)
                        continue;
                word = malloc(strlen(value) + 1);
                if (!word)
                        return -ENOMEM;
                for (const char *p = value; (p = next_word(p, word, strlen(value) + 1));) {
                        if (loads_agent(word, agent_path, &options)) {
                                snprintf(ret_where, where_size, "%s", variables[v]);
                                option_value(options, "stats", ret_stats, stats_size);
                                return 1;
                        }
                }
        }
        /* Spark's Kubernetes pod: each SPARK_JAVA_OPT_<n> is one argument of the JVM */
        for (size_t i = 0; envp && envp[i]; i++) {
                const char *eq = strchr(envp[i], '=');

                if (strncmp(envp[i], "SPARK_JAVA_OPT_", 15) != 0 || !eq)
                        continue;
                if (loads_agent(eq + 1, agent_path, &options)) {
                        snprintf(ret_where, where_size, "%.*s", (int)(eq - envp[i]), envp[i]);
                        option_value(options, "stats", ret_stats, stats_size);
                        return 1;
                }
        }
        return 0;
}

/* ---------------------------------------------------------------- the option string */

bool shim_agent_option_path_ok(const char *s)
{
        if (!s || s[0] != '/')
                return false;
        for (const char *c = s; *c; c++)
                if ((unsigned char)*c <= ' ' || *c == 0x7f || strchr("\"',\\", *c))
                        return false;
        return true;
}

struct appender {
        char *buf;
        size_t size, used;
        bool overflow;
};

__attribute__((format(printf, 2, 3))) static void append(struct appender *a, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (a->overflow)
                return;
        va_start(ap, fmt);
        n = vsnprintf(a->buf + a->used, a->size - a->used, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= a->size - a->used) {
                a->overflow = true;
                return;
        }
        a->used += (size_t)n;
}

static void append_u64(struct appender *a, const char *key, uint64_t v)
{
        append(a, "%s%s=%" PRIu64, a->used ? "," : "", key, v);
}

/* The agent wants a decimal point in a fraction: 1 is "1.0", 0.25 "0.25". */
static void append_fraction(struct appender *a, const char *key, double v)
{
        char text[32];
        size_t n;

        snprintf(text, sizeof(text), "%.6f", v);
        n = strlen(text);
        while (n > 0 && text[n - 1] == '0' && text[n - 2] != '.')
                text[--n] = '\0';
        append(a, "%s%s=%s", a->used ? "," : "", key, text);
}

int shim_agent_options(const struct shim_agent_params *p, char *buf, size_t size)
{
        const struct policy_agent *agent = p->agent;
        struct appender a = { .buf = buf, .size = size };

        if (size == 0)
                return -ENAMETOOLONG;
        buf[0] = '\0';
        if ((p->cgroup_dir && !shim_agent_option_path_ok(p->cgroup_dir)) ||
            (p->stats_path && !shim_agent_option_path_ok(p->stats_path)))
                return -EINVAL;
        if (agent->force_bytes)
                append_u64(&a, "force-bytes", agent->force_bytes);
        if (agent->periodic_bytes)
                append_u64(&a, "periodic", agent->periodic_bytes);
        if (agent->allow_bytes)
                append_u64(&a, "allow-bytes", agent->allow_bytes);
        if (agent->allow_fraction > 0)
                append_fraction(&a, "allow-fraction", agent->allow_fraction);
        if (agent->records)
                append_u64(&a, "records", agent->records);
        if (p->threshold_bytes)
                append_u64(&a, "threshold", p->threshold_bytes);
        if (p->limit_bytes && p->request_bytes <= p->limit_bytes) {
                append_u64(&a, "limit", p->limit_bytes);
                if (p->request_bytes)
                        append_u64(&a, "request", p->request_bytes);
        }
        append_u64(&a, "cooldown-ms", agent->cooldown_ms);
        if (agent->min_spill_bytes)
                append_u64(&a, "min-spill", agent->min_spill_bytes);
        append_u64(&a, "max-spills", agent->max_spills);
        if (agent->psi_stall_ms) {
                append_u64(&a, "psi-stall-ms", agent->psi_stall_ms);
                append_u64(&a, "psi-window-ms", agent->psi_window_ms);
        }
        if (agent->heap_threshold > 0)
                append_fraction(&a, "heap-threshold", agent->heap_threshold);
        if (p->cgroup_dir)
                append(&a, ",cgroup=%s", p->cgroup_dir);
        if (p->stats_path) {
                append(&a, ",stats=%s", p->stats_path);
                append_u64(&a, "stats-interval", p->stats_interval_seconds);
        }
        append(&a, ",log=%s", policy_agent_log_name(agent->log));
        if (a.overflow) {
                buf[0] = '\0';
                return -ENAMETOOLONG;
        }
        return 0;
}

char **shim_agent_argv(char *const argv[], const char *arg)
{
        size_t n = 0;
        char **out;

        while (argv[n])
                n++;
        out = calloc(n + 2, sizeof(*out));
        if (!out)
                return NULL;
        out[0] = argv[0];
        out[1] = (char *)arg;
        for (size_t i = 1; i < n; i++)
                out[i + 1] = argv[i];
        out[n + 1] = NULL;
        return out;
}

char *shim_agent_java_tool_options(const char *existing, const char *arg)
{
        char *value = NULL;

        /* the JVM splits at blanks: trailing ones in the old value need no second one */
        if (!existing || !existing[strspn(existing, " \t\n\r")])
                return strdup(arg);
        if (asprintf(&value, "%s%s%s", existing,
                     strchr(" \t\n\r", existing[strlen(existing) - 1]) ? "" : " ", arg) < 0)
                return NULL;
        return value;
}

/* ---------------------------------------------------------------- the statistics */

/* json_object_set_new() steals value even when it fails */
static void put(json_t *obj, const char *key, json_t *value, bool *ok)
{
        if (!value || json_object_set_new(obj, key, value) < 0)
                *ok = false;
}

static json_t *string_or_null(const char *s)
{
        return s && *s ? json_string(s) : json_null();
}

/* A non-negative integer member, or -1 when absent or of another type. */
static int64_t member_u64(json_t *obj, const char *key)
{
        json_t *v = json_object_get(obj, key);

        return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v)
                                                                 : -1;
}

struct totals {
        int64_t forced, failed, empty, released, spill_ns, reactions, reaction_ns,
                reaction_ns_max, decision_ns, capped;
        unsigned operators;
};

/* One "operator" record as the report's operator object; NULL when a field is missing. */
static json_t *operator_json(json_t *rec, struct totals *t)
{
        static const char *const counters[] = {
                "calls",          "requested_bytes", "forced_spills",     "empty_spills",
                "failed_spills",  "released_bytes",  "spill_ns_total",    "spill_ns_max",
                "reactions",      "reaction_ns_total", "reaction_ns_max",
        };
        int64_t v[ELEMENTSOF(counters)], denials = member_u64(rec, "denials");
        /* statistics of older agent builds have no decision latency: null then */
        int64_t decision = member_u64(rec, "decision_ns_total");
        int64_t decision_max = member_u64(rec, "decision_ns_max");
        /* and none of max-spills */
        int64_t capped = member_u64(rec, "capped");
        json_t *by = json_object_get(rec, "forced_by"), *by_out, *count, *out;
        const char *name = json_string_value(json_object_get(rec, "operator")), *reason;

        if (!name || !json_is_object(by))
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(counters); i++)
                if ((v[i] = member_u64(rec, counters[i])) < 0)
                        return NULL;
        /* the agent's mode names (force-bytes, periodic, pressure) in the report's spelling */
        by_out = json_object();
        json_object_foreach (by, reason, count) {
                char key[64];

                if (!json_is_integer(count) || json_integer_value(count) < 0 ||
                    strlen(reason) >= sizeof(key)) {
                        json_decref(by_out);
                        return NULL;
                }
                snprintf(key, sizeof(key), "%s", reason);
                for (char *c = key; *c; c++)
                        if (*c == '-')
                                *c = '_';
                if (!by_out || json_object_set(by_out, key, count) < 0) {
                        json_decref(by_out);
                        return NULL;
                }
        }
        t->forced += v[2];
        t->empty += v[3];
        t->failed += v[4];
        t->released += v[5];
        t->spill_ns += v[6];
        t->reactions += v[8];
        t->reaction_ns += v[9];
        if (v[10] > t->reaction_ns_max)
                t->reaction_ns_max = v[10];
        if (decision > 0)
                t->decision_ns += decision;
        if (capped > 0)
                t->capped += capped;
        t->operators++;
        out = json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:f, s:f, s:I,"
                         " s:f, s:f}",
                         "operator", name, "calls", (json_int_t)v[0], "requested_bytes",
                         (json_int_t)v[1], "forced_spills", (json_int_t)v[2], "forced_by", by_out,
                         "denials", denials >= 0 ? json_integer((json_int_t)denials) : json_null(),
                         "empty_spills", (json_int_t)v[3],
                         "failed_spills", (json_int_t)v[4], "released_bytes", (json_int_t)v[5],
                         "spill_seconds", (double)v[6] / 1e9, "spill_max_seconds",
                         (double)v[7] / 1e9, "reactions", (json_int_t)v[8], "reaction_seconds",
                         (double)v[9] / 1e9, "reaction_max_seconds", (double)v[10] / 1e9);
        if (out && (json_object_set_new(out, "decision_seconds",
                                        decision >= 0 ? json_real((double)decision / 1e9)
                                                      : json_null()) < 0 ||
                    json_object_set_new(out, "decision_max_seconds",
                                        decision_max >= 0 ? json_real((double)decision_max / 1e9)
                                                          : json_null()) < 0 ||
                    json_object_set_new(out, "capped",
                                        capped >= 0 ? json_integer((json_int_t)capped)
                                                    : json_null()) < 0)) {
                json_decref(out);
                return NULL;
        }
        return out;
}

static json_t *hook_json(json_t *rec)
{
        const char *name = json_string_value(json_object_get(rec, "hook"));
        const char *state = json_string_value(json_object_get(rec, "state"));
        const char *reason = json_string_value(json_object_get(rec, "reason"));

        if (!name || !state)
                return NULL;
        return json_pack("{s:s, s:s, s:o}", "hook", name, "state", state, "reason",
                         string_or_null(reason));
}

static json_t *pressure_json(json_t *rec)
{
        static const char *const counters[] = { "anon_bytes", "peak_anon_bytes", "threshold_bytes",
                                                "crossings", "read_errors" };
        const char *source = json_string_value(json_object_get(rec, "source"));
        const char *path = json_string_value(json_object_get(rec, "path"));
        json_t *under = json_object_get(rec, "under_pressure");
        int64_t v[ELEMENTSOF(counters)], execution = member_u64(rec, "execution_memory_bytes");

        if (!source || !path || !json_is_boolean(under))
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(counters); i++)
                if ((v[i] = member_u64(rec, counters[i])) < 0)
                        return NULL;
        return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:b, s:I, s:o}", "source", source, "path",
                         path, "anon_bytes", (json_int_t)v[0], "peak_anon_bytes",
                         (json_int_t)v[1], "threshold_bytes", (json_int_t)v[2], "crossings",
                         (json_int_t)v[3], "under_pressure", json_is_true(under), "read_errors",
                         (json_int_t)v[4], "execution_memory_bytes",
                         execution > 0 ? json_integer((json_int_t)execution) : json_null());
}

/* The whole file into a NUL-terminated buffer; -errno (-EFBIG above the limit). */
static int read_stats(const char *path, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        buf = malloc(SHIM_AGENT_STATS_MAX + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(fd, buf + len, SHIM_AGENT_STATS_MAX + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > SHIM_AGENT_STATS_MAX)
                        return -EFBIG;
        }
        buf[len] = '\0';
        *ret = buf;
        buf = NULL;
        *ret_len = len;
        return 0;
}

/*
 * Fill the statistics members of obj from the file: "stats", "hooks", "pressure",
 * "operators", "totals".
 */
static void merge_stats(json_t *obj, const char *path, bool *ok)
{
        _cleanup_free_ char *text = NULL;
        json_t *hooks = json_array(), *operators = json_array(), *pressure = NULL;
        json_t *agent_rec = NULL;
        struct totals t = { 0 };
        char error[256] = "";
        const char *status;
        unsigned lineno = 0, bad = 0;
        size_t len = 0;
        int r;

        if (!hooks || !operators) {
                json_decref(hooks);
                json_decref(operators);
                *ok = false;
                return;
        }
        r = path && *path ? read_stats(path, &text, &len) : -ENODATA;
        if (r == -ENODATA) {
                status = "none";
        } else if (r == -ENOENT) {
                status = "missing";
                snprintf(error, sizeof(error), "%s: %s", path, strerror(-r));
        } else if (r == -ENOMEM) {
                *ok = false;
                status = "unreadable";
        } else if (r < 0) {
                status = "unreadable";
                snprintf(error, sizeof(error), "%s: %s", path,
                         r == -EINVAL  ? "not a regular file"
                         : r == -EFBIG ? "larger than 1 MiB"
                                       : strerror(-r));
        } else {
                for (char *line = text, *next; line && *line; line = next) {
                        json_error_t jerr;
                        json_t *rec, *item = NULL;
                        const char *kind;

                        next = strchr(line, '\n');
                        if (next)
                                *next++ = '\0';
                        lineno++;
                        if (!line[strspn(line, " \t\r")])
                                continue;
                        rec = json_loads(line, 0, &jerr);
                        kind = json_string_value(json_object_get(rec, "record"));
                        if (kind && strcmp(kind, "agent") == 0) {
                                json_decref(agent_rec);
                                agent_rec = json_incref(rec);
                                item = json_null(); /* taken */
                        } else if (kind && strcmp(kind, "hook") == 0) {
                                item = hook_json(rec);
                                if (item && json_array_append_new(hooks, item) < 0)
                                        *ok = false;
                        } else if (kind && strcmp(kind, "pressure") == 0) {
                                item = pressure_json(rec);
                                if (item) {
                                        json_decref(pressure);
                                        pressure = item;
                                }
                        } else if (kind && strcmp(kind, "operator") == 0) {
                                item = operator_json(rec, &t);
                                if (item && json_array_append_new(operators, item) < 0)
                                        *ok = false;
                        } else if (kind) {
                                item = json_null(); /* a newer agent's record: not ours to judge */
                        }
                        if (!item && bad++ == 0)
                                snprintf(error, sizeof(error), "%s:%u: %s", path, lineno,
                                         !rec    ? "not JSON"
                                         : !kind ? "not an agent record"
                                                 : "a record with missing or malformed fields");
                        json_decref(rec);
                }
                if (!agent_rec && bad == 0)
                        snprintf(error, sizeof(error), "%s: %s", path,
                                 lineno == 0 ? "empty" : "no \"agent\" record");
                status = agent_rec && bad == 0 ? "ok" : "partial";
        }

        {
                json_t *final = json_object_get(agent_rec, "final");
                json_t *pid = json_object_get(agent_rec, "pid");
                const char *version = json_string_value(json_object_get(agent_rec, "version"));

                put(obj, "stats",
                    json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:I}", "file", string_or_null(path),
                              "status", status, "error", string_or_null(error), "final",
                              json_is_boolean(final) ? json_boolean(json_is_true(final))
                                                     : json_null(),
                              "pid", json_is_integer(pid) ? json_copy(pid) : json_null(),
                              "version", string_or_null(version), "invalid_lines",
                              (json_int_t)bad),
                    ok);
        }
        json_decref(agent_rec);
        put(obj, "hooks", hooks, ok);
        put(obj, "pressure", pressure ? pressure : json_null(), ok);
        put(obj, "operators", operators, ok);
        if (strcmp(status, "ok") == 0 || strcmp(status, "partial") == 0)
                put(obj, "totals",
                    json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:f, s:f, s:f, s:I}",
                              "operators",
                              (json_int_t)t.operators, "forced_spills", (json_int_t)t.forced,
                              "failed_spills", (json_int_t)t.failed, "empty_spills",
                              (json_int_t)t.empty, "released_bytes", (json_int_t)t.released,
                              "spill_seconds", (double)t.spill_ns / 1e9, "reactions",
                              (json_int_t)t.reactions, "reaction_seconds",
                              (double)t.reaction_ns / 1e9, "reaction_max_seconds",
                              (double)t.reaction_ns_max / 1e9, "decision_seconds",
                              (double)t.decision_ns / 1e9, "capped", (json_int_t)t.capped),
                    ok);
        else
                put(obj, "totals", json_null(), ok);
}

json_t *shim_agent_report_json(const struct shim_agent_run *run)
{
        const char *method = shim_agent_method_name(run->method);
        json_t *obj;
        bool ok = true;

        obj = json_pack("{s:b, s:b, s:o, s:o, s:o, s:o, s:o, s:o}", "enabled", run->enabled,
                        "injected", run->injected, "reason", string_or_null(run->reason),
                        "method", string_or_null(method), "path", string_or_null(run->path),
                        "options", string_or_null(run->injected ? run->options : NULL),
                        "threshold_bytes",
                        run->injected && run->threshold_bytes
                                ? json_integer((json_int_t)run->threshold_bytes)
                                : json_null(),
                        "threshold_of",
                        string_or_null(run->injected && run->threshold_bytes ? run->threshold_of
                                                                             : NULL));
        if (!obj)
                return NULL;
        merge_stats(obj, run->stats_path, &ok);
        if (!ok) {
                json_decref(obj);
                return NULL;
        }
        return obj;
}
