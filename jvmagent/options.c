/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's option string: key=value pairs, validated in full before the JVM starts. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "util.h"

#define JAVA_LONG_MAX UINT64_C(9223372036854775807)
#define JAVA_INT_MAX  UINT64_C(2147483647)

#define ALLOWED_KEYS                                                                               \
        "force-bytes, allow-bytes, allow-fraction, periodic, records, cgroup, threshold, "         \
        "limit, request, stats, stats-interval, cooldown-ms, min-spill, max-spills, "              \
        "psi-stall-ms, psi-window-ms, heap-threshold, log"
#define ALLOWED_SIZE     "a byte size such as 512, 64k, 8m, 1g (suffixes k, m, g, t, p)"
#define ALLOWED_FRACTION "a fraction with a decimal point, above 0 and at most 1, such as 0.8"

static const char *const level_names[] = {
    [JVA_LOG_ERROR] = "error",
    [JVA_LOG_WARN] = "warn",
    [JVA_LOG_INFO] = "info",
    [JVA_LOG_DEBUG] = "debug",
};

const char *jva_log_level_name(enum jva_log_level level)
{
        if ((unsigned)level >= ELEMENTSOF(level_names))
                return "?";
        return level_names[level];
}

void jva_options_init(struct jva_options *options)
{
        assert(options);

        memset(options, 0, sizeof(*options));
        options->log_level = JVA_LOG_WARN;
        options->cooldown_ms = 500;
        options->max_spills = JVA_MAX_SPILLS_DEFAULT;
        options->stats_interval_s = 10;
        options->psi_window_ms = 1000;
}

bool jva_options_pressure_source(const struct jva_options *options)
{
        assert(options);

        return options->threshold_bytes > 0 || options->psi_stall_ms > 0 ||
               options->heap_threshold > 0;
}

bool jva_options_spill_enabled(const struct jva_options *options)
{
        assert(options);

        return options->force_bytes > 0 || options->periodic_bytes > 0 ||
               options->allow_bytes > 0 || options->allow_fraction > 0;
}

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static char ascii_lower(char c)
{
        return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool is_blank(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int jva_parse_bytes(const char *text, uint64_t *ret_bytes)
{
        static const struct {
                const char *suffix;
                unsigned shift;
        } suffixes[] = {
            {"", 0},   {"b", 0},   {"k", 10}, {"kb", 10}, {"m", 20}, {"mb", 20},
            {"g", 30}, {"gb", 30}, {"t", 40}, {"tb", 40}, {"p", 50}, {"pb", 50},
        };
        const char *p = text, *end;
        char suffix[4];
        size_t n = 0;
        uint64_t v = 0;

        assert(ret_bytes);
        if (!text)
                return -EINVAL;
        end = text + strlen(text);
        while (p < end && is_blank(*p))
                p++;
        while (end > p && is_blank(end[-1]))
                end--;
        if (p == end || !is_digit(*p))
                return -EINVAL;
        for (; p < end && is_digit(*p); p++) {
                if (v > (JAVA_LONG_MAX - (uint64_t)(*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t)(*p - '0');
        }
        /* Spark refuses "1.5g" too ("Fractional values are not supported") */
        for (; p < end; p++) {
                if (n + 1 >= sizeof(suffix))
                        return -EINVAL;
                suffix[n++] = ascii_lower(*p);
        }
        suffix[n] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                if (strcmp(suffix, suffixes[i].suffix) != 0)
                        continue;
                if (v > (JAVA_LONG_MAX >> suffixes[i].shift))
                        return -ERANGE;
                *ret_bytes = v << suffixes[i].shift;
                return 0;
        }
        return -EINVAL;
}

/* [0-9]*.?[0-9]+ without strtod: the JVM's locale must not change what "0.8" means. */
static int parse_decimal(const char *text, double *ret_value, bool *ret_has_point)
{
        double v = 0, scale = 1;
        bool point = false, digits = false;

        for (const char *p = text; *p; p++) {
                if (is_digit(*p)) {
                        digits = true;
                        if (point) {
                                scale /= 10;
                                v += (*p - '0') * scale;
                        } else {
                                v = v * 10 + (*p - '0');
                                if (v > 1e18)
                                        return -ERANGE;
                        }
                } else if (*p == '.' && !point) {
                        point = true;
                } else {
                        return -EINVAL;
                }
        }
        if (!digits)
                return -EINVAL;
        *ret_value = v;
        if (ret_has_point)
                *ret_has_point = point;
        return 0;
}

static int parse_uint(const char *text, uint64_t max, uint64_t *ret_value)
{
        uint64_t v = 0;

        if (!*text)
                return -EINVAL;
        for (const char *p = text; *p; p++) {
                if (!is_digit(*p))
                        return -EINVAL;
                if (v > (max - (uint64_t)(*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t)(*p - '0');
        }
        *ret_value = v;
        return 0;
}

__attribute__((format(printf, 5, 6))) static int fail(struct util_error *ret_error, int error,
                                                      const char *key, const char *value,
                                                      const char *format, ...)
{
        char what[UTIL_ERROR_TEXT_MAX];
        va_list ap;

        va_start(ap, format);
        vsnprintf(what, sizeof(what), format, ap);
        va_end(ap);
        return util_error_set(ret_error, error, "%s=%.200s: %s", key, value, what);
}

struct key {
        const char *name;
        int (*parse)(const struct key *key, const char *value, struct jva_options *options,
                     struct util_error *ret_error);
        size_t offset; /* of the field in struct jva_options */
        uint64_t min, max;
        const char *allowed; /* for paths: what the value must name */
};

#define FIELD(options, key, type) ((type *)((char *)(options) + (key)->offset))

static int parse_size_key(const struct key *key, const char *value, struct jva_options *options,
                          struct util_error *ret_error)
{
        uint64_t v;
        int r = jva_parse_bytes(value, &v);

        if (r == -EINVAL)
                return fail(ret_error, r, key->name, value, "not a size; allowed: %s",
                            ALLOWED_SIZE);
        if (r < 0 || v < key->min || v > key->max)
                return fail(ret_error, -ERANGE, key->name, value,
                            "out of range; allowed: %" PRIu64 " to %" PRIu64 " bytes, as %s",
                            key->min, key->max, ALLOWED_SIZE);
        *FIELD(options, key, uint64_t) = v;
        return 0;
}

static int parse_uint_key(const struct key *key, const char *value, struct jva_options *options,
                          struct util_error *ret_error)
{
        uint64_t v;
        int r = parse_uint(value, UINT64_MAX, &v);

        if (r == -EINVAL)
                return fail(ret_error, r, key->name, value,
                            "not a whole number; allowed: an integer from %" PRIu64 " to %" PRIu64,
                            key->min, key->max);
        if (r < 0 || v < key->min || v > key->max)
                return fail(ret_error, -ERANGE, key->name, value,
                            "out of range; allowed: an integer from %" PRIu64 " to %" PRIu64,
                            key->min, key->max);
        *FIELD(options, key, uint64_t) = v;
        return 0;
}

static int parse_fraction_key(const struct key *key, const char *value, struct jva_options *options,
                              struct util_error *ret_error)
{
        double v;
        bool point;
        int r = parse_decimal(value, &v, &point);

        if (r == -EINVAL || (r == 0 && !point))
                return fail(ret_error, -EINVAL, key->name, value, "not a fraction; allowed: %s",
                            ALLOWED_FRACTION);
        if (r < 0 || !(v > 0 && v <= 1))
                return fail(ret_error, -ERANGE, key->name, value, "out of range; allowed: %s",
                            ALLOWED_FRACTION);
        *FIELD(options, key, double) = v;
        return 0;
}

static int parse_path_key(const struct key *key, const char *value, struct jva_options *options,
                          struct util_error *ret_error)
{
        char *field = FIELD(options, key, char);

        if (value[0] != '/')
                return fail(ret_error, -EINVAL, key->name, value,
                            "not an absolute path; allowed: %s", key->allowed);
        if (strlen(value) >= JVA_PATH_MAX)
                return fail(ret_error, -ERANGE, key->name, value,
                            "too long; allowed: a path shorter than %d bytes", JVA_PATH_MAX);
        strcpy(field, value);
        return 0;
}

static int parse_threshold_key(const struct key *key, const char *value,
                               struct jva_options *options, struct util_error *ret_error)
{
        const char *allowed = "a byte size such as 6g, or a fraction of limit= (or request=) "
                              "with a decimal point, such as 0.9";
        double v;
        bool point;

        if (strchr(value, '.')) {
                int r = parse_decimal(value, &v, &point);
                if (r == -EINVAL)
                        return fail(ret_error, r, key->name, value,
                                    "not a size or fraction; allowed: %s", allowed);
                if (r < 0 || !(v > 0 && v <= 1))
                        return fail(ret_error, -ERANGE, key->name, value,
                                    "out of range; allowed: %s", allowed);
                options->threshold_fraction = v;
                return 0;
        }
        uint64_t bytes;
        int r = jva_parse_bytes(value, &bytes);
        if (r == -EINVAL)
                return fail(ret_error, r, key->name, value, "not a size or fraction; allowed: %s",
                            allowed);
        if (r < 0 || bytes < 1)
                return fail(ret_error, -ERANGE, key->name, value, "out of range; allowed: %s",
                            allowed);
        options->threshold_bytes = bytes;
        return 0;
}

static int parse_log_key(const struct key *key, const char *value, struct jva_options *options,
                         struct util_error *ret_error)
{
        for (unsigned i = 0; i < ELEMENTSOF(level_names); i++) {
                if (strcmp(value, level_names[i]) == 0) {
                        options->log_level = (enum jva_log_level)i;
                        return 0;
                }
        }
        return fail(ret_error, -EINVAL, key->name, value,
                    "unknown level; allowed: error, warn, info, debug");
}

#define OFF(f) offsetof(struct jva_options, f)

#define KEY(n, p, f, lo, hi, ...)                                                                  \
        {                                                                                          \
                .name = n, .parse = p, .offset = f, .min = lo, .max = hi,                          \
                .allowed = "" __VA_ARGS__                                                          \
        }

static const struct key keys[] = {
    KEY("force-bytes", parse_size_key, OFF(force_bytes), 1, JAVA_LONG_MAX),
    KEY("allow-bytes", parse_size_key, OFF(allow_bytes), 1, JAVA_LONG_MAX),
    KEY("allow-fraction", parse_fraction_key, OFF(allow_fraction), 0, 0),
    KEY("periodic", parse_size_key, OFF(periodic_bytes), 1, JAVA_LONG_MAX),
    KEY("records", parse_uint_key, OFF(records), 1, JAVA_INT_MAX),
    KEY("cgroup", parse_path_key, OFF(cgroup), 0, 0, "the absolute path of a cgroup v2 directory"),
    KEY("threshold", parse_threshold_key, 0, 0, 0),
    KEY("limit", parse_size_key, OFF(limit_bytes), 1, JAVA_LONG_MAX),
    KEY("request", parse_size_key, OFF(request_bytes), 1, JAVA_LONG_MAX),
    KEY("stats", parse_path_key, OFF(stats), 0, 0, "the absolute path of a file to write"),
    KEY("stats-interval", parse_uint_key, OFF(stats_interval_s), 0, 86400),
    KEY("cooldown-ms", parse_uint_key, OFF(cooldown_ms), 0, 86400000),
    KEY("min-spill", parse_size_key, OFF(min_spill_bytes), 0, JAVA_LONG_MAX),
    KEY("max-spills", parse_uint_key, OFF(max_spills), 0, JAVA_INT_MAX),
    KEY("psi-stall-ms", parse_uint_key, OFF(psi_stall_ms), 1, 10000),
    KEY("psi-window-ms", parse_uint_key, OFF(psi_window_ms), 500, 10000),
    KEY("heap-threshold", parse_fraction_key, OFF(heap_threshold), 0, 0),
    KEY("log", parse_log_key, 0, 0, 0),
};

#define N_KEYS ELEMENTSOF(keys)

static const char *given_value(const char *const given[N_KEYS], const char *name)
{
        for (size_t k = 0; k < N_KEYS; k++)
                if (strcmp(keys[k].name, name) == 0)
                        return given[k] ? given[k] : "";
        return "";
}

/* Checks that need several keys; values are quoted as given. */
static int check_combination(struct jva_options *options, const char *const given[N_KEYS],
                             struct util_error *ret_error)
{
        if (options->limit_bytes && options->request_bytes &&
            options->request_bytes > options->limit_bytes)
                return fail(ret_error, -ERANGE, "request", given_value(given, "request"),
                            "larger than limit=%s; allowed: a request at most the limit",
                            given_value(given, "limit"));
        if (options->threshold_fraction > 0) {
                uint64_t base =
                    options->limit_bytes ? options->limit_bytes : options->request_bytes;
                if (!base)
                        return fail(ret_error, -EINVAL, "threshold",
                                    given_value(given, "threshold"),
                                    "a fraction needs limit= or request=; allowed: a byte "
                                    "size, or a fraction together with limit= or request=");
                options->threshold_bytes = (uint64_t)((double)base * options->threshold_fraction);
                if (options->threshold_bytes < 1)
                        options->threshold_bytes = 1;
        }
        if (options->psi_stall_ms > options->psi_window_ms)
                return fail(ret_error, -ERANGE, "psi-stall-ms", given_value(given, "psi-stall-ms"),
                            "longer than the window psi-window-ms=%" PRIu64
                            "; allowed: a stall at most the window",
                            options->psi_window_ms);
        if (options->allow_bytes && !jva_options_pressure_source(options))
                return fail(ret_error, -EINVAL, "allow-bytes", given_value(given, "allow-bytes"),
                            "applies under pressure only and no pressure source is given; "
                            "allowed: allow-bytes together with threshold=, psi-stall-ms= or "
                            "heap-threshold=");
        if (options->allow_fraction > 0 && !jva_options_pressure_source(options))
                return fail(ret_error, -EINVAL, "allow-fraction",
                            given_value(given, "allow-fraction"),
                            "applies under pressure only and no pressure source is given; "
                            "allowed: allow-fraction together with threshold=, psi-stall-ms= or "
                            "heap-threshold=");
        return 0;
}

int jva_options_parse(const char *text, struct jva_options *ret_options,
                      struct util_error *ret_error)
{
        const char *given[N_KEYS] = {0};
        char *copy, *item, *next;
        int r = 0;

        assert(ret_options);
        jva_options_init(ret_options);
        if (ret_error) {
                ret_error->error = 0;
                ret_error->text[0] = '\0';
        }
        if (!text || !*text)
                return 0;
        copy = strdup(text);
        if (!copy)
                return fail(ret_error, -ENOMEM, "options", "", "out of memory; allowed: -");

        for (item = copy; item && r == 0; item = next) {
                char *eq, *value;
                size_t k;

                next = strchr(item, ',');
                if (next)
                        *next++ = '\0';
                eq = strchr(item, '=');
                if (!eq) {
                        r = fail(ret_error, -EINVAL, item, "",
                                 *item ? "no value; allowed: key=value pairs separated by commas"
                                       : "empty option; allowed: key=value pairs separated by "
                                         "commas");
                        break;
                }
                *eq = '\0';
                value = eq + 1;
                for (k = 0; k < N_KEYS; k++)
                        if (strcmp(item, keys[k].name) == 0)
                                break;
                if (k == N_KEYS) {
                        r = fail(ret_error, -EINVAL, item, value,
                                 "unknown option; allowed: " ALLOWED_KEYS);
                        break;
                }
                if (given[k]) {
                        r = fail(ret_error, -EINVAL, item, value,
                                 "given twice (first %s=%s); allowed: each option once", item,
                                 given[k]);
                        break;
                }
                if (!*value) {
                        r = fail(ret_error, -EINVAL, item, value, "empty value; allowed: %s=VALUE",
                                 item);
                        break;
                }
                given[k] = value;
                r = keys[k].parse(&keys[k], value, ret_options, ret_error);
        }
        if (r == 0)
                r = check_combination(ret_options, given, ret_error);
        free(copy);
        return r;
}
