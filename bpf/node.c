/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's probe set (docs/probes.md, "One set per node"): one copy of the programs for
 * every executor of the node, so that what a task nobody watches pays per event is one hash
 * lookup, whatever the number of executors.
 *
 * Layout, in a bpf filesystem, all of it root's (0700 directories, 0600 pins):
 *
 *   ROOT/                      the lock: flock(2) on this directory
 *   ROOT/<build id>/           one set per build of the programs (probe-build-id.h): shims
 *                              of two package versions never mix programs and maps
 *       <kind>_stats           a kind's per-CPU counters, PROBE_NODE_MAX slots
 *       <kind>_link<i>         its attachments (links): the programs run while these exist
 *       filter                 the filter in front of it (probe-limits.h)
 *       watched                the watched cgroups (struct probe_watch by cgroup id), pinned
 *                              last: a set without it is a load that did not finish
 *
 * Every change happens under the lock: loading and pinning a set, registering (after
 * removing the entries whose shim died, judged by pid and start time), unregistering and,
 * for the last one out, unpinning. A shim that cannot take the lock in PROBE_NODE_LOCK_MS
 * gives up (the caller falls back to a set of its own).
 */
#include "probe-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>

#include "probe-build-id.h"
#include "util.h"

#define BPFFS_DEFAULT "/sys/fs/bpf"
/*
 * The set's directory: the build of the programs and the version of what node.c keeps in
 * the maps (struct probe_watch, the pins' names): a change to either gets a set of its own.
 */
#define PROBE_NODE_PROTOCOL "1"
#define PROBE_NODE_SET      PROBE_BUILD_ID "-v" PROBE_NODE_PROTOCOL
#define WATCHED_PIN         "watched"
#define FILTER_PIN          "filter"
#define STATS_SUFFIX        "stats"

/* ---- who registered */

struct owner {
        uint32_t pid;
        uint64_t start;
        uint64_t pidns;
};

static int owner_self(struct owner *ret)
{
        char link[32];
        struct stat st;
        ssize_t n;
        int r;

        ret->pid = (uint32_t)getpid();
        /* a /proc of another pid namespace would judge other shims by the wrong pids */
        n = readlink("/proc/self", link, sizeof(link) - 1);
        if (n <= 0)
                return n < 0 ? -errno : -EIO;
        link[n] = '\0';
        if ((uint32_t)strtoul(link, NULL, 10) != ret->pid)
                return -EXDEV;
        r = util_process_start_time(getpid(), &ret->start);
        if (r < 0)
                return r;
        if (stat("/proc/self/ns/pid", &st) < 0)
                return -errno;
        ret->pidns = (uint64_t)st.st_ino;
        return 0;
}

/*
 * Is the shim that registered w alive? A pid of another pid namespace cannot be judged from
 * here: kept (a shim of that namespace removes it).
 */
static bool owner_alive(const struct probe_watch *w, const struct owner *self)
{
        uint64_t start;
        int r;

        if (w->owner_pidns != self->pidns)
                return true;
        if (w->owner_pid == self->pid && w->owner_start == self->start)
                return true;
        r = util_process_start_time((pid_t)w->owner_pid, &start);
        if (r == -ENOENT || r == -ESRCH)
                return false; /* gone */
        if (r < 0)
                return true; /* cannot tell (out of fds, memory): never take a live one's slot */
        return start == w->owner_start;
}

/* ---- the root and its lock */

static bool is_bpffs(int fd)
{
        struct statfs sfs;

        return fstatfs(fd, &sfs) == 0 && (unsigned long)sfs.f_type == (unsigned long)BPF_FS_MAGIC;
}

/*
 * flock(2) fd, waiting at most wait_ms: a lock that another process holds for
 * longer (a shim stopped while it held it, or anyone who could open the directory) never
 * stops a shim's monitor.
 */
static int lock_root(int fd, const char *root, int wait_ms, struct util_error *err)
{
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
        uint64_t end = util_now_ns() + (uint64_t)wait_ms * 1000000u;

        for (;;) {
                int r;

                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return 0;
                r = -errno;
                if (r != -EWOULDBLOCK && r != -EINTR) {
                        util_error_set(err, r, "locking %s: %s", root, strerror(-r));
                        return r;
                }
                if (util_now_ns() >= end) {
                        util_error_set(err, -ETIMEDOUT,
                                       "another process held the lock on %s for %d ms", root,
                                       wait_ms);
                        return -ETIMEDOUT;
                }
                nanosleep(&pause, NULL);
        }
}

/*
 * The default place has no bpf filesystem on a host without systemd: mount one there, as
 * systemd does at boot (and bpftool when it pins), mode 0700. Under a lock on the mount point
 * so that two shims do not stack two mounts; but until the mount, that is a sysfs directory
 * anyone may open and lock: the lock is waited for at most PROBE_NODE_MOUNT_LOCK_MS and then done
 * without (the worst case, two shims mounting at once, gives two stacked instances, each
 * consistent: the shim that pinned in the lower one keeps a set of its own).
 */
static int mount_bpffs(const char *parent, struct util_error *err)
{
        _cleanup_close_ int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int again = -1;

        if (fd < 0) {
                util_error_set(err, -EOPNOTSUPP, "no bpf filesystem: %s: %s", parent,
                               strerror(errno));
                return -EOPNOTSUPP;
        }
        if (is_bpffs(fd))
                return 0;
        lock_root(fd, parent, PROBE_NODE_MOUNT_LOCK_MS, NULL); /* or without it, see above */
        again = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (again >= 0 && is_bpffs(again))
                return 0; /* another shim mounted it meanwhile */
        if (mount("bpf", parent, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0) {
                util_error_set(err, -EOPNOTSUPP,
                               "no bpf filesystem on %s, and mounting one failed: %s", parent,
                               strerror(errno));
                return -EOPNOTSUPP;
        }
        return 0;
}

/* Open root (creating it), refusing anything but a bpffs directory only root can use. */
static int open_root(const char *root, struct util_error *err)
{
        char parent[PROBE_PATH_MAX];
        char *slash;
        struct stat st;
        int fd, r;

        if (!root || root[0] != '/' || strlen(root) >= sizeof(parent)) {
                util_error_set(err, -EINVAL,
                               "the pin root must be an absolute path of under %d bytes",
                               PROBE_PATH_MAX);
                return -EINVAL;
        }
        snprintf(parent, sizeof(parent), "%s", root);
        slash = strrchr(parent, '/');
        if (slash == parent)
                slash[1] = '\0';
        else
                *slash = '\0';
        if (strcmp(parent, BPFFS_DEFAULT) == 0) {
                r = mount_bpffs(parent, err);
                if (r < 0)
                        return r;
        }
        if (mkdir(root, 0700) < 0 && errno != EEXIST) {
                r = -errno;
                util_error_set(err, r == -EACCES || r == -EPERM ? -EPERM : -EOPNOTSUPP,
                               "creating %s: %s", root, strerror(-r));
                return r == -EACCES || r == -EPERM ? -EPERM : -EOPNOTSUPP;
        }
        fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                util_error_set(err, -EPERM, "opening %s: %s", root, strerror(-r));
                return -EPERM;
        }
        if (!is_bpffs(fd)) {
                close(fd);
                util_error_set(err, -EOPNOTSUPP, "%s is not in a bpf filesystem", root);
                return -EOPNOTSUPP;
        }
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
                util_error_set(err, -EPERM,
                               "%s is owned by uid %u with mode %04o: the node's probe set "
                               "needs a directory of uid %u with no rights for others",
                               root, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
                               (unsigned)geteuid());
                close(fd);
                return -EPERM;
        }
        return fd;
}

/* ---- the set's directory */

/* Close what p holds of a set (its attachments, maps), keeping the root and its lock. */
static void release_keep_root(struct probe *p)
{
        int root_fd = p->node_root_fd;

        p->node_root_fd = -1;
        probe_release(p);
        p->node_root_fd = root_fd;
}

static int set_path(const struct probe *p, const char *name, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s/%s", p->node_dir, name);

        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Remove every pin of the set's directory, then the directory. */
static void unpin_set(int root_fd)
{
        int fd = openat(root_fd, PROBE_NODE_SET, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *dir;
        struct dirent *de;

        if (fd < 0)
                return;
        /* the completeness mark first: a removal cut short leaves a set that reloads */
        unlinkat(fd, WATCHED_PIN, 0);
        dir = fdopendir(fd); /* owns fd from here */
        if (!dir) {
                close(fd);
                return;
        }
        while ((de = readdir(dir)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        unlinkat(dirfd(dir), de->d_name, 0);
        closedir(dir);
        unlinkat(root_fd, PROBE_NODE_SET, AT_REMOVEDIR);
}

/* Load every kind this kernel supports with PROBE_NODE_MAX slots, and pin the set. */
static int load_set(struct probe *p, struct util_error *err)
{
        char path[PROBE_PATH_MAX + 64];
        int r;

        unpin_set(p->node_root_fd); /* what a load that died half-way left */
        if (mkdirat(p->node_root_fd, PROBE_NODE_SET, 0700) < 0) {
                r = -errno;
                util_error_set(err, r, "creating %s: %s", p->node_dir, strerror(-r));
                return r;
        }
        r = probe_create_watch_maps(p, PROBE_NODE_MAX, err);
        if (r < 0)
                goto fail;
        r = probe_load_kinds(p, PROBE_ALL, PROBE_NODE_MAX, err);
        if (r < 0)
                goto fail;
        for (int k = 0; k < PROBE_KINDS_COUNT; k++) {
                struct probe_kind_state *st = &p->kinds[k];
                const char *kind = probe_kind_name(probe_parts[k]->kind);

                if (st->stats_fd < 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s_" STATS_SUFFIX, p->node_dir, kind);
                if (bpf_obj_pin(st->stats_fd, path) < 0) {
                        r = -errno;
                        goto pin_failed;
                }
                for (size_t i = 0; i < st->nprogs; i++) {
                        snprintf(path, sizeof(path), "%s/%s_link%zu", p->node_dir, kind, i);
                        r = bpf_link__pin(st->links[i], path);
                        if (r < 0)
                                goto pin_failed;
                }
        }
        r = set_path(p, FILTER_PIN, path, sizeof(path));
        if (r == 0 && bpf_obj_pin(p->filter_fd, path) < 0)
                r = -errno;
        if (r < 0)
                goto pin_failed;
        r = set_path(p, WATCHED_PIN, path, sizeof(path));
        if (r == 0 && bpf_obj_pin(p->watched_fd, path) < 0)
                r = -errno;
        if (r < 0)
                goto pin_failed;
        /* the pins hold everything now: this process keeps no attachment of its own */
        release_keep_root(p);
        return 0;
pin_failed:
        util_error_set(err, r, "pinning %s: %s", path, strerror(-r));
fail:
        release_keep_root(p);
        unpin_set(p->node_root_fd);
        return r;
}

/* Open the pinned set: the watched map, each kind's counters and its programs' ids. */
static int join_set(struct probe *p, struct util_error *err)
{
        char path[PROBE_PATH_MAX + 64];
        int r;

        r = set_path(p, WATCHED_PIN, path, sizeof(path));
        if (r < 0) {
                util_error_set(err, r, "%s: path too long", p->node_dir);
                return r;
        }
        p->watched_fd = bpf_obj_get(path);
        if (p->watched_fd >= 0 && set_path(p, FILTER_PIN, path, sizeof(path)) == 0)
                p->filter_fd = bpf_obj_get(path);
        if (p->watched_fd < 0 || p->filter_fd < 0) {
                r = -errno;
                util_error_set(err, r, "opening %s: %s", path, strerror(-r));
                return r;
        }
        for (int k = 0; k < PROBE_KINDS_COUNT; k++) {
                struct probe_kind_state *st = &p->kinds[k];
                const char *kind = probe_kind_name(probe_parts[k]->kind);

                st->detail[0] = '\0'; /* the programs' names, for the loader as for the others */
                snprintf(path, sizeof(path), "%s/%s_" STATS_SUFFIX, p->node_dir, kind);
                st->stats_fd = bpf_obj_get(path);
                if (st->stats_fd < 0) {
                        util_error_set(&st->why, ENOENT,
                                       "not in the node's set (the shim that loaded it could not "
                                       "load it)");
                        continue;
                }
                for (size_t i = 0; i < PROBE_PROGRAMS_MAX; i++) {
                        struct bpf_link_info info;
                        struct bpf_prog_info prog;
                        __u32 len = sizeof(info), plen = sizeof(prog);
                        _cleanup_close_ int link = -1, fd = -1;

                        snprintf(path, sizeof(path), "%s/%s_link%zu", p->node_dir, kind, i);
                        link = bpf_obj_get(path);
                        if (link < 0)
                                break;
                        memset(&info, 0, sizeof(info));
                        if (bpf_obj_get_info_by_fd(link, &info, &len) < 0)
                                continue;
                        st->prog_ids[st->nprogs++] = info.prog_id;
                        fd = bpf_prog_get_fd_by_id(info.prog_id);
                        memset(&prog, 0, sizeof(prog));
                        if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &prog, &plen) == 0)
                                probe_detail_add(st->detail, sizeof(st->detail), prog.name);
                }
                probe_detail_add(st->detail, sizeof(st->detail), "(node set " PROBE_NODE_SET ")");
        }
        if (probe_attached(p) == 0) {
                util_error_set(err, -EOPNOTSUPP, "%s holds no probe kind", p->node_dir);
                return -EOPNOTSUPP;
        }
        return 0;
}

/* Is the set of this build pinned completely under the root? */
static bool set_complete(const struct probe *p)
{
        char path[PROBE_PATH_MAX + 64];
        struct stat st;

        return set_path(p, WATCHED_PIN, path, sizeof(path)) == 0 && stat(path, &st) == 0;
}

/*
 * Remove the entries of shims that died; fill used[] with the slots of the others. Returns
 * how many entries are left, or -errno.
 */
static int sweep(int watched_fd, const struct owner *self, bool *used)
{
        uint64_t stale[PROBE_NODE_MAX];
        struct probe_watch alive = {0}; /* the last owner found alive: one shim, many leaves */
        size_t nstale = 0;
        uint64_t key, next;
        uint64_t *prev = NULL;
        int left = 0;

        while (bpf_map_get_next_key(watched_fd, prev, &next) == 0) {
                struct probe_watch w;
                bool same;

                key = next;
                prev = &key;
                if (bpf_map_lookup_elem(watched_fd, &key, &w) < 0)
                        continue; /* removed meanwhile */
                same = alive.owner_pid && w.owner_pid == alive.owner_pid &&
                       w.owner_start == alive.owner_start && w.owner_pidns == alive.owner_pidns;
                if (!same && !owner_alive(&w, self)) {
                        if (nstale < PROBE_NODE_MAX)
                                stale[nstale++] = key;
                        continue;
                }
                alive = w;
                if (used && w.slot < PROBE_NODE_MAX)
                        used[w.slot] = true;
                left++;
        }
        for (size_t i = 0; i < nstale; i++)
                bpf_map_delete_elem(watched_fd, &stale[i]);
        return left;
}

/* Zero one slot of every kind's counters (all CPUs). */
static int zero_slot(struct probe *p, uint32_t slot)
{
        int ncpus = libbpf_num_possible_cpus();

        if (ncpus <= 0)
                return ncpus < 0 ? ncpus : -EINVAL;
        for (int k = 0; k < PROBE_KINDS_COUNT; k++) {
                _cleanup_free_ void *zeros = NULL;

                if (p->kinds[k].stats_fd < 0)
                        continue;
                zeros = calloc((size_t)ncpus, probe_parts[k]->stat_size);
                if (!zeros)
                        return -ENOMEM;
                if (bpf_map_update_elem(p->kinds[k].stats_fd, &slot, zeros, BPF_ANY) < 0)
                        return -errno;
        }
        return 0;
}

static int register_cgroup(struct probe *p, uint64_t cgroup_id, struct util_error *err)
{
        bool used[PROBE_NODE_MAX] = {false};
        struct probe_watch w = {0};
        struct timespec now;
        struct owner self;
        uint32_t slot;
        int r;

        r = owner_self(&self);
        if (r < 0) {
                util_error_set(err, r, "reading this process's start time: %s", strerror(-r));
                return r;
        }
        r = sweep(p->watched_fd, &self, used);
        if (r < 0)
                return r;
        if (bpf_map_lookup_elem(p->watched_fd, &cgroup_id, &w) == 0) {
                util_error_set(err, -EBUSY, "cgroup %llu is watched already (by pid %u)",
                               (unsigned long long)cgroup_id, (unsigned)w.owner_pid);
                return -EBUSY;
        }
        /*
         * The first free slot from the cgroup id's place on, not the lowest: a slot freed a
         * moment ago is seldom taken at once, so that an event of its old owner still in
         * flight (a reclaim, a disk request) rarely lands on a new one.
         */
        slot = PROBE_NODE_MAX;
        for (uint32_t i = 0, at = (uint32_t)(cgroup_id % PROBE_NODE_MAX); i < PROBE_NODE_MAX; i++)
                if (!used[(at + i) % PROBE_NODE_MAX]) {
                        slot = (at + i) % PROBE_NODE_MAX;
                        break;
                }
        if (slot == PROBE_NODE_MAX) {
                util_error_set(err, -ENOSPC,
                               "the node's probe set watches %d cgroups already, its most",
                               PROBE_NODE_MAX);
                return -ENOSPC;
        }
        r = zero_slot(p, slot);
        if (r < 0) {
                util_error_set(err, r, "clearing slot %u: %s", (unsigned)slot, strerror(-r));
                return r;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        w = (struct probe_watch){
            .slot = slot,
            .owner_pid = self.pid,
            .start_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec,
            .owner_start = self.start,
            .owner_pidns = self.pidns,
        };
        if (bpf_map_update_elem(p->watched_fd, &cgroup_id, &w, BPF_NOEXIST) < 0) {
                r = -errno;
                util_error_set(err, r, "registering cgroup %llu: %s", (unsigned long long)cgroup_id,
                               strerror(-r));
                return r;
        }
        r = probe_filter_rebuild(p->watched_fd, p->filter_fd);
        if (r < 0) {
                bpf_map_delete_elem(p->watched_fd, &cgroup_id);
                util_error_set(err, r, "filling the filter of watched cgroups: %s", strerror(-r));
                return r;
        }
        p->node_watch = w;
        return 0;
}

struct probe *probe_open_node(const char *root, uint64_t cgroup_id, struct util_error *err)
{
        struct owner self;
        struct probe *p;
        int r;

        if (cgroup_id == 0) {
                util_error_set(err, -EINVAL, "cgroup id 0 is not a cgroup");
                return NULL;
        }
        p = probe_alloc();
        if (!p) {
                util_error_set(err, -ENOMEM, "out of memory");
                return NULL;
        }
        p->node = true;
        p->ids[0] = cgroup_id;
        p->n = 1;
        if ((size_t)snprintf(p->node_dir, sizeof(p->node_dir), "%s/%s", root ? root : "",
                             PROBE_NODE_SET) >= sizeof(p->node_dir)) {
                util_error_set(err, -ENAMETOOLONG, "the pin root %s is too long", root);
                goto fail;
        }
        p->node_root_fd = open_root(root, err);
        if (p->node_root_fd < 0)
                goto fail;
        r = lock_root(p->node_root_fd, root, PROBE_NODE_LOCK_MS, err);
        if (r < 0)
                goto fail;
        if (!set_complete(p) && load_set(p, err) < 0)
                goto fail_locked;
        if (join_set(p, err) < 0 || register_cgroup(p, cgroup_id, err) < 0)
                goto fail_empty;
        flock(p->node_root_fd, LOCK_UN);
        return p;
fail_empty:
        /* a set nobody watches with (this shim may have loaded it) goes */
        if (p->watched_fd >= 0 && owner_self(&self) == 0 && sweep(p->watched_fd, &self, NULL) == 0)
                unpin_set(p->node_root_fd);
fail_locked:
        flock(p->node_root_fd, LOCK_UN);
fail:
        p->node = false;
        probe_release(p);
        free(p);
        return NULL;
}

void probe_node_leave(struct probe *p)
{
        struct probe_watch w;
        struct owner self;
        bool locked;

        if (!p->node || p->watched_fd < 0 || p->node_root_fd < 0)
                return;
        locked = lock_root(p->node_root_fd, p->node_dir, PROBE_NODE_LEAVE_LOCK_MS, NULL) == 0;
        if (bpf_map_lookup_elem(p->watched_fd, &p->ids[0], &w) == 0 &&
            w.owner_pid == p->node_watch.owner_pid && w.owner_start == p->node_watch.owner_start &&
            w.owner_pidns == p->node_watch.owner_pidns)
                bpf_map_delete_elem(p->watched_fd, &p->ids[0]);
        /*
         * The last one out unpins the set (docs/probes.md). Without the lock the filter is
         * left as it is: a rebuild racing a registration could drop the new entry's bucket,
         * where a stale one only sends some unwatched tasks on to the hash lookup.
         */
        if (locked && owner_self(&self) == 0 && sweep(p->watched_fd, &self, NULL) == 0)
                unpin_set(p->node_root_fd);
        else if (locked)
                probe_filter_rebuild(p->watched_fd, p->filter_fd);
        if (locked)
                flock(p->node_root_fd, LOCK_UN);
        p->node = false;
}

int probe_node_list(const char *root, struct probe_node_entry *ret, size_t max,
                    struct util_error *err)
{
        char path[PROBE_PATH_MAX + 64];
        _cleanup_close_ int fd = -1;
        uint64_t key, next, *prev = NULL;
        struct owner self;
        size_t count = 0;
        int r;

        if (!root || (!ret && max > 0)) {
                util_error_set(err, -EINVAL, "no root");
                return -EINVAL;
        }
        r = owner_self(&self);
        if (r < 0) {
                util_error_set(err, r, "reading this process's start time: %s", strerror(-r));
                return r;
        }
        if (snprintf(path, sizeof(path), "%s/%s/" WATCHED_PIN, root, PROBE_NODE_SET) >=
            (int)sizeof(path)) {
                util_error_set(err, -ENAMETOOLONG, "%s: path too long", root);
                return -ENAMETOOLONG;
        }
        fd = bpf_obj_get(path);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                r = -errno;
                util_error_set(err, r, "opening %s: %s", path, strerror(-r));
                return r;
        }
        while (bpf_map_get_next_key(fd, prev, &next) == 0) {
                struct probe_watch w;

                key = next;
                prev = &key;
                if (bpf_map_lookup_elem(fd, &key, &w) < 0)
                        continue;
                if (count < max)
                        ret[count] = (struct probe_node_entry){
                            .cgroup_id = key,
                            .slot = w.slot,
                            .owner_pid = w.owner_pid,
                            .owner_alive = owner_alive(&w, &self),
                        };
                count++;
        }
        return count > INT32_MAX ? INT32_MAX : (int)count;
}
