/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sparkshim check: a host preflight. Reads only; never creates or writes a cgroup.
 * Its "init:" rows are the requirements of init mode (`sparkshim run --init` as a
 * container's command, sparkshim-k8s(7)), one a line with the fix when one is missing.
 */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <linux/magic.h>

#include "config.h"
#include "shim.h"
#include "util.h"

enum result { RESULT_OK, RESULT_INFO, RESULT_WARN, RESULT_FAIL };

struct checker {
        bool can_enforce;
        char first_failure[512];
        char refused_sink[512]; /* a sink that makes run refuse to start (sink_failure refuse) */
};

static void row(struct checker *c, const char *check, enum result result, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void row(struct checker *c, const char *check, enum result result, const char *fmt, ...)
{
        static const char *const names[] = {"ok", "info", "warn", "FAIL"};
        char detail[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        printf("%-22s %-6s %s\n", check, names[result], detail);
        if (result == RESULT_FAIL) {
                if (c->can_enforce)
                        snprintf(c->first_failure, sizeof(c->first_failure), "%s: %s", check,
                                 detail);
                c->can_enforce = false;
        }
}

static bool kernel_at_least(int major, int minor)
{
        struct utsname u;
        int ma = 0, mi = 0;

        if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
                return false;
        return ma > major || (ma == major && mi >= minor);
}

/* Which v1 hierarchy holds a controller, for the hybrid explanation. */
static bool bound_to_v1(const char *root, const char *controller, char *where, size_t size)
{
        struct statfs fs;

        snprintf(where, size, "%s/%s", root, controller);
        return statfs(where, &fs) == 0 && fs.f_type == CGROUP_SUPER_MAGIC;
}

/*
 * Which of needed[] a cgroup.controllers text (have) lacks, space-separated into missing,
 * and where those that cgroup v1 holds are mounted, comma-separated into v1.
 */
static void missing_controllers(const char *root, const char *have, const char *const needed[],
                                size_t nneeded, char *missing, size_t msize, char *v1, size_t vsize)
{
        char padded[520];

        snprintf(padded, sizeof(padded), " %.*s ", (int)strcspn(have, "\n"), have);
        for (size_t i = 0; i < nneeded; i++) {
                char pattern[32], where[PATH_MAX];

                snprintf(pattern, sizeof(pattern), " %s ", needed[i]);
                if (strstr(padded, pattern))
                        continue;
                snprintf(missing + strlen(missing), msize - strlen(missing), "%s%s",
                         missing[0] ? " " : "", needed[i]);
                if (bound_to_v1(root, needed[i], where, sizeof(where)))
                        snprintf(v1 + strlen(v1), vsize - strlen(v1), "%s%s", v1[0] ? ", " : "",
                                 where);
        }
}

static void check_controllers(struct checker *c, const char *root,
                              const struct shim_cgroup_host *host, const struct policy *p)
{
        const char *needed[4] = {"cpu", "memory"};
        size_t nneeded = 2;
        char have[512], missing[256] = "", v1[512] = "";
        _cleanup_close_ int fd = -1;
        ssize_t r;

        if (p->pids_max)
                needed[nneeded++] = "pids";
        if (p->io_weight)
                needed[nneeded++] = "io";
        if (!host->mount[0]) {
                row(c, "controllers", RESULT_FAIL, "no cgroup2 hierarchy to look at");
                return;
        }
        fd = open(host->mount, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        r = fd < 0 ? -errno : util_read_at(fd, "cgroup.controllers", have, sizeof(have));
        if (r < 0) {
                row(c, "controllers", RESULT_FAIL, "cannot read %s/cgroup.controllers: %s",
                    host->mount, strerror((int)-r));
                return;
        }
        missing_controllers(root, have, needed, nneeded, missing, sizeof(missing), v1, sizeof(v1));
        if (!missing[0])
                row(c, "controllers", RESULT_OK,
                    "%s/cgroup.controllers has what the plan needs: %s", host->mount, have);
        else if (v1[0])
                row(c, "controllers", RESULT_FAIL,
                    "%s/cgroup.controllers lacks %s (has '%s'): bound to cgroup v1 at %s; boot "
                    "with systemd.unified_cgroup_hierarchy=1 or cgroup_no_v1=all",
                    host->mount, missing, have, v1);
        else
                row(c, "controllers", RESULT_FAIL,
                    "%s/cgroup.controllers lacks %s (has '%s'): not delegated to this cgroup",
                    host->mount, missing, have);
}

static void check_parent(struct checker *c, const struct shim_cgroup_host *host, const char *parent)
{
        char path[PATH_MAX], existing[PATH_MAX];
        _cleanup_free_ char *copy = strdup(parent);
        char *save = NULL;
        bool exists = true;

        if (!host->mount[0] || !copy) {
                row(c, "parent cgroup", RESULT_FAIL, "no cgroup2 hierarchy");
                return;
        }
        snprintf(path, sizeof(path), "%s", host->mount);
        snprintf(existing, sizeof(existing), "%s", host->mount);
        for (char *comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
                struct stat st;
                size_t len = strlen(path);
                snprintf(path + len, sizeof(path) - len, "/%s", comp);
                if (exists && stat(path, &st) == 0)
                        snprintf(existing, sizeof(existing), "%s", path);
                else
                        exists = false;
        }
        if (access(existing, W_OK) < 0)
                row(c, "parent cgroup", RESULT_FAIL, "%s is not writable: %s", existing,
                    strerror(errno));
        else if (exists)
                row(c, "parent cgroup", RESULT_OK, "%s exists and is writable", path);
        else
                row(c, "parent cgroup", RESULT_OK, "%s will be created below %s", path, existing);
}

static void check_java(struct checker *c)
{
        char java[PATH_MAX] = "", real[PATH_MAX], release[4096];
        const char *home = getenv("JAVA_HOME"), *path = getenv("PATH");
        _cleanup_close_ int fd = -1;

        if (home && *home)
                snprintf(java, sizeof(java), "%s/bin/java", home);
        for (const char *p = path; !java[0] && p && *p;) {
                size_t l = strcspn(p, ":");
                char candidate[PATH_MAX];
                snprintf(candidate, sizeof(candidate), "%.*s/java", (int)l, p);
                if (access(candidate, X_OK) == 0)
                        snprintf(java, sizeof(java), "%s", candidate);
                p += l + (p[l] == ':');
        }
        if (!java[0] || !realpath(java, real)) {
                row(c, "JDK", RESULT_WARN,
                    "no java in JAVA_HOME or PATH (needed by executors, not by the shim)");
                return;
        }
        /* <home>/bin/java -> <home>/release has JAVA_VERSION="17.0.15" */
        char *slash = strrchr(real, '/');
        if (slash)
                *slash = '\0';
        slash = strrchr(real, '/');
        if (slash)
                *slash = '\0';
        fd = open(real, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && util_read_at(fd, "release", release, sizeof(release)) > 0) {
                char *v = strstr(release, "JAVA_VERSION=\"");
                if (v) {
                        v += strlen("JAVA_VERSION=\"");
                        v[strcspn(v, "\"")] = '\0';
                        row(c, "JDK", RESULT_INFO, "%s (Java %s)", real, v);
                        return;
                }
        }
        row(c, "JDK", RESULT_INFO, "%s", java);
}

/* The JVM agent the policy enables: `run` refuses to start without it when fail_mode is closed. */
static void check_agent(struct checker *c, const struct policy *p)
{
        const char *path = p->agent.path[0] ? p->agent.path : SPARKSHIM_AGENT_PATH;
        struct util_error why = {0};
        char resolved[PATH_MAX];
        bool usable = util_trusted_file(path, resolved, sizeof(resolved), &why) == 0;

        if (!p->agent.enabled)
                row(c, "JVM agent", RESULT_INFO, "off (agent.enabled is false); %s %s", path,
                    usable ? "is there" : "is not there or not usable");
        else if (usable)
                row(c, "JVM agent", RESULT_OK, "%s is injected into executors", path);
        else
                row(c, "JVM agent", p->fail_mode == POLICY_FAIL_CLOSED ? RESULT_FAIL : RESULT_WARN,
                    "%s: %s; run %s", path, why.text,
                    p->fail_mode == POLICY_FAIL_CLOSED
                        ? "refuses to start (fail_mode closed)"
                        : "runs executors without it (fail_mode open)");
}

/*
 * Can root create or append to a file at path as run does (util_open_append_safe)? Its
 * directory safe and writable, an existing file a regular one of ours. -EPERM: refused.
 */
static int file_writable(const char *path, struct util_error *why)
{
        _cleanup_close_ int dirfd = -1;
        const char *name;
        struct stat st;

        dirfd = util_open_dir_of(path, &name, why);
        if (dirfd < 0)
                return dirfd;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (S_ISLNK(st.st_mode))
                        return util_error_set(why, EPERM, "refused: a symlink");
                if (!S_ISREG(st.st_mode) || st.st_nlink > 1 || st.st_uid != geteuid())
                        return util_error_set(why, EPERM,
                                              "refused: not a regular file of uid %u with one link",
                                              (unsigned)geteuid());
        }
        if (faccessat(dirfd, ".", W_OK, 0) < 0)
                return util_error_set(why, errno, "its directory is not writable: %s",
                                      strerror(errno));
        return 0;
}

/* Does a listener take a connection at path (without waiting)? */
static int socket_connectable(const char *path, struct util_error *why)
{
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -1;

        if (strlen(path) >= sizeof(addr.sun_path))
                return util_error_set(why, ENAMETOOLONG, "path too long");
        memcpy(addr.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
                return util_error_set(why, errno, "cannot connect: %s", strerror(errno));
        return 0;
}

static void check_sink(struct checker *c, const struct policy *p, const char *check,
                       const char *path, int (*test)(const char *, struct util_error *))
{
        bool refuse = p->report_sink_failure == POLICY_SINK_REFUSE;
        struct util_error why = {0};
        int r;

        if (!path[0])
                return;
        r = test(path, &why);
        if (r == 0) {
                row(c, check, RESULT_OK, "%s", path);
                return;
        }
        refuse = refuse || r == -EPERM; /* unsafe for root: refused whatever the policy says */
        /* not an enforcement failure: the summary says what it does to run */
        printf("%-22s %-6s %s: %s; run %s\n", check, refuse ? "FAIL" : "warn", path, why.text,
               refuse ? "refuses to start (report.sink_failure refuse)"
                      : "runs without it (report.sink_failure warn)");
        if (refuse && !c->refused_sink[0])
                snprintf(c->refused_sink, sizeof(c->refused_sink), "%s %s: %s", check, path,
                         why.text);
}

/* Every sink the policy names, tested as run opens it (flags of run may add others). */
static void check_sinks(struct checker *c, const struct policy *p)
{
        check_sink(c, p, "report file", p->report_path, file_writable);
        check_sink(c, p, "report socket", p->report_socket, socket_connectable);
        check_sink(c, p, "prometheus file", p->report_prometheus, file_writable);
}

/* ------------------------------------------------------------ init mode in a container */

struct init_checker {
        bool required; /* check --init: a missing requirement fails the check */
        unsigned missing;
        char names[256]; /* the missing requirements' names */
};

static void init_row(struct init_checker *c, const char *check, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void init_row(struct init_checker *c, const char *check, bool ok, const char *fmt, ...)
{
        char detail[768];
        size_t used = strlen(c->names);
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        printf("%-22s %-6s %s\n", check, ok ? "ok" : c->required ? "FAIL" : "miss", detail);
        if (ok)
                return;
        c->missing++;
        snprintf(c->names + used, sizeof(c->names) - used, "%s%s", used ? ", " : "",
                 check + strlen("init: "));
}

static void check_init_namespace(struct init_checker *c, const char *mount)
{
        char detail[768];
        int r = shim_cgroup_init_namespace(mount, detail, sizeof(detail));

        init_row(c, "init: cgroup namespace", r >= 0, "%s", detail);
}

/* The policy's kubernetes.init, and a cgroup2 mount at root. */
static void init_mount(struct init_checker *c, const char *root,
                       const struct shim_cgroup_host *host, const struct policy *p)
{
        const char *mount = host->mount;

        printf("%-22s %-6s %s\n", "init: policy", "info",
               p->kubernetes_init
                   ? "kubernetes.init is true: the feature step makes `sparkshim run --init` "
                     "the executor container's command"
                   : "kubernetes.init is false: pods run sparkshim only if their command says so");
        if (host->layout == SHIM_CGROUP_UNIFIED)
                init_row(c, "init: cgroup2 mount", true, "cgroup2 is mounted at %s", root);
        else if (host->layout == SHIM_CGROUP_HYBRID)
                init_row(c, "init: cgroup2 mount", false,
                         "%s holds cgroup v1 hierarchies, cgroup2 is at %s (a hybrid host): init "
                         "mode needs "
                         "cgroup2 at %s: fix: a cgroup v2 node (boot with "
                         "systemd.unified_cgroup_hierarchy=1 "
                         "or cgroup_no_v1=all)",
                         root, mount, root);
        else if (host->layout == SHIM_CGROUP_LEGACY)
                init_row(c, "init: cgroup2 mount", false,
                         "%s holds only cgroup v1 hierarchies: fix: a cgroup v2 node (boot with "
                         "systemd.unified_cgroup_hierarchy=1 or cgroup_no_v1=all)",
                         root);
        else
                init_row(c, "init: cgroup2 mount", false,
                         "no cgroup file system at %s: fix: mount cgroup2 there (container "
                         "runtimes do, on "
                         "cgroup v2 nodes)",
                         root);
}

/* A writable mount: true when it is read-only. */
static bool init_writable_mount(struct init_checker *c, const char *mount)
{
        struct statvfs vfs;
        bool rdonly = false;

        if (statvfs(mount, &vfs) < 0)
                init_row(c, "init: writable mount", false, "cannot inspect %s: %s", mount,
                         strerror(errno));
        else if ((rdonly = vfs.f_flag & ST_RDONLY))
                init_row(
                    c, "init: writable mount", false,
                    "%s is mounted read-only (as runtimes mount it in unprivileged containers): "
                    "fix: a "
                    "writable cgroup mount without privileged (a privileged pod gets no cgroup "
                    "namespace): containerd >= 2.1's cgroup_writable = true in the runtime "
                    "handler's "
                    "table, beside runtime_type; CRI-O's "
                    "io.kubernetes.cri-o.cgroup2-mount-hierarchy-rw "
                    "annotation, allowed by the handler (sparkshim-k8s(7))",
                    mount);
        else
                init_row(c, "init: writable mount", true, "%s is mounted read-write", mount);
        return rdonly;
}

/* The controllers the plan needs, available at the namespace's root (fd, or open_error). */
static void init_controllers(struct init_checker *c, const char *root, const struct policy *p,
                             const char *mount, int fd, int open_error)
{
        const char *needed[4] = {"cpu", "memory"};
        char have[512] = "", missing[64] = "", v1[512] = "";
        size_t nneeded = 2;
        ssize_t n;

        if (p->pids_max)
                needed[nneeded++] = "pids";
        if (p->io_weight)
                needed[nneeded++] = "io";
        n = fd < 0 ? -open_error : util_read_at(fd, "cgroup.controllers", have, sizeof(have));
        if (n < 0) {
                init_row(c, "init: controllers", false, "cannot read %s/cgroup.controllers: %s",
                         mount, strerror((int)-n));
        } else {
                have[strcspn(have, "\n")] = '\0';
                missing_controllers(root, have, needed, nneeded, missing, sizeof(missing), v1,
                                    sizeof(v1));
                if (!missing[0])
                        init_row(c, "init: controllers", true, "%s/cgroup.controllers has %s",
                                 mount, have);
                else if (v1[0])
                        init_row(c, "init: controllers", false,
                                 "%s/cgroup.controllers lacks %s (has '%s'): bound to cgroup v1 at "
                                 "%s: fix: a "
                                 "cgroup v2 node",
                                 mount, missing, have, v1);
                else
                        init_row(c, "init: controllers", false,
                                 "%s/cgroup.controllers lacks %s (has '%s'): not delegated to the "
                                 "container: "
                                 "fix: the parent's cgroup.subtree_control must enable them (the "
                                 "kubelet and "
                                 "systemd's Delegate=yes do)",
                                 mount, missing, have);
        }
}

/* Writable by this uid: create cgroups, move processes, enable controllers. */
static void init_writable_by_uid(struct init_checker *c, const char *mount, int fd, bool rdonly)
{
        static const char *const files[] = {".", "cgroup.procs", "cgroup.subtree_control"};
        char denied[256] = "";
        int error = 0;

        for (size_t i = 0; fd >= 0 && i < ELEMENTSOF(files); i++)
                if (faccessat(fd, files[i], W_OK, AT_EACCESS) < 0) {
                        error = error ? error : errno;
                        snprintf(denied + strlen(denied), sizeof(denied) - strlen(denied), "%s%s",
                                 denied[0] ? ", " : "", i == 0 ? "the directory" : files[i]);
                }
        if (fd < 0)
                init_row(c, "init: writable by uid", false, "cannot open %s", mount);
        else if (!denied[0])
                init_row(c, "init: writable by uid", true,
                         "uid %u may create cgroups in %s and write its cgroup.procs and "
                         "cgroup.subtree_control",
                         (unsigned)geteuid(), mount);
        else if (error == EROFS || rdonly)
                init_row(c, "init: writable by uid", false,
                         "%s: %s not writable: the mount is read-only (above)", mount, denied);
        else
                init_row(c, "init: writable by uid", false,
                         "%s: %s not writable by uid %u (%s): fix: run sparkshim as root in the "
                         "container (runAsUser: 0), or delegate the cgroup to this uid (systemd "
                         "Delegate=yes chowns it)",
                         mount, denied, (unsigned)geteuid(), strerror(error));
}

static void check_init(struct init_checker *c, const char *root,
                       const struct shim_cgroup_host *host, const struct policy *p)
{
        const char *mount = host->mount;
        _cleanup_close_ int fd = -1;
        bool rdonly;

        init_mount(c, root, host, p);
        if (!mount[0])
                return;
        if (host->layout != SHIM_CGROUP_UNIFIED)
                printf("%-22s %-6s %s\n", "init: (hierarchy)", "info",
                       "the rows below look at the cgroup2 hierarchy this host has");

        rdonly = init_writable_mount(c, mount);

        check_init_namespace(c, mount);

        fd = open(mount, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        init_controllers(c, root, p, mount, fd, fd < 0 ? errno : 0);

        init_writable_by_uid(c, mount, fd, rdonly);
}

int shim_check(const char *policy_path, bool policy_explicit, const char *cgroup_root, bool init)
{
        struct checker c = {.can_enforce = true};
        struct init_checker ic = {.required = init};
        struct shim_cgroup_host host = {0};
        struct util_error perr = {0};
        struct policy p;
        int r;

        printf("%-22s %-6s %s\n", "CHECK", "RESULT", "DETAIL");
        policy_init_defaults(&p);
        r = policy_load_file(policy_path, geteuid() == 0, &p, &perr);
        if (r == -ENOENT && !policy_explicit) {
                policy_init_defaults(&p);
                row(&c, "policy", RESULT_INFO, "%s absent: built-in defaults apply", policy_path);
        } else if (r < 0) {
                policy_init_defaults(&p);
                row(&c, "policy", RESULT_FAIL, "%s", perr.text);
        } else {
                row(&c, "policy", RESULT_OK, "%s (fail_mode %s, parent %s)", policy_path,
                    p.fail_mode == POLICY_FAIL_OPEN ? "open" : "closed", p.cgroup_parent);
        }

        r = shim_cgroup_detect(cgroup_root, &host);
        if (r < 0)
                row(&c, "cgroup v2", RESULT_FAIL, "cannot inspect %s: %s", cgroup_root,
                    strerror(-r));
        else if (host.layout == SHIM_CGROUP_UNIFIED)
                row(&c, "cgroup v2", RESULT_OK, "unified hierarchy at %s", host.mount);
        else if (host.layout == SHIM_CGROUP_HYBRID)
                row(&c, "cgroup v2", RESULT_WARN,
                    "hybrid host: cgroup2 at %s next to cgroup v1 hierarchies in %s", host.mount,
                    cgroup_root);
        else if (host.layout == SHIM_CGROUP_LEGACY)
                row(&c, "cgroup v2", RESULT_FAIL, "%s has only cgroup v1 hierarchies", cgroup_root);
        else
                row(&c, "cgroup v2", RESULT_FAIL, "no cgroup filesystem at %s", cgroup_root);

        check_controllers(&c, cgroup_root, &host, &p);
        check_parent(&c, &host, p.cgroup_parent);
        row(&c, "cgroup.kill", kernel_at_least(5, 14) ? RESULT_OK : RESULT_WARN, "%s",
            kernel_at_least(5, 14) ? "kernel >= 5.14: leftovers are killed atomically"
                                   : "kernel < 5.14: leftovers are killed pid by pid");
        row(&c, "clone3 into cgroup", kernel_at_least(5, 7) ? RESULT_OK : RESULT_WARN, "%s",
            kernel_at_least(5, 7) ? "kernel >= 5.7: the executor starts inside its cgroup"
                                  : "kernel < 5.7: fork, then attach before exec");
        check_java(&c);
        check_agent(&c, &p);
        check_sinks(&c, &p);
        if (r >= 0)
                check_init(&ic, cgroup_root, &host, &p);

        if (ic.missing)
                printf("\nsparkshim run --init (a container's command) cannot set up its cgroups "
                       "here: "
                       "%u requirement%s missing: %s.\n",
                       ic.missing, ic.missing == 1 ? "" : "s", ic.names);
        else if (r >= 0)
                printf("\nsparkshim run --init (a container's command) can set up its cgroups "
                       "here.\n");
        if (init && (ic.missing || r < 0))
                return 1;
        if (c.refused_sink[0]) {
                printf("\nsparkshim run refuses to start on this host: %s (report.sink_failure "
                       "refuse, exit 125).\n",
                       c.refused_sink);
                return 1;
        }
        if (c.can_enforce) {
                printf("\nsparkshim run can enforce the plan on this host.\n");
                return 0;
        }
        printf("\nsparkshim run cannot enforce the plan on this host: %s.\n"
               "With fail_mode closed it refuses to start (exit 123); with open it runs the "
               "executor unconstrained.\n",
               c.first_failure);
        return 1;
}
