/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's statistics file into the report's "agent" object. The file is the agent's
 * JSON lines (jvmagent/stats.c), replaced as a whole by the agent at each interval; the
 * job's code can write anything there, so nothing in it is trusted (agent-stats.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent-stats.h"
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

/* Non-empty, at most max bytes, no control characters (it goes to logs and labels). */
static bool text_ok(const char *s, size_t max)
{
        size_t n = 0;

        if (!s || !*s)
                return false;
        for (; s[n]; n++)
                if (n >= max || (unsigned char)s[n] < ' ' || s[n] == 0x7f)
                        return false;
        return true;
}

/* A string member that is text_ok(), or NULL. */
static const char *member_text(json_t *obj, const char *key, size_t max)
{
        const char *s = json_string_value(json_object_get(obj, key));

        return text_ok(s, max) ? s : NULL;
}

struct totals {
        int64_t forced, failed, empty, released, spill_ns, reactions, reaction_ns, reaction_ns_max,
            decision_ns, capped;
        unsigned operators;
};

/* t + one operator's counters, or false when a sum would overflow int64 (t unchanged). */
static bool add_operator(struct totals *t, const int64_t v[], int64_t decision, int64_t capped)
{
        struct totals n = *t;
        bool overflow = false;

        overflow |= __builtin_add_overflow(n.forced, v[2], &n.forced);
        overflow |= __builtin_add_overflow(n.empty, v[3], &n.empty);
        overflow |= __builtin_add_overflow(n.failed, v[4], &n.failed);
        overflow |= __builtin_add_overflow(n.released, v[5], &n.released);
        overflow |= __builtin_add_overflow(n.spill_ns, v[6], &n.spill_ns);
        overflow |= __builtin_add_overflow(n.reactions, v[8], &n.reactions);
        overflow |= __builtin_add_overflow(n.reaction_ns, v[9], &n.reaction_ns);
        if (decision > 0)
                overflow |= __builtin_add_overflow(n.decision_ns, decision, &n.decision_ns);
        if (capped > 0)
                overflow |= __builtin_add_overflow(n.capped, capped, &n.capped);
        if (overflow)
                return false;
        if (v[10] > n.reaction_ns_max)
                n.reaction_ns_max = v[10];
        n.operators++;
        *t = n;
        return true;
}

/* forced_by in the report's spelling of the agent's mode names (force-bytes -> force_bytes) */
static json_t *forced_by_json(json_t *by)
{
        json_t *out = json_object(), *count;
        const char *reason;

        if (!out || json_object_size(by) > 16) {
                json_decref(out);
                return NULL;
        }
        json_object_foreach(by, reason, count)
        {
                char key[64];

                if (!json_is_integer(count) || json_integer_value(count) < 0 ||
                    !text_ok(reason, sizeof(key) - 1)) {
                        json_decref(out);
                        return NULL;
                }
                snprintf(key, sizeof(key), "%s", reason);
                for (char *c = key; *c; c++)
                        if (*c == '-')
                                *c = '_';
                if (json_object_set(out, key, count) < 0) {
                        json_decref(out);
                        return NULL;
                }
        }
        return out;
}

/* One "operator" record as the report's operator object; NULL when a field is malformed. */
static json_t *operator_json(json_t *rec, struct totals *t)
{
        static const char *const counters[] = {
            "calls",         "requested_bytes",   "forced_spills",   "empty_spills",
            "failed_spills", "released_bytes",    "spill_ns_total",  "spill_ns_max",
            "reactions",     "reaction_ns_total", "reaction_ns_max",
        };
        int64_t v[ELEMENTSOF(counters)], denials = member_u64(rec, "denials");
        /* statistics of older agent builds have no decision latency: null then */
        int64_t decision = member_u64(rec, "decision_ns_total");
        int64_t decision_max = member_u64(rec, "decision_ns_max");
        /* and none of max-spills */
        int64_t capped = member_u64(rec, "capped");
        json_t *by = json_object_get(rec, "forced_by"), *by_out, *out;
        const char *name = member_text(rec, "operator", SHIM_AGENT_NAME_MAX);

        if (!name || !json_is_object(by))
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(counters); i++)
                if ((v[i] = member_u64(rec, counters[i])) < 0)
                        return NULL;
        by_out = forced_by_json(by);
        if (!by_out)
                return NULL;
        if (!add_operator(t, v, decision, capped)) {
                json_decref(by_out);
                return NULL;
        }
        out = json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:f, s:f, s:I,"
                        " s:f, s:f}",
                        "operator", name, "calls", (json_int_t)v[0], "requested_bytes",
                        (json_int_t)v[1], "forced_spills", (json_int_t)v[2], "forced_by", by_out,
                        "denials", denials >= 0 ? json_integer((json_int_t)denials) : json_null(),
                        "empty_spills", (json_int_t)v[3], "failed_spills", (json_int_t)v[4],
                        "released_bytes", (json_int_t)v[5], "spill_seconds", (double)v[6] / 1e9,
                        "spill_max_seconds", (double)v[7] / 1e9, "reactions", (json_int_t)v[8],
                        "reaction_seconds", (double)v[9] / 1e9, "reaction_max_seconds",
                        (double)v[10] / 1e9);
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
        const char *name = member_text(rec, "hook", SHIM_AGENT_NAME_MAX);
        const char *state = member_text(rec, "state", SHIM_AGENT_NAME_MAX);
        json_t *reason = json_object_get(rec, "reason");

        if (!name || !state ||
            (reason && !json_is_null(reason) &&
             !text_ok(json_string_value(reason), SHIM_AGENT_TEXT_MAX)))
                return NULL;
        return json_pack("{s:s, s:s, s:o}", "hook", name, "state", state, "reason",
                         string_or_null(json_string_value(reason)));
}

/* Copies of obj's members keys (non-negative integers) and flag (a boolean) into out. */
static bool copy_counters(json_t *out, json_t *obj, const char *const keys[], size_t n,
                          const char *flag)
{
        json_t *b = json_object_get(obj, flag);

        for (size_t i = 0; i < n; i++) {
                int64_t v = member_u64(obj, keys[i]);

                if (v < 0 || json_object_set_new(out, keys[i], json_integer((json_int_t)v)) < 0)
                        return false;
        }
        return json_is_boolean(b) &&
               json_object_set_new(out, flag, json_boolean(json_is_true(b))) == 0;
}

/* The pressure record's "psi" (null or the agent's PSI trigger) as the report's. */
static json_t *psi_json(json_t *psi, bool *ok)
{
        static const char *const counters[] = {"stall_us", "window_us", "events"};
        json_t *trigger = json_object_get(psi, "trigger"), *path = json_object_get(psi, "path");
        json_t *out;

        if (json_is_null(psi))
                return json_null();
        if (!json_is_object(psi) || !json_is_boolean(trigger) || !json_is_string(path) ||
            (json_string_length(path) > 0 &&
             !text_ok(json_string_value(path), SHIM_AGENT_TEXT_MAX)))
                goto bad;
        out = json_pack("{s:s, s:b}", "path", json_string_value(path), "trigger",
                        json_is_true(trigger));
        if (out && copy_counters(out, psi, counters, ELEMENTSOF(counters), "over"))
                return out;
        json_decref(out);
bad:
        *ok = false;
        return NULL;
}

/* The pressure record's "heap" (null or the agent's heap-after-GC source) as the report's. */
static json_t *heap_json(json_t *heap, bool *ok)
{
        static const char *const counters[] = {"after_gc_bytes", "peak_after_gc_bytes", "max_bytes",
                                               "threshold_bytes", "crossings"};
        json_t *out;

        if (json_is_null(heap))
                return json_null();
        out = json_is_object(heap) ? json_object() : NULL;
        if (out && copy_counters(out, heap, counters, ELEMENTSOF(counters), "over"))
                return out;
        json_decref(out);
        *ok = false;
        return NULL;
}

/*
 * The agent's other pressure sources, when it writes them (older agents do not): anon_over,
 * episodes, psi, heap, each checked. False when one is malformed or on ENOMEM.
 */
static bool pressure_sources(json_t *out, json_t *rec)
{
        json_t *anon_over = json_object_get(rec, "anon_over"),
               *episodes = json_object_get(rec, "episodes");
        json_t *psi = json_object_get(rec, "psi"), *heap = json_object_get(rec, "heap");
        bool ok = true;

        if (anon_over &&
            (!json_is_boolean(anon_over) ||
             json_object_set_new(out, "anon_over", json_boolean(json_is_true(anon_over))) < 0))
                return false;
        if (episodes && (member_u64(rec, "episodes") < 0 ||
                         json_object_set_new(out, "episodes", json_copy(episodes)) < 0))
                return false;
        if (psi && json_object_set_new(out, "psi", psi_json(psi, &ok)) < 0)
                return false;
        if (heap && json_object_set_new(out, "heap", heap_json(heap, &ok)) < 0)
                return false;
        return ok;
}

static json_t *pressure_json(json_t *rec)
{
        static const char *const counters[] = {"anon_bytes", "peak_anon_bytes", "threshold_bytes",
                                               "crossings", "read_errors"};
        const char *source = member_text(rec, "source", SHIM_AGENT_NAME_MAX);
        const char *path = member_text(rec, "path", SHIM_AGENT_TEXT_MAX);
        json_t *under = json_object_get(rec, "under_pressure");
        json_t *execution_member = json_object_get(rec, "execution_memory_bytes");
        int64_t v[ELEMENTSOF(counters)], execution = member_u64(rec, "execution_memory_bytes");
        json_t *out;

        if (!source || !path || !json_is_boolean(under) ||
            (execution_member && !json_is_null(execution_member) && execution < 0))
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(counters); i++)
                if ((v[i] = member_u64(rec, counters[i])) < 0)
                        return NULL;
        out = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:b, s:I, s:o}", "source", source, "path",
                        path, "anon_bytes", (json_int_t)v[0], "peak_anon_bytes", (json_int_t)v[1],
                        "threshold_bytes", (json_int_t)v[2], "crossings", (json_int_t)v[3],
                        "under_pressure", json_is_true(under), "read_errors", (json_int_t)v[4],
                        "execution_memory_bytes",
                        execution > 0 ? json_integer((json_int_t)execution) : json_null());
        if (out && !pressure_sources(out, rec)) {
                json_decref(out);
                return NULL;
        }
        return out;
}

/* The "agent" record: pid a positive integer, version text, final a boolean (each optional). */
static bool agent_record_ok(json_t *rec)
{
        json_t *pid = json_object_get(rec, "pid"), *version = json_object_get(rec, "version");
        json_t *final = json_object_get(rec, "final");

        return (!pid || (json_is_integer(pid) && json_integer_value(pid) > 0 &&
                         json_integer_value(pid) <= INT32_MAX)) &&
               (!version || text_ok(json_string_value(version), SHIM_AGENT_NAME_MAX)) &&
               (!final || json_is_boolean(final));
}

/* ---------------------------------------------------------------- reading the file */

int shim_agent_stats_read(const char *path, char **ret, size_t *ret_len)
{
        _cleanup_close_ int dir_fd = -1, path_fd = -1, fd = -1;
        _cleanup_free_ char *buf = NULL, *dir = NULL;
        const char *name;
        struct stat st, st_open;
        size_t len = 0;

        if (!path || path[0] != '/')
                return -EINVAL;
        /* the private directory and the file: neither may be a symlink */
        name = strrchr(path, '/') + 1;
        if (!*name)
                return -EINVAL;
        /* without its trailing slash, which would make the open follow a symlink */
        dir = name - path > 1 ? strndup(path, (size_t)(name - path - 1)) : strdup("/");
        if (!dir)
                return -ENOMEM;
        dir_fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd < 0 && errno == ENOTDIR && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
                return -ELOOP;
        if (dir_fd < 0)
                return -errno;
        /* O_PATH opens nothing (a device's open has side effects): its type first */
        path_fd = openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (path_fd < 0)
                return -errno;
        if (fstat(path_fd, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return -ELOOP;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        /* O_NONBLOCK: were it swapped for a FIFO meanwhile, the open must not block */
        fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st_open) < 0)
                return -errno;
        if (!S_ISREG(st_open.st_mode) || st_open.st_dev != st.st_dev || st_open.st_ino != st.st_ino)
                return -EINVAL;
        if (st_open.st_size > SHIM_AGENT_STATS_MAX)
                return -EFBIG;
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

/* ---------------------------------------------------------------- parsing */

struct parsed {
        json_t *hooks, *operators, *pressure, *agent_rec;
        struct totals t;
        unsigned lineno, bad;
        char error[256];
        bool ok; /* false: out of memory */
};

static void parse_line(struct parsed *s, const char *line, size_t len, const char *path)
{
        json_error_t jerr;
        json_t *rec, *item = NULL;
        const char *kind;
        size_t blank = 0;

        s->lineno++;
        while (blank < len && (line[blank] == ' ' || line[blank] == '\t' || line[blank] == '\r'))
                blank++;
        if (blank == len)
                return;
        /* json_loadb: a NUL byte is an error, not the end of the line */
        rec = json_loadb(line, len, 0, &jerr);
        kind = json_string_value(json_object_get(rec, "record"));
        if (kind && strcmp(kind, "agent") == 0) {
                if (agent_record_ok(rec)) {
                        json_decref(s->agent_rec);
                        s->agent_rec = json_incref(rec);
                        item = json_null(); /* taken */
                }
        } else if (kind && strcmp(kind, "hook") == 0) {
                item = hook_json(rec);
                if (item && json_array_append_new(s->hooks, item) < 0)
                        s->ok = false;
        } else if (kind && strcmp(kind, "pressure") == 0) {
                item = pressure_json(rec);
                if (item) {
                        json_decref(s->pressure);
                        s->pressure = item;
                }
        } else if (kind && strcmp(kind, "operator") == 0) {
                item = operator_json(rec, &s->t);
                if (item && json_array_append_new(s->operators, item) < 0)
                        s->ok = false;
        } else if (kind) {
                item = json_null(); /* a newer agent's record: not ours to judge */
        }
        if (!item && s->bad++ == 0)
                snprintf(s->error, sizeof(s->error), "%s:%u: %s", path ? path : "statistics",
                         s->lineno,
                         !rec    ? "not JSON"
                         : !kind ? "not an agent record"
                                 : "a record with missing or malformed fields");
        json_decref(rec);
}

/* the "stats" member, the others of *s, into obj */
static void put_parsed(json_t *obj, struct parsed *s, const char *path, const char *status,
                       const char *error)
{
        json_t *final = json_object_get(s->agent_rec, "final");
        json_t *pid = json_object_get(s->agent_rec, "pid");
        const char *version = json_string_value(json_object_get(s->agent_rec, "version"));
        bool have = strcmp(status, "ok") == 0 || strcmp(status, "partial") == 0;
        const struct totals *t = &s->t;

        put(obj, "stats",
            json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:I}", "file", string_or_null(path), "status",
                      status, "error", string_or_null(error), "final",
                      json_is_boolean(final) ? json_boolean(json_is_true(final)) : json_null(),
                      "pid", json_is_integer(pid) ? json_copy(pid) : json_null(), "version",
                      string_or_null(version), "invalid_lines", (json_int_t)s->bad),
            &s->ok);
        put(obj, "hooks", json_incref(s->hooks), &s->ok);
        put(obj, "pressure", s->pressure ? json_incref(s->pressure) : json_null(), &s->ok);
        put(obj, "operators", json_incref(s->operators), &s->ok);
        if (have)
                put(obj, "totals",
                    json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:f, s:f, s:f, s:I}",
                              "operators", (json_int_t)t->operators, "forced_spills",
                              (json_int_t)t->forced, "failed_spills", (json_int_t)t->failed,
                              "empty_spills", (json_int_t)t->empty, "released_bytes",
                              (json_int_t)t->released, "spill_seconds", (double)t->spill_ns / 1e9,
                              "reactions", (json_int_t)t->reactions, "reaction_seconds",
                              (double)t->reaction_ns / 1e9, "reaction_max_seconds",
                              (double)t->reaction_ns_max / 1e9, "decision_seconds",
                              (double)t->decision_ns / 1e9, "capped", (json_int_t)t->capped),
                    &s->ok);
        else
                put(obj, "totals", json_null(), &s->ok);
}

static void parsed_free(struct parsed *s)
{
        json_decref(s->hooks);
        json_decref(s->operators);
        json_decref(s->pressure);
        json_decref(s->agent_rec);
}

/*
 * The statistics members of obj for text (NULL: the file could not be read, status and
 * error say why). False on ENOMEM.
 */
static bool stats_members(json_t *obj, const char *text, size_t len, const char *path,
                          const char *status, const char *error)
{
        struct parsed s = {.hooks = json_array(), .operators = json_array(), .ok = true};
        bool ok;

        if (!s.hooks || !s.operators) {
                parsed_free(&s);
                return false;
        }
        if (text) {
                for (size_t at = 0; at < len;) {
                        const char *nl = memchr(text + at, '\n', len - at);
                        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;

                        parse_line(&s, text + at, n, path);
                        at += n + 1;
                }
                if (!s.agent_rec && s.bad == 0)
                        snprintf(s.error, sizeof(s.error), "%s: %s", path ? path : "statistics",
                                 s.lineno == 0 ? "empty" : "no \"agent\" record");
                status = s.agent_rec && s.bad == 0 ? "ok" : "partial";
                error = s.error;
        }
        put_parsed(obj, &s, path, status, error);
        ok = s.ok;
        parsed_free(&s);
        return ok;
}

json_t *shim_agent_stats_parse(const char *text, size_t len, const char *path)
{
        json_t *obj = json_object();

        if (obj && !stats_members(obj, text ? text : "", text ? len : 0, path, NULL, NULL)) {
                json_decref(obj);
                return NULL;
        }
        return obj;
}

/* The statistics members of obj from the file at path ("" or NULL: none). False on ENOMEM. */
static bool merge_stats(json_t *obj, const char *path)
{
        _cleanup_free_ char *text = NULL;
        char error[256] = "";
        const char *status;
        size_t len = 0;
        int r;

        r = path && *path ? shim_agent_stats_read(path, &text, &len) : -ENODATA;
        if (r == -ENOMEM)
                return false;
        if (r == 0)
                return stats_members(obj, text, len, path, NULL, NULL);
        if (r == -ENODATA) {
                status = "none";
        } else if (r == -ENOENT) {
                status = "missing";
                snprintf(error, sizeof(error), "%s: %s", path, strerror(-r));
        } else {
                status = "unreadable";
                snprintf(error, sizeof(error), "%s: %s", path,
                         r == -EINVAL ? "not a regular file"
                         : r == -ELOOP
                             ? "a symbolic link (in the file or its directory); not followed"
                         : r == -EFBIG ? "larger than 1 MiB"
                                       : strerror(-r));
        }
        return stats_members(obj, NULL, 0, path, status, error);
}

json_t *shim_agent_report_json(const struct shim_agent_run *run)
{
        const char *method = shim_agent_method_name(run->method);
        json_t *obj;

        obj = json_pack(
            "{s:b, s:b, s:o, s:o, s:o, s:o, s:o, s:o}", "enabled", run->enabled, "injected",
            run->injected, "reason", string_or_null(run->reason), "method", string_or_null(method),
            "path", string_or_null(run->path), "options",
            string_or_null(run->injected ? run->options : NULL), "threshold_bytes",
            run->injected && run->threshold_bytes ? json_integer((json_int_t)run->threshold_bytes)
                                                  : json_null(),
            "threshold_of",
            string_or_null(run->injected && run->threshold_bytes ? run->threshold_of : NULL));
        if (!obj)
                return NULL;
        if (!merge_stats(obj, run->stats_path)) {
                json_decref(obj);
                return NULL;
        }
        return obj;
}
