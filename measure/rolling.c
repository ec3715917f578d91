/* SPDX-License-Identifier: Apache-2.0 */
/* Executor rolling: the trigger state machine and the SigCgt reading (rolling.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "rolling.h"

#define NS_PER_S UINT64_C(1000000000)

/*
 * History for the windows: samples at least spacing_ns apart, spacing = the longest window /
 * (HISTORY_MAX / 2), so the ring always reaches a whole window back (twice over) and a
 * window's start is at most spacing late: the figure is over [W, W + W/256].
 */
#define HISTORY_MAX 512

enum state {
        STATE_WATCHING = 0,
        STATE_DECOMMISSIONING, /* SIGPWR decided; waiting out the rolling grace */
        STATE_DONE,            /* TERM decided */
};

struct rolling {
        struct policy_rolling p;
        uint64_t start_ns;
        uint64_t spacing_ns;
        struct rolling_sample history[HISTORY_MAX]; /* a ring, newest at head - 1 */
        size_t head, n;
        uint64_t last_ns;
        enum state state;
        uint64_t decommission_ns;
        enum rolling_trigger decommissioned_by;
        bool fired[ROLLING_TRIGGER_COUNT];
        uint64_t fired_ns[ROLLING_TRIGGER_COUNT];
        struct rolling_counts counts;
};

static const char *const trigger_names[ROLLING_TRIGGER_COUNT] = {
    [ROLLING_TRIGGER_NONE] = "none",
    [ROLLING_TRIGGER_DISK_WRITE] = "disk_write",
    [ROLLING_TRIGGER_AGE] = "age",
    [ROLLING_TRIGGER_MEMORY_HIGH] = "memory_high",
    [ROLLING_TRIGGER_PRESSURE_SOME] = "memory_pressure_some",
    [ROLLING_TRIGGER_PRESSURE_FULL] = "memory_pressure_full",
    [ROLLING_TRIGGER_SPILLS] = "spills",
};

const char *rolling_trigger_name(enum rolling_trigger t)
{
        return (unsigned)t < ROLLING_TRIGGER_COUNT ? trigger_names[t] : "none";
}

const char *rolling_action_name(enum rolling_action a)
{
        switch (a) {
        case ROLLING_DECOMMISSION:
                return "decommission";
        case ROLLING_UNAVAILABLE:
                return "unavailable";
        case ROLLING_TERMINATE:
                return "terminate";
        case ROLLING_NONE:
                break;
        }
        return "none";
}

struct rolling_sample rolling_sample_unknown(uint64_t t_ns)
{
        return (struct rolling_sample){
            .t_ns = t_ns,
            .disk_write_bytes = ROLLING_UNKNOWN,
            .memory_high_events = ROLLING_UNKNOWN,
            .psi_some_us = ROLLING_UNKNOWN,
            .psi_full_us = ROLLING_UNKNOWN,
            .spills_forced = ROLLING_UNKNOWN,
            .spills_ineffective = ROLLING_UNKNOWN,
            .sigpwr = ROLLING_SIGPWR_UNKNOWN,
        };
}

static uint64_t seconds_ns(uint64_t s)
{
        return s > UINT64_MAX / NS_PER_S ? UINT64_MAX : s * NS_PER_S;
}

struct rolling *rolling_new(const struct policy_rolling *p, uint64_t start_ns)
{
        struct rolling *r = calloc(1, sizeof(*r));
        uint64_t longest = 0;

        if (!r)
                return NULL;
        r->p = *p;
        r->start_ns = start_ns;
        r->last_ns = start_ns;
        if (p->memory_high_events && p->memory_high_window_seconds > longest)
                longest = p->memory_high_window_seconds;
        if ((p->pressure_some_percent > 0 || p->pressure_full_percent > 0) &&
            p->pressure_window_seconds > longest)
                longest = p->pressure_window_seconds;
        if (p->spills_ineffective && p->spills_window_seconds > longest)
                longest = p->spills_window_seconds;
        r->spacing_ns = longest ? seconds_ns(longest) / (HISTORY_MAX / 2) : NS_PER_S;
        if (r->spacing_ns == 0)
                r->spacing_ns = 1;
        return r;
}

void rolling_free(struct rolling *r)
{
        free(r);
}

void rolling_counts(const struct rolling *r, struct rolling_counts *ret)
{
        *ret = r->counts;
}

bool rolling_decommissioning(const struct rolling *r)
{
        return r->state != STATE_WATCHING;
}

static const struct rolling_sample *newest(const struct rolling *r)
{
        return r->n ? &r->history[(r->head + HISTORY_MAX - 1) % HISTORY_MAX] : NULL;
}

static void remember(struct rolling *r, const struct rolling_sample *s)
{
        const struct rolling_sample *last = newest(r);

        if (last && s->t_ns - last->t_ns < r->spacing_ns)
                return;
        r->history[r->head] = *s;
        r->head = (r->head + 1) % HISTORY_MAX;
        if (r->n < HISTORY_MAX)
                r->n++;
}

/* The newest remembered sample at least window_ns before now, or NULL (not that old yet). */
static const struct rolling_sample *window_start(const struct rolling *r, uint64_t now,
                                                 uint64_t window_ns)
{
        if (now < window_ns)
                return NULL;
        for (size_t i = 1; i <= r->n; i++) {
                const struct rolling_sample *h =
                    &r->history[(r->head + HISTORY_MAX - i) % HISTORY_MAX];
                if (h->t_ns <= now - window_ns)
                        return h;
        }
        return NULL;
}

/* A counter's growth from a to b; false when either is unknown or it went down. */
static bool growth(uint64_t a, uint64_t b, uint64_t *ret)
{
        if (a == ROLLING_UNKNOWN || b == ROLLING_UNKNOWN || b < a)
                return false;
        *ret = b - a;
        return true;
}

/* What a trigger saw when it fired. */
struct firing {
        enum rolling_trigger trigger;
        double value, threshold;
        const char *unit;
        uint64_t window_ns;
        char what[224]; /* the figure in words, without the action */
};

static bool check_disk(const struct rolling *r, const struct rolling_sample *s, struct firing *f)
{
        if (!r->p.disk_write_bytes || s->disk_write_bytes == ROLLING_UNKNOWN ||
            s->disk_write_bytes < r->p.disk_write_bytes)
                return false;
        *f = (struct firing){.value = (double)s->disk_write_bytes,
                             .threshold = (double)r->p.disk_write_bytes,
                             .unit = "bytes"};
        snprintf(f->what, sizeof(f->what),
                 "%" PRIu64 " bytes written since the start >= %" PRIu64
                 " (rolling.disk_write.bytes)",
                 s->disk_write_bytes, r->p.disk_write_bytes);
        return true;
}

static bool check_age(const struct rolling *r, const struct rolling_sample *s, struct firing *f)
{
        uint64_t age = s->t_ns - r->start_ns;

        if (!r->p.age_seconds || age < seconds_ns(r->p.age_seconds))
                return false;
        *f = (struct firing){
            .value = (double)age / 1e9, .threshold = (double)r->p.age_seconds, .unit = "seconds"};
        snprintf(f->what, sizeof(f->what), "running %.0f s >= %" PRIu64 " s (rolling.age.seconds)",
                 (double)age / 1e9, r->p.age_seconds);
        return true;
}

static bool check_memory_high(const struct rolling *r, const struct rolling_sample *s,
                              struct firing *f)
{
        const struct rolling_sample *h;
        uint64_t events;

        if (!r->p.memory_high_events)
                return false;
        h = window_start(r, s->t_ns, seconds_ns(r->p.memory_high_window_seconds));
        if (!h || !growth(h->memory_high_events, s->memory_high_events, &events) ||
            events < r->p.memory_high_events)
                return false;
        *f = (struct firing){.value = (double)events,
                             .threshold = (double)r->p.memory_high_events,
                             .unit = "events",
                             .window_ns = s->t_ns - h->t_ns};
        snprintf(f->what, sizeof(f->what),
                 "memory.events high +%" PRIu64 " in %.1f s >= %" PRIu64
                 " (rolling.memory_high.events)",
                 events, (double)f->window_ns / 1e9, r->p.memory_high_events);
        return true;
}

static bool check_pressure(const struct rolling *r, const struct rolling_sample *s, bool full,
                           struct firing *f)
{
        double threshold = full ? r->p.pressure_full_percent : r->p.pressure_some_percent;
        const struct rolling_sample *h;
        uint64_t stall_us, span;
        double percent;

        if (!(threshold > 0))
                return false;
        h = window_start(r, s->t_ns, seconds_ns(r->p.pressure_window_seconds));
        if (!h || !growth(full ? h->psi_full_us : h->psi_some_us,
                          full ? s->psi_full_us : s->psi_some_us, &stall_us))
                return false;
        span = s->t_ns - h->t_ns;
        if (span == 0)
                return false;
        percent = (double)stall_us * 1e3 / (double)span * 100.0;
        if (percent < threshold)
                return false;
        *f = (struct firing){
            .value = percent, .threshold = threshold, .unit = "percent", .window_ns = span};
        snprintf(f->what, sizeof(f->what),
                 "memory.pressure %s stalled %.1f%% of %.1f s >= %g%% "
                 "(rolling.memory_pressure.%s_percent)",
                 full ? "full" : "some", percent, (double)span / 1e9, threshold,
                 full ? "full" : "some");
        return true;
}

static bool check_spills(const struct rolling *r, const struct rolling_sample *s, struct firing *f)
{
        const struct rolling_sample *h;
        uint64_t ineffective, forced = 0;
        bool have_forced;

        if (!r->p.spills_ineffective)
                return false;
        h = window_start(r, s->t_ns, seconds_ns(r->p.spills_window_seconds));
        if (!h || !growth(h->spills_ineffective, s->spills_ineffective, &ineffective) ||
            ineffective < r->p.spills_ineffective)
                return false;
        have_forced = growth(h->spills_forced, s->spills_forced, &forced);
        if (r->p.spills_fraction > 0 &&
            (!have_forced || forced == 0 ||
             (double)ineffective / (double)forced < r->p.spills_fraction))
                return false;
        *f = (struct firing){.value = (double)ineffective,
                             .threshold = (double)r->p.spills_ineffective,
                             .unit = "spills",
                             .window_ns = s->t_ns - h->t_ns};
        if (have_forced && r->p.spills_fraction > 0)
                snprintf(f->what, sizeof(f->what),
                         "%" PRIu64 " of %" PRIu64 " forced spills released nothing in %.1f s"
                         " >= %" PRIu64 " (rolling.spills.ineffective), %.0f%% >= %g%%"
                         " (rolling.spills.fraction)",
                         ineffective, forced, (double)f->window_ns / 1e9, r->p.spills_ineffective,
                         100.0 * (double)ineffective / (double)forced,
                         100.0 * r->p.spills_fraction);
        else if (have_forced)
                snprintf(f->what, sizeof(f->what),
                         "%" PRIu64 " of %" PRIu64 " forced spills released nothing in %.1f s"
                         " >= %" PRIu64 " (rolling.spills.ineffective)",
                         ineffective, forced, (double)f->window_ns / 1e9, r->p.spills_ineffective);
        else
                snprintf(f->what, sizeof(f->what),
                         "%" PRIu64 " forced spills released nothing in %.1f s >= %" PRIu64
                         " (rolling.spills.ineffective)",
                         ineffective, (double)f->window_ns / 1e9, r->p.spills_ineffective);
        return true;
}

static uint64_t cooldown_seconds(const struct policy_rolling *p, enum rolling_trigger t)
{
        switch (t) {
        case ROLLING_TRIGGER_DISK_WRITE:
                return p->disk_write_cooldown_seconds;
        case ROLLING_TRIGGER_AGE:
                return p->age_cooldown_seconds;
        case ROLLING_TRIGGER_MEMORY_HIGH:
                return p->memory_high_cooldown_seconds;
        case ROLLING_TRIGGER_PRESSURE_SOME:
        case ROLLING_TRIGGER_PRESSURE_FULL:
                return p->pressure_cooldown_seconds;
        case ROLLING_TRIGGER_SPILLS:
                return p->spills_cooldown_seconds;
        case ROLLING_TRIGGER_NONE:
        case ROLLING_TRIGGER_COUNT:
                break;
        }
        return 0;
}

static bool cooling_down(const struct rolling *r, enum rolling_trigger t, uint64_t now)
{
        return r->fired[t] && now - r->fired_ns[t] < seconds_ns(cooldown_seconds(&r->p, t));
}

/* The first trigger that fires on s and is not cooling down. */
static bool first_firing(const struct rolling *r, const struct rolling_sample *s, struct firing *f)
{
        for (enum rolling_trigger t = ROLLING_TRIGGER_DISK_WRITE; t < ROLLING_TRIGGER_COUNT; t++) {
                bool hit = false;

                if (cooling_down(r, t, s->t_ns))
                        continue;
                switch (t) {
                case ROLLING_TRIGGER_DISK_WRITE:
                        hit = check_disk(r, s, f);
                        break;
                case ROLLING_TRIGGER_AGE:
                        hit = check_age(r, s, f);
                        break;
                case ROLLING_TRIGGER_MEMORY_HIGH:
                        hit = check_memory_high(r, s, f);
                        break;
                case ROLLING_TRIGGER_PRESSURE_SOME:
                case ROLLING_TRIGGER_PRESSURE_FULL:
                        hit = check_pressure(r, s, t == ROLLING_TRIGGER_PRESSURE_FULL, f);
                        break;
                case ROLLING_TRIGGER_SPILLS:
                        hit = check_spills(r, s, f);
                        break;
                case ROLLING_TRIGGER_NONE:
                case ROLLING_TRIGGER_COUNT:
                        break;
                }
                if (hit) {
                        f->trigger = t;
                        return true;
                }
        }
        return false;
}

static const char *sigpwr_text(enum rolling_sigpwr s)
{
        return s == ROLLING_SIGPWR_NOT_CAUGHT
                   ? "the JVM does not catch SIGPWR (spark.decommission.enabled is false, or "
                     "spark.executor.decommission.signal is not PWR)"
                   : "no executor JVM was found in its cgroup (not started yet, or gone)";
}

int rolling_feed(struct rolling *r, const struct rolling_sample *s, struct rolling_decision *ret)
{
        struct firing f;

        *ret = (struct rolling_decision){
            .action = ROLLING_NONE, .t_ns = s->t_ns, .sample = *s, .unit = ""};
        if (s->t_ns < r->last_ns)
                return -EINVAL;
        r->last_ns = s->t_ns;
        ret->age_ns = s->t_ns - r->start_ns;
        if (!r->p.enabled || r->state == STATE_DONE)
                return 0;

        if (r->state == STATE_DECOMMISSIONING) {
                if (s->t_ns - r->decommission_ns < seconds_ns(r->p.grace_seconds))
                        return 0;
                r->state = STATE_DONE;
                r->counts.terminate++;
                ret->action = ROLLING_TERMINATE;
                ret->trigger = r->decommissioned_by;
                ret->value = (double)(s->t_ns - r->decommission_ns) / 1e9;
                ret->threshold = (double)r->p.grace_seconds;
                ret->unit = "seconds";
                snprintf(ret->reason, sizeof(ret->reason),
                         "%s: still running %.1f s after SIGPWR >= %" PRIu64
                         " s (rolling.grace_seconds): TERM",
                         rolling_trigger_name(r->decommissioned_by), ret->value,
                         r->p.grace_seconds);
                return 0;
        }

        remember(r, s);
        if (ret->age_ns < seconds_ns(r->p.min_age_seconds) || !first_firing(r, s, &f))
                return 0;

        r->fired[f.trigger] = true;
        r->fired_ns[f.trigger] = s->t_ns;
        r->counts.by_trigger[f.trigger]++;
        ret->trigger = f.trigger;
        ret->value = f.value;
        ret->threshold = f.threshold;
        ret->unit = f.unit;
        ret->window_ns = f.window_ns;
        if (s->sigpwr == ROLLING_SIGPWR_CAUGHT) {
                r->state = STATE_DECOMMISSIONING;
                r->decommission_ns = s->t_ns;
                r->decommissioned_by = f.trigger;
                r->counts.decommission++;
                ret->action = ROLLING_DECOMMISSION;
                snprintf(ret->reason, sizeof(ret->reason), "%s: %s: SIGPWR",
                         rolling_trigger_name(f.trigger), f.what);
        } else {
                r->counts.unavailable++;
                ret->action = ROLLING_UNAVAILABLE;
                snprintf(ret->reason, sizeof(ret->reason), "%s: %s, but %s: not rolled",
                         rolling_trigger_name(f.trigger), f.what, sigpwr_text(s->sigpwr));
        }
        return 0;
}

int rolling_decommission_failed(struct rolling *r, struct rolling_decision *d, const char *why)
{
        static const char sent[] = ": SIGPWR";
        char reason[ROLLING_REASON_MAX];
        size_t len;

        if (r->state != STATE_DECOMMISSIONING || d->action != ROLLING_DECOMMISSION)
                return -EINVAL;
        r->state = STATE_WATCHING;
        r->counts.decommission--;
        r->counts.unavailable++;
        d->action = ROLLING_UNAVAILABLE;
        /* "<trigger>: <what>: SIGPWR" becomes "<trigger>: <what>, but SIGPWR failed: <why>: not
         * rolled" */
        snprintf(reason, sizeof(reason), "%s", d->reason);
        len = strlen(reason);
        if (len >= sizeof(sent) - 1 && strcmp(reason + len - (sizeof(sent) - 1), sent) == 0)
                reason[len - (sizeof(sent) - 1)] = '\0';
        snprintf(d->reason, sizeof(d->reason), "%s, but SIGPWR failed: %s: not rolled", reason,
                 why);
        return 0;
}

/* ---------------------------------------------------------------------------------- */
/* /proc/<pid>/status                                                                  */

int rolling_status_sigcgt(const char *text, size_t len, uint64_t *ret_mask)
{
        static const char key[] = "SigCgt:";
        const size_t klen = sizeof(key) - 1;
        uint64_t mask = 0;
        unsigned found = 0;
        size_t at = 0;

        if (!text)
                return -EINVAL;
        while (at < len) {
                const char *line = text + at, *nl = memchr(line, '\n', len - at);
                size_t n = nl ? (size_t)(nl - line) : len - at, i = klen, digits = 0;
                uint64_t m = 0;

                at += n + 1;
                if (n < klen || memcmp(line, key, klen) != 0)
                        continue;
                if (++found > 1)
                        return -EINVAL;
                while (i < n && (line[i] == '\t' || line[i] == ' '))
                        i++;
                for (; i < n; i++, digits++) {
                        int d = util_hex_digit(line[i]);
                        if (d < 0 || digits == 16)
                                return -EINVAL;
                        m = m << 4 | (uint64_t)d;
                }
                if (digits == 0 || !nl)
                        return -EINVAL; /* a cut-off read is not acted upon */
                mask = m;
        }
        if (!found)
                return -EINVAL;
        *ret_mask = mask;
        return 0;
}

enum rolling_sigpwr rolling_sigpwr_from_mask(uint64_t mask, int sig)
{
        if (sig < 1 || sig > 64)
                return ROLLING_SIGPWR_UNKNOWN;
        return mask & (UINT64_C(1) << (sig - 1)) ? ROLLING_SIGPWR_CAUGHT
                                                 : ROLLING_SIGPWR_NOT_CAUGHT;
}
