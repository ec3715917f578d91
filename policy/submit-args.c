/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spark-submit's command line as Spark reads it, for the java personality at submit
 * (shim/submit.c): which settings the user gave, so that a published setting never replaces
 * one, and the few values the personality needs (the job's name, the opt-out, the mark of
 * settings already applied).
 *
 * The options are SparkSubmitOptionParser's (launcher/, Spark 3.3 to 4.1) and what
 * SparkSubmitArguments and SparkSubmit.prepareSubmitEnvironment make of them (core/,
 * org.apache.spark.deploy): "--opt VALUE" or "--opt=VALUE" (the regex (--[^=]+)=(.+), whose
 * '.' takes no line terminator), switches also in the "=" form (their value ignored), the
 * first argument that is not an option is the primary resource and ends the options, an
 * unknown "-..." before it is an error. Properties files are java.util.Properties text.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

enum option_kind {
        VALUE,      /* the value is the next argument or follows '=' */
        SWITCH,     /* no value */
        NOT_SUBMIT, /* --help, --version, --usage-error, --kill ID, --status ID */
        CONF,       /* --conf KEY=VALUE */
        PROPERTIES, /* --properties-file FILE */
        EXTRA_FILE, /* --extra-properties-file FILE */
};

/*
 * Each option with its alias, whether it takes a value, and the Spark properties it sets
 * (SparkSubmit's OptionAssigner list, whatever the cluster manager: a key the user expressed
 * is the user's). --remote is 3.4's, --driver-default-class-path and --load-spark-defaults
 * 4.0's; --extra-properties-file (SPARK-54313) a later line's: a Spark that does not know it
 * refuses the command anyway.
 */
static const struct option {
        const char *name, *alias;
        enum option_kind kind;
        bool value;
        const char *keys[2];
} options[] = {
    {"--archives", NULL, VALUE, true, {"spark.archives", "spark.yarn.dist.archives"}},
    {"--class", NULL, VALUE, true, {NULL}},
    {"--conf", "-c", CONF, true, {NULL}},
    {"--deploy-mode", NULL, VALUE, true, {"spark.submit.deployMode"}},
    {"--driver-class-path", NULL, VALUE, true, {"spark.driver.extraClassPath"}},
    {"--driver-cores", NULL, VALUE, true, {"spark.driver.cores"}},
    {"--driver-default-class-path", NULL, VALUE, true, {"spark.driver.defaultExtraClassPath"}},
    {"--driver-java-options", NULL, VALUE, true, {"spark.driver.extraJavaOptions"}},
    {"--driver-library-path", NULL, VALUE, true, {"spark.driver.extraLibraryPath"}},
    {"--driver-memory", NULL, VALUE, true, {"spark.driver.memory"}},
    {"--executor-cores", NULL, VALUE, true, {"spark.executor.cores"}},
    {"--executor-memory", NULL, VALUE, true, {"spark.executor.memory"}},
    {"--files", NULL, VALUE, true, {"spark.files", "spark.yarn.dist.files"}},
    {"--jars", NULL, VALUE, true, {"spark.jars", "spark.yarn.dist.jars"}},
    {"--keytab", NULL, VALUE, true, {"spark.kerberos.keytab"}},
    {"--kill", NULL, NOT_SUBMIT, true, {NULL}},
    {"--master", NULL, VALUE, true, {"spark.master"}},
    {"--remote", NULL, VALUE, true, {"spark.remote"}},
    {"--name", NULL, VALUE, true, {"spark.app.name"}},
    {"--num-executors", NULL, VALUE, true, {"spark.executor.instances"}},
    {"--packages", NULL, VALUE, true, {"spark.jars.packages"}},
    {"--exclude-packages", NULL, VALUE, true, {"spark.jars.excludes"}},
    {"--principal", NULL, VALUE, true, {"spark.kerberos.principal"}},
    {"--properties-file", NULL, PROPERTIES, true, {NULL}},
    {"--extra-properties-file", NULL, EXTRA_FILE, true, {NULL}},
    {"--proxy-user", NULL, VALUE, true, {NULL}},
    {"--py-files", NULL, VALUE, true, {"spark.submit.pyFiles", "spark.yarn.dist.pyFiles"}},
    {"--queue", NULL, VALUE, true, {"spark.yarn.queue"}},
    {"--repositories", NULL, VALUE, true, {"spark.jars.repositories"}},
    {"--status", NULL, NOT_SUBMIT, true, {NULL}},
    {"--total-executor-cores", NULL, VALUE, true, {"spark.cores.max"}},
    /* switches: no value (one with a key sets it to "true") */
    {"--help", "-h", NOT_SUBMIT, false, {NULL}},
    {"--supervise", NULL, SWITCH, false, {"spark.driver.supervise"}},
    {"--usage-error", NULL, NOT_SUBMIT, false, {NULL}},
    {"--verbose", "-v", SWITCH, false, {NULL}},
    {"--version", NULL, NOT_SUBMIT, false, {NULL}},
    {"--load-spark-defaults", NULL, SWITCH, false, {NULL}},
};

static const struct option *find_option(const char *name, size_t len)
{
        for (size_t i = 0; i < ELEMENTSOF(options); i++) {
                const struct option *o = &options[i];

                if ((strlen(o->name) == len && memcmp(o->name, name, len) == 0) ||
                    (o->alias && strlen(o->alias) == len && memcmp(o->alias, name, len) == 0))
                        return o;
        }
        return NULL;
}

void policy_submit_init(struct policy_submit *s)
{
        *s = (struct policy_submit){0};
}

void policy_submit_free(struct policy_submit *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < s->n_settings; i++) {
                free(s->settings[i].key);
                free(s->settings[i].value);
        }
        free(s->settings);
        free(s->extra_properties_files);
        policy_submit_init(s);
}

/* a NUL-terminated copy of len bytes at s (which need not be terminated) */
static char *copy(const char *s, size_t len)
{
        char *c = malloc(len + 1);

        if (c) {
                memcpy(c, s, len);
                c[len] = '\0';
        }
        return c;
}

/* Take key (key_len bytes) and value (value_len bytes) as a setting of source. */
static int add_setting(struct policy_submit *s, const char *key, size_t key_len, const char *value,
                       size_t value_len, enum policy_submit_source source)
{
        struct policy_submit_setting *e;

        if (s->n_settings == s->allocated_settings) {
                size_t n = s->allocated_settings ? 2 * s->allocated_settings : 16;
                struct policy_submit_setting *grown = reallocarray(s->settings, n, sizeof(*grown));

                if (!grown)
                        return -ENOMEM;
                s->settings = grown;
                s->allocated_settings = n;
        }
        e = &s->settings[s->n_settings];
        e->key = copy(key, key_len);
        e->value = copy(value, value_len);
        e->source = source;
        if (!e->key || !e->value) {
                free(e->key);
                free(e->value);
                return -ENOMEM;
        }
        s->n_settings++;
        return 0;
}

/*
 * Java's regex '.' (no DOTALL) takes no line terminator: \n, \r, U+0085, U+2028, U+2029
 * (in UTF-8, the JVM's reading of the arguments). A "--opt=VALUE" whose value holds one is
 * not that option for Spark, but an unknown one.
 */
static bool has_line_terminator(const char *s)
{
        for (const unsigned char *c = (const unsigned char *)s; *c; c++)
                if (*c == '\n' || *c == '\r' || (c[0] == 0xc2 && c[1] == 0x85) ||
                    (c[0] == 0xe2 && c[1] == 0x80 && (c[2] == 0xa8 || c[2] == 0xa9)))
                        return true;
        return false;
}

int policy_submit_parse(int argc, char *const argv[], struct policy_submit *s,
                        struct util_error *err)
{
        int r;

        s->submission = false;
        s->resource = argc;
        for (int i = 0; i < argc; i++) {
                const char *arg = argv[i], *value = NULL, *eq = strchr(arg, '=');
                size_t name_len = strlen(arg);
                const struct option *o;

                /* "--opt=VALUE": at least one character either side of the first '=' */
                if (strncmp(arg, "--", 2) == 0 && eq && eq > arg + 2 && eq[1] &&
                    !has_line_terminator(eq + 1)) {
                        name_len = (size_t)(eq - arg);
                        value = eq + 1;
                }
                o = find_option(arg, name_len);
                if (!o) {
                        if (arg[0] == '-')
                                return util_error_set(err, EINVAL,
                                                      "unknown option '%.*s' before the "
                                                      "application",
                                                      (int)name_len, arg);
                        s->resource = i;
                        s->resource_arg = arg;
                        s->submission = true;
                        return 0;
                }
                if (o->value && !value) {
                        if (i + 1 >= argc)
                                return util_error_set(err, EINVAL, "%s without its value", o->name);
                        value = argv[++i];
                }
                switch (o->kind) {
                case NOT_SUBMIT:
                        return 0;
                case CONF:
                        eq = strchr(value, '=');
                        if (!eq)
                                return util_error_set(err, EINVAL,
                                                      "%s '%s': no '='; allowed: KEY=VALUE",
                                                      o->name, value);
                        r = add_setting(s, value, (size_t)(eq - value), eq + 1, strlen(eq + 1),
                                        POLICY_SUBMIT_CONF);
                        break;
                case PROPERTIES:
                        s->properties_file = value;
                        r = 0;
                        break;
                case EXTRA_FILE: {
                        const char **grown =
                            reallocarray(s->extra_properties_files, s->n_extra_properties_files + 1,
                                         sizeof(*grown));

                        if (!grown)
                                return -ENOMEM;
                        grown[s->n_extra_properties_files++] = value;
                        s->extra_properties_files = grown;
                        r = 0;
                        break;
                }
                case VALUE:
                case SWITCH:
                        r = 0;
                        if (o->kind == SWITCH)
                                value = "true";
                        if (strcmp(o->name, "--class") == 0)
                                s->main_class = value;
                        for (size_t k = 0; r == 0 && value && k < ELEMENTSOF(o->keys); k++)
                                if (o->keys[k])
                                        r = add_setting(s, o->keys[k], strlen(o->keys[k]), value,
                                                        strlen(value), POLICY_SUBMIT_OPTION);
                        break;
                }
                if (r < 0)
                        return util_error_set(err, -r, "%s", strerror(-r));
        }
        /* no primary resource: Spark refuses the submission itself */
        return 0;
}

/* ---------------------------------------------------------------- java.util.Properties */

struct buffer {
        char *data;
        size_t len, size;
};

static int buffer_add(struct buffer *b, char c)
{
        if (b->len == b->size) {
                size_t n = b->size ? 2 * b->size : 256;
                char *grown = realloc(b->data, n);

                if (!grown)
                        return -ENOMEM;
                b->data = grown;
                b->size = n;
        }
        b->data[b->len++] = c;
        return 0;
}

static bool blank(char c)
{
        return c == ' ' || c == '\t' || c == '\f';
}

/*
 * The next logical line of text (Properties.LineReader of JDK 17): leading blanks skipped,
 * blank lines and comment lines ('#' or '!' first) skipped, a line ending in an odd number of
 * backslashes joined to the next one (that backslash and the next line's leading blanks
 * dropped); \n, \r and \r\n end lines. Returns 1 with the line in *line, 0 at the end.
 */
static int read_line(const char **pos, const char *end, struct buffer *line)
{
        const char *p = *pos;
        bool skip_blanks = true, appended = false, backslash = false;

        line->len = 0;
        for (;;) {
                char c;

                if (p >= end) {
                        *pos = p;
                        if (line->len == 0 && !backslash)
                                return 0;
                        line->len -= backslash;
                        return 1;
                }
                c = *p++;
                if (skip_blanks) {
                        if (blank(c) || (!appended && (c == '\r' || c == '\n')))
                                continue;
                        skip_blanks = false;
                        appended = false;
                }
                if (line->len == 0 && (c == '#' || c == '!')) {
                        while (p < end && *p != '\n' && *p != '\r')
                                p++;
                        if (p >= end) {
                                *pos = p;
                                return 0;
                        }
                        p++;
                        skip_blanks = true;
                        continue;
                }
                if (c != '\n' && c != '\r') {
                        if (buffer_add(line, c) < 0)
                                return -ENOMEM;
                        backslash = c == '\\' ? !backslash : false;
                        continue;
                }
                if (line->len == 0) {
                        skip_blanks = true;
                        continue;
                }
                if (p >= end) {
                        *pos = p;
                        line->len -= backslash;
                        return 1;
                }
                if (!backslash) {
                        *pos = p;
                        return 1;
                }
                /* a continuation: the backslash goes, the next line's blanks too */
                line->len--;
                backslash = false;
                skip_blanks = true;
                appended = true;
                if (c == '\r' && *p == '\n')
                        p++;
        }
}

/* code point cp in UTF-8 */
static int buffer_add_utf8(struct buffer *b, uint32_t cp)
{
        char u[4];
        size_t n;

        if (cp < 0x80) {
                u[0] = (char)cp;
                n = 1;
        } else if (cp < 0x800) {
                u[0] = (char)(0xc0 | (cp >> 6));
                u[1] = (char)(0x80 | (cp & 0x3f));
                n = 2;
        } else if (cp < 0x10000) {
                u[0] = (char)(0xe0 | (cp >> 12));
                u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[2] = (char)(0x80 | (cp & 0x3f));
                n = 3;
        } else {
                u[0] = (char)(0xf0 | (cp >> 18));
                u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
                u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[3] = (char)(0x80 | (cp & 0x3f));
                n = 4;
        }
        for (size_t i = 0; i < n; i++)
                if (buffer_add(b, u[i]) < 0)
                        return -ENOMEM;
        return 0;
}

/* the four hex digits at s as a UTF-16 unit, or -1 */
static int32_t hex4(const char *s, const char *end)
{
        int32_t v = 0;

        if (end - s < 4)
                return -1;
        for (int i = 0; i < 4; i++) {
                int d = util_hex_digit((unsigned char)s[i]);

                if (d < 0)
                        return -1;
                v = v * 16 + d;
        }
        return v;
}

/*
 * Properties.loadConvert: \t \n \r \f, \uXXXX (a surrogate pair joined; a lone surrogate
 * becomes '?', as Java's UTF-8 encoder writes it), and \x for any other x. -EINVAL: a malformed
 * \uxxxx, or a NUL in the result (no C string holds it).
 */
static int unescape(const char *s, const char *end, struct buffer *out)
{
        out->len = 0;
        while (s < end) {
                char c = *s++;
                int32_t unit, low;

                if (c == '\\' && s < end) {
                        c = *s++;
                        if (c == 'u') {
                                if ((unit = hex4(s, end)) < 0)
                                        return -EINVAL;
                                s += 4;
                                if (unit >= 0xd800 && unit < 0xdc00 && end - s >= 6 &&
                                    s[0] == '\\' && s[1] == 'u' &&
                                    (low = hex4(s + 2, end)) >= 0xdc00 && low < 0xe000) {
                                        s += 6;
                                        unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                                } else if (unit >= 0xd800 && unit < 0xe000) {
                                        unit = '?';
                                }
                                if (unit == 0)
                                        return -EINVAL;
                                if (buffer_add_utf8(out, (uint32_t)unit) < 0)
                                        return -ENOMEM;
                                continue;
                        }
                        c = c == 't'   ? '\t'
                            : c == 'r' ? '\r'
                            : c == 'n' ? '\n'
                            : c == 'f' ? '\f'
                                       : c;
                } else if (c == '\\') {
                        continue; /* not reached: a line never ends in a lone backslash */
                }
                if (c == '\0')
                        return -EINVAL;
                if (buffer_add(out, c) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Spark's Utils.trimExceptCRLF: what String.trim drops (<= ' '), but \r and \n */
static void trim_except_crlf(struct buffer *b, size_t *ret_start)
{
        size_t start = 0;

        while (start < b->len && (unsigned char)b->data[start] <= ' ' && b->data[start] != '\r' &&
               b->data[start] != '\n')
                start++;
        while (b->len > start && (unsigned char)b->data[b->len - 1] <= ' ' &&
               b->data[b->len - 1] != '\r' && b->data[b->len - 1] != '\n')
                b->len--;
        *ret_start = start;
}

int policy_submit_add_properties(struct policy_submit *s, const char *text, size_t len,
                                 enum policy_submit_source source, const char *name,
                                 struct util_error *err)
{
        struct buffer line = {0}, key = {0}, value = {0};
        const char *pos = text, *end = text + len;
        unsigned count = 0;
        int r;

        while ((r = read_line(&pos, end, &line)) > 0) {
                size_t key_len = 0, value_start = line.len, trimmed;
                bool separator = false, backslash = false;

                count++;
                /* the key ends at the first '=', ':' or blank not escaped */
                for (; key_len < line.len; key_len++) {
                        char c = line.data[key_len];

                        if (!backslash && (c == '=' || c == ':' || blank(c))) {
                                value_start = key_len + 1;
                                separator = !blank(c);
                                break;
                        }
                        backslash = c == '\\' ? !backslash : false;
                }
                /* blanks, then one '=' or ':' if none came yet, then blanks */
                for (; value_start < line.len; value_start++) {
                        char c = line.data[value_start];

                        if (blank(c))
                                continue;
                        if (!separator && (c == '=' || c == ':')) {
                                separator = true;
                                continue;
                        }
                        break;
                }
                r = unescape(line.data, line.data + key_len, &key);
                if (r == 0)
                        r = unescape(line.data + value_start, line.data + line.len, &value);
                if (r == -EINVAL) {
                        r = util_error_set(err, EINVAL,
                                           "%s: logical line %u: a malformed \\uxxxx escape or "
                                           "a NUL",
                                           name, count);
                        goto out;
                }
                if (r < 0)
                        break;
                trim_except_crlf(&value, &trimmed);
                r = add_setting(s, key.len ? key.data : "", key.len,
                                value.len > trimmed ? value.data + trimmed : "",
                                value.len - trimmed, source);
                if (r < 0)
                        break;
        }
        if (r < 0)
                r = util_error_set(err, -r, "%s: %s", name, strerror(-r));
out:
        free(line.data);
        free(key.data);
        free(value.data);
        return r < 0 ? r : 0;
}

static int read_properties_file(struct policy_submit *s, const char *path,
                                enum policy_submit_source source, struct util_error *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t len = 0;

        /* the user's own file, as Spark opens it; O_NONBLOCK: no FIFO holds the submit */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &st) < 0)
                return util_error_set(err, errno, "properties file %s: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return util_error_set(err, EINVAL, "properties file %s: not a regular file", path);
        if (st.st_size > POLICY_SUBMIT_PROPERTIES_MAX)
                return util_error_set(err, EFBIG,
                                      "properties file %s: larger than 1 MiB, which sparkshim "
                                      "reads at most",
                                      path);
        text = malloc(POLICY_SUBMIT_PROPERTIES_MAX + 1);
        if (!text)
                return util_error_set(err, ENOMEM, "properties file %s: out of memory", path);
        for (;;) {
                ssize_t n = read(fd, text + len, POLICY_SUBMIT_PROPERTIES_MAX + 1 - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return util_error_set(err, errno, "properties file %s: %s", path,
                                              strerror(errno));
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > POLICY_SUBMIT_PROPERTIES_MAX)
                        return util_error_set(err, EFBIG,
                                              "properties file %s: larger than 1 MiB, which "
                                              "sparkshim reads at most",
                                              path);
        }
        return policy_submit_add_properties(s, text, len, source, path, err);
}

int policy_submit_read_properties(struct policy_submit *s, struct util_error *err)
{
        int r;

        if (s->properties_file &&
            (r = read_properties_file(s, s->properties_file, POLICY_SUBMIT_PROPERTIES, err)) < 0)
                return r;
        for (size_t i = 0; i < s->n_extra_properties_files; i++)
                if ((r = read_properties_file(s, s->extra_properties_files[i],
                                              POLICY_SUBMIT_EXTRA_PROPERTIES, err)) < 0)
                        return r;
        return 0;
}

const char *policy_submit_get(const struct policy_submit *s, const char *key)
{
        const struct policy_submit_setting *best = NULL;

        for (size_t i = 0; i < s->n_settings; i++) {
                const struct policy_submit_setting *e = &s->settings[i];

                if (strcmp(e->key, key) == 0 && (!best || e->source >= best->source))
                        best = e;
        }
        return best ? best->value : NULL;
}

const char *policy_submit_job(const struct policy_submit *s, const char *job_key)
{
        const char *job = policy_submit_get(s, POLICY_JOB_PROPERTY);

        if (!job || !*job)
                job = job_key && *job_key ? policy_submit_get(s, job_key) : NULL;
        /* no name given: the one Spark gives the application (SparkSubmitArguments): its main
         * class, else the primary resource's file name */
        if ((!job || !*job) && job_key && strcmp(job_key, "spark.app.name") == 0) {
                const char *slash = s->resource_arg ? strrchr(s->resource_arg, '/') : NULL;

                job = s->main_class && *s->main_class ? s->main_class
                      : slash                         ? slash + 1
                                                      : s->resource_arg;
        }
        return job && *job ? job : NULL;
}

bool policy_submit_opted_out(const struct policy_submit *s)
{
        const char *tune = policy_submit_get(s, POLICY_TUNE_PROPERTY);

        return tune && strcasecmp(tune, "off") == 0;
}
