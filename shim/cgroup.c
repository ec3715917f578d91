/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup v2 backend. Every file is opened relative to a directory fd with O_NOFOLLOW and
 * O_CLOEXEC, so a path swapped under us cannot redirect a write and no fd reaches the
 * executor. Why this is done directly and not through libcgroup: docs/libcgroup.md.
 */
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <linux/magic.h>

#include "shim.h"
#include "util.h"

#define CONTROLLERS_MAX 8
/* cgroup.procs holds at most pid_max (2^22) pids of 8 bytes: read it whole, never cut */
#define CGROUP_PROCS_MAX (64u << 20)

const char *shim_cgroup_layout_name(enum shim_cgroup_layout l)
{
        switch (l) {
        case SHIM_CGROUP_UNIFIED:
                return "unified";
        case SHIM_CGROUP_HYBRID:
                return "hybrid";
        case SHIM_CGROUP_LEGACY:
                return "legacy";
        default:
                return "none";
        }
}

/* The file system magic of a directory, opened without following a symlink at its end. */
static int dir_magic(const char *path, long *ret)
{
        _cleanup_close_ int fd = -1;
        struct statfs fs;

        fd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fstatfs(fd, &fs) < 0)
                return -errno;
        *ret = (long)fs.f_type;
        return 0;
}

int shim_cgroup_detect(const char *root, struct shim_cgroup_host *ret)
{
        struct shim_cgroup_host h = {.layout = SHIM_CGROUP_NONE};
        char unified[sizeof(h.mount)];
        long magic = 0; /* -O3 (the release build) cannot see dir_magic() set it */
        int r;

        r = dir_magic(root, &magic);
        if (r < 0)
                return r;
        if (magic == CGROUP2_SUPER_MAGIC) {
                h.layout = SHIM_CGROUP_UNIFIED;
                snprintf(h.mount, sizeof(h.mount), "%s", root);
        } else if (magic == TMPFS_MAGIC) {
                snprintf(unified, sizeof(unified), "%s/unified", root);
                if (dir_magic(unified, &magic) == 0 && magic == CGROUP2_SUPER_MAGIC) {
                        h.layout = SHIM_CGROUP_HYBRID;
                        snprintf(h.mount, sizeof(h.mount), "%s", unified);
                } else {
                        h.layout = SHIM_CGROUP_LEGACY;
                }
        }
        *ret = h;
        return 0;
}

/*
 * Every directory the shim writes in must be on cgroup2: it was opened with O_NOFOLLOW,
 * and this says that no symlink, bind mount or other file system stands in for it.
 */
static int check_cgroup2(int fd, const char *path, struct util_error *err)
{
        struct statfs fs;

        if (fstatfs(fd, &fs) < 0)
                return util_error_set(err, errno, "cannot inspect %s: %s", path, strerror(errno));
        if (fs.f_type != CGROUP2_SUPER_MAGIC)
                return util_error_set(err, EMEDIUMTYPE, "%s is not on a cgroup2 file system", path);
        return 0;
}

bool shim_cgroup_name_valid(const char *name)
{
        size_t len = strlen(name);

        if (len == 0 || len > 100 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return false;
        for (const char *c = name; *c; c++)
                if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.' && *c != '-')
                        return false;
        return true;
}

void shim_cgroup_escape_name(const char *name, char *buf, size_t size)
{
        size_t prefix = strspn(name, "abcdefghijklmnopqrstuvwxyz_");

        /*
         * As systemd escapes unit cgroups: a leading '_' or '.', or a lowercase word and a
         * '.' (cgroup.procs, memory.max, io.pressure, and whatever controller comes next),
         * gets a '_' in front, so no name is ever a kernel interface file.
         */
        if (name[0] == '_' || name[0] == '.' || (prefix > 0 && name[prefix] == '.'))
                snprintf(buf, size, "_%s", name);
        else
                snprintf(buf, size, "%s", name);
}

void shim_cgroup_needed_controllers(const struct policy_write *w, size_t n, char *buf, size_t size)
{
        size_t len = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                bool seen = false;
                for (size_t j = 0; j < i; j++)
                        seen |= strcmp(w[i].controller, w[j].controller) == 0;
                if (seen)
                        continue;
                len += (size_t)snprintf(buf + len, size - len, "%s+%s", len ? " " : "",
                                        w[i].controller);
                if (len >= size) {
                        buf[size - 1] = '\0';
                        return;
                }
        }
}

/* Is word (without '+') present in a space-separated list? */
static bool word_in(const char *list, const char *word, size_t wlen)
{
        for (const char *p = list; *p;) {
                size_t l = strcspn(p, " \n");
                if (l == wlen && strncmp(p, word, wlen) == 0)
                        return true;
                p += l;
                p += strspn(p, " \n");
        }
        return false;
}

/* The words of needed ("+cpu +memory") that are absent from the file's list. */
static int missing_from(int dirfd, const char *file, const char *needed, char *missing, size_t size)
{
        char have[512];
        ssize_t r;
        size_t len = 0;

        r = util_read_at(dirfd, file, have, sizeof(have));
        if (r < 0)
                return (int)r;
        missing[0] = '\0';
        for (const char *p = needed; *p;) {
                size_t l = strcspn(p, " ");
                if (*p == '+' && !word_in(have, p + 1, l - 1))
                        len += (size_t)snprintf(missing + len, size > len ? size - len : 0,
                                                "%s%.*s", len ? " " : "", (int)l, p);
                p += l;
                p += strspn(p, " ");
        }
        return len > 0;
}

static int enable_controllers(int dirfd, const char *path, const char *needed,
                              struct util_error *err)
{
        char missing[256];
        int r;

        r = missing_from(dirfd, "cgroup.subtree_control", needed, missing, sizeof(missing));
        if (r < 0)
                return util_error_set(err, r, "cannot read %s/cgroup.subtree_control: %s", path,
                                      strerror(-r));
        if (r == 0)
                return 0;
        r = util_write_at(dirfd, "cgroup.subtree_control", missing);
        if (r == -EBUSY)
                return util_error_set(err, r,
                                      "cannot write '%s' to %s/cgroup.subtree_control: %s (the "
                                      "cgroup has processes of its own; choose a parent without "
                                      "processes)",
                                      missing, path, strerror(-r));
        if (r < 0)
                return util_error_set(err, r, "cannot write '%s' to %s/cgroup.subtree_control: %s",
                                      missing, path, strerror(-r));
        return 0;
}

/* Compare a read-back value with what was written, as the kernel stores it. */
static bool same_value(const char *file, const char *wrote, const char *got)
{
        uint64_t a, b;

        if (strcmp(wrote, got) == 0)
                return true;
        /* memory.* sizes are kept in pages: the kernel rounds down */
        if (strncmp(file, "memory.", 7) == 0 && util_parse_u64(wrote, &a) == 0 &&
            util_parse_u64(got, &b) == 0)
                return b == a / POLICY_PAGE_SIZE * POLICY_PAGE_SIZE;
        return false;
}

static int apply_writes(int leaf_fd, const char *path, const struct policy_write *w, size_t n,
                        struct util_error *err)
{
        char got[128];
        ssize_t len;
        int r;

        for (size_t i = 0; i < n; i++) {
                r = util_write_at(leaf_fd, w[i].file, w[i].value);
                if (r < 0)
                        return util_error_set(err, r, "cannot write '%s' to %s/%s: %s", w[i].value,
                                              path, w[i].file, strerror(-r));
                len = util_read_at(leaf_fd, w[i].file, got, sizeof(got));
                if (len < 0)
                        return util_error_set(err, (int)len, "cannot read back %s/%s: %s", path,
                                              w[i].file, strerror((int)-len));
                if (!same_value(w[i].file, w[i].value, got))
                        return util_error_set(err, EIO, "%s/%s reads back '%s' after writing '%s'",
                                              path, w[i].file, got, w[i].value);
        }
        return 0;
}

static int check_available(int mount_fd, const char *mount, const char *needed,
                           struct util_error *err)
{
        char missing[256];
        int r;

        r = missing_from(mount_fd, "cgroup.controllers", needed, missing, sizeof(missing));
        if (r < 0)
                return util_error_set(err, r, "cannot read %s/cgroup.controllers: %s", mount,
                                      strerror(-r));
        if (r > 0)
                return util_error_set(err, EOPNOTSUPP,
                                      "controllers '%s' are not available in %s/cgroup.controllers "
                                      "(bound to cgroup v1, or not delegated)",
                                      missing, mount);
        return 0;
}

/*
 * Who created a leaf: the trusted.* extended attribute below holds "<pid> <start time>" of
 * the shim that made it. Only root can set or read trusted.* attributes, so a user cannot
 * make a cgroup look like a dead shim's leftover. A leaf without it is never removed.
 */
#define OWNER_XATTR "trusted.sparkshim.owner"

static int owner_mark(int leaf_fd)
{
        char value[64];
        uint64_t start;
        int r;

        r = util_process_start_time(getpid(), &start);
        if (r < 0)
                return r;
        snprintf(value, sizeof(value), "%d %" PRIu64, (int)getpid(), start);
        return fsetxattr(leaf_fd, OWNER_XATTR, value, strlen(value), XATTR_CREATE) < 0 ? -errno : 0;
}

enum owner {
        OWNER_NONE,  /* not made by sparkshim (or by one that could not mark it) */
        OWNER_ALIVE, /* its shim still runs */
        OWNER_DEAD,  /* a leftover of a shim that is gone */
};

static enum owner leaf_owner(int leaf_fd, pid_t *ret_pid)
{
        char value[64];
        uint64_t start, now;
        ssize_t n;
        int pid;

        n = fgetxattr(leaf_fd, OWNER_XATTR, value, sizeof(value) - 1);
        if (n <= 0)
                return OWNER_NONE;
        value[n] = '\0';
        if (sscanf(value, "%d %" SCNu64, &pid, &start) != 2 || pid <= 0)
                return OWNER_NONE;
        *ret_pid = pid;
        /* the pid alone could have been reused: the start time tells */
        if (util_process_start_time(pid, &now) == 0 && now == start)
                return OWNER_ALIVE;
        return OWNER_DEAD;
}

/* Remove a dead shim's leaf: kill what it left running, wait a little, rmdir. */
static int remove_leftover(int parent_fd, const char *name, int leaf_fd, int wait_ms)
{
        struct shim_cgroup old = SHIM_CGROUP_INIT;
        int r;

        old.leaf_fd = leaf_fd;
        for (int waited = 0;; waited += 20) {
                r = shim_cgroup_populated(&old);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (waited == 0)
                        shim_cgroup_kill(&old);
                if (waited >= wait_ms)
                        return -EBUSY;
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
                usleep(20000);
        }
        return unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

/* Leftovers of shims that were killed (their executors died with them): remove them. */
static void sweep_leftovers(int parent_fd, const char *parent_path)
{
        _cleanup_close_ int fd = -1;
        struct dirent *de;
        DIR *d;

        fd = openat(parent_fd, ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (fd < 0 || !(d = fdopendir(fd)))
                return;
        fd = -1; /* the DIR owns it */
        while ((de = readdir(d))) {
                _cleanup_close_ int leaf = -1;
                pid_t pid = 0;

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                leaf =
                    openat(dirfd(d), de->d_name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (leaf < 0 || leaf_owner(leaf, &pid) != OWNER_DEAD)
                        continue;
                /* no waiting here: a leftover still emptying goes at the next start */
                if (remove_leftover(dirfd(d), de->d_name, leaf, 0) == 0)
                        log_info("removed %s/%s, left by sparkshim pid %d", parent_path, de->d_name,
                                 (int)pid);
        }
        closedir(d);
}

enum { LEAF_TAKEN = 1 };

/*
 * mkdir one leaf: 0 when made (a dead shim's leftover of that name removed first),
 * LEAF_TAKEN when a live shim uses it or sparkshim did not make it (why says which, and it
 * is left alone), else -errno with err set.
 */
static int try_leaf(int parent_fd, const char *parent_path, const char *name, char *why,
                    size_t size, struct util_error *err)
{
        _cleanup_close_ int old = -1;
        pid_t pid = 0;
        int r;

        if (mkdirat(parent_fd, name, 0755) == 0)
                return 0;
        r = -errno;
        if (r != -EEXIST)
                return util_error_set(err, r, "cannot create cgroup %s/%s: %s", parent_path, name,
                                      strerror(-r));
        old = openat(parent_fd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        switch (old < 0 ? OWNER_NONE : leaf_owner(old, &pid)) {
        case OWNER_ALIVE:
                snprintf(why, size,
                         "is in use by sparkshim pid %d (another executor with the same name)",
                         (int)pid);
                return LEAF_TAKEN;
        case OWNER_NONE:
                snprintf(why, size,
                         "already exists and was not created by sparkshim; it is left alone");
                return LEAF_TAKEN;
        case OWNER_DEAD:
                break;
        }
        r = remove_leftover(parent_fd, name, old, 1000);
        if (r < 0)
                return util_error_set(
                    err, r, "cgroup %s/%s, left by sparkshim pid %d, cannot be removed: %s",
                    parent_path, name, (int)pid, strerror(-r));
        log_info("removed %s/%s, left by sparkshim pid %d", parent_path, name, (int)pid);
        if (mkdirat(parent_fd, name, 0755) < 0)
                return util_error_set(err, errno, "cannot create cgroup %s/%s: %s", parent_path,
                                      name, strerror(errno));
        return 0;
}

/* NAME-XXXXXXXX (8 random hex digits), NAME cut so that it stays a name of 100 at most */
static int fresh_name(const char *name, char *buf, size_t size, struct util_error *err)
{
        uint32_t x;

        if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x))
                return util_error_set(err, errno, "getrandom: %s", strerror(errno));
        size_t keep = strlen(name) < 100 - 9 ? strlen(name) : 100 - 9;

        snprintf(buf, size, "%.*s-%08" PRIx32, (int)keep, name, x);
        return 0;
}

/*
 * Create the executor's leaf below parent_fd and mark it ours; its name goes to ret_name.
 * One left by a dead shim is removed first. A leaf of that name that a live shim owns, or
 * that sparkshim did not make, is left alone: with rename_taken this executor gets a fresh
 * name of its own (said in a warning), so that nobody can take an executor's name to stop
 * it or to run unconstrained; without it the start fails. All under a lock on the parent,
 * so that two shims never both decide to remove or create the same leaf.
 */
static int make_leaf(int parent_fd, const char *parent_path, const char *name, bool rename_taken,
                     char *ret_name, size_t name_size, int *ret_fd, struct util_error *err)
{
        _cleanup_close_ int lock = -1, fd = -1;
        char why[128], chosen[POLICY_NAME_MAX];
        int r;

        /* an open file description of its own: closing it (on return) drops the lock */
        lock = openat(parent_fd, ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (lock < 0)
                return util_error_set(err, errno, "cannot open %s: %s", parent_path,
                                      strerror(errno));
        while (flock(lock, LOCK_EX) < 0)
                if (errno != EINTR)
                        return util_error_set(err, errno, "cannot lock %s: %s", parent_path,
                                              strerror(errno));
        sweep_leftovers(parent_fd, parent_path);

        snprintf(chosen, sizeof(chosen), "%s", name);
        r = try_leaf(parent_fd, parent_path, chosen, why, sizeof(why), err);
        if (r == LEAF_TAKEN && !rename_taken)
                return util_error_set(err, EEXIST, "cgroup %s/%s %s (choose another --name)",
                                      parent_path, name, why);
        for (unsigned tries = 0; r == LEAF_TAKEN && tries < 8; tries++) {
                char again[sizeof(why)];

                r = fresh_name(name, chosen, sizeof(chosen), err);
                if (r < 0)
                        return r;
                r = try_leaf(parent_fd, parent_path, chosen, again, sizeof(again), err);
        }
        if (r == LEAF_TAKEN)
                return util_error_set(err, EEXIST, "cgroup %s/%s %s, and no fresh name was free",
                                      parent_path, name, why);
        if (r < 0)
                return r;
        if (strcmp(chosen, name) != 0)
                log_warn("cgroup %s/%s %s: this executor's cgroup is %s/%s instead", parent_path,
                         name, why, parent_path, chosen);
        fd = openat(parent_fd, chosen, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                r = -errno;
                unlinkat(parent_fd, chosen, AT_REMOVEDIR);
                return util_error_set(err, r, "cannot open cgroup %s/%s: %s", parent_path, chosen,
                                      strerror(-r));
        }
        r = owner_mark(fd);
        if (r < 0)
                /* without the mark the leaf is only never removed by another shim */
                log_debug("cannot mark %s/%s as this shim's: %s", parent_path, chosen,
                          strerror(-r));
        snprintf(ret_name, name_size, "%s", chosen);
        *ret_fd = fd;
        fd = -1;
        return 0;
}

static void cgroup_close(struct shim_cgroup *cg)
{
        util_closep(&cg->leaf_fd);
        util_closep(&cg->parent_fd);
        util_closep(&cg->mount_fd);
        cg->leaf_fd = cg->parent_fd = cg->mount_fd = -1;
}

static int finish_leaf(struct shim_cgroup *cg, const char *parent_path, const char *name,
                       bool rename_taken, const struct policy_write *w, size_t n,
                       struct util_error *err)
{
        int r;

        r = make_leaf(cg->parent_fd, parent_path, name, rename_taken, cg->leaf_name,
                      sizeof(cg->leaf_name), &cg->leaf_fd, err);
        if (r < 0)
                return r;
        snprintf(cg->path, sizeof(cg->path), "%s/%s", parent_path, cg->leaf_name);
        r = apply_writes(cg->leaf_fd, cg->path, w, n, err);
        if (r < 0) {
                util_closep(&cg->leaf_fd);
                cg->leaf_fd = -1;
                unlinkat(cg->parent_fd, cg->leaf_name, AT_REMOVEDIR);
                return r;
        }
        return 0;
}

/* Open the mount root into cg and check it offers the controllers the writes need. */
static int open_mount(const struct shim_cgroup_host *host, const struct policy_write *w, size_t n,
                      struct shim_cgroup *cg, char *needed, size_t size, struct util_error *err)
{
        int r;

        shim_cgroup_needed_controllers(w, n, needed, size);
        snprintf(cg->mount, sizeof(cg->mount), "%s", host->mount);
        cg->mount_fd = open(host->mount, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (cg->mount_fd < 0)
                return util_error_set(err, errno, "cannot open %s: %s", host->mount,
                                      strerror(errno));
        r = check_cgroup2(cg->mount_fd, host->mount, err);
        if (r < 0)
                return r;
        return check_available(cg->mount_fd, host->mount, needed, err);
}

int shim_cgroup_setup_wrap(const struct shim_cgroup_host *host, const char *parent,
                           const char *name, const struct policy_write *w, size_t n,
                           struct shim_cgroup *ret, struct util_error *err)
{
        struct shim_cgroup cg = SHIM_CGROUP_INIT;
        char needed[128], path[sizeof(cg.path)];
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;
        int r;

        if (host->layout == SHIM_CGROUP_NONE || host->layout == SHIM_CGROUP_LEGACY ||
            !host->mount[0])
                return util_error_set(err, EOPNOTSUPP, "no cgroup v2 hierarchy (layout: %s)",
                                      shim_cgroup_layout_name(host->layout));
        if (!shim_cgroup_name_valid(name))
                return util_error_set(err, EINVAL,
                                      "--name: '%s' is not a valid cgroup name; allowed: 1-100 of "
                                      "[A-Za-z0-9_.-], not '.' or '..'",
                                      name);
        r = open_mount(host, w, n, &cg, needed, sizeof(needed), err);
        if (r < 0)
                goto fail;

        cg.parent_fd = fcntl(cg.mount_fd, F_DUPFD_CLOEXEC, 3);
        if (cg.parent_fd < 0) {
                r = util_error_set(err, errno, "dup: %s", strerror(errno));
                goto fail;
        }
        snprintf(path, sizeof(path), "%s", host->mount);
        copy = strdup(parent);
        if (!copy) {
                r = util_error_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        for (char *comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
                int next;

                if (!shim_cgroup_name_valid(comp)) {
                        r = util_error_set(err, EINVAL,
                                           "cgroup parent '%s': component '%s' is not allowed; "
                                           "allowed: [A-Za-z0-9_.-], not '.' or '..'",
                                           parent, comp);
                        goto fail;
                }
                r = enable_controllers(cg.parent_fd, path, needed, err);
                if (r < 0)
                        goto fail;
                if (mkdirat(cg.parent_fd, comp, 0755) < 0 && errno != EEXIST) {
                        r = util_error_set(err, errno, "cannot create cgroup %s/%s: %s", path, comp,
                                           strerror(errno));
                        goto fail;
                }
                next = openat(cg.parent_fd, comp, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (next < 0) {
                        r = util_error_set(err, errno, "cannot open cgroup %s/%s: %s", path, comp,
                                           strerror(errno));
                        goto fail;
                }
                close(cg.parent_fd);
                cg.parent_fd = next;
                strncat(path, "/", sizeof(path) - strlen(path) - 1);
                strncat(path, comp, sizeof(path) - strlen(path) - 1);
                r = check_cgroup2(cg.parent_fd, path, err);
                if (r < 0)
                        goto fail;
        }
        r = enable_controllers(cg.parent_fd, path, needed, err);
        if (r < 0)
                goto fail;
        r = finish_leaf(&cg, path, name, true, w, n, err);
        if (r < 0)
                goto fail;
        *ret = cg;
        return 0;
fail:
        cgroup_close(&cg);
        return r;
}

/* Call fn for each pid of a complete line ("123\n") of text; a last line without '\n' is not one.
 */
static int for_each_pid(char *text, int (*fn)(const char *pid, void *data), void *data)
{
        for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
                int r;

                *nl = '\0';
                r = fn(line, data);
                if (r < 0)
                        return r;
        }
        return 0;
}

struct evacuation {
        int init_fd;
        const char *mount;
        bool moved;
        struct util_error *err;
};

static int move_to_init(const char *line, void *data)
{
        struct evacuation *e = data;
        int r;

        /* pid 0: a process of another pid namespace shares our root */
        if (strcmp(line, "0") == 0)
                return util_error_set(e->err, EBUSY,
                                      "%s/cgroup.procs has a process from outside this pid "
                                      "namespace; init mode needs the container's cgroup to itself",
                                      e->mount);
        r = util_write_at(e->init_fd, "cgroup.procs", line);
        if (r < 0 && r != -ESRCH)
                return util_error_set(e->err, r, "cannot move pid %s into %s/init: %s", line,
                                      e->mount, strerror(-r));
        e->moved = true;
        return 0;
}

/* Move every process of the namespace root into <root>/init. */
static int evacuate_root(int mount_fd, int init_fd, const char *mount, struct util_error *err)
{
        for (int round = 0; round < 16; round++) {
                struct evacuation e = {.init_fd = init_fd, .mount = mount, .err = err};
                _cleanup_free_ char *procs = NULL;
                ssize_t len;
                int r;

                len = util_read_file_at(mount_fd, "cgroup.procs", CGROUP_PROCS_MAX, &procs);
                if (len < 0)
                        return util_error_set(err, (int)len, "cannot read %s/cgroup.procs: %s",
                                              mount, strerror((int)-len));
                r = for_each_pid(procs, move_to_init, &e);
                if (r < 0)
                        return r;
                if (!e.moved)
                        return 0;
        }
        return util_error_set(err, EBUSY, "processes keep appearing in %s/cgroup.procs", mount);
}

/* The initial cgroup namespace's inode (PROC_CGROUP_INIT_INO): the host's. */
#define CGROUP_NS_INIT_INO 0xEFFFFFFBu

/* The cgroup v2 path of this process ("0::PATH" in /proc/self/cgroup); -ENOENT without one. */
static int own_cgroup_path(char *buf, size_t size)
{
        char text[4096];
        ssize_t n;

        n = util_read_at(AT_FDCWD, "/proc/self/cgroup", text, sizeof(text));
        if (n < 0)
                return (int)n;
        for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                if (strncmp(line, "0::", 3) == 0) {
                        snprintf(buf, size, "%s", line + 3);
                        return 0;
                }
        }
        return -ENOENT;
}

/*
 * The root of the cgroup2 mount at mount, as /proc/self/mountinfo shows it: relative to this
 * process's cgroup namespace root, so "/" when the mount shows the namespace's own cgroup,
 * "/.." (and deeper) when it shows cgroups above it. -ENOENT when no such mount.
 */
static int mount_root(const char *mount, char *buf, size_t size)
{
        _cleanup_free_ char *text = NULL;
        bool found = false;
        ssize_t n;

        n = util_read_file_at(AT_FDCWD, "/proc/self/mountinfo", 4 << 20, &text);
        if (n < 0)
                return (int)n;
        for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                char root[PATH_MAX], point[PATH_MAX], *dash;

                nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
                dash = strstr(line, " - ");
                if (!dash || strncmp(dash, " - cgroup2 ", 11) != 0 ||
                    sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2)
                        continue;
                /* mounts stacked at one point are listed in order: the last is the one seen */
                if (strcmp(point, mount) == 0) {
                        snprintf(buf, size, "%s", root);
                        found = true;
                }
        }
        return found ? 0 : -ENOENT;
}

/*
 * Does the cgroup2 mount at mount show the root of this process's cgroup namespace (link),
 * and is that root not the hierarchy's own? 0, or -EOPNOTSUPP or -EPERM with detail set.
 */
static int check_namespace_mount(const char *mount, const char *link, char *detail, size_t size)
{
        char root[PATH_MAX], events[PATH_MAX + 16];
        int r;

        r = mount_root(mount, root, sizeof(root));
        if (r < 0) {
                snprintf(detail, size,
                         "own cgroup namespace %s, but /proc/self/mountinfo shows no cgroup2 mount "
                         "at %s "
                         "(%s): what the mount shows cannot be told",
                         link, mount, strerror(-r));
                return -EOPNOTSUPP;
        }
        if (strcmp(root, "/") != 0) {
                snprintf(
                    detail, size,
                    "own cgroup namespace %s, but the cgroup2 mount at %s shows %s of it, not its "
                    "root "
                    "(a bind mount of another hierarchy, as some runtimes give privileged "
                    "containers): "
                    "fix: a cgroup2 mount made in the container's namespace (what runtimes do for "
                    "unprivileged containers, made writable as sparkshim-k8s(7) says)",
                    link, mount, root);
                return -EPERM;
        }
        /* every cgroup but the hierarchy's own root has cgroup.events */
        snprintf(events, sizeof(events), "%s/cgroup.events", mount);
        if (access(events, F_OK) < 0 && errno == ENOENT) {
                snprintf(detail, size,
                         "own cgroup namespace %s, but its root is the hierarchy's own "
                         "root (%s has "
                         "no cgroup.events): the namespace was made in the node's root "
                         "cgroup, and "
                         "init mode would move the node's processes: fix: a container in a "
                         "cgroup of "
                         "its own, with a cgroup namespace rooted there",
                         link, mount);
                return -EPERM;
        }
        return 0;
}

int shim_cgroup_init_namespace(const char *mount, char *detail, size_t size)
{
        char link[64] = "", path[PATH_MAX];
        unsigned long long ino = 0;
        ssize_t n = readlink("/proc/self/ns/cgroup", link, sizeof(link) - 1);
        int r;

        if (n < 0 || sscanf(link, "cgroup:[%llu]", &ino) != 1) {
                snprintf(
                    detail, size,
                    "cannot read /proc/self/ns/cgroup (%s): the kernel has no cgroup namespaces "
                    "(Linux 4.6 or later needed)",
                    n < 0 ? strerror(errno) : link);
                return -EOPNOTSUPP;
        }
        r = own_cgroup_path(path, sizeof(path));
        if (ino == CGROUP_NS_INIT_INO) {
                snprintf(
                    detail, size,
                    "this is the host's cgroup namespace (%s), /proc/self/cgroup shows 0::%s: init "
                    "mode "
                    "would change the node's own cgroups: fix: a private cgroup namespace for the "
                    "container (an unprivileged pod on a cgroup v2 node gets one from containerd "
                    "and "
                    "CRI-O; a privileged pod never does; docker run --cgroupns=private)",
                    link, r == 0 ? path : "(none)");
                return -EPERM;
        }
        if (r < 0) {
                snprintf(detail, size,
                         "own cgroup namespace %s, but /proc/self/cgroup has no cgroup v2 line "
                         "(0::): no "
                         "cgroup2 hierarchy on this kernel's host",
                         link);
                return -EOPNOTSUPP;
        }
        r = check_namespace_mount(mount, link, detail, size);
        if (r < 0)
                return r;
        if (strcmp(path, "/") != 0) {
                snprintf(
                    detail, size,
                    "own cgroup namespace %s, but this process is at 0::%s, not at its root (where "
                    "kubectl exec lands): init mode must be the container's command (its PID 1), "
                    "not "
                    "run through nsenter, exec or a wrapper that moved it",
                    link, path);
                return 1;
        }
        snprintf(detail, size, "own cgroup namespace %s, this process at 0::/ (its root)", link);
        return 0;
}

int shim_cgroup_setup_init(const struct shim_cgroup_host *host, const char *name,
                           const struct policy_write *w, size_t n, struct shim_cgroup *ret,
                           struct util_error *err)
{
        struct shim_cgroup cg = SHIM_CGROUP_INIT;
        _cleanup_close_ int init_fd = -1;
        char needed[128];
        int r;

        if (host->layout != SHIM_CGROUP_UNIFIED)
                return util_error_set(err, EOPNOTSUPP,
                                      "init mode needs cgroup v2 mounted at the namespace's "
                                      "/sys/fs/cgroup (layout: %s)",
                                      shim_cgroup_layout_name(host->layout));
        if (!shim_cgroup_name_valid(name) || strcmp(name, "init") == 0)
                return util_error_set(err, EINVAL,
                                      "--name: '%s' is not a valid executor cgroup name in init "
                                      "mode; allowed: [A-Za-z0-9_.-], not '.', '..' or 'init'",
                                      name);
        /* before any mkdir or write: without a namespace of its own, "/" is the node's root */
        {
                char detail[UTIL_ERROR_TEXT_MAX - 32];

                r = shim_cgroup_init_namespace(host->mount, detail, sizeof(detail));
                if (r != 0)
                        return util_error_set(err, r < 0 ? -r : EPERM, "init mode: %s", detail);
        }
        r = open_mount(host, w, n, &cg, needed, sizeof(needed), err);
        if (r < 0)
                goto fail;
        if (mkdirat(cg.mount_fd, "init", 0755) < 0 && errno != EEXIST) {
                r = util_error_set(err, errno, "cannot create cgroup %s/init: %s", host->mount,
                                   strerror(errno));
                goto fail;
        }
        init_fd = openat(cg.mount_fd, "init", O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (init_fd < 0) {
                r = util_error_set(err, errno, "cannot open cgroup %s/init: %s", host->mount,
                                   strerror(errno));
                goto fail;
        }
        r = evacuate_root(cg.mount_fd, init_fd, host->mount, err);
        if (r < 0)
                goto fail;
        r = enable_controllers(cg.mount_fd, host->mount, needed, err);
        if (r < 0)
                goto fail;
        cg.parent_fd = fcntl(cg.mount_fd, F_DUPFD_CLOEXEC, 3);
        if (cg.parent_fd < 0) {
                r = util_error_set(err, errno, "dup: %s", strerror(errno));
                goto fail;
        }
        r = finish_leaf(&cg, host->mount, name, false, w, n, err);
        if (r < 0)
                goto fail;
        *ret = cg;
        return 0;
fail:
        cgroup_close(&cg);
        return r;
}

int shim_cgroup_populated(const struct shim_cgroup *cg)
{
        uint64_t v;
        int r;

        r = util_read_keyed_u64_at(cg->leaf_fd, "cgroup.events", "populated", &v);
        if (r < 0)
                return r;
        return v != 0;
}

static int kill_pid(const char *line, void *data)
{
        int pid;

        if (util_parse_int(line, &pid) == 0 && pid > 0)
                kill(pid, SIGKILL);
        return 0;
}

int shim_cgroup_kill(const struct shim_cgroup *cg)
{
        _cleanup_free_ char *procs = NULL;
        ssize_t len;
        int r;

        r = util_write_at(cg->leaf_fd, "cgroup.kill", "1");
        if (r != -ENOENT)
                return r;
        /* before Linux 5.14: kill what we see; callers loop until the leaf is empty */
        len = util_read_file_at(cg->leaf_fd, "cgroup.procs", CGROUP_PROCS_MAX, &procs);
        if (len < 0)
                return (int)len;
        return for_each_pid(procs, kill_pid, NULL);
}

/* Wait until the leaf is empty or timeout_ms passes, reaping our children meanwhile. */
static int wait_empty(const struct shim_cgroup *cg, int timeout_ms)
{
        _cleanup_close_ int fd = -1;
        uint64_t deadline = util_now_ns() + (uint64_t)timeout_ms * 1000000ULL;

        fd = openat(cg->leaf_fd, "cgroup.events", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLPRI};
                uint64_t now, left_ms;
                int r;

                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
                r = shim_cgroup_populated(cg);
                if (r <= 0)
                        return r;
                now = util_now_ns();
                if (now >= deadline)
                        return -ETIMEDOUT;
                left_ms = (deadline - now) / 1000000ULL;
                /* wake on the change notification, or every 50 ms to reap */
                poll(&p, 1, left_ms < 50 ? (int)left_ms + 1 : 50);
        }
}

int shim_cgroup_destroy(struct shim_cgroup *cg)
{
        int r = 0;

        if (!cg)
                return 0;
        if (cg->leaf_fd >= 0) {
                for (int attempt = 0; attempt < 50; attempt++) {
                        int p = shim_cgroup_populated(cg);
                        if (p <= 0)
                                break;
                        shim_cgroup_kill(cg);
                        wait_empty(cg, 200);
                }
                /* rmdir can see EBUSY for a moment after the last task left */
                for (int attempt = 0; attempt < 100; attempt++) {
                        r = unlinkat(cg->parent_fd, cg->leaf_name, AT_REMOVEDIR) < 0 ? -errno : 0;
                        if (r != -EBUSY)
                                break;
                        usleep(10000);
                }
                if (r == -ENOENT)
                        r = 0;
        }
        cgroup_close(cg);
        return r;
}

int shim_cgroup_memory_events(const struct shim_cgroup *cg, struct util_memory_events *ret)
{
        struct util_memory_events e = {0};
        struct {
                const char *key;
                uint64_t *value;
        } keys[] = {
            {"low", &e.low}, {"high", &e.high},         {"max", &e.max},
            {"oom", &e.oom}, {"oom_kill", &e.oom_kill},
        };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                r = util_read_keyed_u64_at(cg->leaf_fd, "memory.events", keys[i].key,
                                           keys[i].value);
                if (r < 0)
                        return r;
        }
        *ret = e;
        return 0;
}
