/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The java personality at spark-submit (sparkshim(1), PUBLISHED SETTINGS AT SUBMIT): a
 * command whose main class is org.apache.spark.deploy.SparkSubmit gets the job's published
 * settings (written by root's `sparkshim tune-service`) as --conf arguments after the class,
 * as the policy's tuner.apply says. It runs as the submitting user, in the submit's path of
 * every job: whatever goes wrong, the command runs as the user gave it, with one warning line
 * at most, and it never exits on its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"
#include "util.h"

#define PUBLISHED_SCHEMA   "sparkshim.published/v1"
#define PUBLISHED_SIZE_MAX (64 * 1024)
#define PUBLISHED_CONF_MAX 32
#define JOB_NAME_MAX       255
#define ID_HEX             16
/* the user's record of the next- configurations launched, newest last */
#define LAUNCHED_FILE     "launched"
#define LAUNCHED_KEEP     64
#define LAUNCHED_SIZE_MAX (64 * 1024)

/* One configuration of a published file: pointers into its JSON tree. */
struct config {
        const char *id; /* NULL: none published (null) */
        size_t n;
        const char *keys[PUBLISHED_CONF_MAX], *values[PUBLISHED_CONF_MAX];
};

struct published {
        const char *state, *reason;
        struct config next, safe;
        json_t *ran; /* the configuration ids the service has seen runs of (an array), or NULL */
};

/* The one warning of a submit that runs as the user gave it. */
static void __attribute__((format(printf, 1, 2))) unchanged(const char *fmt, ...)
{
        char text[900];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        log_warn("spark-submit: %s; the command runs unchanged, without published settings", text);
}

/* s for a message, at most size - 1 bytes: control characters (C0, DEL, C1) as '?'. */
static const char *printable(const char *s, char *buf, size_t size)
{
        size_t n = 0;

        for (const unsigned char *c = (const unsigned char *)s; *c && n + 1 < size; c++) {
                if (c[0] == 0xc2 && c[1] >= 0x80 && c[1] < 0xa0) {
                        buf[n++] = '?';
                        c++;
                } else {
                        buf[n++] = *c < 0x20 || *c == 0x7f ? '?' : (char)*c;
                }
        }
        buf[n] = '\0';
        return buf;
}

/* 0 when the directory or file fd is root's and not writable by group or others. */
static int root_only(int fd, const char *path, bool directory)
{
        struct stat st;

        if (fstat(fd, &st) < 0) {
                unchanged("%s: %s", path, strerror(errno));
                return -errno;
        }
        if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
                unchanged("%s: not a %s", path, directory ? "directory" : "regular file");
                return -EINVAL;
        }
        if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
                unchanged("%s: owned by uid %u with mode %04o; allowed: root's, not writable by "
                          "group or others",
                          path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
                return -EPERM;
        }
        if (!directory && st.st_size > PUBLISHED_SIZE_MAX) {
                unchanged("%s: %jd bytes; allowed: at most 64 KiB", path, (intmax_t)st.st_size);
                return -EFBIG;
        }
        return 0;
}

/*
 * The published file <dir>/<uid>/<name>, read: 1 and *ret_text (malloc'd); 0 when there is
 * none (a job without published settings says nothing); -errno when refused (warned).
 */
static int read_published(const char *dir, const char *name, char *path, size_t path_size,
                          char **ret_text, size_t *ret_len)
{
        _cleanup_close_ int dirfd = -1, uidfd = -1, fd = -1;
        _cleanup_free_ char *text = NULL;
        char uid[16], where[PATH_MAX];
        size_t len = 0;
        int r;

        snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
        snprintf(path, path_size, "%s/%s/%s", dir, uid, name);
        /* O_PATH: the directories need not be readable, only searchable */
        dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                if (errno == ENOENT)
                        return 0; /* no service publishes here */
                unchanged("published settings directory %s: %s", dir, strerror(errno));
                return -errno;
        }
        if ((r = root_only(dirfd, dir, true)) < 0)
                return r;
        snprintf(where, sizeof(where), "%s/%s", dir, uid);
        uidfd = openat(dirfd, uid, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (uidfd < 0) {
                if (errno == ENOENT)
                        return 0;
                unchanged("%s: %s", where,
                          errno == ENOTDIR || errno == ELOOP ? "not a directory" : strerror(errno));
                return -errno;
        }
        if ((r = root_only(uidfd, where, true)) < 0)
                return r;
        fd = openat(uidfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                unchanged("%s: %s", path,
                          errno == ELOOP ? "a symbolic link, which is not followed"
                                         : strerror(errno));
                return -errno;
        }
        if ((r = root_only(fd, path, false)) < 0)
                return r;
        text = malloc(PUBLISHED_SIZE_MAX + 1);
        if (!text) {
                unchanged("%s: out of memory", path);
                return -ENOMEM;
        }
        for (;;) {
                ssize_t n = read(fd, text + len, PUBLISHED_SIZE_MAX + 1 - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        unchanged("%s: %s", path, strerror(errno));
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > PUBLISHED_SIZE_MAX) {
                        unchanged("%s: larger than 64 KiB", path);
                        return -EFBIG;
                }
        }
        /* TAKE_PTR is a statement expression, which -Wpedantic rejects */
        *ret_text = text;
        text = NULL;
        *ret_len = len;
        return 1;
}

/* "next-" or "safe-" (prefix) and 16 lowercase hex digits */
static bool id_valid(const char *id, const char *prefix)
{
        size_t p = strlen(prefix);

        if (strncmp(id, prefix, p) != 0 || strlen(id) != p + ID_HEX)
                return false;
        for (size_t i = p; i < p + ID_HEX; i++)
                if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
                        return false;
        return true;
}

/* member "next" or "safe" of root into c: 0, or -EINVAL with why */
static int read_config(json_t *root, const char *member, struct config *c, char *why, size_t size)
{
        char prefix[8], shown[128];
        json_t *v = json_object_get(root, member), *conf, *value;
        const char *key;

        *c = (struct config){0};
        if (!v || json_is_null(v))
                return 0;
        snprintf(prefix, sizeof(prefix), "%s-", member);
        if (!json_is_object(v) || !json_is_string(json_object_get(v, "id")) ||
            !json_is_object(json_object_get(v, "conf"))) {
                snprintf(why, size, "\"%s\" is not null or {\"id\": ..., \"conf\": {...}}", member);
                return -EINVAL;
        }
        c->id = json_string_value(json_object_get(v, "id"));
        if (!id_valid(c->id, prefix)) {
                snprintf(why, size, "%s id '%s' is not %s and 16 lowercase hex digits", member,
                         printable(c->id, shown, 40), prefix);
                return -EINVAL;
        }
        conf = json_object_get(v, "conf");
        if (json_object_size(conf) > PUBLISHED_CONF_MAX) {
                snprintf(why, size, "%s has %zu settings; allowed: at most %d", c->id,
                         json_object_size(conf), PUBLISHED_CONF_MAX);
                return -EINVAL;
        }
        json_object_foreach(conf, key, value)
        {
                const char *s = json_string_value(value);
                int r = s ? policy_published_check(key, s) : -EINVAL;

                if (r < 0) {
                        char k[128], val[128];

                        snprintf(why, size, "%s: %s '%s'%s", c->id, printable(key, k, sizeof(k)),
                                 s ? printable(s, val, sizeof(val)) : "(not a string)",
                                 r == -ENOENT ? " is not a setting sparkshim adds at submit"
                                              : " is not a value sparkshim adds for it");
                        return -EINVAL;
                }
                c->keys[c->n] = key;
                c->values[c->n++] = s;
        }
        return 0;
}

/* The published document, checked: 0, or -EINVAL with why. */
static int check_published(json_t *root, const char *job, struct published *p, char *why,
                           size_t size)
{
        static const char *const states[] = {"explore", "fallback", "held", "learning"};
        json_t *schema = json_object_get(root, "schema"),
               *owner = json_object_get(root, "owner_uid"), *name = json_object_get(root, "job"),
               *expires = json_object_get(root, "expires"), *state = json_object_get(root, "state"),
               *reason = json_object_get(root, "reason");
        bool known = false;
        int r;

        if (!json_is_object(root) || !json_is_string(schema) ||
            strcmp(json_string_value(schema), PUBLISHED_SCHEMA) != 0) {
                snprintf(why, size, "\"schema\" is not \"%s\"", PUBLISHED_SCHEMA);
                return -EINVAL;
        }
        if (!json_is_integer(owner) || json_integer_value(owner) != (json_int_t)getuid()) {
                snprintf(why, size, "\"owner_uid\" is not %u, the submitting user",
                         (unsigned)getuid());
                return -EINVAL;
        }
        if (!json_is_string(name) || strcmp(json_string_value(name), job) != 0) {
                snprintf(why, size, "\"job\" is not this job");
                return -EINVAL;
        }
        if (!json_is_integer(expires) || json_integer_value(expires) <= (json_int_t)time(NULL)) {
                snprintf(why, size, "expired (\"expires\": %" JSON_INTEGER_FORMAT ")",
                         json_is_integer(expires) ? json_integer_value(expires) : 0);
                return -EINVAL;
        }
        for (size_t i = 0; json_is_string(state) && i < ELEMENTSOF(states); i++)
                known = known || strcmp(json_string_value(state), states[i]) == 0;
        if (!known) {
                snprintf(why, size, "\"state\" is not explore, fallback, held or learning");
                return -EINVAL;
        }
        if (reason && !json_is_string(reason)) {
                snprintf(why, size, "\"reason\" is not a string");
                return -EINVAL;
        }
        p->ran = json_object_get(root, "ran");
        if (p->ran && !json_is_array(p->ran)) {
                snprintf(why, size, "\"ran\" is not an array");
                return -EINVAL;
        }
        p->state = json_string_value(state);
        p->reason = reason ? json_string_value(reason) : "";
        if ((r = read_config(root, "next", &p->next, why, size)) < 0 ||
            (r = read_config(root, "safe", &p->safe, why, size)) < 0)
                return r;
        return 0;
}

/* ---------------------------------------------------------------- the user's launches */

/*
 * $HOME/.local/state/sparkshim as an O_PATH fd (its directories made 0700 on the way when
 * create), or -1: never for root or a set-id process (HOME would not be the caller's own),
 * nor without an absolute HOME. Only the user's own submits read what is there.
 */
static int state_dir(bool create)
{
        static const char *const steps[] = {".local", "state", "sparkshim"};
        const char *home = getenv("HOME");
        int fd;

        if (getuid() == 0 || geteuid() != getuid() || !home || home[0] != '/')
                return -1;
        fd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
        for (size_t i = 0; fd >= 0 && i < ELEMENTSOF(steps); i++) {
                int next;

                if (create)
                        (void)mkdirat(fd, steps[i], 0700);
                next = openat(fd, steps[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
                close(fd);
                fd = next;
        }
        return fd < 0 ? -1 : fd;
}

/* Was configuration id launched by this user before (a retry)? */
static bool launched_before(const char *id)
{
        _cleanup_close_ int dirfd = state_dir(false);
        _cleanup_free_ char *text = NULL;
        size_t len = strlen(id);

        if (dirfd < 0 || util_read_file_at(dirfd, LAUNCHED_FILE, LAUNCHED_SIZE_MAX, &text) < 0)
                return false;
        for (const char *line = text; *line;) {
                const char *nl = strchr(line, '\n');

                if (!nl)
                        break; /* a line being written */
                if ((size_t)(nl - line) == len && memcmp(line, id, len) == 0)
                        return true;
                line = nl + 1;
        }
        return false;
}

/* Append id to the user's launches, the newest LAUNCHED_KEEP kept; silent when it cannot. */
static void record_launch(const char *id)
{
        _cleanup_close_ int dirfd = state_dir(true), fd = -1;
        _cleanup_free_ char *text = NULL;
        char line[64];
        size_t lines = 0;
        ssize_t len;
        const char *keep;

        if (dirfd < 0)
                return;
        snprintf(line, sizeof(line), "%s\n", id);
        fd = openat(dirfd, LAUNCHED_FILE,
                    O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                    0600);
        /* one write: concurrent submits append whole lines */
        if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line))
                return;
        len = util_read_file_at(dirfd, LAUNCHED_FILE, LAUNCHED_SIZE_MAX, &text);
        if (len == -EFBIG) {
                (void)util_write_file_atomic_at(dirfd, LAUNCHED_FILE, line, strlen(line), 0600,
                                                NULL, NULL);
                return;
        }
        if (len < 0)
                return;
        /* a file that is not lines of ids (a crash's zero-filled tail, anything else): begin
         * it again with this launch */
        for (ssize_t i = 0; i < len; i++)
                if (text[i] != '\n' && !((text[i] >= '0' && text[i] <= '9') ||
                                         (text[i] >= 'a' && text[i] <= 'z') || text[i] == '-')) {
                        (void)util_write_file_atomic_at(dirfd, LAUNCHED_FILE, line, strlen(line),
                                                        0600, NULL, NULL);
                        return;
                }
        for (ssize_t i = 0; i < len; i++)
                lines += text[i] == '\n';
        if (lines <= LAUNCHED_KEEP)
                return;
        keep = text;
        for (size_t drop = lines - LAUNCHED_KEEP; drop > 0; drop--) {
                const char *nl = memchr(keep, '\n', (size_t)(text + len - keep));

                if (!nl)
                        return;
                keep = nl + 1;
        }
        (void)util_write_file_atomic_at(dirfd, LAUNCHED_FILE, keep, (size_t)(text + len - keep),
                                        0600, NULL, NULL);
}

/*
 * Did the user set key some other way Spark reads it: a deprecated name of it in the
 * properties, or the environment spark-submit's launcher turns into it
 * (SparkSubmitArguments: SPARK_EXECUTOR_MEMORY, SPARK_EXECUTOR_CORES)?
 */
static bool set_by_user(const struct policy_submit *s, const char *key)
{
        static const struct {
                const char *key, *property, *env;
        } aliases[] = {
            {"spark.executor.memoryOverhead", "spark.yarn.executor.memoryOverhead", NULL},
            {"spark.executor.memory", NULL, "SPARK_EXECUTOR_MEMORY"},
            {"spark.executor.cores", NULL, "SPARK_EXECUTOR_CORES"},
        };

        if (policy_submit_get(s, key))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(aliases); i++) {
                const char *e;

                if (strcmp(aliases[i].key, key) != 0)
                        continue;
                if (aliases[i].property && policy_submit_get(s, aliases[i].property))
                        return true;
                if (aliases[i].env && (e = getenv(aliases[i].env)) && *e)
                        return true;
        }
        return false;
}

/* Has the service seen a run of configuration id (its "ran")? Then a launch of it before
 * was not a submit that failed before the service saw it: not a retry. */
static bool ran(const struct published *p, const char *id)
{
        size_t i;
        json_t *v;

        json_array_foreach(p->ran, i, v) if (json_is_string(v) &&
                                             strcmp(json_string_value(v), id) == 0) return true;
        return false;
}

/* ---------------------------------------------------------------- the decision */

/* "spark.x=1 spark.y=2" (with --conf before each when as_options) of what c adds; the keys
 * the user set in kept. */
static void describe(const struct config *c, const bool *user_set, bool as_options, char *buf,
                     size_t size, char *kept, size_t kept_size)
{
        size_t n = 0, k = 0;

        buf[0] = kept[0] = '\0';
        for (size_t i = 0; i < c->n; i++) {
                if (user_set[i]) {
                        if (k < kept_size)
                                k += (size_t)snprintf(kept + k, kept_size - k, "%s%s", k ? " " : "",
                                                      c->keys[i]);
                } else if (n < size) {
                        n +=
                            (size_t)snprintf(buf + n, size - n, "%s%s%s=%s", n ? " " : "",
                                             as_options ? "--conf " : "", c->keys[i], c->values[i]);
                }
        }
        if (n == 0)
                snprintf(buf, size, "no setting of its own");
}

/* argv with --conf KEY=VALUE for each of c's settings the user did not set, and the marks,
 * after argv[at]; NULL on ENOMEM */
static char **with_settings(int argc, char **argv, int at, const struct config *c,
                            const bool *user_set, const char *job, bool mark_job, bool mark_config)
{
        char **out = calloc((size_t)argc + 2 * (c->n + 2) + 1, sizeof(*out));
        int n = 0;

        if (!out)
                return NULL;
        for (int i = 0; i <= at; i++)
                out[n++] = argv[i];
        for (size_t i = 0; i < c->n + 2; i++) {
                const char *key = i < c->n    ? c->keys[i]
                                  : i == c->n ? POLICY_JOB_PROPERTY
                                              : POLICY_CONFIG_PROPERTY;
                const char *value = i < c->n ? c->values[i] : i == c->n ? job : c->id;

                if ((i < c->n && user_set[i]) || (i == c->n && !mark_job) ||
                    (i == c->n + 1 && !mark_config))
                        continue;
                out[n++] = (char *)"--conf";
                if (asprintf(&out[n++], "%s=%s", key, value) < 0) {
                        free(out);
                        return NULL;
                }
        }
        for (int i = at + 1; i < argc; i++)
                out[n++] = argv[i];
        out[n] = NULL;
        return out;
}

/*
 * argv with only --conf spark.sparkshim.job=JOB after argv[at] (the user did not set it):
 * with nothing published yet, the run is still stored under the name it was submitted by,
 * so that the settings published from it find the next submit (the event log's
 * spark.app.name may be another, the one the application's code sets). argv on ENOMEM.
 */
static char **with_job(int argc, char **argv, int at, const struct policy_submit *s,
                       const char *job, enum policy_tuner_apply mode)
{
        static const struct config none = {0};
        bool user_set[1] = {false};
        char **out;

        if ((mode != POLICY_APPLY_SAFE && mode != POLICY_APPLY_EXPLORE) ||
            policy_submit_get(s, POLICY_JOB_PROPERTY))
                return argv;
        out = with_settings(argc, argv, at, &none, user_set, job, true, false);
        return out ? out : argv;
}

/*
 * The submit's arguments after argv[at] read as Spark reads them, into s: false when they
 * stay unchanged (said when they cannot be read).
 */
static bool read_submit(int argc, char **argv, int at, struct policy_submit *s)
{
        struct util_error perr = {0};
        int r;

        r = policy_submit_parse(argc - at - 1, argv + at + 1, s, &perr);
        if (r == 0 && s->submission)
                r = policy_submit_read_properties(s, &perr);
        if (r < 0) {
                unchanged("arguments not read as Spark reads them: %s", perr.text);
                return false;
        }
        /* --help, --kill, ...: nothing is submitted; opted out; settings already applied (the
         * driver pod's spark-submit in Kubernetes cluster mode gets the first one's) */
        if (!s->submission || policy_submit_opted_out(s) ||
            policy_submit_get(s, POLICY_CONFIG_PROPERTY))
                return false;
        return true;
}

/*
 * The published file (len bytes of text, read from path) parsed and checked for job into
 * pub, whose strings it holds; NULL (said) when it is refused.
 */
static json_t *load_published(const char *text, size_t len, const char *path, const char *job,
                              struct published *pub)
{
        json_error_t jerr;
        json_t *root;
        char why[512];

        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) {
                unchanged("%s: line %d: %s", path, jerr.line, jerr.text);
                return NULL;
        }
        if (check_published(root, job, pub, why, sizeof(why)) < 0) {
                unchanged("%s: refused: %s", path, why);
                json_decref(root);
                return NULL;
        }
        return root;
}

/* The configuration to apply and why (into because): what explore launches; show says what
 * it would. */
static const struct config *choose(const struct published *pub, enum policy_tuner_apply mode,
                                   char *because, size_t size)
{
        const struct config *chosen;
        char reason[200];

        printable(pub->reason, reason, sizeof(reason));
        if (mode == POLICY_APPLY_SAFE) {
                chosen = &pub->safe;
                snprintf(because, size, "tuner.apply safe");
        } else if (strcmp(pub->state, "fallback") == 0 || strcmp(pub->state, "held") == 0) {
                chosen = &pub->safe;
                snprintf(because, size, "state %s%s%s", pub->state, reason[0] ? ": " : "", reason);
        } else if (!pub->next.id) {
                chosen = &pub->safe;
                snprintf(because, size, "state %s, no next configuration", pub->state);
        } else if (launched_before(pub->next.id) && !ran(pub, pub->next.id)) {
                chosen = &pub->safe;
                snprintf(because, size, "retry of %s", pub->next.id);
        } else {
                chosen = &pub->next;
                snprintf(because, size, "state %s%s%s", pub->state, reason[0] ? ": " : "", reason);
        }
        return chosen;
}

static char **apply(int argc, char **argv, int at, const struct policy *policy)
{
        enum policy_tuner_apply mode = policy->tuner.apply;
        struct policy_submit s;
        _cleanup_free_ char *text = NULL;
        _cleanup_(json_decrefp) json_t *root = NULL;
        char name[POLICY_PUBLISHED_NAME_MAX + 16], path[PATH_MAX + 512], shown[300];
        char line[800], kept[400], because[400];
        const struct config *chosen;
        struct published pub = {0};
        bool user_set[PUBLISHED_CONF_MAX] = {false};
        const char *job, *kind;
        size_t len = 0;
        char **out = argv;
        int r;

        policy_submit_init(&s);
        if (!read_submit(argc, argv, at, &s))
                goto out;
        job = policy_submit_job(&s, policy->tuner.job_key);
        if (!job) {
                unchanged("no job name: give --name or --conf %s=...", POLICY_JOB_PROPERTY);
                goto out;
        }
        if (strlen(job) > JOB_NAME_MAX || policy_published_name(job, name, sizeof(name)) < 0) {
                unchanged("job '%s': the name is longer than %d bytes, or not one a published "
                          "file can have; give a shorter --conf %s=...",
                          printable(job, shown, 80), JOB_NAME_MAX, POLICY_JOB_PROPERTY);
                goto out;
        }
        printable(job, shown, sizeof(shown));
        r = read_published(policy->tuner.service.publish_dir, name, path, sizeof(path), &text,
                           &len);
        if (r == 0)
                out = with_job(argc, argv, at, &s, job, mode);
        if (r <= 0)
                goto out;
        root = load_published(text, len, path, job, &pub);
        if (!root)
                goto out;
        chosen = choose(&pub, mode, because, sizeof(because));
        kind = chosen == &pub.next ? "next" : "safe";
        if (!chosen->id) {
                log_info("job '%s': %s nothing (%s; no safe configuration published)", shown,
                         mode == POLICY_APPLY_SHOW ? "tuner.apply show: would apply" : "applied",
                         because);
                out = with_job(argc, argv, at, &s, job, mode);
                goto out;
        }
        for (size_t i = 0; i < chosen->n; i++)
                user_set[i] = set_by_user(&s, chosen->keys[i]);
        describe(chosen, user_set, mode == POLICY_APPLY_SHOW, line, sizeof(line), kept,
                 sizeof(kept));
        if (mode == POLICY_APPLY_SHOW) {
                log_info("job '%s': tuner.apply show: would apply %s configuration %s (%s): "
                         "%s%s%s",
                         shown, kind, chosen->id, because, line, kept[0] ? "; yours kept: " : "",
                         kept);
                goto out;
        }
        out = with_settings(argc, argv, at, chosen, user_set, job,
                            !policy_submit_get(&s, POLICY_JOB_PROPERTY), true);
        if (!out) {
                out = argv;
                unchanged("out of memory");
                goto out;
        }
        if (chosen == &pub.next)
                record_launch(chosen->id);
        log_info("job '%s': applied %s configuration %s (%s): %s%s%s", shown, kind, chosen->id,
                 because, line, kept[0] ? "; yours kept: " : "", kept);
out:
        policy_submit_free(&s);
        return out;
}

char **shim_submit_apply(int argc, char **argv, int class_index, const char *policy_path,
                         bool policy_explicit)
{
        enum util_log_level level = util_log_get_level();
        struct util_error err = {0};
        struct policy policy;
        char **out = argv;
        int r;

        /* its lines say what happened to the submit: shown whatever the home's level */
        util_log_set_level(UTIL_LOG_INFO);
        policy_init_defaults(&policy);
        /* the home's policy, or the build's default; root's, whoever submits */
        r = policy_load_file(policy_path, true, &policy, &err);
        if (r == -ENOENT && !policy_explicit) {
                policy_init_defaults(&policy);
                r = 0;
        }
        if (r < 0)
                unchanged("policy %s", err.text);
        else if (policy.tuner.apply != POLICY_APPLY_OFF)
                out = apply(argc, argv, class_index, &policy);
        util_log_set_level(level);
        return out;
}
