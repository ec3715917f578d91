/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `sparkshim tune-service` publishes for a job after a pass (sparkshim-tune(1),
 * PUBLISHED SETTINGS): from the job's runs of one owner, a `next` configuration (what to try:
 * the two stages' recommendation) and a `safe` one (what a successful run proved, with
 * margins), the job's state, and the file the java personality reads at spark-submit:
 * <publish_dir>/<uid>/<policy_published_name(job)>, root's, replaced atomically.
 *
 * States: "explore" (next is the recommendation), "fallback" (the newest run tried a next
 * configuration and failed: next is null, the submit takes safe), "held" (2 or more of the
 * newest 10 runs failed: next is null until they leave the window), "learning" (no run
 * succeeded yet: safe is null).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "properties.h"
#include "tuner.h"

#define TUNER_PUBLISH_SCHEMA "sparkshim.published/v1"
/* the failures in the newest TUNER_HOLD_WINDOW runs that hold a job at safe */
#define TUNER_HOLD_FAILURES 2
#define TUNER_HOLD_WINDOW   10
/* safe's margins over what the run it is taken from asked for */
#define TUNER_SAFE_MARGIN 1.10

struct tuner_published_config {
        bool present;
        char id[24]; /* "next-<16 hex>" / "safe-<16 hex>" */
        struct tuner_property conf[TUNER_PROPERTIES_MAX];
        size_t n;
};

struct tuner_published {
        char state[16];
        char reason[TUNER_REASON_MAX];
        struct tuner_published_config next, safe;
        char safe_from[TUNER_APP_ID_MAX]; /* the run safe was taken from */
        /* the configuration ids the runs were submitted with (newest first, each once): a
         * launch of one of them that the submit side remembers is no retry */
        char ran[TUNER_HOLD_WINDOW][24];
        size_t n_ran;
};

/* Whether s is a configuration id: "next-" or "safe-" and 16 lowercase hex digits. */
bool tuner_config_id_valid(const char *s);

/*
 * Decide what to publish for job's runs of owner (newest first, runtime failures marked).
 * 0, or -ENODATA for no runs, -ENOMEM / -EINVAL with err filled.
 */
int tuner_publish_decide(struct tuner_run *runs, size_t n, const struct tuner_bounds *b,
                         unsigned overrides, uint32_t owner, const char *job,
                         struct tuner_published *ret, struct util_error *err);

/*
 * Write it to dir/<owner>/<name>: dir must exist, or its parent must (it is made 0755), and
 * be root's (the caller's) and not writable by group or others; <owner> is made 0711 (its
 * user reaches a file whose name they know; nobody lists them); the file is 0644, written
 * beside its name, synced and renamed over it. 0, or -errno with err filled; on failure the
 * file published before stays as it was.
 */
int tuner_publish_write(const char *dir, uint32_t owner, const char *job,
                        const struct tuner_published *p, time_t now, unsigned expiry_seconds,
                        struct util_error *err);
