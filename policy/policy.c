/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster policy: defaults, the JSON schema (version 1) as tables of keys, loading with an
 * owner check. */
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

static void uint_allowed(uint64_t min, uint64_t max, char *buf, size_t size)
{
        snprintf(buf, size, "an integer >= %" PRIu64 " and <= %" PRIu64, min, max);
}

static int field_uint(struct parser *ps, json_t *obj, const char *key, uint64_t min, uint64_t max,
                      uint64_t *ret)
{
        json_t *v = json_object_get(obj, key);
        char allowed[96];
        json_int_t i;
        int r = 1;

        if (!v)
                return 0;
        uint_allowed(min, max, allowed, sizeof(allowed));
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

/* ---------------------------------------------------------------------------------- */
/* Sections as tables                                                                  */

/*
 * Each section of the schema is a table of its keys, as systemd hands sd_json_dispatch() a
 * table of { name, type, offset, flags }: an entry names the key, the field_* helper that
 * checks it (with the entry's bounds, so the messages are the helper's) and where the value
 * goes, as an offset into the struct the section fills. The keys are checked in table order
 * and the first error is the one reported; a key whose check is not one of the helpers is a
 * FIELD_CUSTOM entry with its own function, in its place in that order.
 */
enum field_kind {
        FIELD_UINT,     /* uint64_t in [min, max] (field_uint) */
        FIELD_UNSIGNED, /* unsigned in [min, max] (field_uint, then narrowed) */
        FIELD_NUMBER,   /* double in [min_number, max_number] (field_number) */
        FIELD_SIZE,     /* uint64_t bytes (field_size) */
        FIELD_PERCENT,  /* double in (0, 100] (field_percent) */
        FIELD_BOOL,     /* bool (field_bool) */
        FIELD_CHOICE,   /* an enum: the index of the string in choices (field_choice) */
        FIELD_CUSTOM,   /* parse() checks and stores the key */
        FIELD_OBJECT,   /* a nested section: its keys, its fields, then finish() */
};

#define FIELD_REQUIRED 1u /* absent is an error naming the key (FIELD_UINT only) */
#define FIELDS_MAX     16 /* entries in the table of a FIELD_OBJECT without keys */

struct field {
        const char *name;
        enum field_kind kind;
        unsigned flags; /* FIELD_REQUIRED */
        /* where the value goes in the section's struct; for FIELD_OBJECT, where the struct
         * its fields go in is (0: the same one) */
        size_t offset;
        uint64_t min, max;             /* FIELD_UINT, FIELD_UNSIGNED */
        double min_number, max_number; /* FIELD_NUMBER */
        const char *const *choices;    /* FIELD_CHOICE */
        size_t n_choices;
        const struct field *fields; /* FIELD_OBJECT, in the order they are checked */
        size_t n_fields;
        /* FIELD_OBJECT: its keys as the messages list them; NULL when that is the fields' order */
        const char *const *keys;
        size_t n_keys;
        /* FIELD_CUSTOM: key in obj, stored into base (the section's struct); >= 0 or -EINVAL */
        int (*parse)(struct parser *ps, json_t *obj, const char *key, void *base);
        /* FIELD_OBJECT, optional: once its fields passed, the checks across them and what
         * follows from them; obj is the object, base its struct; >= 0 or -EINVAL */
        int (*finish)(struct parser *ps, json_t *obj, void *base);
};

/* The offset of member, refused at compile time unless its type is ctype, the one the kind
 * stores; for an enum, unless it is int-sized (field_choice's index is stored as an int). */
#define FIELD_AT(type, member, ctype) _Generic(((type *)0)->member, ctype : offsetof(type, member))
#define FIELD_ENUM_AT(type, member)                                                                \
        (offsetof(type, member) +                                                                  \
         0 * sizeof(char[sizeof(((type *)0)->member) == sizeof(int) ? 1 : -1]))

#define F_UINT(key, lo, hi, type, member)                                                          \
        {                                                                                          \
                .name = (key), .kind = FIELD_UINT, .offset = FIELD_AT(type, member, uint64_t),     \
                .min = (lo), .max = (hi)                                                           \
        }
#define F_UINT_REQUIRED(key, lo, hi, type, member)                                                 \
        {                                                                                          \
                .name = (key), .kind = FIELD_UINT, .flags = FIELD_REQUIRED,                        \
                .offset = FIELD_AT(type, member, uint64_t), .min = (lo), .max = (hi)               \
        }
#define F_UNSIGNED(key, lo, hi, type, member)                                                      \
        {                                                                                          \
                .name = (key), .kind = FIELD_UNSIGNED, .offset = FIELD_AT(type, member, unsigned), \
                .min = (lo), .max = (hi)                                                           \
        }
#define F_NUMBER(key, lo, hi, type, member)                                                        \
        {                                                                                          \
                .name = (key), .kind = FIELD_NUMBER, .offset = FIELD_AT(type, member, double),     \
                .min_number = (lo), .max_number = (hi)                                             \
        }
#define F_SIZE(key, type, member)                                                                  \
        {                                                                                          \
                .name = (key), .kind = FIELD_SIZE, .offset = FIELD_AT(type, member, uint64_t)      \
        }
#define F_PERCENT(key, type, member)                                                               \
        {                                                                                          \
                .name = (key), .kind = FIELD_PERCENT, .offset = FIELD_AT(type, member, double)     \
        }
#define F_BOOL(key, type, member)                                                                  \
        {                                                                                          \
                .name = (key), .kind = FIELD_BOOL, .offset = FIELD_AT(type, member, bool)          \
        }
#define F_CHOICE(key, values, type, member)                                                        \
        {                                                                                          \
                .name = (key), .kind = FIELD_CHOICE, .offset = FIELD_ENUM_AT(type, member),        \
                .choices = (values), .n_choices = ELEMENTSOF(values)                               \
        }
#define F_CUSTOM(key, function)                                                                    \
        {                                                                                          \
                .name = (key), .kind = FIELD_CUSTOM, .parse = (function)                           \
        }
#define F_OBJECT(key, at, table, then)                                                             \
        {                                                                                          \
                .name = (key), .kind = FIELD_OBJECT, .offset = (at), .fields = (table),            \
                .n_fields = ELEMENTSOF(table), .finish = (then)                                    \
        }
#define F_OBJECT_KEYS(key, at, names, table, then)                                                 \
        {                                                                                          \
                .name = (key), .kind = FIELD_OBJECT, .offset = (at), .fields = (table),            \
                .n_fields = ELEMENTSOF(table), .keys = (names), .n_keys = ELEMENTSOF(names),       \
                .finish = (then)                                                                   \
        }

static int parse_section(struct parser *ps, json_t *obj, const struct field table[], size_t n,
                         void *base);

/* A FIELD_OBJECT: 0 absent, 1 present and valid, or -EINVAL. */
static int parse_object(struct parser *ps, json_t *obj, const struct field *f, void *base)
{
        const char *names[FIELDS_MAX];
        const char *const *keys = f->keys;
        size_t n_keys = f->n_keys;
        json_t *sub;
        int r;

        if (!keys) {
                assert(f->n_fields <= ELEMENTSOF(names));
                for (size_t i = 0; i < f->n_fields; i++)
                        names[i] = f->fields[i].name;
                keys = names;
                n_keys = f->n_fields;
        }
        r = section(ps, obj, f->name, keys, n_keys, &sub);
        if (r <= 0)
                return r;
        push_key(ps, f->name);
        r = parse_section(ps, sub, f->fields, f->n_fields, base);
        if (r >= 0 && f->finish)
                r = f->finish(ps, sub, base);
        pop(ps);
        return r < 0 ? r : 1;
}

/* One entry of a table: >= 0, or -EINVAL. */
static int parse_field(struct parser *ps, json_t *obj, const struct field *f, void *base)
{
        void *at = (char *)base + f->offset;
        int r, choice = 0;
        uint64_t u = 0;

        switch (f->kind) {
        case FIELD_UINT:
                return field_uint(ps, obj, f->name, f->min, f->max, at);
        case FIELD_UNSIGNED:
                r = field_uint(ps, obj, f->name, f->min, f->max, &u);
                if (r > 0)
                        *(unsigned *)at = (unsigned)u;
                return r;
        case FIELD_NUMBER:
                return field_number(ps, obj, f->name, f->min_number, f->max_number, at);
        case FIELD_SIZE:
                return field_size(ps, obj, f->name, at);
        case FIELD_PERCENT:
                return field_percent(ps, obj, f->name, at);
        case FIELD_BOOL:
                return field_bool(ps, obj, f->name, at);
        case FIELD_CHOICE:
                r = field_choice(ps, obj, f->name, f->choices, f->n_choices, &choice);
                if (r > 0)
                        *(int *)at = choice;
                return r;
        case FIELD_CUSTOM:
                return f->parse(ps, obj, f->name, base);
        case FIELD_OBJECT:
                return parse_object(ps, obj, f, at);
        }
        assert(!"unknown field kind");
        return -EINVAL;
}

/* The keys of obj that table describes, in table order, into base: 0, or the first -EINVAL. */
static int parse_section(struct parser *ps, json_t *obj, const struct field table[], size_t n,
                         void *base)
{
        for (size_t i = 0; i < n; i++) {
                const struct field *f = &table[i];
                int r;

                if ((f->flags & FIELD_REQUIRED) && !json_object_get(obj, f->name)) {
                        char allowed[96];

                        assert(f->kind == FIELD_UINT);
                        uint_allowed(f->min, f->max, allowed, sizeof(allowed));
                        return fail_missing(ps, f->name, allowed);
                }
                r = parse_field(ps, obj, f, base);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---------------------------------------------------------------------------------- */
/* The sections                                                                        */

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

/* "cgroup.parent" */
static int cgroup_parent(struct parser *ps, json_t *obj, const char *key, void *base)
{
        static const char allowed[] =
            "a relative path below the cgroup2 mount of components [A-Za-z0-9_.-]+, "
            "none \".\" or \"..\"";
        struct policy *p = base;
        json_t *v = json_object_get(obj, key);
        int r;

        if (!v)
                return 0;
        push_key(ps, key);
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
        return r;
}

static const struct field cgroup_fields[] = {
    F_CUSTOM("parent", cgroup_parent),
};

/* "cpu.overcommit": a factor, or "unlimited" */
static int cpu_overcommit(struct parser *ps, json_t *obj, const char *key, void *base)
{
        static const char allowed[] = "a number >= 1 and <= 64, or \"unlimited\"";
        struct policy *p = base;
        json_t *v = json_object_get(obj, key);
        int r = 0;

        if (!v)
                return 0;
        push_key(ps, key);
        if (json_is_string(v) && strcmp(json_string_value(v), "unlimited") == 0)
                p->cpu_unlimited = true;
        else if (!json_is_number(v))
                r = fail_value(ps, "is not a valid value", allowed);
        else if (json_number_value(v) < 1.0 || json_number_value(v) > OVERCOMMIT_MAX)
                r = fail_value(ps, "is out of range", allowed);
        else {
                p->cpu_unlimited = false;
                p->overcommit = json_number_value(v);
        }
        pop(ps);
        return r;
}

/* "cpu.millicores": min <= max, told at max when it was given */
static int millicores_ordered(struct parser *ps, json_t *obj, void *base)
{
        struct policy *p = base;
        char allowed[128];
        int r;

        if (p->millicores_min <= p->millicores_max)
                return 0;
        if (json_object_get(obj, "max")) {
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
        return r;
}

static const struct field millicores_fields[] = {
    F_UINT("min", 1, POLICY_MILLICORES_LIMIT, struct policy, millicores_min),
    F_UINT("max", 1, POLICY_MILLICORES_LIMIT, struct policy, millicores_max),
};

static const struct field cpu_fields[] = {
    F_CUSTOM("overcommit", cpu_overcommit),
    F_OBJECT("millicores", 0, millicores_fields, millicores_ordered),
};

/* "memory.burst_ratio": default <= max */
static int burst_ratio_ordered(struct parser *ps, json_t *obj, void *base)
{
        struct policy *p = base;
        char allowed[128];
        int r;

        if (p->burst_ratio_default <= p->burst_ratio_max)
                return 0;
        snprintf(allowed, sizeof(allowed), "a number >= 0 and <= memory.burst_ratio.max (%g)",
                 p->burst_ratio_max);
        push_key(ps, json_object_get(obj, "default") ? "default" : "max");
        r = fail_value(ps, "is out of range", allowed);
        pop(ps);
        return r;
}

/* "memory.high_factor": memory.high as a share of the limit, or null or false for none */
static int memory_high_factor(struct parser *ps, json_t *obj, const char *key, void *base)
{
        static const char allowed[] = "a number >= 0 and <= 1, null or false";
        struct policy *p = base;
        json_t *v = json_object_get(obj, key);
        int r = 0;

        if (!v)
                return 0;
        push_key(ps, key);
        if (json_is_null(v) || json_is_false(v))
                p->memory_high_enabled = false;
        else if (!json_is_number(v))
                r = fail_value(ps, "is not a valid value", allowed);
        else if (json_number_value(v) < 0.0 || json_number_value(v) > 1.0)
                r = fail_value(ps, "is out of range", allowed);
        else {
                p->memory_high_enabled = true;
                p->memory_high_factor = json_number_value(v);
        }
        pop(ps);
        return r;
}

/* max first: it bounds default */
static const char *const burst_ratio_keys[] = {"default", "max"};
static const struct field burst_ratio_fields[] = {
    F_NUMBER("max", 0.0, 1.0, struct policy, burst_ratio_max),
    F_NUMBER("default", 0.0, 1.0, struct policy, burst_ratio_default),
};

static const struct field overhead_fields[] = {
    F_SIZE("min", struct policy, overhead_min_bytes),
    F_NUMBER("factor", 0.0, OVERHEAD_FACTOR_MAX, struct policy, overhead_factor),
};

static const char *const protections[] = {"low", "min", "none"};
static const struct field memory_fields[] = {
    F_OBJECT_KEYS("burst_ratio", 0, burst_ratio_keys, burst_ratio_fields, burst_ratio_ordered),
    F_CHOICE("protection", protections, struct policy, protection),
    F_CUSTOM("high_factor", memory_high_factor),
    F_OBJECT("overhead", 0, overhead_fields, NULL),
    F_SIZE("limit_max", struct policy, memory_limit_max),
};

static const struct field pids_fields[] = {
    F_UINT("max", 1, PIDS_MAX_LIMIT, struct policy, pids_max),
};

static const struct field io_fields[] = {
    F_UNSIGNED("weight", 1, IO_WEIGHT_MAX, struct policy, io_weight),
};

static int parse_overrides(struct parser *ps, json_t *root, const char *key, void *base)
{
        static const char allowed[] = "an array of \"millicores\", \"cores\", \"memory\", "
                                      "\"burst_ratio\", \"cgroup_parent\", \"fail_mode\", "
                                      "\"agent\", \"grace\", \"name\"";
        struct policy *p = base;
        json_t *v = json_object_get(root, key), *e;
        unsigned bits = 0;
        size_t i;
        int r = 0;

        if (!v)
                return 0;
        push_key(ps, key);
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

static int report_file(struct parser *ps, json_t *obj, const char *key, void *base)
{
        struct policy *p = base;

        return report_path(ps, obj, key, REPORT_PATH_TEMPLATE, p->report_path,
                           sizeof(p->report_path));
}

static int report_socket(struct parser *ps, json_t *obj, const char *key, void *base)
{
        struct policy *p = base;

        return report_path(ps, obj, key, REPORT_PATH_PLAIN, p->report_socket,
                           sizeof(p->report_socket));
}

static int report_prometheus(struct parser *ps, json_t *obj, const char *key, void *base)
{
        struct policy *p = base;

        return report_path(ps, obj, key, REPORT_PATH_PROMETHEUS, p->report_prometheus,
                           sizeof(p->report_prometheus));
}

static const char *const sink_failures[] = {"warn", "refuse"};
static const struct field report_fields[] = {
    F_CUSTOM("path", report_file),
    F_CUSTOM("socket", report_socket),
    F_CUSTOM("prometheus_path", report_prometheus),
    F_UNSIGNED("interval_seconds", 1, 3600, struct policy, report_interval_seconds),
    F_CHOICE("sink_failure", sink_failures, struct policy, report_sink_failure),
};

/* read by sparkshim's Kubernetes feature step (sparkshim-k8s(7)) through `plan` */
static const struct field kubernetes_fields[] = {
    F_BOOL("init", struct policy, kubernetes_init),
};

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

static int agent_path(struct parser *ps, json_t *obj, const char *key, void *base)
{
        static const char allowed[] =
            "an absolute path without blanks, quotes, '\\', ',' or '=', or \"\" for the "
            "installed agent";
        struct policy_agent *a = base;
        json_t *v = json_object_get(obj, key);
        int r = 0;

        if (!v)
                return 0;
        push_key(ps, key);
        if (!json_is_string(v))
                r = fail_value(ps, "is not a string", allowed);
        else if (json_string_length(v) >= sizeof(a->path))
                r = fail_value(ps, "is too long", allowed);
        else if (strlen(json_string_value(v)) != json_string_length(v) ||
                 !agent_path_valid(json_string_value(v)))
                r = fail_value(ps, "is not a valid path", allowed);
        else
                memcpy(a->path, json_string_value(v), json_string_length(v) + 1);
        pop(ps);
        return r;
}

/* "agent.threshold": a size, a fraction of the request or the limit, or null for none */
static int agent_threshold(struct parser *ps, json_t *obj, const char *key, void *base)
{
        static const char *const keys[] = {"fraction", "of"};
        static const char *const bases[] = {"request", "limit"};
        static const char allowed[] =
            "a size (bytes, or a string such as \"6g\"), an object "
            "{\"fraction\": F, \"of\": \"request\" or \"limit\"} with F > 0 and <= 1, or null";
        struct policy_agent *a = base;
        json_t *v = json_object_get(obj, key), *f;
        int r = 0, of = 0;

        if (!v)
                return 0;
        if (json_is_null(v)) {
                a->threshold = POLICY_AGENT_THRESHOLD_NONE;
                return 0;
        }
        if (json_is_integer(v) || json_is_string(v)) {
                uint64_t bytes = 0;
                int k = 0;

                push_key(ps, key);
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
                push_key(ps, key);
                r = fail_value(ps, "is not a valid value", allowed);
                pop(ps);
                return r;
        }
        r = section(ps, obj, key, keys, ELEMENTSOF(keys), &v);
        if (r < 0)
                return r;
        push_key(ps, key);
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
                r = field_choice(ps, v, "of", bases, ELEMENTSOF(bases), &of);
        pop(ps);
        if (r < 0)
                return r;
        a->threshold = of == 1 ? POLICY_AGENT_THRESHOLD_LIMIT : POLICY_AGENT_THRESHOLD_REQUEST;
        return 0;
}

/* "agent.psi_stall_ms": no longer than the window it is measured in */
static int agent_psi_stall(struct parser *ps, json_t *obj, const char *key, void *base)
{
        struct policy_agent *a = base;

        return field_uint(ps, obj, key, 0, a->psi_window_ms, &a->psi_stall_ms);
}

/* the agent refuses the JVM's start for these; say so here, at the key */
static int agent_pressure_source(struct parser *ps, json_t *obj, void *base)
{
        const struct policy_agent *a = base;
        int r;

        if (!(a->threshold == POLICY_AGENT_THRESHOLD_NONE && !a->psi_stall_ms &&
              !(a->heap_threshold > 0) && (a->allow_bytes || a->allow_fraction > 0)))
                return 0;
        push_key(ps, a->allow_bytes ? "allow_bytes" : "allow_fraction");
        r = fail_value(ps,
                       "applies under memory pressure only, but agent.threshold is null "
                       "and neither agent.psi_stall_ms nor agent.heap_threshold is set",
                       "0 (off) without a pressure source, or a threshold as a size or "
                       "{\"fraction\": F, \"of\": \"request\" or \"limit\"}, or "
                       "psi_stall_ms or heap_threshold");
        pop(ps);
        return r;
}

/* psi_window_ms is checked before psi_stall_ms, which it bounds */
static const char *const agent_keys[] = {
    "enabled",        "path",          "injection",      "force_bytes",
    "periodic_bytes", "allow_bytes",   "allow_fraction", "records",
    "threshold",      "cooldown_ms",   "min_spill",      "max_spills",
    "psi_stall_ms",   "psi_window_ms", "heap_threshold", "log"};
static const char *const agent_injections[] = {"auto", "agentpath", "java_tool_options"};
static const char *const agent_levels[] = {"error", "warn", "info", "debug"};
static const struct field agent_fields[] = {
    F_BOOL("enabled", struct policy_agent, enabled),
    F_CUSTOM("path", agent_path),
    F_CHOICE("injection", agent_injections, struct policy_agent, injection),
    F_SIZE("force_bytes", struct policy_agent, force_bytes),
    F_SIZE("periodic_bytes", struct policy_agent, periodic_bytes),
    F_SIZE("allow_bytes", struct policy_agent, allow_bytes),
    F_NUMBER("allow_fraction", 0.0, 1.0, struct policy_agent, allow_fraction),
    F_UINT("records", 0, AGENT_RECORDS_MAX, struct policy_agent, records),
    F_CUSTOM("threshold", agent_threshold),
    F_UINT("cooldown_ms", 0, AGENT_COOLDOWN_MAX, struct policy_agent, cooldown_ms),
    F_SIZE("min_spill", struct policy_agent, min_spill_bytes),
    F_UINT("max_spills", 0, AGENT_MAX_SPILLS_MAX, struct policy_agent, max_spills),
    F_UINT("psi_window_ms", AGENT_PSI_MS_MIN, AGENT_PSI_MS_MAX, struct policy_agent, psi_window_ms),
    F_CUSTOM("psi_stall_ms", agent_psi_stall),
    F_NUMBER("heap_threshold", 0.0, 1.0, struct policy_agent, heap_threshold),
    F_CHOICE("log", agent_levels, struct policy_agent, log),
};

/* "java": what the java personality of a `sparkshim java-home` does with an executor. */
static const char *const java_modes[] = {"run", "exec"};
static const struct field java_fields[] = {
    F_CHOICE("executors", java_modes, struct policy, java_executors),
};

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

/* "min" <= "max" of one of the tuner's ranges, told at max when it was given */
static int range_ordered(struct parser *ps, json_t *obj, bool ordered, const char *allowed)
{
        int r;

        if (ordered)
                return 0;
        push_key(ps, json_object_get(obj, "max") ? "max" : "min");
        r = fail_value(ps, "is out of range", allowed);
        pop(ps);
        return r;
}

static int heap_ordered(struct parser *ps, json_t *obj, void *base)
{
        const struct policy_tuner *t = base;

        return range_ordered(ps, obj, t->heap_min <= t->heap_max, "min <= max");
}

static int partitions_ordered(struct parser *ps, json_t *obj, void *base)
{
        const struct policy_tuner *t = base;

        return range_ordered(ps, obj, t->partitions_min <= t->partitions_max, "min <= max");
}

static int spill_fraction_ordered(struct parser *ps, json_t *obj, void *base)
{
        const struct policy_tuner *t = base;

        return range_ordered(ps, obj, t->spill_fraction_min <= t->spill_fraction_max,
                             "min <= max, each in [0.05, 1]");
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

static const char history_url_allowed[] =
    "an http:// or https:// URL of a Spark History Server (no blank, quote, '?' or '#', "
    "no trailing '/')";
static const char history_owner_allowed[] =
    "\"spark_user\" (the local user named by each attempt's sparkUser) or a uid from 1 "
    "to 4294967294";

static int history_server_url(struct parser *ps, const char *url, struct policy_history_server *hs)
{
        int r = 0;

        push_key(ps, "url");
        if (!url)
                r = fail_value(ps, "is not a string", history_url_allowed);
        else if ((strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
                 strpbrk(url, " \t\"'?#\\") || url[strlen(url) - 1] == '/' || strlen(url) < 9)
                r = fail_value(ps, "is not a History Server URL", history_url_allowed);
        else if (strlen(url) >= sizeof(hs->url))
                r = fail_value(ps, "is too long", history_url_allowed);
        else
                for (const char *c = url; *c && r >= 0; c++)
                        if ((unsigned char)*c < ' ' || *c == 0x7f)
                                r = fail_value(ps, "holds a control character",
                                               history_url_allowed);
        if (r >= 0)
                snprintf(hs->url, sizeof(hs->url), "%s", url);
        pop(ps);
        return r;
}

static int history_server_owner(struct parser *ps, json_t *owner, struct policy_history_server *hs)
{
        const char *owner_s = json_string_value(owner);
        int r = 0;

        push_key(ps, "owner");
        if (owner_s && strcmp(owner_s, "spark_user") == 0)
                hs->owner_spark_user = true;
        else if (json_is_integer(owner) && json_integer_value(owner) >= 1 &&
                 json_integer_value(owner) <= 4294967294)
                hs->owner_uid = (uint32_t)json_integer_value(owner);
        else
                r = fail_value(ps, "is not an owner", history_owner_allowed);
        pop(ps);
        return r;
}

/* One entry of the array, its index pushed; allowed describes the array. */
static int history_server(struct parser *ps, json_t *e, const char *allowed,
                          struct policy_history_server *hs)
{
        static const char *const keys[] = {"url", "owner"};
        int r;

        if (!json_is_object(e))
                return fail_value(ps, "is not an object", allowed);
        r = check_keys(ps, e, keys, ELEMENTSOF(keys));
        if (r < 0)
                return r;
        if (!json_object_get(e, "url"))
                return fail_missing(ps, "url", history_url_allowed);
        if (!json_object_get(e, "owner"))
                return fail_missing(ps, "owner", history_owner_allowed);
        r = history_server_url(ps, json_string_value(json_object_get(e, "url")), hs);
        if (r >= 0)
                r = history_server_owner(ps, json_object_get(e, "owner"), hs);
        return r;
}

/* "tuner.service.history_servers": [{"url": "http://host:18080", "owner": "spark_user" | UID}] */
static int field_history_servers(struct parser *ps, json_t *obj, const char *key, void *base)
{
        struct policy_tuner_service *svc = base;
        json_t *v = json_object_get(obj, key), *e;
        char allowed[128];
        size_t i;
        int r = 0;

        if (!v)
                return 0;
        snprintf(allowed, sizeof(allowed),
                 "an array of at most %d objects with \"url\" and "
                 "\"owner\"",
                 POLICY_HISTORY_SERVERS_MAX);
        push_key(ps, key);
        if (!json_is_array(v) || json_array_size(v) > POLICY_HISTORY_SERVERS_MAX) {
                r = fail_value(ps, json_is_array(v) ? "has too many entries" : "is not an array",
                               allowed);
                goto out;
        }
        json_array_foreach(v, i, e)
        {
                push_index(ps, i);
                r = history_server(ps, e, allowed, &svc->history_servers[i]);
                pop(ps);
                if (r < 0)
                        goto out;
        }
        svc->n_history_servers = json_array_size(v);
out:
        pop(ps);
        return r < 0 ? r : 1;
}

static int service_reports(struct parser *ps, json_t *obj, const char *key, void *base)
{
        struct policy_tuner_service *svc = base;

        return field_dirs(ps, obj, key, svc->reports, &svc->n_reports);
}

static int service_eventlogs(struct parser *ps, json_t *obj, const char *key, void *base)
{
        struct policy_tuner_service *svc = base;

        return field_dirs(ps, obj, key, svc->eventlogs, &svc->n_eventlogs);
}

static int service_publish_dir(struct parser *ps, json_t *obj, const char *key, void *base)
{
        struct policy_tuner_service *svc = base;
        json_t *v = json_object_get(obj, key);
        int r;

        if (!v)
                return 0;
        push_key(ps, key);
        r = field_dir(ps, v, svc->publish_dir, sizeof(svc->publish_dir));
        pop(ps);
        return r;
}

/* "tuner.service": what `sparkshim tune-service` collects and where it publishes. */
static const char *const service_keys[] = {"reports",        "eventlogs",   "history_servers",
                                           "period_seconds", "publish_dir", "expiry_seconds"};
static const struct field service_fields[] = {
    F_CUSTOM("reports", service_reports),
    F_CUSTOM("eventlogs", service_eventlogs),
    F_CUSTOM("history_servers", field_history_servers),
    F_UNSIGNED("period_seconds", 10, 86400, struct policy_tuner_service, period_seconds),
    F_UNSIGNED("expiry_seconds", 600, 366 * 86400, struct policy_tuner_service, expiry_seconds),
    F_CUSTOM("publish_dir", service_publish_dir),
};

static int tuner_db(struct parser *ps, json_t *obj, const char *key, void *base)
{
        static const char db_allowed[] =
            "an absolute path of a SQLite file, or a postgresql:// URL";
        struct policy_tuner *t = base;
        json_t *v = json_object_get(obj, key);
        const char *s = json_string_value(v);
        /* a URL's user info or a key=value string may hold a password: messages
         * go to logs, the value is not shown */
        bool secret = s && (strchr(s, '@') || strchr(s, '='));
        int r = 0;

        if (!v)
                return 0;
        push_key(ps, key);
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
        else if (strlen(s) >= sizeof(t->db))
                r = secret ? fail_value_hidden(ps, "(a URL, not shown)", "is too long", db_allowed)
                           : fail_value(ps, "is too long", db_allowed);
        else
                snprintf(t->db, sizeof(t->db), "%s", s);
        pop(ps);
        return r;
}

static int tuner_job_key(struct parser *ps, json_t *obj, const char *key, void *base)
{
        static const char key_allowed[] =
            "a Spark property name: a letter, then letters, digits, '.', '_', '-'";
        struct policy_tuner *t = base;
        json_t *v = json_object_get(obj, key);
        const char *s = json_string_value(v);
        int r = 0;

        if (!v)
                return 0;
        push_key(ps, key);
        if (!s || strlen(s) >= sizeof(t->job_key) || !is_property_name(s))
                r = fail_value(ps, "is not a Spark property name", key_allowed);
        else
                snprintf(t->job_key, sizeof(t->job_key), "%s", s);
        pop(ps);
        return r;
}

static const struct field heap_fields[] = {
    F_SIZE("min", struct policy_tuner, heap_min),
    F_SIZE("max", struct policy_tuner, heap_max),
};

static const struct field partitions_fields[] = {
    F_UINT("min", 1, 1000000, struct policy_tuner, partitions_min),
    F_UINT("max", 1, 1000000, struct policy_tuner, partitions_max),
};

static const struct field spill_fraction_fields[] = {
    F_NUMBER("min", 0.05, 1.0, struct policy_tuner, spill_fraction_min),
    F_NUMBER("max", 0.05, 1.0, struct policy_tuner, spill_fraction_max),
};

/* "tuner": the history store and the bounds of `sparkshim tune` (sparkshim-tune(1)).
 * spill_fraction is checked last. */
static const char *const tuner_keys[] = {"db",
                                         "job_key",
                                         "history_runs",
                                         "failure_bound",
                                         "runtime_allowance",
                                         "runtime_target",
                                         "work_target",
                                         "cpu_target",
                                         "memory_target",
                                         "seed",
                                         "heap",
                                         "overhead_max",
                                         "spill_fraction",
                                         "partitions",
                                         "apply",
                                         "service"};
static const char *const tuner_applies[] = {"off", "show", "safe", "explore"};
static const struct field tuner_fields[] = {
    F_CUSTOM("db", tuner_db),
    F_CUSTOM("job_key", tuner_job_key),
    F_UNSIGNED("history_runs", 1, 1000, struct policy_tuner, history_runs),
    F_NUMBER("failure_bound", 0.001, 0.999, struct policy_tuner, failure_bound),
    F_NUMBER("runtime_allowance", 1.0, 100.0, struct policy_tuner, runtime_allowance),
    F_NUMBER("runtime_target", 1.0, 100.0, struct policy_tuner, runtime_target),
    F_NUMBER("work_target", 1.0, 100.0, struct policy_tuner, work_target),
    F_NUMBER("cpu_target", 0.05, 1.0, struct policy_tuner, cpu_target),
    F_NUMBER("memory_target", 0.05, 1.0, struct policy_tuner, memory_target),
    F_UINT("seed", 0, JAVA_LONG_MAX, struct policy_tuner, seed),
    F_OBJECT("heap", 0, heap_fields, heap_ordered),
    F_SIZE("overhead_max", struct policy_tuner, overhead_max),
    F_OBJECT("partitions", 0, partitions_fields, partitions_ordered),
    F_CHOICE("apply", tuner_applies, struct policy_tuner, apply),
    F_OBJECT_KEYS("service", FIELD_AT(struct policy_tuner, service, struct policy_tuner_service),
                  service_keys, service_fields, NULL),
    F_OBJECT("spill_fraction", 0, spill_fraction_fields, spill_fraction_ordered),
};

/* "rolling.disk_write.bytes": required, and more than 0 */
static int rolling_disk_bytes(struct parser *ps, json_t *obj, const char *key, void *base)
{
        static const char allowed[] = "a size > 0: " SIZE_ALLOWED;
        struct policy_rolling *g = base;
        int r;

        if (!json_object_get(obj, key))
                return fail_missing(ps, key, allowed);
        r = field_size(ps, obj, key, &g->disk_write_bytes);
        if (r >= 0 && g->disk_write_bytes == 0) {
                push_key(ps, key);
                r = fail_value(ps, "is out of range", allowed);
                pop(ps);
        }
        return r;
}

/* "rolling.memory_pressure.some_percent": it or full_percent is required */
static int rolling_some_percent(struct parser *ps, json_t *obj, const char *key, void *base)
{
        struct policy_rolling *g = base;

        if (!json_object_get(obj, "some_percent") && !json_object_get(obj, "full_percent"))
                return fail_missing(ps, "some_percent",
                                    "some_percent and/or full_percent, each a number > 0 "
                                    "and <= 100");
        return field_percent(ps, obj, key, &g->pressure_some_percent);
}

/* rolling is on when a trigger is set */
static int rolling_enable(struct parser *ps, json_t *obj, void *base)
{
        struct policy_rolling *g = base;

        g->enabled = g->disk_write_bytes || g->age_seconds || g->memory_high_events ||
                     g->pressure_some_percent > 0 || g->pressure_full_percent > 0 ||
                     g->spills_ineffective;
        return 0;
}

/* Each trigger: its threshold (required), then window_seconds and cooldown_seconds. */
static const struct field disk_write_fields[] = {
    F_CUSTOM("bytes", rolling_disk_bytes),
    F_UINT("cooldown_seconds", 0, ROLLING_COOLDOWN_MAX, struct policy_rolling,
           disk_write_cooldown_seconds),
};

static const struct field age_fields[] = {
    F_UINT_REQUIRED("seconds", 1, ROLLING_AGE_MAX, struct policy_rolling, age_seconds),
    F_UINT("cooldown_seconds", 0, ROLLING_COOLDOWN_MAX, struct policy_rolling,
           age_cooldown_seconds),
};

static const struct field memory_high_fields[] = {
    F_UINT_REQUIRED("events", 1, ROLLING_EVENTS_MAX, struct policy_rolling, memory_high_events),
    F_UINT("window_seconds", 1, ROLLING_WINDOW_MAX, struct policy_rolling,
           memory_high_window_seconds),
    F_UINT("cooldown_seconds", 0, ROLLING_COOLDOWN_MAX, struct policy_rolling,
           memory_high_cooldown_seconds),
};

static const struct field memory_pressure_fields[] = {
    F_CUSTOM("some_percent", rolling_some_percent),
    F_PERCENT("full_percent", struct policy_rolling, pressure_full_percent),
    F_UINT("window_seconds", 1, ROLLING_WINDOW_MAX, struct policy_rolling, pressure_window_seconds),
    F_UINT("cooldown_seconds", 0, ROLLING_COOLDOWN_MAX, struct policy_rolling,
           pressure_cooldown_seconds),
};

static const struct field spills_fields[] = {
    F_UINT_REQUIRED("ineffective", 1, ROLLING_SPILLS_MAX, struct policy_rolling,
                    spills_ineffective),
    F_NUMBER("fraction", 0.0, 1.0, struct policy_rolling, spills_fraction),
    F_UINT("window_seconds", 1, ROLLING_WINDOW_MAX, struct policy_rolling, spills_window_seconds),
    F_UINT("cooldown_seconds", 0, ROLLING_COOLDOWN_MAX, struct policy_rolling,
           spills_cooldown_seconds),
};

/* "rolling": executor rolling through Spark's decommission (docs/rolling.md). */
static const struct field rolling_fields[] = {
    F_UINT("grace_seconds", 1, ROLLING_GRACE_MAX, struct policy_rolling, grace_seconds),
    F_UINT("min_age_seconds", 0, ROLLING_AGE_MAX, struct policy_rolling, min_age_seconds),
    F_OBJECT("disk_write", 0, disk_write_fields, NULL),
    F_OBJECT("age", 0, age_fields, NULL),
    F_OBJECT("memory_high", 0, memory_high_fields, NULL),
    F_OBJECT("memory_pressure", 0, memory_pressure_fields, NULL),
    F_OBJECT("spills", 0, spills_fields, NULL),
};

/* The top level, after version; the sections are checked in this order, not the keys'. */
static const char *const root_keys[] = {
    "version",   "cgroup",        "cpu",       "memory",        "pids",   "io",
    "overrides", "out_of_bounds", "fail_mode", "grace_seconds", "report", "agent",
    "java",      "kubernetes",    "tuner",     "rolling"};
static const char *const bounds[] = {"reject", "clamp"};
static const char *const fail_modes[] = {"closed", "open"};
static const struct field root_fields[] = {
    F_OBJECT("cgroup", 0, cgroup_fields, NULL),
    F_OBJECT("cpu", 0, cpu_fields, NULL),
    F_OBJECT("memory", 0, memory_fields, NULL),
    F_OBJECT("pids", 0, pids_fields, NULL),
    F_OBJECT("io", 0, io_fields, NULL),
    F_CUSTOM("overrides", parse_overrides),
    F_CHOICE("out_of_bounds", bounds, struct policy, out_of_bounds),
    F_CHOICE("fail_mode", fail_modes, struct policy, fail_mode),
    F_UNSIGNED("grace_seconds", 0, GRACE_SECONDS_MAX, struct policy, grace_seconds),
    F_OBJECT("kubernetes", 0, kubernetes_fields, NULL),
    F_OBJECT("report", 0, report_fields, NULL),
    F_OBJECT_KEYS("agent", FIELD_AT(struct policy, agent, struct policy_agent), agent_keys,
                  agent_fields, agent_pressure_source),
    F_OBJECT_KEYS("tuner", FIELD_AT(struct policy, tuner, struct policy_tuner), tuner_keys,
                  tuner_fields, NULL),
    F_OBJECT("rolling", FIELD_AT(struct policy, rolling, struct policy_rolling), rolling_fields,
             rolling_enable),
    F_OBJECT("java", 0, java_fields, NULL),
};

static int parse_root(struct parser *ps, json_t *root, struct policy *p)
{
        int r;

        if (!json_is_object(root)) {
                char list[256], allowed[300];
                join_names(root_keys, ELEMENTSOF(root_keys), false, list, sizeof(list));
                snprintf(allowed, sizeof(allowed), "an object with the keys %s", list);
                return fail_value(ps, "is not an object", allowed);
        }

        /* the version first: a newer schema's keys are not "unknown", they are newer */
        r = parse_version(ps, root);
        if (r < 0)
                return r;
        r = check_keys(ps, root, root_keys, ELEMENTSOF(root_keys));
        if (r < 0)
                return r;
        return parse_section(ps, root, root_fields, ELEMENTSOF(root_fields), p);
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
