/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Report file name templates (policy.h): report.path, report.prometheus_path, --report and
 * --prometheus may name {app_id}, {executor_id} and {name} in their last path component.
 * The values come from the job's user; the directory is the admin's. So a value can only
 * ever be bytes of one file name in that directory: '/' and every byte outside
 * [A-Za-z0-9_.-] become '_', a long value is cut (with a hash of the whole, so that two long
 * ids that share a beginning stay apart), and a file name that would start with '.' (hidden,
 * or the temporary names of util_write_file_atomic) gets a '_' in front.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"
#include "util.h"

static const struct {
        const char *token;
        size_t len;
} fields[] = {
    {"{app_id}", 8},
    {"{executor_id}", 13},
    {"{name}", 6},
};

/* The field starting at s ('{'), as an index in fields[], or -1. */
static int field_at(const char *s)
{
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (strncmp(s, fields[i].token, fields[i].len) == 0)
                        return (int)i;
        return -1;
}

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), k = strlen(suffix);

        return n >= k && strcmp(s + n - k, suffix) == 0;
}

int policy_template_check(const char *template, bool prometheus, struct util_error *err)
{
        const char *slash = strrchr(template, '/'), *name = slash ? slash + 1 : template;
        size_t literal = 0, nfields = 0;
        const char *brace;

        brace = strpbrk(template, "{}");
        if (brace && brace < name)
                return util_error_set(
                    err, EINVAL, "has '%c' in its directory part (fields go in the file name only)",
                    *brace);
        if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return util_error_set(err, EINVAL, "names a directory, not a file");
        if (name[0] == '.')
                return util_error_set(err, EINVAL,
                                      "has a file name starting with '.' (a hidden file)");
        for (const char *c = name; *c;) {
                int f = *c == '{' ? field_at(c) : -1;

                if (f >= 0) {
                        nfields++;
                        c += fields[f].len;
                        continue;
                }
                if (*c == '{' || *c == '}')
                        return util_error_set(err, EINVAL, "has '%.20s', which is not a field", c);
                literal++;
                c++;
        }
        if (prometheus && !ends_with(name, ".prom"))
                return util_error_set(
                    err, EINVAL,
                    "does not end in .prom (node_exporter's textfile collector reads "
                    "*.prom files only)");
        /* the longest expansion, one '_' in front included */
        if (literal + 1 + nfields * POLICY_TEMPLATE_FIELD_MAX > POLICY_TEMPLATE_NAME_MAX)
                return util_error_set(
                    err, ENAMETOOLONG,
                    "has a file name that may expand to %zu bytes, more than %d (a "
                    "field takes up to %d)",
                    literal + 1 + nfields * POLICY_TEMPLATE_FIELD_MAX, POLICY_TEMPLATE_NAME_MAX,
                    POLICY_TEMPLATE_FIELD_MAX);
        return nfields > 0;
}

/* FNV-1a, 64 bits: not a secret, only keeps cut values apart */
static uint64_t hash(const char *s)
{
        uint64_t h = 0xcbf29ce484222325ULL;

        for (; *s; s++) {
                h ^= (unsigned char)*s;
                h *= 0x100000001b3ULL;
        }
        return h;
}

void policy_template_escape(const char *value, char *buf, size_t size)
{
        size_t len = value ? strlen(value) : 0, keep = len, n;

        if (size == 0)
                return;
        if (len > POLICY_TEMPLATE_FIELD_MAX)
                keep = POLICY_TEMPLATE_FIELD_MAX - 17; /* '-' and 16 hex digits follow */
        for (n = 0; n < keep && n + 1 < size; n++) {
                unsigned char c = (unsigned char)value[n];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
                buf[n] = ok ? (char)c : '_';
        }
        buf[n] = '\0';
        if (keep < len)
                snprintf(buf + n, size - n, "-%016" PRIx64, hash(value));
}

int policy_template_expand(const char *template, const struct policy_template_values *v, char *buf,
                           size_t size, struct util_error *err)
{
        const char *slash = strrchr(template, '/'), *name = slash ? slash + 1 : template;
        char out[POLICY_TEMPLATE_NAME_MAX + 1];
        size_t n = 0;
        int r;

        r = policy_template_check(template, false, err);
        if (r < 0)
                return r;
        if ((size_t)(name - template) >= size)
                return util_error_set(err, ENAMETOOLONG, "is too long");
        for (const char *c = name; *c;) {
                int f = *c == '{' ? field_at(c) : -1;
                char value[POLICY_TEMPLATE_FIELD_MAX + 1];
                size_t len;

                if (f < 0) {
                        value[0] = *c++;
                        value[1] = '\0';
                } else {
                        const char *raw = f == 0 ? v->app_id : f == 1 ? v->executor_id : v->name;
                        policy_template_escape(raw, value, sizeof(value));
                        c += fields[f].len;
                }
                len = strlen(value);
                if (n + len >= sizeof(out))
                        return util_error_set(err, ENAMETOOLONG,
                                              "has a file name that is too long");
                memcpy(out + n, value, len + 1);
                n += len;
        }
        if (out[0] == '.' || n == 0) {
                if (n + 1 >= sizeof(out))
                        return util_error_set(err, ENAMETOOLONG,
                                              "has a file name that is too long");
                memmove(out + 1, out, n + 1);
                out[0] = '_';
        }
        if (snprintf(buf, size, "%.*s%s", (int)(name - template), template, out) >= (int)size)
                return util_error_set(err, ENAMETOOLONG, "is too long");
        return 0;
}
