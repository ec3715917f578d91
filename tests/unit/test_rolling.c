/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Executor rolling (measure/rolling.h): the trigger state machine over the sample series of
 * fixtures/rolling/NAME.series, and the SigCgt reading over recorded /proc/<pid>/status files.
 *
 * A series file: '#' comments; "@policy {...}" the policy's rolling section; "@start T" the
 * executor's start (default 0); sample lines "t_s disk_write_bytes memory_high psi_some_us
 * psi_full_us spills_forced spills_ineffective sigpwr" ('-' = unknown; sigpwr caught,
 * not_caught or unknown); "@expect T action trigger" for every sample whose decision is not
 * "none" (every other sample must give none).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "rolling.h"
#include "test_helpers.h"
#include "util.h"

#define SAMPLES_MAX 1024
#define EXPECT_MAX  16

struct expectation {
        uint64_t t_ns;
        char action[32], trigger[32];
        bool seen;
};

struct series {
        struct policy policy;
        uint64_t start_ns;
        struct rolling_sample samples[SAMPLES_MAX];
        size_t n;
        struct expectation expect[EXPECT_MAX];
        size_t nexpect;
};

static uint64_t seconds_to_ns(const char *file, const char *text)
{
        char *end;
        double s = strtod(text, &end);

        cr_assert(end != text && s >= 0, "%s: bad time \"%s\"", file, text);
        return (uint64_t)llround(s * 1e9);
}

static uint64_t figure(const char *file, const char *text)
{
        char *end;
        unsigned long long v;

        if (strcmp(text, "-") == 0)
                return ROLLING_UNKNOWN;
        v = strtoull(text, &end, 10);
        cr_assert(*end == '\0', "%s: bad figure \"%s\"", file, text);
        return (uint64_t)v;
}

static void parse_series(const char *path, struct series *s)
{
        char *text = read_text(path, NULL), *save = NULL;

        cr_assert(text, "cannot read %s", path);
        memset(s, 0, sizeof(*s));
        policy_init_defaults(&s->policy);
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (line[0] == '#' || line[0] == '\0')
                        continue;
                if (strncmp(line, "@policy ", 8) == 0) {
                        struct util_error err = {0};
                        char doc[2048];
                        int r;

                        snprintf(doc, sizeof(doc), "{\"version\": 1, \"rolling\": %s}", line + 8);
                        r = policy_parse(doc, strlen(doc), path, &s->policy, &err);
                        cr_assert_eq(r, 0, "%s: @policy: %s", path, err.text);
                        cr_assert(s->policy.rolling.enabled, "%s: @policy sets no trigger", path);
                } else if (strncmp(line, "@start ", 7) == 0) {
                        s->start_ns = seconds_to_ns(path, line + 7);
                } else if (strncmp(line, "@expect ", 8) == 0) {
                        struct expectation *e = &s->expect[s->nexpect];
                        char t[32];

                        cr_assert_lt(s->nexpect, EXPECT_MAX, "%s: too many @expect", path);
                        cr_assert_eq(sscanf(line + 8, "%31s %31s %31s", t, e->action, e->trigger),
                                     3, "%s: bad line \"%s\"", path, line);
                        e->t_ns = seconds_to_ns(path, t);
                        s->nexpect++;
                } else {
                        char col[8][32];
                        struct rolling_sample *x = &s->samples[s->n];

                        cr_assert_lt(s->n, SAMPLES_MAX, "%s: too many samples", path);
                        cr_assert_eq(sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %31s", col[0],
                                            col[1], col[2], col[3], col[4], col[5], col[6], col[7]),
                                     8, "%s: bad sample line \"%s\"", path, line);
                        x->t_ns = seconds_to_ns(path, col[0]);
                        x->disk_write_bytes = figure(path, col[1]);
                        x->memory_high_events = figure(path, col[2]);
                        x->psi_some_us = figure(path, col[3]);
                        x->psi_full_us = figure(path, col[4]);
                        x->spills_forced = figure(path, col[5]);
                        x->spills_ineffective = figure(path, col[6]);
                        if (strcmp(col[7], "caught") == 0)
                                x->sigpwr = ROLLING_SIGPWR_CAUGHT;
                        else if (strcmp(col[7], "not_caught") == 0)
                                x->sigpwr = ROLLING_SIGPWR_NOT_CAUGHT;
                        else {
                                cr_assert_str_eq(col[7], "unknown", "%s: bad sigpwr", path);
                                x->sigpwr = ROLLING_SIGPWR_UNKNOWN;
                        }
                        s->n++;
                }
        }
        free(text);
}

/* Run one series; returns how many decisions were not "none". */
static size_t run_series(const char *name, struct series *s)
{
        struct rolling *r = rolling_new(&s->policy.rolling, s->start_ns);
        struct rolling_counts counts;
        size_t decided = 0;

        cr_assert(r, "rolling_new");
        for (size_t i = 0; i < s->n; i++) {
                struct rolling_decision d;
                struct expectation *want = NULL;
                int rc = rolling_feed(r, &s->samples[i], &d);

                cr_assert_eq(rc, 0, "%s: sample %zu: rc %d", name, i, rc);
                for (size_t k = 0; k < s->nexpect; k++)
                        if (s->expect[k].t_ns == s->samples[i].t_ns)
                                want = &s->expect[k];
                if (!want) {
                        cr_expect_eq(
                            d.action, ROLLING_NONE, "%s: t=%.3f: %s by %s, expected none (%s)",
                            name, (double)s->samples[i].t_ns / 1e9, rolling_action_name(d.action),
                            rolling_trigger_name(d.trigger), d.reason);
                        continue;
                }
                want->seen = true;
                decided++;
                cr_expect_str_eq(rolling_action_name(d.action), want->action,
                                 "%s: t=%.3f: action %s, expected %s (%s)", name,
                                 (double)d.t_ns / 1e9, rolling_action_name(d.action), want->action,
                                 d.reason);
                cr_expect_str_eq(rolling_trigger_name(d.trigger), want->trigger,
                                 "%s: t=%.3f: trigger %s, expected %s", name, (double)d.t_ns / 1e9,
                                 rolling_trigger_name(d.trigger), want->trigger);
                /* the reason names the trigger and its figure */
                cr_expect(strncmp(d.reason, want->trigger, strlen(want->trigger)) == 0,
                          "%s: reason \"%s\" does not start with %s", name, d.reason,
                          want->trigger);
                cr_expect(d.value >= d.threshold, "%s: value %g below threshold %g", name, d.value,
                          d.threshold);
                cr_expect(strchr(d.reason, '\n') == NULL, "%s: reason of two lines", name);
                /* and says what was done, whole */
                {
                        const char *tail = d.action == ROLLING_DECOMMISSION ? ": SIGPWR"
                                           : d.action == ROLLING_TERMINATE  ? ": TERM"
                                                                            : ": not rolled";
                        size_t n = strlen(d.reason), k = strlen(tail);

                        cr_expect(n >= k && strcmp(d.reason + n - k, tail) == 0,
                                  "%s: reason \"%s\" does not end in \"%s\"", name, d.reason, tail);
                }
        }
        for (size_t k = 0; k < s->nexpect; k++)
                cr_expect(s->expect[k].seen, "%s: no sample at t=%.3f of an @expect", name,
                          (double)s->expect[k].t_ns / 1e9);
        rolling_counts(r, &counts);
        cr_expect_leq(counts.decommission, 1, "%s: SIGPWR decided %" PRIu64 " times", name,
                      counts.decommission);
        cr_expect_leq(counts.terminate, 1, "%s: TERM decided %" PRIu64 " times", name,
                      counts.terminate);
        cr_expect_eq(counts.decommission + counts.unavailable + counts.terminate, decided,
                     "%s: counts do not add up to %zu", name, decided);
        rolling_free(r);
        return decided;
}

Test(rolling, recorded_series)
{
        char dir[4096], *names[FIXTURE_LIST_MAX];
        size_t n, with_decisions = 0;

        fixture_path("rolling", dir, sizeof(dir));
        n = list_fixtures(dir, ".series", names);
        cr_assert_geq(n, 10, "only %zu series in %s", n, dir);
        for (size_t i = 0; i < n; i++) {
                char path[8192];
                static struct series s;

                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                parse_series(path, &s);
                cr_assert_gt(s.n, 5, "%s: %zu samples", names[i], s.n);
                if (run_series(names[i], &s) > 0)
                        with_decisions++;
                free(names[i]);
        }
        cr_expect_geq(with_decisions, 7, "only %zu series decide anything", with_decisions);
}

static struct policy_rolling rolling_policy(const char *section)
{
        struct util_error err = {0};
        struct policy p;
        char doc[1024];

        snprintf(doc, sizeof(doc), "{\"version\": 1, \"rolling\": %s}", section);
        cr_assert_eq(policy_parse(doc, strlen(doc), NULL, &p, &err), 0, "%s", err.text);
        return p.rolling;
}

Test(rolling, off_decides_nothing)
{
        struct policy p;
        struct rolling *r;
        struct rolling_decision d;

        policy_init_defaults(&p);
        r = rolling_new(&p.rolling, 0);
        cr_assert(r);
        for (uint64_t t = 0; t < 100; t++) {
                struct rolling_sample s = {.t_ns = t * 1000000000ull,
                                           .disk_write_bytes = UINT64_MAX - 1,
                                           .memory_high_events = t * 1000,
                                           .psi_some_us = t * 1000000,
                                           .psi_full_us = t * 1000000,
                                           .sigpwr = ROLLING_SIGPWR_CAUGHT};
                cr_assert_eq(rolling_feed(r, &s, &d), 0);
                cr_assert_eq(d.action, ROLLING_NONE, "rolling off, but %s at %" PRIu64,
                             rolling_action_name(d.action), t);
        }
        cr_expect(!rolling_decommissioning(r));
        rolling_free(r);
}

Test(rolling, samples_out_of_order_are_refused)
{
        struct policy_rolling p = rolling_policy("{\"age\": {\"seconds\": 1}}");
        struct rolling *r = rolling_new(&p, 5000000000ull);
        struct rolling_sample s = rolling_sample_unknown(4000000000ull);
        struct rolling_decision d;

        cr_assert(r);
        cr_expect_eq(rolling_feed(r, &s, &d), -EINVAL, "a sample before the start");
        cr_expect_eq(d.action, ROLLING_NONE);
        s = rolling_sample_unknown(9000000000ull);
        s.sigpwr = ROLLING_SIGPWR_CAUGHT;
        cr_expect_eq(rolling_feed(r, &s, &d), 0);
        cr_expect_eq(d.action, ROLLING_DECOMMISSION, "age 4 s >= 1 s: %s", d.reason);
        cr_expect(strstr(d.reason, "age: running 4 s >= 1 s") != NULL, "reason: %s", d.reason);
        cr_expect_eq(d.age_ns, 4000000000ull);
        s.t_ns = 8000000000ull;
        cr_expect_eq(rolling_feed(r, &s, &d), -EINVAL, "a sample older than the last");
        rolling_free(r);
}

/* A SIGPWR that could not be sent is not a decommission: back to watching, after the cool-down */
Test(rolling, decommission_failed)
{
        struct policy_rolling p = rolling_policy(
            "{\"grace_seconds\": 5, \"age\": {\"seconds\": 2, \"cooldown_seconds\": 10}}");
        struct rolling *r = rolling_new(&p, 0);
        struct rolling_sample s = rolling_sample_unknown(3000000000ull);
        struct rolling_counts n;
        struct rolling_decision d;

        cr_assert(r);
        s.sigpwr = ROLLING_SIGPWR_CAUGHT;
        cr_assert_eq(rolling_feed(r, &s, &d), 0);
        cr_assert_eq(d.action, ROLLING_DECOMMISSION);
        cr_assert_eq(rolling_decommission_failed(r, &d, "No such process"), 0);
        cr_expect_eq(d.action, ROLLING_UNAVAILABLE);
        cr_expect_str_eq(d.reason, "age: running 3 s >= 2 s (rolling.age.seconds), but SIGPWR "
                                   "failed: No such process: not rolled");
        cr_expect(!rolling_decommissioning(r));
        rolling_counts(r, &n);
        cr_expect(n.decommission == 0 && n.unavailable == 1 && n.terminate == 0);
        cr_expect_eq(rolling_decommission_failed(r, &d, "again"), -EINVAL, "not decommissioning");
        /* no TERM for a SIGPWR never sent; the trigger cools down, then decides again */
        for (uint64_t t = 4; t < 13; t++) {
                s.t_ns = t * 1000000000ull;
                cr_assert_eq(rolling_feed(r, &s, &d), 0);
                cr_expect_eq(d.action, ROLLING_NONE, "at %" PRIu64 " s: %s", t, d.reason);
        }
        s.t_ns = 13000000000ull;
        cr_assert_eq(rolling_feed(r, &s, &d), 0);
        cr_expect_eq(d.action, ROLLING_DECOMMISSION, "after the cool-down: %s", d.reason);
        rolling_free(r);
}

Test(rolling, decision_carries_the_figures)
{
        struct policy_rolling p =
            rolling_policy("{\"memory_pressure\": {\"some_percent\": 50, \"window_seconds\": 10}}");
        struct rolling *r = rolling_new(&p, 0);
        struct rolling_decision d = {0};
        bool fired = false;

        cr_assert(r);
        for (uint64_t t = 0; t <= 20 && !fired; t++) {
                struct rolling_sample s = rolling_sample_unknown(t * 1000000000ull);
                s.psi_some_us = t * 750000; /* 75% stalled */
                s.sigpwr = ROLLING_SIGPWR_CAUGHT;
                cr_assert_eq(rolling_feed(r, &s, &d), 0);
                fired = d.action != ROLLING_NONE;
        }
        cr_assert(fired, "75%% some stall never fired");
        cr_expect_eq(d.t_ns, 10000000000ull, "fired at %" PRIu64 " ns: the first full window",
                     d.t_ns);
        cr_expect_eq(d.trigger, ROLLING_TRIGGER_PRESSURE_SOME);
        cr_expect(fabs(d.value - 75.0) < 1e-9, "value %g", d.value);
        cr_expect_eq(d.threshold, 50.0);
        cr_expect_str_eq(d.unit, "percent");
        cr_expect_eq(d.window_ns, 10000000000ull, "window %" PRIu64, d.window_ns);
        cr_expect_eq(d.sample.psi_some_us, 7500000);
        cr_expect_str_eq(
            d.reason, "memory_pressure_some: memory.pressure some stalled 75.0% of 10.0 s >= 50% "
                      "(rolling.memory_pressure.some_percent): SIGPWR");
        cr_expect(rolling_decommissioning(r));
        rolling_free(r);
}

Test(rolling, windows_hold_with_fast_samples)
{
        /* 10 samples a second for 700 s: the history (512) is decimated, yet a 600 s window
         * still finds its start, at most 600/256 s late */
        struct policy_rolling p =
            rolling_policy("{\"memory_high\": {\"events\": 100, \"window_seconds\": 600}}");
        struct rolling *r = rolling_new(&p, 0);
        struct rolling_decision d = {0};
        uint64_t t;

        cr_assert(r);
        for (t = 0; t <= 7000; t++) {
                struct rolling_sample s = rolling_sample_unknown(t * 100000000ull);
                s.memory_high_events = t / 50; /* 0.2 events a second: 120 in 600 s */
                s.sigpwr = ROLLING_SIGPWR_CAUGHT;
                cr_assert_eq(rolling_feed(r, &s, &d), 0);
                if (d.action != ROLLING_NONE)
                        break;
        }
        cr_assert_eq(d.action, ROLLING_DECOMMISSION, "never fired");
        /* the first full window: t = 600 s, with 120 events >= 100 */
        cr_expect_geq(d.t_ns, 600000000000ull, "fired at %.1f s, before a window",
                      (double)d.t_ns / 1e9);
        cr_expect_leq(d.t_ns, 603000000000ull, "fired at %.1f s", (double)d.t_ns / 1e9);
        cr_expect_geq(d.window_ns, 600000000000ull, "window %.3f s", (double)d.window_ns / 1e9);
        cr_expect_leq(d.window_ns, 602400000000ull, "window %.3f s", (double)d.window_ns / 1e9);
        rolling_free(r);
}

Test(rolling, names)
{
        cr_expect_str_eq(rolling_trigger_name(ROLLING_TRIGGER_DISK_WRITE), "disk_write");
        cr_expect_str_eq(rolling_trigger_name(ROLLING_TRIGGER_PRESSURE_FULL),
                         "memory_pressure_full");
        cr_expect_str_eq(rolling_trigger_name((enum rolling_trigger)99), "none");
        cr_expect_str_eq(rolling_action_name(ROLLING_UNAVAILABLE), "unavailable");
        cr_expect_str_eq(rolling_action_name((enum rolling_action)99), "none");
}

/* ---- SigCgt of /proc/<pid>/status ---- */

static enum rolling_sigpwr status_fixture(const char *name)
{
        char path[4096];
        size_t len;
        uint64_t mask = 0;
        char *text;
        int r;

        fixture_path("rolling", path, sizeof(path));
        strncat(path, "/", sizeof(path) - strlen(path) - 1);
        strncat(path, name, sizeof(path) - strlen(path) - 1);
        text = read_text(path, &len);
        cr_assert(text, "cannot read %s", path);
        r = rolling_status_sigcgt(text, len, &mask);
        free(text);
        cr_assert_eq(r, 0, "%s: rc %d", name, r);
        return rolling_sigpwr_from_mask(mask, SIGPWR);
}

Test(rolling, recorded_jvm_status)
{
        /* a JDK 17 and a JDK 25 JVM before and after sun.misc.Signal.handle(PWR): HotSpot
         * itself leaves SIGPWR alone (SigCgt 0000000101005ccd -> 0000000121005ccd) */
        cr_expect_eq(status_fixture("status-jdk17-before"), ROLLING_SIGPWR_NOT_CAUGHT);
        cr_expect_eq(status_fixture("status-jdk17-sigpwr"), ROLLING_SIGPWR_CAUGHT);
        cr_expect_eq(status_fixture("status-jdk25-before"), ROLLING_SIGPWR_NOT_CAUGHT);
        cr_expect_eq(status_fixture("status-jdk25-sigpwr"), ROLLING_SIGPWR_CAUGHT);
        /* Spark's own executors (standalone, local-cluster), spark.decommission.enabled true
         * and false: CoarseGrainedExecutorBackend.onStart registered the handler, or not */
        cr_expect_eq(status_fixture("status-standalone-3.5.9-decommission-on"),
                     ROLLING_SIGPWR_CAUGHT);
        cr_expect_eq(status_fixture("status-standalone-3.5.9-decommission-off"),
                     ROLLING_SIGPWR_NOT_CAUGHT);
        cr_expect_eq(status_fixture("status-standalone-4.0.4-decommission-on"),
                     ROLLING_SIGPWR_CAUGHT);
        cr_expect_eq(status_fixture("status-standalone-4.0.4-decommission-off"),
                     ROLLING_SIGPWR_NOT_CAUGHT);
}

Test(rolling, status_text_is_read_strictly)
{
        static const struct {
                const char *text;
                int rc;
                uint64_t mask;
        } cases[] = {
            {"Name:\tjava\nSigCgt:\t0000000121005ccd\n", 0, UINT64_C(0x121005ccd)},
            {"SigCgt:\t0000000000000000\n", 0, 0},
            {"SigCgt:\tFFFFFFFFFFFFFFFF\n", 0, UINT64_MAX},
            {"Name:\tjava\n", -EINVAL, 0},                             /* none */
            {"SigCgt:\t0000000121005ccd", -EINVAL, 0},                 /* cut off */
            {"SigCgt:\t\n", -EINVAL, 0},                               /* empty */
            {"SigCgt:\t00000001210g5ccd\n", -EINVAL, 0},               /* not hex */
            {"SigCgt:\t10000000121005ccd\n", -EINVAL, 0},              /* 17 digits */
            {"SigCgt:\t0000000121005ccd \n", -EINVAL, 0},              /* trailing */
            {"Name:\tx\nSigCgt:\t0\nSigCgt:\t20000000\n", -EINVAL, 0}, /* two */
            {"Name:\tSigCgt:\t20000000\nSigCgt:\t0\n", 0, 0},          /* not at a line start */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint64_t mask = 42;
                int r = rolling_status_sigcgt(cases[i].text, strlen(cases[i].text), &mask);

                cr_expect_eq(r, cases[i].rc, "case %zu: rc %d, expected %d", i, r, cases[i].rc);
                if (cases[i].rc == 0)
                        cr_expect_eq(mask, cases[i].mask, "case %zu: mask %" PRIx64, i, mask);
                else
                        cr_expect_eq(mask, 42, "case %zu: mask written on error", i);
        }
        cr_expect_eq(rolling_sigpwr_from_mask(UINT64_C(1) << 29, 30), ROLLING_SIGPWR_CAUGHT);
        cr_expect_eq(rolling_sigpwr_from_mask(UINT64_C(1) << 29, 29), ROLLING_SIGPWR_NOT_CAUGHT);
        cr_expect_eq(rolling_sigpwr_from_mask(UINT64_MAX, 0), ROLLING_SIGPWR_UNKNOWN);
        cr_expect_eq(rolling_sigpwr_from_mask(UINT64_MAX, 65), ROLLING_SIGPWR_UNKNOWN);
}
