/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster policy: defaults, the JSON schema (version 1), loading with an owner check. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy-internal.h"
#include "util.h"

#define POLICY_FILE_SIZE_MAX     (1024 * 1024)
#define OVERCOMMIT_MAX           64.0
#define OVERHEAD_FACTOR_MAX      10.0
#define PIDS_MAX_LIMIT           UINT64_C(4194304) /* the kernel's PID_MAX_LIMIT */
#define IO_WEIGHT_MAX            10000
#define GRACE_SECONDS_MAX        3600
#define VALUE_TEXT_MAX           60
#define PATH_DEPTH_MAX           8
#define AGENT_RECORDS_MAX        UINT64_C(2147483647) /* Spark reads the threshold as an int */
#define AGENT_COOLDOWN_MAX       UINT64_C(86400000)
#define AGENT_MAX_SPILLS_MAX     UINT64_C(2147483647)
#define AGENT_PSI_MS_MIN         UINT64_C(500)   /* the kernel's shortest PSI window */
#define AGENT_PSI_MS_MAX         UINT64_C(10000) /* and its longest */
#define JAVA_LONG_MAX            UINT64_C(9223372036854775807)
#define ROLLING_GRACE_DEFAULT    UINT64_C(600)
#define ROLLING_GRACE_MAX        UINT64_C(86400)
#define ROLLING_COOLDOWN_DEFAULT UINT64_C(300)
#define ROLLING_COOLDOWN_MAX     UINT64_C(86400)
#define ROLLING_WINDOW_DEFAULT   UINT64_C(60)
#define ROLLING_WINDOW_MAX       UINT64_C(3600)     /* measure/rolling.c keeps this much history */
#define ROLLING_AGE_MAX          UINT64_C(31536000) /* a year */
#define ROLLING_EVENTS_MAX       UINT64_C(4294967295)
#define ROLLING_SPILLS_MAX       UINT64_C(2147483647)

#define SIZE_ALLOWED                                                                               \
        "an integer number of bytes, or a string of digits with an optional suffix b, k, m, g, "   \
        "t, p (bytes when none)"

static const struct {
        enum policy_override bit;
        const char *name;
} override_names[] = {
    {POLICY_OVERRIDE_MILLICORES, "millicores"},
    {POLICY_OVERRIDE_CORES, "cores"},
    {POLICY_OVERRIDE_MEMORY, "memory"},
    {POLICY_OVERRIDE_BURST_RATIO, "burst_ratio"},
    {POLICY_OVERRIDE_CGROUP_PARENT, "cgroup_parent"},
    {POLICY_OVERRIDE_FAIL_MODE, "fail_mode"},
    {POLICY_OVERRIDE_AGENT, "agent"},
    {POLICY_OVERRIDE_GRACE, "grace"},
    {POLICY_OVERRIDE_NAME, "name"},
};

#define OVERRIDES_ALL                                                                              \
        (POLICY_OVERRIDE_MILLICORES | POLICY_OVERRIDE_CORES | POLICY_OVERRIDE_MEMORY |             \
         POLICY_OVERRIDE_BURST_RATIO | POLICY_OVERRIDE_CGROUP_PARENT | POLICY_OVERRIDE_FAIL_MODE | \
         POLICY_OVERRIDE_AGENT | POLICY_OVERRIDE_GRACE | POLICY_OVERRIDE_NAME)

void policy_init_defaults(struct policy *p)
{
        *p = (struct policy){
            .version = POLICY_SCHEMA_VERSION,
            .cgroup_parent = "sparkshim",
            .cpu_unlimited = false,
            .overcommit = 2.0,
            .millicores_min = 1,
            .millicores_max = 256000,
            .burst_ratio_default = 0.0,
            .burst_ratio_max = 1.0,
            .protection = POLICY_PROTECTION_LOW,
            .memory_high_enabled = false,
            .memory_high_factor = 0.9,
            .overhead_min_bytes = 384 * POLICY_MIB,
            .overhead_factor = 0.10,
            .memory_limit_max = 0,
            .pids_max = 0,
            .io_weight = 0,
            .overrides = OVERRIDES_ALL,
            .out_of_bounds = POLICY_BOUNDS_REJECT,
            .fail_mode = POLICY_FAIL_CLOSED,
            .grace_seconds = 10,
            .report_path = "",
            .report_interval_seconds = 10,
            .agent =
                {
                    .enabled = false,
                    .path = "",
                    .injection = POLICY_AGENT_INJECT_AUTO,
                    .threshold = POLICY_AGENT_THRESHOLD_REQUEST,
                    .threshold_fraction = 1.0,
                    .cooldown_ms = 500,
                    .max_spills = 32,
                    .psi_window_ms = 1000,
                    .log = POLICY_AGENT_LOG_WARN,
                },
            .tuner =
                {
                    .db = "/var/lib/sparkshim/history.db",
                    .job_key = "spark.app.name",
                    .history_runs = 20,
                    .failure_bound = 0.1,
                    .runtime_allowance = 1.5,
                    .runtime_target = 1.1,
                    .cpu_target = 0.85,
                    .memory_target = 0.7,
                    .seed = 1,
                    .heap_min = 512 * POLICY_MIB,
                    .heap_max = 64 * 1024 * POLICY_MIB,
                    .overhead_max = 16 * 1024 * POLICY_MIB,
                    .spill_fraction_min = 0.5,
                    .spill_fraction_max = 1.0,
                    .partitions_min = 1,
                    .partitions_max = 100000,
                    .apply = POLICY_APPLY_SHOW,
                    .service =
                        {
                            .period_seconds = 300,
                            .publish_dir = "/var/lib/sparkshim/published",
                            .expiry_seconds = 7 * 24 * 3600,
                        },
                },
            .rolling =
                {
                    .enabled = false,
                    .grace_seconds = ROLLING_GRACE_DEFAULT,
                    .disk_write_cooldown_seconds = ROLLING_COOLDOWN_DEFAULT,
                    .age_cooldown_seconds = ROLLING_COOLDOWN_DEFAULT,
                    .memory_high_window_seconds = ROLLING_WINDOW_DEFAULT,
                    .memory_high_cooldown_seconds = ROLLING_COOLDOWN_DEFAULT,
                    .pressure_window_seconds = ROLLING_WINDOW_DEFAULT,
                    .pressure_cooldown_seconds = ROLLING_COOLDOWN_DEFAULT,
                    .spills_window_seconds = ROLLING_WINDOW_DEFAULT,
                    .spills_cooldown_seconds = ROLLING_COOLDOWN_DEFAULT,
                },
        };
}

const char *policy_agent_log_name(enum policy_agent_log level)
{
        static const char *const names[] = {"error", "warn", "info", "debug"};

        return (unsigned)level < ELEMENTSOF(names) ? names[level] : "warn";
}

const char *policy_override_name(enum policy_override o)
{
        for (size_t i = 0; i < ELEMENTSOF(override_names); i++)
                if (override_names[i].bit == o)
                        return override_names[i].name;
        return NULL;
}

int policy_check_override(const struct policy *p, enum policy_override o, enum policy_source source,
                          const char *origin, struct util_error *err)
{
        const char *name = policy_override_name(o);

        if (source < POLICY_SOURCE_COMMAND || (p->overrides & (unsigned)o))
                return 0;
        return util_error_set(
            err, EPERM, "%s: set by the user, but the policy does not allow overriding %s",
            origin && origin[0] ? origin : policy_source_name(source), name ? name : "it");
}

static bool is_cgroup_name_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '.' || c == '-';
}

int policy_normalize_cgroup_path(const char *s, char *ret, size_t size)
{
        size_t n, start = 0;

        if (!s)
                return -EINVAL;
        while (*s == '/')
                s++;
        n = strlen(s);
        while (n > 0 && s[n - 1] == '/')
                n--;
        if (n == 0)
                return -EINVAL;
        for (size_t i = 0; i <= n; i++) {
                if (i == n || s[i] == '/') {
                        size_t len = i - start;
                        if (len == 0)
                                return -EINVAL; /* "a//b" */
                        if (s[start] == '.' && (len == 1 || (len == 2 && s[start + 1] == '.')))
                                return -EINVAL;
                        if (len > 255)
                                return -ENAMETOOLONG;
                        start = i + 1;
                } else if (!is_cgroup_name_char(s[i]))
                        return -EINVAL;
        }
        if (n >= size)
                return -ENAMETOOLONG;
        memcpy(ret, s, n);
        ret[n] = '\0';
        return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Parsing                                                                             */

struct parser {
        const char *text;
        size_t len;
        const char *source;
        struct util_error *err;
        struct policy_json_step path[PATH_DEPTH_MAX];
        size_t depth;
};

static void push_key(struct parser *ps, const char *key)
{
        assert(ps->depth < PATH_DEPTH_MAX);
        ps->path[ps->depth++] = (struct policy_json_step){.key = key};
}

static void push_index(struct parser *ps, size_t index)
{
        assert(ps->depth < PATH_DEPTH_MAX);
        ps->path[ps->depth++] = (struct policy_json_step){.key = NULL, .index = index};
}

static void pop(struct parser *ps)
{
        assert(ps->depth > 0);
        ps->depth--;
}

static void format_path(const struct policy_json_step *path, size_t depth, char *buf, size_t size)
{
        size_t used = 0;

        buf[0] = '\0';
        if (depth == 0) {
                snprintf(buf, size, "(top level)");
                return;
        }
        for (size_t i = 0; i < depth && used < size; i++) {
                int n;
                if (path[i].key)
                        n = snprintf(buf + used, size - used, "%s%s", i > 0 ? "." : "",
                                     path[i].key);
                else
                        n = snprintf(buf + used, size - used, "[%zu]", path[i].index);
                if (n < 0)
                        break;
                used += (size_t)n;
        }
}

/* Position of the current path; falls back to the nearest ancestor found in the text. */
static bool locate(const struct parser *ps, bool want_key, struct policy_json_locus *ret)
{
        for (size_t d = ps->depth;; d--) {
                if (policy_json_locate(ps->text, ps->len, ps->path, d, want_key && d == ps->depth,
                                       ret) == 0)
                        return d == ps->depth;
                if (d == 0)
                        break;
        }
        *ret = (struct policy_json_locus){.line = 1, .column = 1};
        return false;
}

/* The value as the admin wrote it, shortened; containers as {...} and [...]. */
static void value_text(const struct parser *ps, const struct policy_json_locus *l, char *buf,
                       size_t size)
{
        size_t n = l->length;

        if (n == 0 || l->offset >= ps->len) {
                snprintf(buf, size, "(value)");
                return;
        }
        if (ps->text[l->offset] == '{') {
                snprintf(buf, size, "{...}");
                return;
        }
        if (ps->text[l->offset] == '[') {
                snprintf(buf, size, "[...]");
                return;
        }
        if (n > VALUE_TEXT_MAX) {
                n = VALUE_TEXT_MAX;
                /* do not cut a UTF-8 character */
                while (n > 0 && ((unsigned char)ps->text[l->offset + n] & 0xC0) == 0x80)
                        n--;
                snprintf(buf, size, "%.*s...", (int)n, ps->text + l->offset);
        } else
                snprintf(buf, size, "%.*s", (int)n, ps->text + l->offset);
}

static const char *source_name(const struct parser *ps)
{
        return ps->source ? ps->source : "<string>";
}

static int fail_value(struct parser *ps, const char *problem, const char *allowed)
{
        struct policy_json_locus l;
        char path[256], value[VALUE_TEXT_MAX + 8];

        format_path(ps->path, ps->depth, path, sizeof(path));
        if (locate(ps, false, &l))
                value_text(ps, &l, value, sizeof(value));
        else
                snprintf(value, sizeof(value), "(value)");
        return util_error_set(ps->err, EINVAL, "%s:%u:%u: %s: %s %s; allowed: %s", source_name(ps),
                              l.line, l.column, path, value, problem, allowed);
}

/* fail_value() for a value that may hold a secret: the value is not shown */
static int fail_value_hidden(struct parser *ps, const char *shown, const char *problem,
                             const char *allowed)
{
        struct policy_json_locus l = {0};
        char path[256];

        format_path(ps->path, ps->depth, path, sizeof(path));
        locate(ps, false, &l);
        return util_error_set(ps->err, EINVAL, "%s:%u:%u: %s: %s %s; allowed: %s", source_name(ps),
                              l.line, l.column, path, shown, problem, allowed);
}

static int fail_key(struct parser *ps, const char *allowed)
{
        struct policy_json_locus l;
        char path[256];

        format_path(ps->path, ps->depth, path, sizeof(path));
        locate(ps, true, &l);
        return util_error_set(ps->err, EINVAL, "%s:%u:%u: %s: unknown key; allowed: %s",
                              source_name(ps), l.line, l.column, path, allowed);
}

/* A required key is absent: point at the object that should hold it. */
static int fail_missing(struct parser *ps, const char *key, const char *allowed)
{
        struct policy_json_locus l;
        char path[256];

        locate(ps, false, &l);
        push_key(ps, key);
        format_path(ps->path, ps->depth, path, sizeof(path));
        pop(ps);
        return util_error_set(ps->err, EINVAL, "%s:%u:%u: %s: missing; allowed: %s",
                              source_name(ps), l.line, l.column, path, allowed);
}

static void join_names(const char *const names[], size_t n, bool quoted, char *buf, size_t size)
{
        size_t used = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n && used < size; i++) {
                int r = snprintf(buf + used, size - used, "%s%s%s%s", i > 0 ? ", " : "",
                                 quoted ? "\"" : "", names[i], quoted ? "\"" : "");
                if (r < 0)
                        break;
                used += (size_t)r;
        }
}

static int check_keys(struct parser *ps, json_t *obj, const char *const names[], size_t n)
{
        const char *key;
        json_t *v;

        json_object_foreach(obj, key, v)
        {
                bool known = false;
                char allowed[256];
                int r;

                for (size_t i = 0; i < n && !known; i++)
                        known = strcmp(key, names[i]) == 0;
                if (known)
                        continue;
                join_names(names, n, false, allowed, sizeof(allowed));
                push_key(ps, key);
                r = fail_key(ps, allowed);
                pop(ps);
                return r;
        }
        return 0;
}

/* An optional object member: 0 absent, 1 present (and its keys are among names). */
static int section(struct parser *ps, json_t *obj, const char *key, const char *const names[],
                   size_t n, json_t **ret)
{
        json_t *v = json_object_get(obj, key);
        int r;

        *ret = NULL;
        if (!v)
                return 0;
        push_key(ps, key);
        if (!json_is_object(v)) {
                char list[256], allowed[300];
                join_names(names, n, false, list, sizeof(list));
                snprintf(allowed, sizeof(allowed), "an object with the keys %s", list);
                r = fail_value(ps, "is not an object", allowed);
                pop(ps);
                return r;
        }
        r = check_keys(ps, v, names, n);
        pop(ps);
        if (r < 0)
                return r;
        *ret = v;
        return 1;
}

/* Field helpers: 0 when absent, 1 when present and valid (stored), or -EINVAL. */

static int field_uint(struct parser *ps, json_t *obj, const char *key, uint64_t min, uint64_t max,
                      uint64_t *ret)
{
        json_t *v = json_object_get(obj, key);
        char allowed[96];
        json_int_t i;
        int r = 1;

        if (!v)
                return 0;
        snprintf(allowed, sizeof(allowed), "an integer >= %" PRIu64 " and <= %" PRIu64, min, max);
        push_key(ps, key);
        if (!json_is_integer(v))
                r = fail_value(ps, "is not an integer", allowed);
        else if ((i = json_integer_value(v)) < 0 || (uint64_t)i < min || (uint64_t)i > max)
                r = fail_value(ps, "is out of range", allowed);
        else
                *ret = (uint64_t)i;
        pop(ps);
        return r;
}

static int field_number(struct parser *ps, json_t *obj, const char *key, double min, double max,
                        double *ret)
{
        json_t *v = json_object_get(obj, key);
        char allowed[96];
        double d;
        int r = 1;

        if (!v)
                return 0;
        snprintf(allowed, sizeof(allowed), "a number >= %g and <= %g", min, max);
        push_key(ps, key);
        if (!json_is_number(v))
                r = fail_value(ps, "is not a number", allowed);
        else if ((d = json_number_value(v)) < min || d > max)
                r = fail_value(ps, "is out of range", allowed);
        else
                *ret = d;
        pop(ps);
        return r;
}

static int field_size(struct parser *ps, json_t *obj, const char *key, uint64_t *ret)
{
        json_t *v = json_object_get(obj, key);
        uint64_t bytes = 0;
        int r = 1;

        if (!v)
                return 0;
        push_key(ps, key);
        if (json_is_integer(v)) {
                if (json_integer_value(v) < 0)
                        r = fail_value(ps, "is out of range", SIZE_ALLOWED);
                else
                        bytes = (uint64_t)json_integer_value(v);
        } else if (json_is_string(v)) {
                int k = policy_parse_spark_bytes(json_string_value(v), POLICY_UNIT_BYTES, &bytes);
                if (k == -ERANGE)
                        r = fail_value(ps, "is out of range", SIZE_ALLOWED);
                else if (k < 0)
                        r = fail_value(ps, "is not a size", SIZE_ALLOWED);
        } else
                r = fail_value(ps, "is not a size", SIZE_ALLOWED);
        if (r > 0)
                *ret = bytes;
        pop(ps);
        return r;
}

/* A string among names; *ret is its index. */
static int field_choice(struct parser *ps, json_t *obj, const char *key, const char *const names[],
                        size_t n, int *ret)
{
        json_t *v = json_object_get(obj, key);
        char allowed[128];
        int r = -EINVAL;

        if (!v)
                return 0;
        join_names(names, n, true, allowed, sizeof(allowed));
        push_key(ps, key);
        if (!json_is_string(v))
                r = fail_value(ps, "is not a string", allowed);
        else {
                for (size_t i = 0; i < n; i++)
                        if (strcmp(json_string_value(v), names[i]) == 0) {
                                *ret = (int)i;
                                r = 1;
                        }
                if (r < 0)
                        r = fail_value(ps, "is not a valid value", allowed);
        }
        pop(ps);
        return r;
}

static int parse_version(struct parser *ps, json_t *root)
{
        json_t *v = json_object_get(root, "version");
        int r = 0;

        if (!v)
                return fail_missing(ps, "version", "1");
        push_key(ps, "version");
        if (!json_is_integer(v))
                r = fail_value(ps, "is not an integer", "1");
        else if (json_integer_value(v) != POLICY_SCHEMA_VERSION)
                r = fail_value(ps, "is not a supported version", "1");
        pop(ps);
        return r;
}

static int parse_cgroup(struct parser *ps, json_t *root, struct policy *p)
{
        static const char *const keys[] = {"parent"};
        static const char allowed[] =
            "a relative path below the cgroup2 mount of components [A-Za-z0-9_.-]+, "
            "none \".\" or \"..\"";
        json_t *obj, *v;
        int r;

        r = section(ps, root, "cgroup", keys, ELEMENTSOF(keys), &obj);
        if (r <= 0)
                return r;
        push_key(ps, "cgroup");
        v = json_object_get(obj, "parent");
        if (v) {
                push_key(ps, "parent");
                if (!json_is_string(v))
                        r = fail_value(ps, "is not a string", allowed);
                else {
                        r = policy_normalize_cgroup_path(json_string_value(v), p->cgroup_parent,
                                                         sizeof(p->cgroup_parent));
                        if (r == -ENAMETOOLONG)
                                r = fail_value(ps, "is too long", allowed);
                        else if (r < 0)
                                r = fail_value(ps, "is not a valid cgroup path", allowed);
                }
                pop(ps);
        }
        pop(ps);
        return r < 0 ? r : 0;
}

static int parse_cpu(struct parser *ps, json_t *root, struct policy *p)
{
        static const char *const keys[] = {"overcommit", "millicores"};
        static const char *const mkeys[] = {"min", "max"};
        static const char overcommit_allowed[] = "a number >= 1 and <= 64, or \"unlimited\"";
        json_t *obj, *millicores, *v;
        char allowed[128];
        int r, has_min, has_max;

        r = section(ps, root, "cpu", keys, ELEMENTSOF(keys), &obj);
        if (r <= 0)
                return r;
        push_key(ps, "cpu");

        v = json_object_get(obj, "overcommit");
        if (v) {
                push_key(ps, "overcommit");
                if (json_is_string(v) && strcmp(json_string_value(v), "unlimited") == 0)
                        p->cpu_unlimited = true;
                else if (!json_is_number(v))
                        r = fail_value(ps, "is not a valid value", overcommit_allowed);
                else if (json_number_value(v) < 1.0 || json_number_value(v) > OVERCOMMIT_MAX)
                        r = fail_value(ps, "is out of range", overcommit_allowed);
                else {
                        p->cpu_unlimited = false;
                        p->overcommit = json_number_value(v);
                }
                pop(ps);
                if (r < 0)
                        goto out;
        }

        r = section(ps, obj, "millicores", mkeys, ELEMENTSOF(mkeys), &millicores);
        if (r <= 0)
                goto out;
        push_key(ps, "millicores");
        has_min = field_uint(ps, millicores, "min", 1, POLICY_MILLICORES_LIMIT, &p->millicores_min);
        if (has_min < 0) {
                r = has_min;
                goto out_millicores;
        }
        has_max = field_uint(ps, millicores, "max", 1, POLICY_MILLICORES_LIMIT, &p->millicores_max);
        if (has_max < 0) {
                r = has_max;
                goto out_millicores;
        }
        if (p->millicores_min > p->millicores_max) {
                if (has_max) {
                        push_key(ps, "max");
                        snprintf(allowed, sizeof(allowed),
                                 "an integer >= cpu.millicores.min (%" PRIu64 ") and <= %" PRIu64,
                                 p->millicores_min, POLICY_MILLICORES_LIMIT);
                } else {
                        push_key(ps, "min");
                        snprintf(allowed, sizeof(allowed),
                                 "an integer >= 1 and <= cpu.millicores.max (%" PRIu64 ")",
                                 p->millicores_max);
                }
                r = fail_value(ps, "is out of range", allowed);
                pop(ps);
        }
out_millicores:
        pop(ps);
out:
        pop(ps);
        return r < 0 ? r : 0;
}

static int parse_memory(struct parser *ps, json_t *root, struct policy *p)
{
        static const char *const keys[] = {"burst_ratio", "protection", "high_factor", "overhead",
                                           "limit_max"};
        static const char *const burst_keys[] = {"default", "max"};
        static const char *const overhead_keys[] = {"min", "factor"};
        static const char *const protections[] = {"low", "min", "none"};
        static const char high_allowed[] = "a number >= 0 and <= 1, null or false";
        json_t *obj, *sub, *v;
        int r, has_default, protection;

        r = section(ps, root, "memory", keys, ELEMENTSOF(keys), &obj);
        if (r <= 0)
                return r;
        push_key(ps, "memory");

        r = section(ps, obj, "burst_ratio", burst_keys, ELEMENTSOF(burst_keys), &sub);
        if (r < 0)
                goto out;
        if (sub) {
                push_key(ps, "burst_ratio");
                r = field_number(ps, sub, "max", 0.0, 1.0, &p->burst_ratio_max);
                has_default =
                    r < 0 ? r : field_number(ps, sub, "default", 0.0, 1.0, &p->burst_ratio_default);
                if (r >= 0 && has_default < 0)
                        r = has_default;
                if (r >= 0 && p->burst_ratio_default > p->burst_ratio_max) {
                        char allowed[128];
                        snprintf(allowed, sizeof(allowed),
                                 "a number >= 0 and <= memory.burst_ratio.max (%g)",
                                 p->burst_ratio_max);
                        push_key(ps, has_default ? "default" : "max");
                        r = fail_value(ps, "is out of range", allowed);
                        pop(ps);
                }
                pop(ps);
                if (r < 0)
                        goto out;
        }

        r = field_choice(ps, obj, "protection", protections, ELEMENTSOF(protections), &protection);
        if (r < 0)
                goto out;
        if (r > 0)
                p->protection = (enum policy_protection)protection;

        v = json_object_get(obj, "high_factor");
        if (v) {
                push_key(ps, "high_factor");
                if (json_is_null(v) || json_is_false(v))
                        p->memory_high_enabled = false;
                else if (!json_is_number(v))
                        r = fail_value(ps, "is not a valid value", high_allowed);
                else if (json_number_value(v) < 0.0 || json_number_value(v) > 1.0)
                        r = fail_value(ps, "is out of range", high_allowed);
                else {
                        p->memory_high_enabled = true;
                        p->memory_high_factor = json_number_value(v);
                }
                pop(ps);
                if (r < 0)
                        goto out;
        }

        r = section(ps, obj, "overhead", overhead_keys, ELEMENTSOF(overhead_keys), &sub);
        if (r < 0)
                goto out;
        if (sub) {
                push_key(ps, "overhead");
                r = field_size(ps, sub, "min", &p->overhead_min_bytes);
                if (r >= 0)
                        r = field_number(ps, sub, "factor", 0.0, OVERHEAD_FACTOR_MAX,
                                         &p->overhead_factor);
                pop(ps);
                if (r < 0)
                        goto out;
        }

        r = field_size(ps, obj, "limit_max", &p->memory_limit_max);
out:
        pop(ps);
        return r < 0 ? r : 0;
}

static int parse_overrides(struct parser *ps, json_t *root, struct policy *p)
{
        static const char allowed[] = "an array of \"millicores\", \"cores\", \"memory\", "
                                      "\"burst_ratio\", \"cgroup_parent\", \"fail_mode\", "
                                      "\"agent\", \"grace\", \"name\"";
        json_t *v = json_object_get(root, "overrides"), *e;
        unsigned bits = 0;
        size_t i;
        int r = 0;

        if (!v)
                return 0;
        push_key(ps, "overrides");
        if (!json_is_array(v)) {
                r = fail_value(ps, "is not an array", allowed);
                goto out;
        }
        json_array_foreach(v, i, e)
        {
                bool found = false;

                for (size_t k = 0; k < ELEMENTSOF(override_names) && json_is_string(e); k++)
                        if (strcmp(json_string_value(e), override_names[k].name) == 0) {
                                bits |= override_names[k].bit;
                                found = true;
                        }
                if (!found) {
                        push_index(ps, i);
                        r = fail_value(ps, "is not a valid value", allowed);
                        pop(ps);
                        goto out;
                }
        }
        p->overrides = bits;
out:
        pop(ps);
        return r;
}

enum report_path_kind {
        REPORT_PATH_PLAIN,      /* report.socket: one path */
        REPORT_PATH_TEMPLATE,   /* report.path: a file name template (policy_template_check) */
        REPORT_PATH_PROMETHEUS, /* report.prometheus_path: a template ending in .prom */
};

/* An absolute path or "" at report.<key>. */
static int report_path(struct parser *ps, json_t *obj, const char *key, enum report_path_kind kind,
                       char *dest, size_t size)
{
        static const char *const allowed[] = {
            [REPORT_PATH_PLAIN] = "an absolute path, or \"\" for none",
            [REPORT_PATH_TEMPLATE] = "an absolute path whose file name may hold {app_id}, "
                                     "{executor_id}, {name}, or \"\" for none",
            [REPORT_PATH_PROMETHEUS] = "an absolute path of a *.prom file whose name may hold "
                                       "{app_id}, {executor_id}, {name}, or \"\" for none",
        };
        json_t *v = json_object_get(obj, key);
        struct util_error terr = {0};
        int r = 0;

        if (!v)
                return 0;
        push_key(ps, key);
        if (!json_is_string(v))
                r = fail_value(ps, "is not a string", allowed[kind]);
        else if (json_string_length(v) > 0 && json_string_value(v)[0] != '/')
                r = fail_value(ps, "is not an absolute path", allowed[kind]);
        else if (json_string_length(v) >= size)
                r = fail_value(ps, "is too long", allowed[kind]);
        else if (kind != REPORT_PATH_PLAIN && json_string_length(v) > 0 &&
                 policy_template_check(json_string_value(v), kind == REPORT_PATH_PROMETHEUS,
                                       &terr) < 0)
                r = fail_value(ps, terr.text, allowed[kind]);
        else
                memcpy(dest, json_string_value(v), json_string_length(v) + 1);
        pop(ps);
        return r;
}

static int parse_report(struct parser *ps, json_t *root, struct policy *p)
{
        static const char *const keys[] = {"path", "socket", "prometheus_path", "interval_seconds",
                                           "sink_failure"};
        static const char *const sink_failures[] = {"warn", "refuse"};
        uint64_t interval = p->report_interval_seconds;
        int choice = -1;
        json_t *obj;
        int r;

        r = section(ps, root, "report", keys, ELEMENTSOF(keys), &obj);
        if (r <= 0)
                return r;
        push_key(ps, "report");
        r = report_path(ps, obj, "path", REPORT_PATH_TEMPLATE, p->report_path,
                        sizeof(p->report_path));
        if (r >= 0)
                r = report_path(ps, obj, "socket", REPORT_PATH_PLAIN, p->report_socket,
                                sizeof(p->report_socket));
        if (r >= 0)
                r = report_path(ps, obj, "prometheus_path", REPORT_PATH_PROMETHEUS,
                                p->report_prometheus, sizeof(p->report_prometheus));
        if (r >= 0)
                r = field_uint(ps, obj, "interval_seconds", 1, 3600, &interval);
        if (r >= 0)
                p->report_interval_seconds = (unsigned)interval;
        if (r >= 0)
                r = field_choice(ps, obj, "sink_failure", sink_failures, ELEMENTSOF(sink_failures),
                                 &choice);
        if (r > 0)
                p->report_sink_failure = (enum policy_sink_failure)choice;
        pop(ps);
        return r < 0 ? r : 0;
}

static int field_bool(struct parser *ps, json_t *obj, const char *key, bool *ret)
{
        json_t *v = json_object_get(obj, key);
        int r = 1;

        if (!v)
                return 0;
        push_key(ps, key);
        if (!json_is_boolean(v))
                r = fail_value(ps, "is not a boolean", "true or false");
        else
                *ret = json_is_true(v);
        pop(ps);
        return r;
}

/*
 * The agent's library: "" or an absolute path the JVM can take both in -agentpath:<path>=...
 * (split at the first '=') and in JAVA_TOOL_OPTIONS (split at blanks, quotes taken).
 */
static bool agent_path_valid(const char *s)
{
        if (s[0] == '\0')
                return true;
        if (s[0] != '/')
                return false;
        for (const char *c = s; *c; c++)
                if ((unsigned char)*c <= ' ' || *c == 0x7f || strchr("\"'=,\\", *c))
                        return false;
        return true;
}

static int agent_threshold(struct parser *ps, json_t *obj, struct policy_agent *a)
{
        static const char *const keys[] = {"fraction", "of"};
        static const char *const bases[] = {"request", "limit"};
        static const char allowed[] =
            "a size (bytes, or a string such as \"6g\"), an object "
            "{\"fraction\": F, \"of\": \"request\" or \"limit\"} with F > 0 and <= 1, or null";
        json_t *v = json_object_get(obj, "threshold"), *f;
        int r = 0, base = 0;

        if (!v)
                return 0;
        if (json_is_null(v)) {
                a->threshold = POLICY_AGENT_THRESHOLD_NONE;
                return 0;
        }
        if (json_is_integer(v) || json_is_string(v)) {
                uint64_t bytes = 0;
                int k = 0;

                push_key(ps, "threshold");
                if (json_is_integer(v))
                        bytes = json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
                else
                        k = policy_parse_spark_bytes(json_string_value(v), POLICY_UNIT_BYTES,
                                                     &bytes);
                if (k < 0 && k != -ERANGE)
                        r = fail_value(ps, "is not a size", allowed);
                else if (k == -ERANGE || bytes == 0 || bytes > JAVA_LONG_MAX)
                        r = fail_value(ps, "is out of range", allowed);
                pop(ps);
                if (r < 0)
                        return r;
                a->threshold = POLICY_AGENT_THRESHOLD_BYTES;
                a->threshold_bytes = bytes;
                return 0;
        }
        if (!json_is_object(v)) {
                push_key(ps, "threshold");
                r = fail_value(ps, "is not a valid value", allowed);
                pop(ps);
                return r;
        }
        r = section(ps, obj, "threshold", keys, ELEMENTSOF(keys), &v);
        if (r < 0)
                return r;
        push_key(ps, "threshold");
        a->threshold_fraction = 1.0;
        f = json_object_get(v, "fraction");
        if (f) {
                push_key(ps, "fraction");
                if (!json_is_number(f))
                        r = fail_value(ps, "is not a number", "a number > 0 and <= 1");
                else if (!(json_number_value(f) > 0.0 && json_number_value(f) <= 1.0))
                        r = fail_value(ps, "is out of range", "a number > 0 and <= 1");
                else
                        a->threshold_fraction = json_number_value(f);
                pop(ps);
        }
        if (r >= 0)
                r = field_choice(ps, v, "of", bases, ELEMENTSOF(bases), &base);
        pop(ps);
        if (r < 0)
                return r;
        a->threshold = base == 1 ? POLICY_AGENT_THRESHOLD_LIMIT : POLICY_AGENT_THRESHOLD_REQUEST;
        return 0;
}

static int parse_agent(struct parser *ps, json_t *root, struct policy *p)
{
        static const char *const keys[] = {
            "enabled",        "path",          "injection",      "force_bytes",
            "periodic_bytes", "allow_bytes",   "allow_fraction", "records",
            "threshold",      "cooldown_ms",   "min_spill",      "max_spills",
            "psi_stall_ms",   "psi_window_ms", "heap_threshold", "log"};
        static const char *const injections[] = {"auto", "agentpath", "java_tool_options"};
        static const char *const levels[] = {"error", "warn", "info", "debug"};
        static const char path_allowed[] =
            "an absolute path without blanks, quotes, '\\', ',' or '=', or \"\" for the "
            "installed agent";
        struct policy_agent a = p->agent;
        json_t *obj, *v;
        int r, choice;

        r = section(ps, root, "agent", keys, ELEMENTSOF(keys), &obj);
        if (r <= 0)
                return r;
        push_key(ps, "agent");

        r = field_bool(ps, obj, "enabled", &a.enabled);
        if (r < 0)
                goto out;

        v = json_object_get(obj, "path");
        if (v) {
                push_key(ps, "path");
                if (!json_is_string(v))
                        r = fail_value(ps, "is not a string", path_allowed);
                else if (json_string_length(v) >= sizeof(a.path))
                        r = fail_value(ps, "is too long", path_allowed);
                else if (strlen(json_string_value(v)) != json_string_length(v) ||
                         !agent_path_valid(json_string_value(v)))
                        r = fail_value(ps, "is not a valid path", path_allowed);
                else
                        memcpy(a.path, json_string_value(v), json_string_length(v) + 1);
                pop(ps);
                if (r < 0)
                        goto out;
        }

        r = field_choice(ps, obj, "injection", injections, ELEMENTSOF(injections), &choice);
        if (r < 0)
                goto out;
        if (r > 0)
                a.injection = (enum policy_agent_injection)choice;

        r = field_size(ps, obj, "force_bytes", &a.force_bytes);
        if (r >= 0)
                r = field_size(ps, obj, "periodic_bytes", &a.periodic_bytes);
        if (r >= 0)
                r = field_size(ps, obj, "allow_bytes", &a.allow_bytes);
        if (r >= 0)
                r = field_number(ps, obj, "allow_fraction", 0.0, 1.0, &a.allow_fraction);
        if (r >= 0)
                r = field_uint(ps, obj, "records", 0, AGENT_RECORDS_MAX, &a.records);
        if (r >= 0)
                r = agent_threshold(ps, obj, &a);
        if (r >= 0)
                r = field_uint(ps, obj, "cooldown_ms", 0, AGENT_COOLDOWN_MAX, &a.cooldown_ms);
        if (r >= 0)
                r = field_size(ps, obj, "min_spill", &a.min_spill_bytes);
        if (r >= 0)
                r = field_uint(ps, obj, "max_spills", 0, AGENT_MAX_SPILLS_MAX, &a.max_spills);
        if (r >= 0)
                r = field_uint(ps, obj, "psi_window_ms", AGENT_PSI_MS_MIN, AGENT_PSI_MS_MAX,
                               &a.psi_window_ms);
        if (r >= 0)
                r = field_uint(ps, obj, "psi_stall_ms", 0, a.psi_window_ms, &a.psi_stall_ms);
        if (r >= 0)
                r = field_number(ps, obj, "heap_threshold", 0.0, 1.0, &a.heap_threshold);
        if (r < 0)
                goto out;
        r = field_choice(ps, obj, "log", levels, ELEMENTSOF(levels), &choice);
        if (r < 0)
                goto out;
        if (r > 0)
                a.log = (enum policy_agent_log)choice;

        /* the agent refuses the JVM's start for these; say so here, at the key */
        if (a.threshold == POLICY_AGENT_THRESHOLD_NONE && !a.psi_stall_ms &&
            !(a.heap_threshold > 0) && (a.allow_bytes || a.allow_fraction > 0)) {
                push_key(ps, a.allow_bytes ? "allow_bytes" : "allow_fraction");
                r = fail_value(ps,
                               "applies under memory pressure only, but agent.threshold is null "
                               "and neither agent.psi_stall_ms nor agent.heap_threshold is set",
                               "0 (off) without a pressure source, or a threshold as a size or "
                               "{\"fraction\": F, \"of\": \"request\" or \"limit\"}, or "
                               "psi_stall_ms or heap_threshold");
                pop(ps);
                goto out;
        }
        p->agent = a;
        r = 0;
out:
        pop(ps);
        return r < 0 ? r : 0;
}

/* "java": what the java personality of a `sparkshim java-home` does with an executor. */
static int parse_java(struct parser *ps, json_t *root, struct policy *p)
{
        static const char *const keys[] = {"executors"};
        static const char *const modes[] = {"run", "exec"};
        json_t *obj;
        int r, choice = -1;

        r = section(ps, root, "java", keys, ELEMENTSOF(keys), &obj);
        if (r <= 0)
                return r;
        push_key(ps, "java");
        r = field_choice(ps, obj, "executors", modes, ELEMENTSOF(modes), &choice);
        if (r > 0)
                p->java_executors = (enum policy_java_executors)choice;
        pop(ps);
        return r < 0 ? r : 0;
}

/* A Spark property name: [A-Za-z0-9._-], starting with a letter. */
static bool is_property_name(const char *s)
{
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
                        return false;
        return true;
}

/* "min" <= "max" of one of the tuner's ranges, both optional. */
static int tuner_range(struct parser *ps, json_t *obj, const char *key, bool sizes, uint64_t lo,
                       uint64_t hi, uint64_t *min, uint64_t *max)
{
        static const char *const range_keys[] = {"min", "max"};
        json_t *sub;
        int r;

        r = section(ps, obj, key, range_keys, ELEMENTSOF(range_keys), &sub);
        if (r <= 0)
                return r;
        push_key(ps, key);
        r = sizes ? field_size(ps, sub, "min", min) : field_uint(ps, sub, "min", lo, hi, min);
        if (r >= 0)
                r = sizes ? field_size(ps, sub, "max", max)
                          : field_uint(ps, sub, "max", lo, hi, max);
        if (r >= 0 && *min > *max) {
                push_key(ps, json_object_get(sub, "max") ? "max" : "min");
                r = fail_value(ps, "is out of range", "min <= max");
                pop(ps);
        }
        pop(ps);
        return r < 0 ? r : 0;
}

/* An absolute path of a directory: no ".." or "." component, no control character. */
static bool is_clean_dir(const char *s)
{
        if (s[0] != '/')
                return false;
        for (const char *c = s; *c; c++)
                if ((unsigned char)*c < ' ' || *c == 0x7f)
                        return false;
        for (const char *c = s; *c; c++)
                if (c[0] == '/' && c[1] == '.' &&
                    (c[2] == '/' || c[2] == '\0' || (c[2] == '.' && (c[3] == '/' || c[3] == '\0'))))
                        return false;
        return true;
}

static const char dir_allowed[] =
    "an absolute path of a directory, without \".\" or \"..\" components or control characters";

static int field_dir(struct parser *ps, json_t *v, char *dest, size_t size)
{
        const char *s = json_string_value(v);

        if (!s)
                return fail_value(ps, "is not a string", dir_allowed);
        if (!is_clean_dir(s))
                return fail_value(ps, "is not a clean absolute path", dir_allowed);
        if (strlen(s) >= size)
                return fail_value(ps, "is too long", dir_allowed);
        snprintf(dest, size, "%s", s);
        return 1;
}

/* an array of at most POLICY_SERVICE_DIRS_MAX directories */
static int field_dirs(struct parser *ps, json_t *obj, const char *key,
                      char dest[][POLICY_SERVICE_PATH_MAX], size_t *n)
{
        json_t *v = json_object_get(obj, key), *e;
        char allowed[256];
        size_t i;
        int r = 0;

        if (!v)
                return 0;
        snprintf(allowed, sizeof(allowed), "an array of at most %d directories (%s)",
                 POLICY_SERVICE_DIRS_MAX, dir_allowed);
        push_key(ps, key);
        if (!json_is_array(v) || json_array_size(v) > POLICY_SERVICE_DIRS_MAX)
                r = fail_value(ps, json_is_array(v) ? "has too many entries" : "is not an array",
                               allowed);
        else
                json_array_foreach(v, i, e)
                {
                        push_index(ps, i);
                        r = field_dir(ps, e, dest[i], POLICY_SERVICE_PATH_MAX);
                        pop(ps);
                        if (r < 0)
                                break;
                }
        if (r >= 0)
                *n = json_array_size(v);
        pop(ps);
        return r < 0 ? r : 1;
}

/* "tuner.service.history_servers": [{"url": "http://host:18080", "owner": "spark_user" | UID}] */
static int field_history_servers(struct parser *ps, json_t *obj, struct policy_tuner_service *svc)
{
        static const char *const keys[] = {"url", "owner"};
        static const char url_allowed[] =
            "an http:// or https:// URL of a Spark History Server (no blank, quote, '?' or '#', "
            "no trailing '/')";
        static const char owner_allowed[] =
            "\"spark_user\" (the local user named by each attempt's sparkUser) or a uid from 1 "
            "to 4294967294";
        json_t *v = json_object_get(obj, "history_servers"), *e;
        char allowed[128];
        size_t i;
        int r = 0;

        if (!v)
                return 0;
        snprintf(allowed, sizeof(allowed),
                 "an array of at most %d objects with \"url\" and "
                 "\"owner\"",
                 POLICY_HISTORY_SERVERS_MAX);
        push_key(ps, "history_servers");
        if (!json_is_array(v) || json_array_size(v) > POLICY_HISTORY_SERVERS_MAX) {
                r = fail_value(ps, json_is_array(v) ? "has too many entries" : "is not an array",
                               allowed);
                goto out;
        }
        json_array_foreach(v, i, e)
        {
                struct policy_history_server *hs = &svc->history_servers[i];
                const char *url, *owner_s;
                json_t *owner;

                push_index(ps, i);
                if (!json_is_object(e)) {
                        r = fail_value(ps, "is not an object", allowed);
                } else if ((r = check_keys(ps, e, keys, ELEMENTSOF(keys))) >= 0) {
                        url = json_string_value(json_object_get(e, "url"));
                        owner = json_object_get(e, "owner");
                        owner_s = json_string_value(owner);
                        if (!json_object_get(e, "url")) {
                                r = fail_missing(ps, "url", url_allowed);
                                pop(ps);
                                goto out;
                        }
                        if (!owner) {
                                r = fail_missing(ps, "owner", owner_allowed);
                                pop(ps);
                                goto out;
                        }
                        push_key(ps, "url");
                        if (!url)
                                r = fail_value(ps, "is not a string", url_allowed);
                        else if ((strncmp(url, "http://", 7) != 0 &&
                                  strncmp(url, "https://", 8) != 0) ||
                                 strpbrk(url, " \t\"'?#\\") || url[strlen(url) - 1] == '/' ||
                                 strlen(url) < 9)
                                r = fail_value(ps, "is not a History Server URL", url_allowed);
                        else if (strlen(url) >= sizeof(hs->url))
                                r = fail_value(ps, "is too long", url_allowed);
                        else
                                for (const char *c = url; *c && r >= 0; c++)
                                        if ((unsigned char)*c < ' ' || *c == 0x7f)
                                                r = fail_value(ps, "holds a control character",
                                                               url_allowed);
                        if (r >= 0)
                                snprintf(hs->url, sizeof(hs->url), "%s", url);
                        pop(ps);
                        if (r >= 0) {
                                push_key(ps, "owner");
                                if (owner_s && strcmp(owner_s, "spark_user") == 0)
                                        hs->owner_spark_user = true;
                                else if (json_is_integer(owner) && json_integer_value(owner) >= 1 &&
                                         json_integer_value(owner) <= 4294967294)
                                        hs->owner_uid = (uint32_t)json_integer_value(owner);
                                else
                                        r = fail_value(ps, "is not an owner", owner_allowed);
                                pop(ps);
                        }
                }
                pop(ps);
                if (r < 0)
                        goto out;
        }
        svc->n_history_servers = json_array_size(v);
out:
        pop(ps);
        return r < 0 ? r : 1;
}

/* "tuner.service": what `sparkshim tune-service` collects and where it publishes. */
static int parse_tuner_service(struct parser *ps, json_t *tuner, struct policy_tuner *t)
{
        static const char *const keys[] = {"reports",        "eventlogs",   "history_servers",
                                           "period_seconds", "publish_dir", "expiry_seconds"};
        json_t *obj, *v;
        uint64_t u;
        int r;

        r = section(ps, tuner, "service", keys, ELEMENTSOF(keys), &obj);
        if (r <= 0)
                return r;
        push_key(ps, "service");
        if ((r = field_dirs(ps, obj, "reports", t->service.reports, &t->service.n_reports)) < 0 ||
            (r = field_dirs(ps, obj, "eventlogs", t->service.eventlogs, &t->service.n_eventlogs)) <
                0 ||
            (r = field_history_servers(ps, obj, &t->service)) < 0)
                goto out;
        if ((r = field_uint(ps, obj, "period_seconds", 10, 86400, &u)) < 0)
                goto out;
        if (r > 0)
                t->service.period_seconds = (unsigned)u;
        if ((r = field_uint(ps, obj, "expiry_seconds", 600, 366 * 86400, &u)) < 0)
                goto out;
        if (r > 0)
                t->service.expiry_seconds = (unsigned)u;
        if ((v = json_object_get(obj, "publish_dir"))) {
                push_key(ps, "publish_dir");
                r = field_dir(ps, v, t->service.publish_dir, sizeof(t->service.publish_dir));
                pop(ps);
                if (r < 0)
                        goto out;
        }
        r = 0;
out:
        pop(ps);
        return r;
}

/* "tuner": the history store and the bounds of `sparkshim tune` (sparkshim-tune(1)). */
static int parse_tuner(struct parser *ps, json_t *root, struct policy *p)
{
        static const char *const keys[] = {"db",
                                           "job_key",
                                           "history_runs",
                                           "failure_bound",
                                           "runtime_allowance",
                                           "runtime_target",
                                           "cpu_target",
                                           "memory_target",
                                           "seed",
                                           "heap",
                                           "overhead_max",
                                           "spill_fraction",
                                           "partitions",
                                           "apply",
                                           "service"};
        static const char *const fraction_keys[] = {"min", "max"};
        static const char *const apply_names[] = {"off", "show", "safe", "explore"};
        int apply = -1;
        static const char db_allowed[] =
            "an absolute path of a SQLite file, or a postgresql:// URL";
        static const char key_allowed[] =
            "a Spark property name: a letter, then letters, digits, '.', '_', '-'";
        struct policy_tuner t = p->tuner;
        json_t *obj, *v, *sub;
        uint64_t u;
        int r = 0;

        r = section(ps, root, "tuner", keys, ELEMENTSOF(keys), &obj);
        if (r <= 0)
                return r;
        push_key(ps, "tuner");

        if ((v = json_object_get(obj, "db"))) {
                const char *s = json_string_value(v);

                /* a URL's user info or a key=value string may hold a password: messages
                 * go to logs, the value is not shown */
                bool secret = s && (strchr(s, '@') || strchr(s, '='));

                push_key(ps, "db");
                if (!s)
                        r = fail_value(ps, "is not a string", db_allowed);
                else if (s[0] != '/' && strncmp(s, "postgresql://", 13) != 0 &&
                         strncmp(s, "postgres://", 11) != 0)
                        r = secret ? fail_value_hidden(ps, "(a connection string, not shown)",
                                                       "is neither an absolute path nor a "
                                                       "PostgreSQL URL",
                                                       db_allowed)
                                   : fail_value(ps,
                                                "is neither an absolute path nor a "
                                                "PostgreSQL URL",
                                                db_allowed);
                else if (strlen(s) >= sizeof(t.db))
                        r = secret ? fail_value_hidden(ps, "(a URL, not shown)", "is too long",
                                                       db_allowed)
                                   : fail_value(ps, "is too long", db_allowed);
                else
                        snprintf(t.db, sizeof(t.db), "%s", s);
                pop(ps);
                if (r < 0)
                        goto out;
        }
        if ((v = json_object_get(obj, "job_key"))) {
                const char *s = json_string_value(v);

                push_key(ps, "job_key");
                if (!s || strlen(s) >= sizeof(t.job_key) || !is_property_name(s))
                        r = fail_value(ps, "is not a Spark property name", key_allowed);
                else
                        snprintf(t.job_key, sizeof(t.job_key), "%s", s);
                pop(ps);
                if (r < 0)
                        goto out;
        }
        r = field_uint(ps, obj, "history_runs", 1, 1000, &u);
        if (r < 0)
                goto out;
        if (r > 0)
                t.history_runs = (unsigned)u;
        if ((r = field_number(ps, obj, "failure_bound", 0.001, 0.999, &t.failure_bound)) < 0 ||
            (r = field_number(ps, obj, "runtime_allowance", 1.0, 100.0, &t.runtime_allowance)) <
                0 ||
            (r = field_number(ps, obj, "runtime_target", 1.0, 100.0, &t.runtime_target)) < 0 ||
            (r = field_number(ps, obj, "cpu_target", 0.05, 1.0, &t.cpu_target)) < 0 ||
            (r = field_number(ps, obj, "memory_target", 0.05, 1.0, &t.memory_target)) < 0 ||
            (r = field_uint(ps, obj, "seed", 0, JAVA_LONG_MAX, &t.seed)) < 0 ||
            (r = tuner_range(ps, obj, "heap", true, 0, 0, &t.heap_min, &t.heap_max)) < 0 ||
            (r = field_size(ps, obj, "overhead_max", &t.overhead_max)) < 0 ||
            (r = tuner_range(ps, obj, "partitions", false, 1, 1000000, &t.partitions_min,
                             &t.partitions_max)) < 0)
                goto out;
        if ((r = field_choice(ps, obj, "apply", apply_names, ELEMENTSOF(apply_names), &apply)) < 0)
                goto out;
        if (r > 0)
                t.apply = (enum policy_tuner_apply)apply;
        if ((r = parse_tuner_service(ps, obj, &t)) < 0)
                goto out;

        r = section(ps, obj, "spill_fraction", fraction_keys, ELEMENTSOF(fraction_keys), &sub);
        if (r < 0)
                goto out;
        if (sub) {
                push_key(ps, "spill_fraction");
                r = field_number(ps, sub, "min", 0.05, 1.0, &t.spill_fraction_min);
                if (r >= 0)
                        r = field_number(ps, sub, "max", 0.05, 1.0, &t.spill_fraction_max);
                if (r >= 0 && t.spill_fraction_min > t.spill_fraction_max) {
                        push_key(ps, json_object_get(sub, "max") ? "max" : "min");
                        r = fail_value(ps, "is out of range", "min <= max, each in [0.05, 1]");
                        pop(ps);
                }
                pop(ps);
                if (r < 0)
                        goto out;
        }
        p->tuner = t;
        r = 0;
out:
        pop(ps);
        return r < 0 ? r : 0;
}

/* A percentage of a pressure window: > 0 and <= 100; 0 when absent. */
static int field_percent(struct parser *ps, json_t *obj, const char *key, double *ret)
{
        static const char allowed[] = "a number > 0 and <= 100";
        json_t *v = json_object_get(obj, key);
        int r = 1;

        if (!v)
                return 0;
        push_key(ps, key);
        if (!json_is_number(v))
                r = fail_value(ps, "is not a number", allowed);
        else if (!(json_number_value(v) > 0.0 && json_number_value(v) <= 100.0))
                r = fail_value(ps, "is out of range", allowed);
        else
                *ret = json_number_value(v);
        pop(ps);
        return r;
}

/* window_seconds and cooldown_seconds of a rolling trigger (window only when window != NULL). */
static int rolling_timing(struct parser *ps, json_t *obj, uint64_t *window, uint64_t *cooldown)
{
        int r = 0;

        if (window)
                r = field_uint(ps, obj, "window_seconds", 1, ROLLING_WINDOW_MAX, window);
        if (r >= 0)
                r = field_uint(ps, obj, "cooldown_seconds", 0, ROLLING_COOLDOWN_MAX, cooldown);
        return r;
}

/* A trigger's required threshold key: absent is an error naming it. */
static int rolling_required(struct parser *ps, json_t *obj, const char *key, const char *allowed)
{
        return json_object_get(obj, key) ? 0 : fail_missing(ps, key, allowed);
}

/* "rolling": executor rolling through Spark's decommission (docs/rolling.md). */
static int parse_rolling(struct parser *ps, json_t *root, struct policy *p)
{
        static const char *const keys[] = {"grace_seconds", "min_age_seconds", "disk_write", "age",
                                           "memory_high",   "memory_pressure", "spills"};
        static const char *const disk_keys[] = {"bytes", "cooldown_seconds"};
        static const char *const age_keys[] = {"seconds", "cooldown_seconds"};
        static const char *const high_keys[] = {"events", "window_seconds", "cooldown_seconds"};
        static const char *const pressure_keys[] = {"some_percent", "full_percent",
                                                    "window_seconds", "cooldown_seconds"};
        static const char *const spill_keys[] = {"ineffective", "fraction", "window_seconds",
                                                 "cooldown_seconds"};
        static const char bytes_allowed[] = "a size > 0: " SIZE_ALLOWED;
        struct policy_rolling g = p->rolling;
        json_t *obj, *sub;
        char allowed[96];
        int r;

        r = section(ps, root, "rolling", keys, ELEMENTSOF(keys), &obj);
        if (r <= 0)
                return r;
        push_key(ps, "rolling");
        r = field_uint(ps, obj, "grace_seconds", 1, ROLLING_GRACE_MAX, &g.grace_seconds);
        if (r >= 0)
                r = field_uint(ps, obj, "min_age_seconds", 0, ROLLING_AGE_MAX, &g.min_age_seconds);
        if (r < 0)
                goto out;

        r = section(ps, obj, "disk_write", disk_keys, ELEMENTSOF(disk_keys), &sub);
        if (r > 0) {
                push_key(ps, "disk_write");
                r = rolling_required(ps, sub, "bytes", bytes_allowed);
                if (r >= 0)
                        r = field_size(ps, sub, "bytes", &g.disk_write_bytes);
                if (r >= 0 && g.disk_write_bytes == 0) {
                        push_key(ps, "bytes");
                        r = fail_value(ps, "is out of range", bytes_allowed);
                        pop(ps);
                }
                if (r >= 0)
                        r = rolling_timing(ps, sub, NULL, &g.disk_write_cooldown_seconds);
                pop(ps);
        }
        if (r < 0)
                goto out;

        r = section(ps, obj, "age", age_keys, ELEMENTSOF(age_keys), &sub);
        if (r > 0) {
                push_key(ps, "age");
                snprintf(allowed, sizeof(allowed), "an integer >= 1 and <= %" PRIu64,
                         ROLLING_AGE_MAX);
                r = rolling_required(ps, sub, "seconds", allowed);
                if (r >= 0)
                        r = field_uint(ps, sub, "seconds", 1, ROLLING_AGE_MAX, &g.age_seconds);
                if (r >= 0)
                        r = rolling_timing(ps, sub, NULL, &g.age_cooldown_seconds);
                pop(ps);
        }
        if (r < 0)
                goto out;

        r = section(ps, obj, "memory_high", high_keys, ELEMENTSOF(high_keys), &sub);
        if (r > 0) {
                push_key(ps, "memory_high");
                snprintf(allowed, sizeof(allowed), "an integer >= 1 and <= %" PRIu64,
                         ROLLING_EVENTS_MAX);
                r = rolling_required(ps, sub, "events", allowed);
                if (r >= 0)
                        r = field_uint(ps, sub, "events", 1, ROLLING_EVENTS_MAX,
                                       &g.memory_high_events);
                if (r >= 0)
                        r = rolling_timing(ps, sub, &g.memory_high_window_seconds,
                                           &g.memory_high_cooldown_seconds);
                pop(ps);
        }
        if (r < 0)
                goto out;

        r = section(ps, obj, "memory_pressure", pressure_keys, ELEMENTSOF(pressure_keys), &sub);
        if (r > 0) {
                push_key(ps, "memory_pressure");
                if (!json_object_get(sub, "some_percent") && !json_object_get(sub, "full_percent"))
                        r = fail_missing(ps, "some_percent",
                                         "some_percent and/or full_percent, each a number > 0 "
                                         "and <= 100");
                if (r >= 0)
                        r = field_percent(ps, sub, "some_percent", &g.pressure_some_percent);
                if (r >= 0)
                        r = field_percent(ps, sub, "full_percent", &g.pressure_full_percent);
                if (r >= 0)
                        r = rolling_timing(ps, sub, &g.pressure_window_seconds,
                                           &g.pressure_cooldown_seconds);
                pop(ps);
        }
        if (r < 0)
                goto out;

        r = section(ps, obj, "spills", spill_keys, ELEMENTSOF(spill_keys), &sub);
        if (r > 0) {
                push_key(ps, "spills");
                snprintf(allowed, sizeof(allowed), "an integer >= 1 and <= %" PRIu64,
                         ROLLING_SPILLS_MAX);
                r = rolling_required(ps, sub, "ineffective", allowed);
                if (r >= 0)
                        r = field_uint(ps, sub, "ineffective", 1, ROLLING_SPILLS_MAX,
                                       &g.spills_ineffective);
                if (r >= 0)
                        r = field_number(ps, sub, "fraction", 0.0, 1.0, &g.spills_fraction);
                if (r >= 0)
                        r = rolling_timing(ps, sub, &g.spills_window_seconds,
                                           &g.spills_cooldown_seconds);
                pop(ps);
        }
        if (r < 0)
                goto out;

        g.enabled = g.disk_write_bytes || g.age_seconds || g.memory_high_events ||
                    g.pressure_some_percent > 0 || g.pressure_full_percent > 0 ||
                    g.spills_ineffective;
        p->rolling = g;
        r = 0;
out:
        pop(ps);
        return r < 0 ? r : 0;
}

static int parse_root(struct parser *ps, json_t *root, struct policy *p)
{
        static const char *const keys[] = {
            "version",   "cgroup",        "cpu",       "memory",        "pids",   "io",
            "overrides", "out_of_bounds", "fail_mode", "grace_seconds", "report", "agent",
            "java",      "kubernetes",    "tuner",     "rolling"};
        static const char *const pids_keys[] = {"max"};
        static const char *const kubernetes_keys[] = {"init"};
        static const char *const io_keys[] = {"weight"};
        static const char *const bounds[] = {"reject", "clamp"};
        static const char *const fail_modes[] = {"closed", "open"};
        json_t *sub;
        uint64_t u;
        int r, choice;

        if (!json_is_object(root)) {
                char list[256], allowed[300];
                join_names(keys, ELEMENTSOF(keys), false, list, sizeof(list));
                snprintf(allowed, sizeof(allowed), "an object with the keys %s", list);
                return fail_value(ps, "is not an object", allowed);
        }

        /* the version first: a newer schema's keys are not "unknown", they are newer */
        r = parse_version(ps, root);
        if (r < 0)
                return r;
        r = check_keys(ps, root, keys, ELEMENTSOF(keys));
        if (r < 0)
                return r;

        r = parse_cgroup(ps, root, p);
        if (r < 0)
                return r;
        r = parse_cpu(ps, root, p);
        if (r < 0)
                return r;
        r = parse_memory(ps, root, p);
        if (r < 0)
                return r;

        r = section(ps, root, "pids", pids_keys, ELEMENTSOF(pids_keys), &sub);
        if (r > 0) {
                push_key(ps, "pids");
                r = field_uint(ps, sub, "max", 1, PIDS_MAX_LIMIT, &p->pids_max);
                pop(ps);
        }
        if (r < 0)
                return r;

        r = section(ps, root, "io", io_keys, ELEMENTSOF(io_keys), &sub);
        if (r > 0) {
                push_key(ps, "io");
                r = field_uint(ps, sub, "weight", 1, IO_WEIGHT_MAX, &u);
                if (r > 0)
                        p->io_weight = (unsigned)u;
                pop(ps);
        }
        if (r < 0)
                return r;

        r = parse_overrides(ps, root, p);
        if (r < 0)
                return r;

        r = field_choice(ps, root, "out_of_bounds", bounds, ELEMENTSOF(bounds), &choice);
        if (r < 0)
                return r;
        if (r > 0)
                p->out_of_bounds = (enum policy_out_of_bounds)choice;

        r = field_choice(ps, root, "fail_mode", fail_modes, ELEMENTSOF(fail_modes), &choice);
        if (r < 0)
                return r;
        if (r > 0)
                p->fail_mode = (enum policy_fail_mode)choice;

        r = field_uint(ps, root, "grace_seconds", 0, GRACE_SECONDS_MAX, &u);
        if (r < 0)
                return r;
        if (r > 0)
                p->grace_seconds = (unsigned)u;

        /* read by sparkshim's Kubernetes feature step (sparkshim-k8s(7)) through `plan` */
        r = section(ps, root, "kubernetes", kubernetes_keys, ELEMENTSOF(kubernetes_keys), &sub);
        if (r > 0) {
                push_key(ps, "kubernetes");
                r = field_bool(ps, sub, "init", &p->kubernetes_init);
                pop(ps);
        }
        if (r < 0)
                return r;

        r = parse_report(ps, root, p);
        if (r < 0)
                return r;
        r = parse_agent(ps, root, p);
        if (r < 0)
                return r;
        r = parse_tuner(ps, root, p);
        if (r < 0)
                return r;
        r = parse_rolling(ps, root, p);
        if (r < 0)
                return r;
        return parse_java(ps, root, p);
}

int policy_parse(const char *text, size_t len, const char *source, struct policy *ret,
                 struct util_error *err)
{
        struct parser ps = {.text = text, .len = len, .source = source, .err = err, .depth = 0};
        struct policy p;
        json_error_t jerr;
        json_t *root;
        int r;

        if (!text)
                return util_error_set(err, EINVAL, "%s: no text", source_name(&ps));

        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
                return util_error_set(err, EINVAL, "%s:%d:%d: %s", source_name(&ps), jerr.line,
                                      jerr.column, jerr.text);

        policy_init_defaults(&p);
        r = parse_root(&ps, root, &p);
        json_decref(root);
        if (r < 0)
                return r;
        *ret = p;
        return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Loading                                                                             */

int policy_load_file(const char *path, bool check_owner, struct policy *ret, struct util_error *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        char ebuf[128];
        struct stat st;
        size_t len = 0;

        if (!path)
                return util_error_set(err, EINVAL, "no policy path");

        /* O_NONBLOCK: a FIFO put in the policy's place must not hang us before the check */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                int e = errno;
                if (e == ELOOP)
                        return util_error_set(err, e,
                                              "%s: cannot open: it is a symbolic link, which "
                                              "is not followed",
                                              path);
                return util_error_set(err, e, "%s: cannot open: %s", path,
                                      strerror_r(e, ebuf, sizeof(ebuf)));
        }
        if (fstat(fd, &st) < 0) {
                int e = errno;
                return util_error_set(err, e, "%s: cannot stat: %s", path,
                                      strerror_r(e, ebuf, sizeof(ebuf)));
        }
        if (!S_ISREG(st.st_mode))
                return util_error_set(err, EINVAL, "%s: not a regular file", path);
        if (check_owner && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))))
                return util_error_set(err, EPERM,
                                      "%s: owned by uid %u and mode %04o; the policy must be "
                                      "owned by root and not writable by group or others",
                                      path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        if (st.st_size > POLICY_FILE_SIZE_MAX)
                return util_error_set(err, EFBIG,
                                      "%s: %jd bytes is too large; allowed: up to 1 MiB", path,
                                      (intmax_t)st.st_size);

        buf = malloc(POLICY_FILE_SIZE_MAX + 1);
        if (!buf)
                return util_error_set(err, ENOMEM, "%s: out of memory", path);
        for (;;) {
                ssize_t n = read(fd, buf + len, POLICY_FILE_SIZE_MAX + 1 - len);
                if (n < 0) {
                        int e = errno;
                        if (e == EINTR)
                                continue;
                        return util_error_set(err, e, "%s: cannot read: %s", path,
                                              strerror_r(e, ebuf, sizeof(ebuf)));
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > POLICY_FILE_SIZE_MAX)
                        return util_error_set(err, EFBIG, "%s: too large; allowed: up to 1 MiB",
                                              path);
        }
        return policy_parse(buf, len, path, ret, err);
}
