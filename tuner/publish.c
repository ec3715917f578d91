/* SPDX-License-Identifier: Apache-2.0 */
/* What `sparkshim tune-service` publishes for a job, and the file it publishes (publish.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <nettle/sha2.h>

#include "policy.h"
#include "publish.h"
#include "util.h"

bool tuner_config_id_valid(const char *s)
{
        if (strncmp(s, "next-", 5) != 0 && strncmp(s, "safe-", 5) != 0)
                return false;
        s += 5;
        for (int i = 0; i < 16; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return s[16] == '\0';
}

/* Did the run the values come from know this one? A size or a request the job never set
 * (Spark's default, no sparkshim report) is unknown, and the stages clamp an unknown value
 * to a bound: published, it would move the job to the policy's maximum. */
static bool known_in(const struct tuner_params *from, enum tuner_param_index param)
{
        switch (param) {
        case TUNER_P_HEAP:
                return from->heap_bytes != TUNER_UNKNOWN;
        case TUNER_P_OVERHEAD:
                return from->overhead_bytes != TUNER_UNKNOWN;
        case TUNER_P_MILLICORES:
                return from->millicores != TUNER_UNKNOWN;
        case TUNER_P_CORES:
                return from->cores != 0;
        case TUNER_P_BURST_RATIO:
                return isfinite(from->burst_ratio);
        default:
                return true;
        }
}

/* the properties of params that the submit side takes (policy_published_check()), but those
 * the run they come from (from) did not know */
static void config_of(const struct tuner_params *params, const struct tuner_params *from,
                      const struct tuner_bounds *b, unsigned overrides,
                      struct tuner_published_config *c)
{
        struct tuner_property all[TUNER_PROPERTIES_MAX];
        size_t n = tuner_properties(params, b, overrides, all);

        c->n = 0;
        for (size_t i = 0; i < n; i++)
                if (known_in(from, all[i].param) &&
                    policy_published_check(all[i].key, all[i].value) == 0)
                        c->conf[c->n++] = all[i];
        c->present = c->n > 0;
}

/* "<kind>-" and the first 8 bytes of SHA-256 over owner, job and the properties: the same
 * settings get the same id, which is how the submit side knows a retry */
static void config_id(struct tuner_published_config *c, const char *kind, uint32_t owner,
                      const char *job)
{
        struct sha256_ctx ctx;
        uint8_t digest[SHA256_DIGEST_SIZE];
        char head[32], hex[17];
        int n;

        sha256_init(&ctx);
        n = snprintf(head, sizeof(head), "%" PRIu32 "%c%s%c", owner, 0, kind, 0);
        sha256_update(&ctx, (size_t)n, (const uint8_t *)head);
        sha256_update(&ctx, strlen(job) + 1, (const uint8_t *)job);
        for (size_t i = 0; i < c->n; i++) {
                sha256_update(&ctx, strlen(c->conf[i].key) + 1, (const uint8_t *)c->conf[i].key);
                sha256_update(&ctx, strlen(c->conf[i].value) + 1,
                              (const uint8_t *)c->conf[i].value);
        }
        sha256_digest(&ctx, sizeof(digest), digest);
        snprintf(c->id, sizeof(c->id), "%s-%s", kind, util_hex(digest, 8, hex));
}

static uint64_t with_margin(uint64_t v)
{
        return v == TUNER_UNKNOWN ? v : (uint64_t)ceil((double)v * TUNER_SAFE_MARGIN);
}

/* the successful run safe is taken from: the best objective, else the newest */
static const struct tuner_run *proven(const struct tuner_run *runs, size_t n)
{
        const struct tuner_run *best = NULL;

        for (size_t i = 0; i < n; i++) {
                const struct tuner_run *r = &runs[i];

                if (r->failure != TUNER_OK)
                        continue;
                if (!best || (isfinite(r->objective) &&
                              (!isfinite(best->objective) || r->objective < best->objective)))
                        best = r;
        }
        return best;
}

int tuner_publish_decide(struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                         unsigned overrides, uint32_t owner, const char *job,
                         struct tuner_published *ret, struct util_error *err)
{
        struct tuner_recommendation rec;
        const struct tuner_run *ok;
        unsigned failures = 0;
        size_t window = n < TUNER_HOLD_WINDOW ? n : TUNER_HOLD_WINDOW;
        int r;

        *ret = (struct tuner_published){0};
        if (n == 0)
                return util_error_set(err, ENODATA, "no runs");
        for (size_t i = 0; i < n && ret->n_ran < TUNER_HOLD_WINDOW; i++) {
                bool seen = !runs[i].config[0];

                for (size_t k = 0; k < ret->n_ran && !seen; k++)
                        seen = strcmp(ret->ran[k], runs[i].config) == 0;
                if (!seen)
                        snprintf(ret->ran[ret->n_ran++], sizeof(ret->ran[0]), "%s", runs[i].config);
        }
        for (size_t i = 0; i < window; i++)
                failures += runs[i].failure != TUNER_OK;

        ok = proven(runs, n);
        if (ok) {
                struct tuner_params safe = ok->params;
                struct tuner_reason reasons[TUNER_P_COUNT];

                safe.heap_bytes = with_margin(safe.heap_bytes);
                safe.overhead_bytes = with_margin(safe.overhead_bytes);
                safe.millicores = with_margin(safe.millicores);
                /* each known value within the bounds; an unknown one stays out (config_of) */
                if (safe.heap_bytes == TUNER_UNKNOWN)
                        safe.heap_bytes = b->heap_min_bytes;
                if (safe.overhead_bytes == TUNER_UNKNOWN)
                        safe.overhead_bytes = b->overhead_min_bytes;
                if (safe.millicores == TUNER_UNKNOWN)
                        safe.millicores = b->millicores_min;
                tuner_clamp(&safe, reasons, b);
                config_of(&safe, &ok->params, b, overrides, &ret->safe);
                if (ret->safe.present)
                        config_id(&ret->safe, "safe", owner, job);
                snprintf(ret->safe_from, sizeof(ret->safe_from), "%s", ok->app_id);
        }

        if (failures >= TUNER_HOLD_FAILURES) {
                snprintf(ret->state, sizeof(ret->state), "held");
                snprintf(ret->reason, sizeof(ret->reason),
                         "%u of the newest %zu runs failed (the newest: %s, %s); held at safe "
                         "until fewer than %d of the newest %d did",
                         failures, window, runs[0].app_id, tuner_failure_name(runs[0].failure),
                         TUNER_HOLD_FAILURES, TUNER_HOLD_WINDOW);
                return 0;
        }
        if (runs[0].failure != TUNER_OK && strncmp(runs[0].config, "next-", 5) == 0) {
                snprintf(ret->state, sizeof(ret->state), "fallback");
                snprintf(ret->reason, sizeof(ret->reason),
                         "run %s tried %s and failed (%s): the next run takes safe", runs[0].app_id,
                         runs[0].config, tuner_failure_name(runs[0].failure));
                return 0;
        }
        r = tuner_recommend(runs, n, b, &rec, err);
        if (r < 0)
                return r;
        config_of(&rec.params, &runs[0].params, b, overrides, &ret->next);
        if (ret->next.present)
                config_id(&ret->next, "next", owner, job);
        snprintf(ret->state, sizeof(ret->state), ok ? "explore" : "learning");
        snprintf(ret->reason, sizeof(ret->reason), "stage %s over %u runs%s",
                 rec.stage == TUNER_STAGE_RULES ? "rules"
                 : rec.stage == TUNER_STAGE_BO  ? "bo"
                                                : "none",
                 rec.runs_used, ok ? "" : "; no run has succeeded yet, so there is no safe");
        return 0;
}

static json_t *config_json(const struct tuner_published_config *c)
{
        json_t *o, *conf;

        if (!c->present)
                return json_null();
        conf = json_object();
        for (size_t i = 0; conf && i < c->n; i++)
                json_object_set_new(conf, c->conf[i].key, json_string(c->conf[i].value));
        o = json_pack("{s:s, s:o*}", "id", c->id, "conf", conf);
        return o;
}

/* a directory of ours: made (mode) when missing, root's (ours) and written by nobody else */
static int own_dir(int parent, const char *name, const char *shown, mode_t mode,
                   struct util_error *err)
{
        struct stat st;
        int fd;

        if (mkdirat(parent, name, mode) < 0 && errno != EEXIST)
                return util_error_set(err, errno, "%s: cannot make it: %s", shown, strerror(errno));
        fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return util_error_set(err, errno, "%s: %s", shown,
                                      errno == ELOOP || errno == ENOTDIR
                                          ? "not a directory (a symbolic link is refused)"
                                          : strerror(errno));
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
                close(fd);
                return util_error_set(err, EPERM,
                                      "%s: refused: owner %u, mode %04o; allowed: a directory of "
                                      "uid %u that no group or other user may write",
                                      shown, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
                                      (unsigned)geteuid());
        }
        /* the owners' directories are ours to shape; the top one is the admin's (a 0750 of a
         * group of submitters stays so) */
        if (parent != AT_FDCWD && (st.st_mode & 07777) != mode && fchmod(fd, mode) < 0) {
                int e = errno;

                close(fd);
                return util_error_set(err, e, "%s: cannot set mode %04o: %s", shown, (unsigned)mode,
                                      strerror(e));
        }
        return fd;
}

int tuner_publish_write(const char *dir, uint32_t owner, const char *job,
                        const struct tuner_published *p, time_t now, unsigned expiry_seconds,
                        struct util_error *err)
{
        _cleanup_close_ int top = -1, userfd = -1, fd = -1;
        _cleanup_free_ char *text = NULL;
        char name[POLICY_PUBLISHED_NAME_MAX + 8], tmp[64], uid[16], shown[1200];
        uint64_t nonce = 0;
        json_t *doc;
        size_t len, off = 0;
        int r;

        r = policy_published_name(job, name, sizeof(name));
        if (r < 0)
                return util_error_set(err, -r,
                                      "job name too long to publish (over %d bytes "
                                      "once escaped)",
                                      POLICY_PUBLISHED_NAME_MAX);
        top = own_dir(AT_FDCWD, dir, dir, 0755, err);
        if (top < 0)
                return top;
        snprintf(uid, sizeof(uid), "%" PRIu32, owner);
        snprintf(shown, sizeof(shown), "%s/%s", dir, uid);
        userfd = own_dir(top, uid, shown, 0711, err);
        if (userfd < 0)
                return userfd;

        doc = json_pack("{s:s, s:I, s:s, s:I, s:I, s:s, s:s, s:s, s:o, s:o}", "schema",
                        TUNER_PUBLISH_SCHEMA, "owner_uid", (json_int_t)owner, "job", job, "created",
                        (json_int_t)now, "expires", (json_int_t)(now + (time_t)expiry_seconds),
                        "state", p->state, "reason", p->reason, "safe_from", p->safe_from, "next",
                        config_json(&p->next), "safe", config_json(&p->safe));
        if (!doc)
                return util_error_set(err, ENOMEM,
                                      "out of memory (or a job name that is not "
                                      "UTF-8)");
        {
                json_t *ran = json_array();

                for (size_t i = 0; ran && i < p->n_ran; i++)
                        json_array_append_new(ran, json_string(p->ran[i]));
                if (!ran || json_object_set_new(doc, "ran", ran) < 0) {
                        json_decref(doc);
                        return util_error_set(err, ENOMEM, "out of memory");
                }
        }
        text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
        json_decref(doc);
        if (!text)
                return util_error_set(err, ENOMEM, "out of memory");
        len = strlen(text);

        if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != sizeof(nonce))
                nonce = (uint64_t)now ^ (uint64_t)getpid() << 32;
        snprintf(tmp, sizeof(tmp), ".tmp-%d-%016" PRIx64, (int)getpid(), nonce);
        snprintf(shown, sizeof(shown), "%s/%s/%s", dir, uid, name);
        fd = openat(userfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return util_error_set(err, errno, "%s: cannot write it: %s", shown,
                                      strerror(errno));
        while (off < len) {
                ssize_t w = write(fd, text + off, len - off);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        goto fail;
                off += (size_t)w;
        }
        if (write(fd, "\n", 1) != 1 || fchmod(fd, 0644) < 0 || fsync(fd) < 0)
                goto fail;
        if (renameat(userfd, tmp, userfd, name) < 0)
                goto fail;
        (void)fsync(userfd);
        return 0;
fail:
        r = errno ? errno : EIO;
        (void)unlinkat(userfd, tmp, 0);
        return util_error_set(err, r, "%s: cannot write it: %s", shown, strerror(r));
}
