/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sparkshim tune-service` (sparkshim-tune(1)): the fleet loop's collecting half. One pass
 * reads what is new in the policy's report and event log directories into the history, then
 * publishes, for every (owner, job) whose runs it touched, the next run's settings
 * (publish.h). `--once` makes one pass when one is due (the systemd timer's way); without it
 * the command passes every tuner.service.period_seconds until SIGTERM (a container's way).
 *
 * Incremental: every file read has a checkpoint in the store (device, inode, size, mtime,
 * and for a report file the offset past its last complete line), written in the transaction
 * of what was read: a crash, a restart, a store that goes away mid-pass lose or double
 * nothing, and the next pass reads what the last did not. A pass costs a directory walk and
 * one hash lookup per known file, plus what is new.
 *
 *   - report files (append-only JSON lines) are read from their offset, complete lines only;
 *     a file whose size went below its offset (truncated, or a new file on the same inode)
 *     is read from the start; the store's upserts make a re-read harmless;
 *   - an event log is read whole when its (size, mtime) changed; a name ending .inprogress
 *     (Spark's, while the application runs) waits until it is renamed, or until it has not
 *     changed for TUNER_SERVICE_STALE_SECONDS (the driver died: the run is stored, not
 *     ended). A rename keeps the inode, so a log read before it is not read again; a copy
 *     compressed after rotation is a new file, read once more into the same run;
 *   - a rolling event log directory (eventlog_v2_*) is read when its mtime changed and it
 *     holds no appstatus_*.inprogress (or that is stale).
 * A file refused (a bad line, too large) keeps a checkpoint too, and is read again only once
 * it changes. No symbolic link is followed; files are opened below the walked directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <nettle/sha2.h>

#include "cli.h"
#include "config.h"
#include "history-server.h"
#include "ingest.h"
#include "policy.h"
#include "publish.h"
#include "store.h"
#include "util.h"

#define TUNER_SERVICE_STALE_SECONDS (24 * 3600)
#define WALK_DEPTH_MAX              8
#define LAST_PASS                   "last_pass"

/* ---------------------------------------------------------------- checkpoints */

struct checkpoints {
        struct tuner_store_file *v; /* open addressing; ino == 0 && dev == 0: empty */
        size_t cap, n;
};

static size_t slot_of(const struct checkpoints *c, uint64_t dev, uint64_t ino)
{
        uint64_t h = (dev * UINT64_C(0x9e3779b97f4a7c15)) ^ (ino * UINT64_C(0xc2b2ae3d27d4eb4f));

        h ^= h >> 31;
        return (size_t)(h & (c->cap - 1));
}

static int checkpoints_grow(struct checkpoints *c)
{
        struct checkpoints bigger = {.cap = c->cap ? c->cap * 2 : 1024};

        bigger.v = calloc(bigger.cap, sizeof(*bigger.v));
        if (!bigger.v)
                return -ENOMEM;
        for (size_t i = 0; i < c->cap; i++) {
                const struct tuner_store_file *f = &c->v[i];
                size_t s;

                if (!f->dev && !f->ino)
                        continue;
                for (s = slot_of(&bigger, f->dev, f->ino); bigger.v[s].dev || bigger.v[s].ino;
                     s = (s + 1) & (bigger.cap - 1))
                        ;
                bigger.v[s] = *f;
        }
        bigger.n = c->n;
        free(c->v);
        *c = bigger;
        return 0;
}

static struct tuner_store_file *checkpoint_find(struct checkpoints *c, uint64_t dev, uint64_t ino)
{
        if (!c->cap)
                return NULL;
        for (size_t s = slot_of(c, dev, ino); c->v[s].dev || c->v[s].ino;
             s = (s + 1) & (c->cap - 1))
                if (c->v[s].dev == dev && c->v[s].ino == ino)
                        return &c->v[s];
        return NULL;
}

static void mark_seen(struct checkpoints *c, uint64_t dev, uint64_t ino)
{
        struct tuner_store_file *k = checkpoint_find(c, dev, ino);

        if (k)
                k->seen = true;
}

static int checkpoint_put(void *userdata, const struct tuner_store_file *f)
{
        struct checkpoints *c = userdata;
        struct tuner_store_file *old = checkpoint_find(c, f->dev, f->ino);
        size_t s;

        if (old) {
                bool seen = old->seen;

                *old = *f;
                old->seen = seen || f->seen;
                return 0;
        }
        if ((c->n + 1) * 2 > c->cap && checkpoints_grow(c) < 0)
                return -ENOMEM;
        for (s = slot_of(c, f->dev, f->ino); c->v[s].dev || c->v[s].ino; s = (s + 1) & (c->cap - 1))
                ;
        c->v[s] = *f;
        c->n++;
        return 0;
}

/* ---------------------------------------------------------------- touched runs */

static int compare_ids(const void *a, const void *b)
{
        return strcmp(a, b);
}

struct touched {
        char (*ids)[TUNER_APP_ID_MAX];
        size_t n, cap;
};

static int touch(void *userdata, const char *app_id)
{
        struct touched *t = userdata;

        /* files list their runs in order: the same run twice in a row is the common case */
        if (t->n && strcmp(t->ids[t->n - 1], app_id) == 0)
                return 0;
        /* a file's lines may name runs in any order: when the list is full from 64k entries
         * on, its duplicates go first, and it grows only when still three quarters full (it
         * grows with distinct runs, as the store does) */
        if (t->n == t->cap) {
                if (t->n >= 65536) {
                        size_t kept = 1;

                        qsort(t->ids, t->n, sizeof(*t->ids), compare_ids);
                        for (size_t i = 1; i < t->n; i++)
                                if (strcmp(t->ids[i], t->ids[kept - 1]) != 0)
                                        memmove(t->ids[kept++], t->ids[i], sizeof(*t->ids));
                        t->n = kept;
                }
                if (t->cap == 0 || t->n * 4 > t->cap * 3) {
                        size_t cap = t->cap ? t->cap * 2 : 64;
                        void *p = realloc(t->ids, cap * sizeof(*t->ids));

                        if (!p)
                                return -ENOMEM;
                        t->ids = p;
                        t->cap = cap;
                }
        }
        snprintf(t->ids[t->n++], TUNER_APP_ID_MAX, "%s", app_id);
        return 0;
}

/* ---------------------------------------------------------------- the pass */

struct pass {
        const struct policy *policy;
        struct tuner_ingest in;
        struct checkpoints known;
        struct touched touched;
        time_t now;
        unsigned long files, known_files, read, refused, waiting, published, unmapped;
        bool store_failed;
        bool walk_failed; /* a directory could not be read: no checkpoint is forgotten */
        /* the event logs' decompression budgets of this pass (eventlog.h), one per owner: a
         * user's compression bombs spend that user's budget, never another's */
        struct {
                uint32_t uid;
                struct tuner_eventlog_run run;
        } budgets[64];
        size_t n_budgets;
        struct tuner_eventlog_run others; /* owners past the 64th */
};

static struct tuner_eventlog_run *budget_of(struct pass *ps, uint32_t uid)
{
        for (size_t i = 0; i < ps->n_budgets; i++)
                if (ps->budgets[i].uid == uid)
                        return &ps->budgets[i].run;
        if (ps->n_budgets == ELEMENTSOF(ps->budgets))
                return &ps->others;
        ps->budgets[ps->n_budgets].uid = uid;
        ps->budgets[ps->n_budgets].run = (struct tuner_eventlog_run){0};
        return &ps->budgets[ps->n_budgets++].run;
}

/* has an event log's refusal spent what its owner had left this pass (then it is read
 * again at the next pass, not remembered as refused)? */
static bool budget_spent(const struct tuner_eventlog_run *run)
{
        return run->total >= TUNER_EVENTLOG_RUN_TOTAL_MAX ||
               run->slack >= TUNER_EVENTLOG_RUN_SLACK_MAX;
}

static int64_t mtime_ns(const struct stat *st)
{
        return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static bool unchanged(const struct tuner_store_file *k, const struct stat *st)
{
        return k && k->size == (int64_t)st->st_size && k->mtime_ns == mtime_ns(st);
}

static bool has_suffix(const char *s, const char *suffix)
{
        size_t n = strlen(s), k = strlen(suffix);

        return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* a refused file keeps a checkpoint (read again only once it changes), in a transaction of
 * its own: the refusal rolled back the file's */
static void remember_refused(struct pass *ps, const struct tuner_store_file *f)
{
        struct util_error err = {0};

        if (tuner_store_begin(ps->in.store, &err) < 0 ||
            tuner_store_put_file(ps->in.store, f, &err) < 0 ||
            tuner_store_commit(ps->in.store, &err) < 0) {
                tuner_store_rollback(ps->in.store, NULL);
                log_error("history store: %s", err.text);
                ps->store_failed = true;
                return;
        }
        (void)checkpoint_put(&ps->known, f);
}

static void outcome(struct pass *ps, enum tuner_ingest_outcome o, const struct tuner_store_file *f)
{
        if (o == STORE_FAILED) {
                ps->store_failed = true;
                return;
        }
        if (o == REFUSED) {
                ps->refused++;
                remember_refused(ps, f);
                return;
        }
        ps->read++;
        (void)checkpoint_put(&ps->known, f);
}

/* a report file the walk found (st, from its fstatat): opened only when it changed */
static void report_file(struct pass *ps, int dirfd, const char *name, const char *path,
                        const struct stat *seen)
{
        _cleanup_close_ int fd = -1;
        struct tuner_store_file f;
        const struct tuner_store_file *k;
        struct stat st;

        mark_seen(&ps->known, (uint64_t)seen->st_dev, (uint64_t)seen->st_ino);
        k = checkpoint_find(&ps->known, (uint64_t)seen->st_dev, (uint64_t)seen->st_ino);
        if (unchanged(k, seen)) {
                ps->known_files++;
                return;
        }
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return; /* gone, or swapped for something else since the walk saw it */
        /* what is read is the file opened: its identity, size and owner from the descriptor */
        k = checkpoint_find(&ps->known, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
        if (unchanged(k, &st)) {
                ps->known_files++;
                return;
        }
        f = (struct tuner_store_file){
            .dev = (uint64_t)st.st_dev,
            .ino = (uint64_t)st.st_ino,
            .size = (int64_t)st.st_size,
            .mtime_ns = mtime_ns(&st),
            /* grown: from the last complete line read; shrunk: a new file, from the start */
            .offset = k && k->offset <= (int64_t)st.st_size ? k->offset : 0,
            .seen = true,
        };
        /* a new file on a reused inode may have grown past the old one's offset: what was
         * read ended a line, so the byte before the offset is a newline, or this is another
         * file, read from its start */
        if (f.offset > 0) {
                char c;

                if (pread(fd, &c, 1, f.offset - 1) != 1 || c != '\n')
                        f.offset = 0;
        }
        ps->in.owner_uid = (uint32_t)st.st_uid;
        ps->in.from = f.offset;
        ps->in.checkpoint = &f;
        /* the offset becomes the end of the last complete line (a partial last line is read
         * again once it is complete) */
        outcome(ps, tuner_ingest_reports(&ps->in, path, fd), &f);
        ps->in.checkpoint = NULL;
}

/* Is an event log still being written: Spark's .inprogress name (or a rolling directory's
 * appstatus_*.inprogress), unchanged for less than TUNER_SERVICE_STALE_SECONDS? */
static bool in_progress(struct pass *ps, int fd, const char *name, const struct stat *st)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;
        bool marked = false;
        int dfd;

        if (ps->now - st->st_mtim.tv_sec >= TUNER_SERVICE_STALE_SECONDS)
                return false;
        if (!S_ISDIR(st->st_mode))
                return has_suffix(name, ".inprogress");
        dfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0 || !(d = fdopendir(dfd))) {
                if (dfd >= 0)
                        close(dfd);
                return true; /* unreadable now: try again next pass */
        }
        while (!marked && (e = readdir(d)))
                marked = strncmp(e->d_name, "appstatus_", 10) == 0 &&
                         has_suffix(e->d_name, ".inprogress");
        return marked;
}

static void eventlog_entry(struct pass *ps, int dirfd, const char *name, const char *path,
                           const struct stat *st)
{
        struct tuner_store_file f = {
            .dev = (uint64_t)st->st_dev,
            .ino = (uint64_t)st->st_ino,
            .size = S_ISDIR(st->st_mode) ? 0 : (int64_t)st->st_size,
            .mtime_ns = mtime_ns(st),
            .seen = true,
        };
        const struct tuner_store_file *k = checkpoint_find(&ps->known, f.dev, f.ino);

        mark_seen(&ps->known, f.dev, f.ino);

        if (S_ISDIR(st->st_mode) && strncmp(name, "eventlog_v2_", 12) != 0)
                return;
        if (unchanged(k, st) || (k && S_ISDIR(st->st_mode) && k->mtime_ns == f.mtime_ns)) {
                ps->known_files++;
                return;
        }
        if (in_progress(ps, dirfd, name, st)) {
                ps->waiting++;
                return;
        }
        f.offset = f.size;
        {
                struct tuner_eventlog_run *budget = budget_of(ps, (uint32_t)st->st_uid);
                enum tuner_ingest_outcome o;

                ps->in.eventlogs = *budget;
                ps->in.checkpoint = &f;
                o = tuner_ingest_eventlog(&ps->in, path);
                ps->in.checkpoint = NULL;
                *budget = ps->in.eventlogs;
                if (o == REFUSED && budget_spent(budget)) {
                        ps->waiting++; /* its owner's budget of this pass is spent */
                        return;
                }
                outcome(ps, o, &f);
        }
}

enum dir_kind { REPORTS, EVENTLOGS };

static void walk(struct pass *ps, int parent, const char *name, const char *path,
                 enum dir_kind kind, unsigned depth)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;
        int fd;

        fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (depth == 0)
                        log_warn("tune-service: %s: %s; skipped this pass", path,
                                 errno == ELOOP ? "a symbolic link (refused)" : strerror(errno));
                /* what could not be read keeps its checkpoints (a subdirectory gone since the
                 * walk saw it excepted) */
                if (depth == 0 || errno != ENOENT)
                        ps->walk_failed = true;
                return;
        }
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        while (!ps->store_failed && (e = readdir(d))) {
                char child[4096];
                struct stat st;

                if (e->d_name[0] == '.')
                        continue; /* ., .., and files still being written under a dot name */
                if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, e->d_name) >=
                    sizeof(child))
                        continue;
                if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                ps->files++;
                if (kind == EVENTLOGS && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
                        eventlog_entry(ps, fd, e->d_name, child, &st);
                } else if (kind == REPORTS && S_ISDIR(st.st_mode)) {
                        ps->files--;
                        if (depth + 1 < WALK_DEPTH_MAX)
                                walk(ps, fd, e->d_name, child, kind, depth + 1);
                } else if (kind == REPORTS && S_ISREG(st.st_mode) &&
                           !has_suffix(e->d_name, ".prom")) {
                        report_file(ps, fd, e->d_name, child, &st);
                }
        }
}

/* The checkpoints of files no directory holds any more (deleted, rotated away) are
 * forgotten, so that the table holds what the directories hold (a History Server's attempts,
 * keys with the top bit set, stay: the server's list is read from a date on). */
static void forget_unseen(struct pass *ps)
{
        struct util_error err = {0};
        unsigned long n = 0;

        for (size_t i = 0; i < ps->known.cap; i++) {
                const struct tuner_store_file *f = &ps->known.v[i];

                if ((!f->dev && !f->ino) || f->seen || (f->dev >> 63))
                        continue;
                if (!n && tuner_store_begin(ps->in.store, &err) < 0)
                        goto fail;
                if (tuner_store_forget_file(ps->in.store, f->dev, f->ino, &err) < 0)
                        goto fail;
                n++;
        }
        if (n && tuner_store_commit(ps->in.store, &err) < 0)
                goto fail;
        return;
fail:
        tuner_store_rollback(ps->in.store, NULL);
        log_error("history store: %s", err.text);
        ps->store_failed = true;
}

/* ---------------------------------------------------------------- History Servers */

/* The checkpoint key of a History Server's attempt: a device number no file system gives
 * (the top bit set) from the server's URL, an inode from the application and attempt ids */
static void hs_key(const char *url, const struct tuner_hs_attempt *a, struct tuner_store_file *f)
{
        struct sha256_ctx ctx;
        uint8_t d[SHA256_DIGEST_SIZE];

        sha256_init(&ctx);
        sha256_update(&ctx, strlen(url) + 1, (const uint8_t *)url);
        sha256_digest(&ctx, sizeof(d), d);
        memcpy(&f->dev, d, sizeof(f->dev));
        f->dev |= UINT64_C(1) << 63;
        sha256_init(&ctx);
        sha256_update(&ctx, strlen(a->app_id) + 1, (const uint8_t *)a->app_id);
        if (a->attempt_id)
                sha256_update(&ctx, strlen(a->attempt_id), (const uint8_t *)a->attempt_id);
        sha256_digest(&ctx, sizeof(d), d);
        memcpy(&f->ino, d, sizeof(f->ino));
        f->size = a->last_updated_ms;
        f->mtime_ns = a->end_ms;
        f->offset = 0;
}

/* The store's state of a History Server's list: named by a hash of its URL, which may hold
 * a password */
static void hs_state_name(const char *url, char *out, size_t size)
{
        struct sha256_ctx ctx;
        uint8_t d[SHA256_DIGEST_SIZE];
        char hex[33];

        sha256_init(&ctx);
        sha256_update(&ctx, strlen(url), (const uint8_t *)url);
        sha256_digest(&ctx, sizeof(d), d);
        snprintf(out, size, "hs_end:%s", util_hex(d, 16, hex));
}

struct hs_walk {
        struct pass *ps;
        const struct policy_history_server *hs;
        int64_t newest_end_ms;   /* of the attempts done, ends past now + a day left out */
        int64_t deferred_end_ms; /* the oldest end of an attempt left for the next pass; 0 */
        char shown[POLICY_SERVICE_PATH_MAX];
};

static void defer(struct hs_walk *w, const struct tuner_hs_attempt *a)
{
        if (!w->deferred_end_ms || a->end_ms < w->deferred_end_ms)
                w->deferred_end_ms = a->end_ms;
}

static void remove_tree(int dirfd)
{
        _cleanup_closedir_ DIR *d = fdopendir(dup(dirfd));
        struct dirent *e;

        while (d && (e = readdir(d))) {
                int sub;

                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                if (unlinkat(dirfd, e->d_name, 0) == 0 || errno != EISDIR)
                        continue;
                sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0) {
                        remove_tree(sub);
                        close(sub);
                }
                (void)unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
        }
}

static int hs_attempt(void *userdata, const struct tuner_hs_attempt *a)
{
        struct hs_walk *w = userdata;
        struct pass *ps = w->ps;
        struct tuner_store_file f = {0};
        struct util_error err = {0};
        char dir[] = "/tmp/sparkshim-hs.XXXXXX", name[256], path[512], what[1400];
        uint32_t uid = w->hs->owner_uid;
        int dirfd, r;

        if (ps->store_failed)
                return -ECANCELED;
        /* the end is the job's to write: one far in the future must not move the next
         * lists' start past every real application */
        if (a->end_ms > w->newest_end_ms && a->end_ms <= ps->now * INT64_C(1000) + 86400000)
                w->newest_end_ms = a->end_ms;
        ps->files++;
        hs_key(w->hs->url, a, &f);
        if (unchanged(checkpoint_find(&ps->known, f.dev, f.ino),
                      &(struct stat){.st_size = f.size,
                                     .st_mtim = {.tv_sec = f.mtime_ns / 1000000000,
                                                 .tv_nsec = f.mtime_ns % 1000000000}})) {
                ps->known_files++;
                return 0;
        }
        if (w->hs->owner_spark_user) {
                /* the user the server says ran the driver: a local user other than root */
                struct passwd pw, *found = NULL;
                char buf[4096];

                if (!a->spark_user ||
                    getpwnam_r(a->spark_user, &pw, buf, sizeof(buf), &found) != 0 || !found ||
                    found->pw_uid == 0) {
                        ps->unmapped++;
                        return 0;
                }
                uid = found->pw_uid;
        }
        snprintf(what, sizeof(what), "%s %s%s%s", w->shown, a->app_id, a->attempt_id ? "/" : "",
                 a->attempt_id ? a->attempt_id : "");
        /* the owner's budget of this pass spent: not even fetched, left for the next pass */
        if (budget_spent(budget_of(ps, uid))) {
                ps->waiting++;
                defer(w, a);
                return 0;
        }
        if (!mkdtemp(dir)) {
                log_warn("tune-service: %s: a directory for its logs: %s", what, strerror(errno));
                defer(w, a);
                return 0;
        }
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = dirfd < 0 ? -errno
                      : tuner_hs_fetch_logs(w->hs->url, a->app_id, a->attempt_id, dirfd, name,
                                            sizeof(name), &err);
        if (r == -EIO || r == -ENOMEM || dirfd < 0) {
                /* the server or the network: tried again at the next pass */
                log_warn("tune-service: %s: %s; tried again at the next pass", what,
                         dirfd < 0 ? strerror(-r) : err.text);
                defer(w, a);
        } else if (r < 0) {
                log_error("tune-service: %s: %s; not read again until the server's copy changes",
                          what, err.text);
                ps->refused++;
                remember_refused(ps, &f);
        } else {
                snprintf(path, sizeof(path), "%s/%s", dir, name);
                struct tuner_eventlog_run *budget = budget_of(ps, uid);
                enum tuner_ingest_outcome o;

                ps->in.override_owner = true;
                ps->in.override_uid = uid;
                ps->in.eventlogs = *budget;
                ps->in.checkpoint = &f;
                o = tuner_ingest_eventlog(&ps->in, path);
                ps->in.checkpoint = NULL;
                ps->in.override_owner = false;
                *budget = ps->in.eventlogs;
                if (o == REFUSED && budget_spent(budget)) {
                        ps->waiting++;
                        defer(w, a);
                } else {
                        outcome(ps, o, &f);
                }
        }
        if (dirfd >= 0) {
                remove_tree(dirfd);
                close(dirfd);
        }
        (void)rmdir(dir);
        return 0;
}

static void history_server(struct pass *ps, const struct policy_history_server *hs)
{
        struct hs_walk w = {.ps = ps, .hs = hs};
        struct util_error err = {0};
        _cleanup_free_ char *text = NULL;
        char url[POLICY_SERVICE_PATH_MAX + 128], state[POLICY_SERVICE_PATH_MAX + 16];
        int64_t since = 0;
        size_t len = 0;
        int r;

        /* the applications that ended since a day before the newest end seen (a late log of
         * an attempt that ended earlier shows up within the day) */
        hs_state_name(hs->url, state, sizeof(state));
        tuner_hs_shown_url(hs->url, w.shown, sizeof(w.shown));
        r = tuner_store_state(ps->in.store, state, &since, &err);
        if (r < 0) {
                log_error("history store: %s", err.text);
                ps->store_failed = true;
                return;
        }
        if (r > 0 && since > INT64_C(86400000)) {
                time_t t = (time_t)((since - INT64_C(86400000)) / 1000);
                struct tm tm;
                char when[40];

                gmtime_r(&t, &tm);
                strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S.000GMT", &tm);
                snprintf(url, sizeof(url), "%s/api/v1/applications?status=completed&minEndDate=%s",
                         hs->url, when);
        } else {
                snprintf(url, sizeof(url), "%s/api/v1/applications?status=completed", hs->url);
        }
        if (tuner_hs_get(url, TUNER_HS_LIST_MAX, 120, &text, &len, &err) < 0) {
                log_warn("tune-service: History Server %s; tried again at the next pass", err.text);
                return;
        }
        w.newest_end_ms = since;
        if (tuner_hs_parse_list(text, len, hs_attempt, &w, &err) < 0 && !ps->store_failed) {
                log_warn("tune-service: History Server %s: its application list: %s", w.shown,
                         err.text);
                return;
        }
        /* never past an attempt left for the next pass: it must be listed again */
        if (w.deferred_end_ms && w.deferred_end_ms - 1 < w.newest_end_ms)
                w.newest_end_ms = w.deferred_end_ms - 1;
        if (!ps->store_failed && w.newest_end_ms > since &&
            (tuner_store_begin(ps->in.store, &err) < 0 ||
             tuner_store_set_state(ps->in.store, state, w.newest_end_ms, &err) < 0 ||
             tuner_store_commit(ps->in.store, &err) < 0)) {
                tuner_store_rollback(ps->in.store, NULL);
                log_error("history store: %s", err.text);
                ps->store_failed = true;
        }
}

/* publish for every (owner, job) of the runs the pass touched */
static void publish(struct pass *ps, struct tuner_bounds *b)
{
        struct util_error err = {0};
        struct {
                uint32_t owner;
                char job[TUNER_JOB_MAX];
        } *keys = NULL;
        size_t n = 0;

        if (!ps->touched.n)
                return;
        qsort(ps->touched.ids, ps->touched.n, sizeof(*ps->touched.ids), compare_ids);
        keys = calloc(ps->touched.n, sizeof(*keys));
        if (!keys) {
                log_error("tune-service: out of memory; nothing published this pass");
                return;
        }
        for (size_t i = 0; i < ps->touched.n; i++) {
                bool seen = false;
                int r;

                if (i && strcmp(ps->touched.ids[i], ps->touched.ids[i - 1]) == 0)
                        continue;
                r = tuner_store_run_key(ps->in.store, ps->touched.ids[i], keys[n].job,
                                        &keys[n].owner, &err);
                if (r < 0) {
                        log_error("history store: %s", err.text);
                        ps->store_failed = true;
                        break;
                }
                for (size_t j = 0; r > 0 && j < n && !seen; j++)
                        seen =
                            keys[j].owner == keys[n].owner && strcmp(keys[j].job, keys[n].job) == 0;
                if (r > 0 && !seen)
                        n++;
        }
        for (size_t i = 0; i < n && !ps->store_failed; i++) {
                _cleanup_free_ struct tuner_run *runs = NULL;
                struct tuner_published pub;
                size_t nr = 0;

                if (tuner_store_runs(ps->in.store, keys[i].job, (int64_t)keys[i].owner,
                                     b->history_runs, &runs, &nr, &err) < 0) {
                        log_error("history store: %s", err.text);
                        ps->store_failed = true;
                        break;
                }
                if (nr == 0)
                        continue;
                tuner_mark_runtime(runs, nr, b->runtime_allowance);
                if (tuner_publish_decide(runs, nr, b, ps->policy->overrides, keys[i].owner,
                                         keys[i].job, &pub, &err) < 0 ||
                    tuner_publish_write(ps->policy->tuner.service.publish_dir, keys[i].owner,
                                        keys[i].job, &pub, ps->now,
                                        ps->policy->tuner.service.expiry_seconds, &err) < 0) {
                        char shown[TUNER_JOB_MAX];

                        log_error("tune-service: job '%s' of uid %" PRIu32 ": not published: %s",
                                  tuner_cli_printable(keys[i].job, shown, sizeof(shown)),
                                  keys[i].owner, err.text);
                        continue;
                }
                ps->published++;
        }
        free(keys);
}

/* One pass; 0, or TUNER_EXIT_STORE when the store failed (what was committed stays). */
static int pass(const struct policy *p, const char *db, bool verbose)
{
        const struct policy_tuner_service *svc = &p->tuner.service;
        struct pass ps = {
            .policy = p,
            .in =
                {
                    .job_key = p->tuner.job_key,
                    .line_max = TUNER_REPORT_LINE_MAX,
                    .input_max = TUNER_REPORT_INPUT_MAX,
                    .complete_lines = true,
                    .skip_bad_lines = true,
                    .quiet = true,
                    .touched = touch,
                },
            .now = time(NULL),
        };
        struct util_error err = {0};
        struct tuner_bounds b;
        struct timespec t0, t1;
        char shown[512];
        int status = 0;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        ps.in.userdata = &ps.touched;
        tuner_store_describe(db, shown, sizeof(shown));
        if (tuner_store_open(db, &ps.in.store, &err) < 0) {
                log_error("history store %s: %s; the next pass tries again", shown, err.text);
                return TUNER_EXIT_STORE;
        }
        if (tuner_store_files(ps.in.store, checkpoint_put, &ps.known, &err) < 0) {
                log_error("history store %s: %s; the next pass tries again", shown, err.text);
                status = TUNER_EXIT_STORE;
                goto out;
        }
        for (size_t i = 0; i < svc->n_reports && !ps.store_failed; i++)
                walk(&ps, AT_FDCWD, svc->reports[i], svc->reports[i], REPORTS, 0);
        for (size_t i = 0; i < svc->n_eventlogs && !ps.store_failed; i++)
                walk(&ps, AT_FDCWD, svc->eventlogs[i], svc->eventlogs[i], EVENTLOGS, 0);
        if (!ps.store_failed && !ps.walk_failed)
                forget_unseen(&ps);
        for (size_t i = 0; i < svc->n_history_servers && !ps.store_failed; i++)
                history_server(&ps, &svc->history_servers[i]);
        if (ps.unmapped)
                log_warn("tune-service: %lu History Server attempts skipped: their sparkUser is "
                         "no local user, or root (tuner.service.history_servers owner "
                         "\"spark_user\")",
                         ps.unmapped);
        tuner_bounds_from_policy(p, &b);
        if (!ps.store_failed)
                publish(&ps, &b);
        if (!ps.store_failed && (tuner_store_begin(ps.in.store, &err) < 0 ||
                                 tuner_store_set_state(ps.in.store, LAST_PASS, ps.now, &err) < 0 ||
                                 tuner_store_commit(ps.in.store, &err) < 0)) {
                log_error("history store %s: %s", shown, err.text);
                ps.store_failed = true;
        }
        if (ps.store_failed) {
                log_error("tune-service: the pass stopped at a history store failure; what was "
                          "stored stays, the next pass reads the rest");
                status = TUNER_EXIT_STORE;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (verbose || ps.read || ps.refused || ps.published || status)
                printf("tune-service: %lu files, %lu known, %lu read, %lu refused, %lu in "
                       "progress, %lu lines skipped; %zu runs touched, %lu jobs published; "
                       "%.3f s\n",
                       ps.files, ps.known_files, ps.read, ps.refused, ps.waiting,
                       ps.in.skipped_lines, ps.touched.n, ps.published,
                       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        fflush(stdout);
out:
        tuner_store_close(ps.in.store);
        free(ps.known.v);
        free(ps.touched.ids);
        return status;
}

/* Is a pass due: none for period_seconds (the store's last_pass)? Errors say yes. */
static bool due(const char *db, unsigned period)
{
        struct tuner_store *s = NULL;
        struct util_error err = {0};
        int64_t last = 0;
        int r;

        if (tuner_store_open(db, &s, &err) < 0)
                return true;
        r = tuner_store_state(s, LAST_PASS, &last, &err);
        tuner_store_close(s);
        return r <= 0 || time(NULL) - last >= (int64_t)period || time(NULL) < last;
}

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
        (void)sig;
        stopping = 1;
}

static int help(FILE *f, int status)
{
        fputs("usage: sparkshim tune-service [--once [--force]] [--verbose] [--policy FILE] "
              "[--db DB]\n"
              "Read new executor reports and event logs of the policy's tuner.service\n"
              "directories into the history, and publish each touched job's next settings\n"
              "for spark-submit (sparkshim-tune(1)).\n"
              "  --once          one pass if one is due (none for tuner.service.period_seconds),\n"
              "                  then exit: sparkshim-tune.timer's way\n"
              "  --force         with --once: pass even when none is due\n"
              "  --verbose       a summary line after every pass, not only busy ones\n"
              "  --policy FILE   the policy (default " SPARKSHIM_DEFAULT_POLICY ")\n"
              "  --db DB         the history store (default: the policy's tuner.db)\n"
              "Without --once, a pass every tuner.service.period_seconds until SIGTERM or SIGINT.\n"
              "Exit status: 0; 3 when the history store failed (what was stored stays, the next\n"
              "pass reads the rest); 120 for a bad flag; 121 for the policy.\n",
              f);
        return status;
}

int tuner_cli_service(int argc, char **argv)
{
        static const struct option options[] = {
            {"once", no_argument, NULL, 'o'},
            {"force", no_argument, NULL, 'f'},
            {"verbose", no_argument, NULL, 'v'},
            {"db", required_argument, NULL, 'd'},
            {"policy", required_argument, NULL, 'p'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        const char *db = NULL, *policy_path = SPARKSHIM_DEFAULT_POLICY;
        bool once = false, force = false, verbose = false, policy_explicit = false;
        struct policy policy;
        int c, status;

        optind = 1;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                switch (c) {
                case 'o':
                        once = true;
                        break;
                case 'f':
                        force = true;
                        break;
                case 'v':
                        verbose = true;
                        break;
                case 'd':
                        db = optarg;
                        break;
                case 'p':
                        policy_path = optarg;
                        policy_explicit = true;
                        break;
                case 'h':
                        return help(stdout, 0);
                default:
                        return help(stderr, SHIM_EXIT_USAGE);
                }
        }
        if (optind < argc) {
                log_error("tune-service: unexpected argument '%s'; the directories are the "
                          "policy's tuner.service",
                          argv[optind]);
                return help(stderr, SHIM_EXIT_USAGE);
        }
        if (force && !once) {
                log_error("tune-service: --force needs --once");
                return SHIM_EXIT_USAGE;
        }
        status = tuner_cli_load_policy(policy_path, policy_explicit, &policy);
        if (status)
                return status;
        if (!db)
                db = policy.tuner.db;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
                log_error("tune-service: libcurl cannot start");
                return SHIM_EXIT_INTERNAL;
        }
        status = tuner_cli_check_db(db);
        if (status)
                return status;
        if (policy.tuner.service.n_reports + policy.tuner.service.n_eventlogs +
                policy.tuner.service.n_history_servers ==
            0)
                log_warn("tune-service: policy %s names no tuner.service.reports or "
                         "tuner.service.eventlogs directory: nothing to read",
                         policy_path);
        if (once)
                return force || due(db, policy.tuner.service.period_seconds)
                           ? pass(&policy, db, verbose)
                           : 0;

        struct sigaction sa = {.sa_handler = on_stop};
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        while (!stopping) {
                struct timespec start, now;

                clock_gettime(CLOCK_MONOTONIC, &start);
                status = pass(&policy, db, verbose);
                /* a store outage ends no service: the next pass tries again */
                do {
                        clock_gettime(CLOCK_MONOTONIC, &now);
                        if (now.tv_sec - start.tv_sec >=
                            (time_t)policy.tuner.service.period_seconds)
                                break;
                } while (!stopping && (poll(NULL, 0, 1000) >= 0 || errno == EINTR));
        }
        return status == TUNER_EXIT_STORE ? TUNER_EXIT_STORE : 0;
}
