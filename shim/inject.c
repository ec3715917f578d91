/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JVMTI agent in `sparkshim run`: injection into the launch, and the run's private
 * directory for the statistics the agent leaves. The option string follows
 * sparkshim-agent(7). The statistics are read by measure/agent-stats.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "inject.h"
#include "log.h"
#include "util.h"

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
                           char *ret_where, size_t where_size, char *ret_stats, size_t stats_size)
{
        static const char *const variables[] = {"JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS",
                                                "_JAVA_OPTIONS"};
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
        struct appender a = {.buf = buf, .size = size};

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

/* ---------------------------------------------------------------- the private directory */

/*
 * Where root makes the agent's private directory: the admin's run directory
 * (SPARKSHIM_RUNDIR, built in), never $TMPDIR, which is the user's. It is made 0711 when
 * missing, and refused when anyone but root could change it. A shim that is not root has
 * no one to guard against: it uses $TMPDIR as any program does.
 */
static int private_dir_base(char *buf, size_t size, struct util_error *why)
{
        struct stat st;

        if (geteuid() != 0) {
                const char *tmp = getenv("TMPDIR"); /* only a shim that is not root reads it */

                snprintf(buf, size, "%s",
                         tmp && *tmp && shim_agent_option_path_ok(tmp) && strlen(tmp) < 1024
                             ? tmp
                             : "/tmp");
                return 0;
        }
        if (mkdir(SPARKSHIM_RUNDIR, 0711) < 0 && errno != EEXIST)
                return util_error_set(why, errno, "cannot create %s: %s", SPARKSHIM_RUNDIR,
                                      strerror(errno));
        if (lstat(SPARKSHIM_RUNDIR, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
            (st.st_mode & (S_IWGRP | S_IWOTH)))
                return util_error_set(why, EPERM, "%s is not a directory that only root can change",
                                      SPARKSHIM_RUNDIR);
        snprintf(buf, size, "%s", SPARKSHIM_RUNDIR);
        return 0;
}

/* Remove the private run directory and what the agent left in it. */
void shim_agent_dir_remove(const char *dir)
{
        _cleanup_close_ int fd = -1;
        DIR *d;

        if (!dir[0])
                return;
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && (d = fdopendir(fd))) {
                fd = -1; /* the DIR owns it */
                for (struct dirent *de; (de = readdir(d));)
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                unlinkat(dirfd(d), de->d_name, 0);
                closedir(d);
        }
        if (rmdir(dir) < 0 && errno != ENOENT)
                log_warn("cannot remove %s: %s", dir, strerror(errno));
}

/* Private directories of shims that are gone (agent.<pid>.XXXXXX, the pid dead): removed. */
static void sweep_private_dirs(const char *base)
{
        _cleanup_close_ int fd = -1;
        struct dirent *de;
        DIR *d;

        if (geteuid() != 0)
                return; /* $TMPDIR is not ours to sweep */
        fd = open(base, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || !(d = fdopendir(fd)))
                return;
        fd = -1; /* the DIR owns it */
        while ((de = readdir(d))) {
                char path[POLICY_PATH_MAX];
                int pid;

                if (sscanf(de->d_name, "agent.%d.", &pid) != 1 || pid <= 0 || kill(pid, 0) == 0 ||
                    errno != ESRCH)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
                shim_agent_dir_remove(path);
        }
        closedir(d);
}

/* The run's private directory for the agent's statistics: <base>/agent.<pid>.XXXXXX. */
int shim_agent_dir_make(char *dir, size_t size, struct util_error *why)
{
        char base[POLICY_PATH_MAX];
        int r;

        r = private_dir_base(base, sizeof(base), why);
        if (r < 0)
                return r;
        sweep_private_dirs(base);
        snprintf(dir, size, "%s/agent.%d.XXXXXX", base, (int)getpid());
        if (!mkdtemp(dir)) {
                r = -errno;
                return util_error_set(why, r, "cannot create %s: %s", dir, strerror(-r));
        }
        /* a JVM that runs as another user writes here too; no one but root lists it */
        if (geteuid() == 0 && chmod(dir, 01733) < 0) {
                r = -errno;
                util_error_set(why, r, "cannot chmod %s: %s", dir, strerror(-r));
                shim_agent_dir_remove(dir);
                return r;
        }
        return 0;
}
