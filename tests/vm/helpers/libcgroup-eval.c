/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcgroup-eval: drive libcgroup's API on cgroup v2 one call at a time, so that
 * tests/vm/cases/90-libcgroup.sh can pin what docs/libcgroup.md says about it. Each
 * subcommand calls the library and prints what it returned in a fixed, greppable form:
 *
 *   <op>: <ECG code name or OK> last_errno=<errno name or 0> text="<cgroup_strerror>"
 *
 * and, at exit, "fds: none" or "fds: <fd> -> <target> ..." for descriptors left open that
 * the process did not inherit.
 * The exit status is 0 when the subcommand ran (whatever libcgroup answered), 2 on usage
 * errors. Cgroup names are relative to the cgroup2 mount, as libcgroup takes them.
 *
 *   noop                                nothing (a process linked with libcgroup)
 *   init                                cgroup_init (timed), then the mount table it built
 *   create NAME [-c CTL]... [FILE=VALUE]...   cgroup_create_cgroup (ownership ignored)
 *   set NAME FILE=VALUE...              cgroup_modify_cgroup
 *   get NAME FILE...                    cgroup_get_cgroup + cgroup_get_value_string
 *   attach NAME PID [-c CTL]...         cgroup_attach_task_pid
 *   delete NAME [-f FLAGS] [-c CTL]...  cgroup_delete_cgroup_ext; FLAGS: 0 (migrate tasks
 *                                       to the parent), ignore-migration, recursive, empty-only
 *   direct-create PARENT NAME FILE=VALUE...   what shim/cgroup.c does, for the kernel's errno
 *   bootstrap api|direct-first          init mode's steps, in the root of a cgroup namespace
 *   bench ROUNDS PARENT                 cost: libcgroup vs direct writes, interleaved
 *
 * The controller of FILE=VALUE is the part of FILE before the first dot. The binary is
 * not a tool for anything else; its output is what the case asserts.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <libcgroup.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CG_ROOT    "/sys/fs/cgroup"
#define VALUES_MAX 16

static const char *const ecg_names[] = {
    "ECGROUPNOTCOMPILED",
    "ECGROUPNOTMOUNTED",
    "ECGROUPNOTEXIST",
    "ECGROUPNOTCREATED",
    "ECGROUPSUBSYSNOTMOUNTED",
    "ECGROUPNOTOWNER",
    "ECGROUPMULTIMOUNTED",
    "ECGROUPNOTALLOWED",
    "ECGMAXVALUESEXCEEDED",
    "ECGCONTROLLEREXISTS",
    "ECGVALUEEXISTS",
    "ECGINVAL",
    "ECGCONTROLLERCREATEFAILED",
    "ECGFAIL",
    "ECGROUPNOTINITIALIZED",
    "ECGROUPVALUENOTEXIST",
    "ECGOTHER",
    "ECGROUPNOTEQUAL",
    "ECGCONTROLLERNOTEQUAL",
    "ECGROUPPARSEFAIL",
    "ECGROUPNORULES",
    "ECGMOUNTFAIL",
    "(50022)",
    "ECGEOF",
    "ECGCONFIGPARSEFAIL",
    "ECGNAMESPACEPATHS",
    "ECGNAMESPACECONTROLLER",
    "ECGMOUNTNAMESPACE",
    "ECGROUPUNSUPP",
    "ECGCANTSETVALUE",
    "ECGNONEMPTY",
};

static const char *ecg_name(int code)
{
        static char buf[32];

        if (code == 0)
                return "OK";
        if (code >= ECGROUPNOTCOMPILED &&
            code - ECGROUPNOTCOMPILED < (int)(sizeof(ecg_names) / sizeof(ecg_names[0])))
                return ecg_names[code - ECGROUPNOTCOMPILED];
        snprintf(buf, sizeof(buf), "(%d)", code);
        return buf;
}

static const char *errno_name(int e)
{
        const char *name = e ? strerrorname_np(e) : NULL;

        return name ? name : e ? "E?" : "0";
}

/* One line per libcgroup call: the code, the errno it keeps, and its message. */
static void report(const char *op, int ret)
{
        printf("%s: %s last_errno=%s text=\"%s\"\n", op, ecg_name(ret),
               errno_name(cgroup_get_last_errno()), ret ? cgroup_strerror(ret) : "");
        fflush(stdout);
}

static void report_errno(const char *op, int error, const char *what)
{
        printf("%s: %s (%s)%s%s\n", op, error ? errno_name(error) : "OK",
               error ? strerror(error) : "", what ? " at " : "", what ? what : "");
        fflush(stdout);
}

/* The fds open at start (inherited from the caller): not libcgroup's doing. */
static bool inherited_fd[1024];

static void note_inherited_fds(void)
{
        for (int fd = 0; fd < 1024; fd++)
                inherited_fd[fd] = fcntl(fd, F_GETFD) >= 0;
}

/* What the process holds open that it did not inherit: libcgroup must close what it opens. */
static void report_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int n = 0;

        if (!d)
                return;
        printf("fds:");
        while ((de = readdir(d))) {
                char path[64], target[512];
                ssize_t len;
                int fd;

                if (de->d_name[0] == '.')
                        continue;
                fd = atoi(de->d_name);
                if (fd <= 2 || fd == dirfd(d) || (fd < 1024 && inherited_fd[fd]))
                        continue;
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                len = readlink(path, target, sizeof(target) - 1);
                target[len > 0 ? len : 0] = '\0';
                printf(" %d -> %s (%s)", fd, target,
                       fcntl(fd, F_GETFD) & FD_CLOEXEC ? "cloexec" : "inherited by children");
                n++;
        }
        closedir(d);
        printf("%s\n", n ? "" : " none");
}

static double now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
        qsort(v, n, sizeof(*v), compare_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct value {
        char controller[64];
        const char *file;
        const char *value;
};

/* FILE=VALUE arguments; returns the count or -1. */
static int parse_values(int argc, char **argv, struct value *v)
{
        int n = 0;

        for (int i = 0; i < argc; i++) {
                char *eq = strchr(argv[i], '='), *dot;

                if (!eq || n == VALUES_MAX) {
                        fprintf(stderr, "libcgroup-eval: '%s' is not FILE=VALUE\n", argv[i]);
                        return -1;
                }
                *eq = '\0';
                v[n].file = argv[i];
                v[n].value = eq + 1;
                dot = strchr(argv[i], '.');
                snprintf(v[n].controller, sizeof(v[n].controller), "%.*s",
                         (int)(dot ? dot - argv[i] : (long)strlen(argv[i])), argv[i]);
                n++;
        }
        return n;
}

static struct cgroup_controller *controller_of(struct cgroup *cg, const char *name)
{
        struct cgroup_controller *c = cgroup_get_controller(cg, name);

        return c ? c : cgroup_add_controller(cg, name);
}

/* A struct cgroup with the given controllers (-c) and values; NULL on failure. */
static struct cgroup *build(const char *name, char **controllers, int n_controllers,
                            const struct value *v, int n)
{
        struct cgroup *cg = cgroup_new_cgroup(name);

        if (!cg)
                return NULL;
        for (int i = 0; i < n_controllers; i++)
                if (!controller_of(cg, controllers[i]))
                        goto fail;
        for (int i = 0; i < n; i++) {
                struct cgroup_controller *c = controller_of(cg, v[i].controller);
                if (!c || cgroup_add_value_string(c, v[i].file, v[i].value) != 0)
                        goto fail;
        }
        return cg;
fail:
        fprintf(stderr, "libcgroup-eval: cannot build the struct cgroup for %s\n", name);
        cgroup_free(&cg);
        return NULL;
}

/* Leading "-c CTL" and "-f FLAGS" options of a subcommand; returns the index after them. */
static int parse_options(int argc, char **argv, int start, char **controllers, int *n_controllers,
                         const char **flags)
{
        int i = start;

        while (i + 1 < argc && (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "-f") == 0)) {
                if (argv[i][1] == 'c' && *n_controllers < VALUES_MAX)
                        controllers[(*n_controllers)++] = argv[i + 1];
                else if (argv[i][1] == 'f' && flags)
                        *flags = argv[i + 1];
                i += 2;
        }
        return i;
}

static int init_or_report(void)
{
        int r = cgroup_init();

        if (r != 0)
                report("init", r);
        return r;
}

static int cmd_init(void)
{
        struct cgroup_mount_point info;
        void *handle = NULL;
        double t0 = now_us();
        int r = cgroup_init();

        report("init", r);
        printf("init-time-us: %.0f\n", now_us() - t0);
        if (r != 0)
                return 0;
        for (r = cgroup_get_controller_begin(&handle, &info); r == 0;
             r = cgroup_get_controller_next(&handle, &info))
                printf("mount: %s %s\n", info.name, info.path);
        cgroup_get_controller_end(&handle);
        return 0;
}

static int cmd_create(int argc, char **argv)
{
        char *controllers[VALUES_MAX];
        struct value v[VALUES_MAX];
        struct cgroup *cg;
        int n_controllers = 0, n, i, r;

        if (argc < 3)
                return 2;
        i = parse_options(argc, argv, 3, controllers, &n_controllers, NULL);
        n = parse_values(argc - i, argv + i, v);
        if (n < 0)
                return 2;
        if (init_or_report() != 0)
                return 0;
        cg = build(argv[2], controllers, n_controllers, v, n);
        if (!cg)
                return 2;
        r = cgroup_create_cgroup(cg, 1);
        report("create", r);
        cgroup_free(&cg);
        return 0;
}

static int cmd_set(int argc, char **argv)
{
        struct value v[VALUES_MAX];
        struct cgroup *cg;
        int n, r;

        if (argc < 4)
                return 2;
        n = parse_values(argc - 3, argv + 3, v);
        if (n < 0)
                return 2;
        if (init_or_report() != 0)
                return 0;
        cg = build(argv[2], NULL, 0, v, n);
        if (!cg)
                return 2;
        r = cgroup_modify_cgroup(cg);
        report("set", r);
        cgroup_free(&cg);
        return 0;
}

static int cmd_get(int argc, char **argv)
{
        struct cgroup *cg;
        int r;

        if (argc < 4)
                return 2;
        if (init_or_report() != 0)
                return 0;
        cg = cgroup_new_cgroup(argv[2]);
        if (!cg)
                return 2;
        r = cgroup_get_cgroup(cg);
        report("get", r);
        for (int i = 3; r == 0 && i < argc; i++) {
                char controller[64], *value = NULL;
                const char *dot = strchr(argv[i], '.');
                struct cgroup_controller *c;
                int g;

                snprintf(controller, sizeof(controller), "%.*s",
                         (int)(dot ? dot - argv[i] : (long)strlen(argv[i])), argv[i]);
                c = cgroup_get_controller(cg, controller);
                if (!c) {
                        printf("value: %s: no controller %s in the struct\n", argv[i], controller);
                        continue;
                }
                g = cgroup_get_value_string(c, argv[i], &value);
                if (g == 0)
                        printf("value: %s=%s\n", argv[i], value);
                else
                        printf("value: %s: %s\n", argv[i], ecg_name(g));
                free(value);
        }
        cgroup_free(&cg);
        return 0;
}

static int cmd_attach(int argc, char **argv)
{
        char *controllers[VALUES_MAX];
        struct cgroup *cg;
        int n_controllers = 0, r, pid;

        if (argc < 4)
                return 2;
        pid = atoi(argv[3]);
        parse_options(argc, argv, 4, controllers, &n_controllers, NULL);
        if (init_or_report() != 0)
                return 0;
        cg = build(argv[2], controllers, n_controllers, NULL, 0);
        if (!cg)
                return 2;
        r = cgroup_attach_task_pid(cg, pid);
        report("attach", r);
        cgroup_free(&cg);
        return 0;
}

static int delete_flags(const char *s)
{
        if (!s || strcmp(s, "0") == 0)
                return 0;
        if (strcmp(s, "ignore-migration") == 0)
                return CGFLAG_DELETE_IGNORE_MIGRATION;
        if (strcmp(s, "recursive") == 0)
                return CGFLAG_DELETE_RECURSIVE;
        if (strcmp(s, "empty-only") == 0)
                return CGFLAG_DELETE_EMPTY_ONLY;
        return -1;
}

static int cmd_delete(int argc, char **argv)
{
        char *controllers[VALUES_MAX];
        const char *flags = NULL;
        struct cgroup *cg;
        int n_controllers = 0, r, f;

        if (argc < 3)
                return 2;
        parse_options(argc, argv, 3, controllers, &n_controllers, &flags);
        f = delete_flags(flags);
        if (f < 0)
                return 2;
        if (init_or_report() != 0)
                return 0;
        cg = build(argv[2], controllers, n_controllers, NULL, 0);
        if (!cg)
                return 2;
        r = cgroup_delete_cgroup_ext(cg, f);
        report("delete", r);
        cgroup_free(&cg);
        return 0;
}

/* ---- the direct way, as shim/cgroup.c does it ---- */

static int write_at(int dirfd, const char *file, const char *value)
{
        int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        ssize_t w;
        int e;

        if (fd < 0)
                return -errno;
        w = write(fd, value, strlen(value));
        e = w < 0 ? -errno : 0;
        close(fd);
        return e;
}

static ssize_t read_at(int dirfd, const char *file, char *buf, size_t size)
{
        int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0) {
                n = -errno;
                close(fd);
                return n;
        }
        close(fd);
        buf[n] = '\0';
        if (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        return n;
}

/* Is controller c listed in the space-separated list? */
static bool listed(const char *list, const char *c)
{
        size_t len = strlen(c);

        for (const char *p = list; (p = strstr(p, c)); p += len)
                if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
                        return true;
        return false;
}

/*
 * Create PARENT/NAME below the mount with the values: walk the parent reading (and, only
 * where a controller is missing, writing) cgroup.subtree_control, mkdirat the leaf, write
 * and optionally read back each value. Returns 0 or -errno; *where names the failing step.
 */
static int direct_create(const char *parent, const char *name, const struct value *v, int n,
                         bool readback, int *ret_leaf_parent_fd, const char **where)
{
        char buf[512], path[256];
        int fd, next, leaf, r = 0;
        char *save = NULL, *comp;

        *where = "open " CG_ROOT;
        fd = open(CG_ROOT, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        snprintf(path, sizeof(path), "%s", parent);
        comp = strtok_r(path, "/", &save);
        for (;;) {
                char missing[256] = "";

                *where = "read cgroup.subtree_control";
                r = (int)read_at(fd, "cgroup.subtree_control", buf, sizeof(buf));
                if (r < 0)
                        goto out;
                r = 0;
                for (int i = 0; i < n; i++) {
                        char word[80];
                        snprintf(word, sizeof(word), "+%s", v[i].controller);
                        if (!listed(buf, v[i].controller) && !strstr(missing, word))
                                snprintf(missing + strlen(missing),
                                         sizeof(missing) - strlen(missing), "%s%s",
                                         missing[0] ? " " : "", word);
                }
                if (missing[0]) {
                        *where = "write cgroup.subtree_control";
                        r = write_at(fd, "cgroup.subtree_control", missing);
                        if (r < 0)
                                goto out;
                }
                if (!comp)
                        break;
                *where = "mkdir parent";
                if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
                        r = -errno;
                        goto out;
                }
                next = openat(fd, comp, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (next < 0) {
                        r = -errno;
                        goto out;
                }
                close(fd);
                fd = next;
                comp = strtok_r(NULL, "/", &save);
        }
        *where = "mkdir leaf";
        if (mkdirat(fd, name, 0755) < 0) {
                r = -errno;
                goto out;
        }
        leaf = openat(fd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (leaf < 0) {
                r = -errno;
                goto out;
        }
        for (int i = 0; i < n && r == 0; i++) {
                *where = v[i].file;
                r = write_at(leaf, v[i].file, v[i].value);
                if (r == 0 && readback && read_at(leaf, v[i].file, buf, sizeof(buf)) < 0)
                        r = -errno;
        }
        close(leaf);
        if (r < 0)
                unlinkat(fd, name, AT_REMOVEDIR);
out:
        if (r == 0 && ret_leaf_parent_fd) {
                *ret_leaf_parent_fd = fd;
                return 0;
        }
        close(fd);
        return r;
}

static int cmd_direct_create(int argc, char **argv)
{
        struct value v[VALUES_MAX];
        const char *where = NULL;
        int n, r;

        if (argc < 4)
                return 2;
        n = parse_values(argc - 4, argv + 4, v);
        if (n < 0)
                return 2;
        r = direct_create(argv[2], argv[3], v, n, true, NULL, &where);
        report_errno("direct-create", -r, r ? where : NULL);
        return 0;
}

/* ---- init mode, in the root of a cgroup namespace (90-libcgroup.sh sets it up) ---- */

static void print_self_cgroup(const char *label)
{
        char buf[256] = "";
        FILE *f = fopen("/proc/self/cgroup", "re");

        if (f) {
                if (!fgets(buf, sizeof(buf), f))
                        buf[0] = '\0';
                fclose(f);
        }
        buf[strcspn(buf, "\n")] = '\0';
        printf("%s: %s\n", label, buf);
}

static void print_file(const char *label, const char *path)
{
        char buf[256] = "";
        FILE *f = fopen(path, "re");

        if (f) {
                if (!fgets(buf, sizeof(buf), f))
                        buf[0] = '\0';
                fclose(f);
        }
        buf[strcspn(buf, "\n")] = '\0';
        printf("%s: %s\n", label, f ? buf : "(missing)");
}

static void attach_via_api(const char *label, char **controllers, int n)
{
        char line[80];
        struct cgroup *cg = build("init", controllers, n, NULL, 0);
        int r = cg ? cgroup_attach_task_pid(cg, getpid()) : ECGFAIL;

        report(label, r);
        cgroup_free(&cg);
        snprintf(line, sizeof(line), "after-%s", label);
        print_self_cgroup(line);
}

static void attach_direct(void)
{
        char pid[32];
        int fd = open(CG_ROOT "/init", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        int r;

        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        r = fd < 0 ? -errno : write_at(fd, "cgroup.procs", pid);
        if (fd >= 0)
                close(fd);
        report_errno("direct-attach", -r, r ? "init/cgroup.procs" : NULL);
        print_self_cgroup("after-direct-attach");
}

/*
 * Init mode's steps with the API. "api": everything through libcgroup, as far as it goes;
 * "direct-first": the leaf is made and the process moved directly, then the API takes over.
 */
static int cmd_bootstrap(int argc, char **argv)
{
        struct value limits[2] = {
            {"cpu", "cpu.max", "50000 100000"},
            {"memory", "memory.max", "268435456"},
        };
        struct value enable = {"cgroup", "cgroup.subtree_control", "+cpu +memory"};
        char *cpu[] = {"cpu"}, *pseudo[] = {"cgroup"};
        bool api;
        struct cgroup *cg;
        int r;

        if (argc != 3 || (strcmp(argv[2], "api") != 0 && strcmp(argv[2], "direct-first") != 0))
                return 2;
        api = strcmp(argv[2], "api") == 0;
        if (init_or_report() != 0)
                return 0;
        print_self_cgroup("start");

        if (api) {
                /* the leaf for the namespace's own processes */
                cg = build("init", NULL, 0, NULL, 0);
                r = cgroup_create_cgroup(cg, 1);
                report("create-init-no-controller", r);
                cgroup_free(&cg);
                print_file("init-type", CG_ROOT "/init/cgroup.type");

                cg = build("init", cpu, 1, NULL, 0);
                r = cgroup_create_cgroup(cg, 1);
                report("create-init-cpu", r);
                cgroup_free(&cg);
                print_file("init-type", CG_ROOT "/init/cgroup.type");
                print_file("root-subtree_control", CG_ROOT "/cgroup.subtree_control");
                attach_via_api("attach-cpu", cpu, 1);
        } else {
                if (mkdir(CG_ROOT "/init", 0755) < 0)
                        report_errno("mkdir-init", errno, CG_ROOT "/init");
                print_file("init-type", CG_ROOT "/init/cgroup.type");
                attach_via_api("attach-no-controller", NULL, 0);
                attach_via_api("attach-cpu", cpu, 1);
                attach_via_api("attach-cgroup-pseudo-controller", pseudo, 1);
        }
        attach_direct();

        /* controllers in the namespace root, through the "cgroup" pseudo-controller */
        cg = build("/", NULL, 0, &enable, 1);
        r = cgroup_modify_cgroup(cg);
        report("enable-root-controllers", r);
        cgroup_free(&cg);
        print_file("root-subtree_control", CG_ROOT "/cgroup.subtree_control");

        /* the executor's leaf with its limits */
        cg = build("executor", NULL, 0, limits, 2);
        r = cgroup_create_cgroup(cg, 1);
        report("create-executor", r);
        cgroup_free(&cg);
        print_file("executor-cpu.max", CG_ROOT "/executor/cpu.max");
        print_file("executor-memory.max", CG_ROOT "/executor/memory.max");
        return 0;
}

/* ---- cost ---- */

enum { V_DIRECT, V_DIRECT_READBACK, V_LIBCGROUP, V_LIBCGROUP_READBACK, V_INIT, V_COUNT };
static const char *const variant_names[V_COUNT] = {
    "direct (mkdirat, openat+write per value, rmdir)",
    "direct + read-back (what sparkshim does)",
    "libcgroup create + delete",
    "libcgroup create + cgroup_get_cgroup read-back + delete",
    "cgroup_init alone",
};

static int cmd_bench(int argc, char **argv)
{
        static const struct value plan[] = {
            {"cpu", "cpu.max", "200000 100000"},
            {"cpu", "cpu.weight", "100"},
            {"memory", "memory.max", "939524096"},
            {"memory", "memory.low", "939524096"},
        };
        const int n = (int)(sizeof(plan) / sizeof(plan[0]));
        unsigned rounds;
        double *t[V_COUNT], base;
        char name[300];
        const char *where;

        if (argc != 4 || (rounds = (unsigned)atoi(argv[2])) == 0)
                return 2;
        for (int i = 0; i < V_COUNT; i++) {
                t[i] = calloc(rounds, sizeof(double));
                if (!t[i])
                        return 2;
        }
        if (init_or_report() != 0)
                return 1;
        snprintf(name, sizeof(name), "%s/eval", argv[3]);

        /* one warm-up round each, then interleaved rounds */
        for (unsigned round = 0; round <= rounds; round++) {
                for (int var = 0; var < V_COUNT; var++) {
                        double t0 = now_us();
                        int r = 0, parent_fd = -1;

                        if (var == V_DIRECT || var == V_DIRECT_READBACK) {
                                r = direct_create(argv[3], "eval", plan, n,
                                                  var == V_DIRECT_READBACK, &parent_fd, &where);
                                if (r == 0) {
                                        if (unlinkat(parent_fd, "eval", AT_REMOVEDIR) < 0)
                                                r = -errno;
                                        close(parent_fd);
                                }
                                if (r < 0) {
                                        printf("bench: round %u, %s:\n", round, variant_names[var]);
                                        report_errno("bench-direct", -r, where);
                                        return 1;
                                }
                        } else if (var == V_INIT) {
                                r = cgroup_init();
                                if (r != 0) {
                                        report("bench-init", r);
                                        return 1;
                                }
                        } else {
                                struct cgroup *cg = build(name, NULL, 0, plan, n);
                                if (!cg)
                                        return 1;
                                r = cgroup_create_cgroup(cg, 1);
                                if (r == 0 && var == V_LIBCGROUP_READBACK) {
                                        struct cgroup *got = cgroup_new_cgroup(name);
                                        r = got ? cgroup_get_cgroup(got) : ECGFAIL;
                                        for (int i = 0; r == 0 && i < n; i++) {
                                                char *value = NULL;
                                                struct cgroup_controller *c =
                                                    cgroup_get_controller(got, plan[i].controller);
                                                r = c ? cgroup_get_value_string(c, plan[i].file,
                                                                                &value)
                                                      : ECGFAIL;
                                                free(value);
                                        }
                                        cgroup_free(&got);
                                }
                                if (r == 0)
                                        r = cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_EMPTY_ONLY);
                                cgroup_free(&cg);
                                if (r != 0) {
                                        printf("bench: round %u, %s:\n", round, variant_names[var]);
                                        report("bench-libcgroup", r);
                                        return 1;
                                }
                        }
                        if (round > 0)
                                t[var][round - 1] = now_us() - t0;
                }
        }
        base = median(t[V_DIRECT_READBACK], rounds);
        printf("bench: %u rounds, interleaved; 4 values (cpu.max, cpu.weight, memory.max, "
               "memory.low) below %s; median microseconds, ratio to direct + read-back\n",
               rounds, argv[3]);
        for (int var = 0; var < V_COUNT; var++) {
                double m = var == V_DIRECT_READBACK ? base : median(t[var], rounds);
                printf("bench: %-58s %8.0f us %6.2fx\n", variant_names[var], m, m / base);
        }
        return 0;
}

static void usage(void)
{
        fputs("usage: libcgroup-eval noop | init | create NAME [-c CTL]... [FILE=VALUE]... |\n"
              "       set NAME FILE=VALUE... | get NAME FILE... | attach NAME PID [-c CTL]... |\n"
              "       delete NAME [-f FLAGS] [-c CTL]... | direct-create PARENT NAME FILE=VALUE... "
              "|\n"
              "       bootstrap api|direct-first | bench ROUNDS PARENT\n",
              stderr);
}

int main(int argc, char **argv)
{
        int r = 2;

        if (argc < 2) {
                usage();
                return 2;
        }
        note_inherited_fds();
        if (strcmp(argv[1], "noop") == 0)
                r = 0; /* the process's own cost, for comparison with init */
        else if (strcmp(argv[1], "init") == 0)
                r = cmd_init();
        else if (strcmp(argv[1], "create") == 0)
                r = cmd_create(argc, argv);
        else if (strcmp(argv[1], "set") == 0)
                r = cmd_set(argc, argv);
        else if (strcmp(argv[1], "get") == 0)
                r = cmd_get(argc, argv);
        else if (strcmp(argv[1], "attach") == 0)
                r = cmd_attach(argc, argv);
        else if (strcmp(argv[1], "delete") == 0)
                r = cmd_delete(argc, argv);
        else if (strcmp(argv[1], "direct-create") == 0)
                r = cmd_direct_create(argc, argv);
        else if (strcmp(argv[1], "bootstrap") == 0)
                r = cmd_bootstrap(argc, argv);
        else if (strcmp(argv[1], "bench") == 0)
                r = cmd_bench(argc, argv);
        if (r == 2) {
                usage();
                return 2;
        }
        report_fds();
        return r;
}
