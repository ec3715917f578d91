/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `sparkshim tune-service` publishes for a job (tuner/publish.h): the state from the
 * newest runs (explore, learning, fallback after a failed next, held after 2 failures in
 * 10), safe from the best successful run with its margins, ids that name the settings (the
 * same settings, the same id), nothing the submit side would refuse; and the file: modes,
 * atomic replacement, directories that are not root's refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "policy.h"
#include "publish.h"

#define MiB           (UINT64_C(1) << 20)
#define GiB           (UINT64_C(1) << 30)
#define ALL_OVERRIDES 0x1ffu

static struct tuner_run run(const char *app, enum tuner_failure failure, const char *config)
{
        struct tuner_run r = {
            .job = "nightly",
            .start_ms = 1,
            .duration_seconds = 100,
            .params = {.cores = 4,
                       .millicores = 4000,
                       .heap_bytes = 4 * GiB,
                       .overhead_bytes = 1 * GiB,
                       .burst_ratio = 0,
                       .spill_fraction = NAN},
            .executors = 2,
            .cpu_util = 0.4,
            .mem_util = 0.5,
            .objective = 1 / (0.4 * 0.5),
            .cpu_peak_util = 0.6,
            .throttled_fraction = 0,
            .runq_wait_per_cpu = 0,
            .memory_peak_bytes = 2560 * MiB,
            .heap_peak_bytes = 2 * GiB,
            .offheap_peak_bytes = 300 * MiB,
            .high_events = 0,
            .oom_kills = 0,
            .forced_spills = 0,
            .has_eventlog = true,
            .has_reports = true,
            .stages = 3,
            .tasks = 100,
            .max_stage_tasks = 24,
            .max_stage_skew = NAN,
            .failure = failure,
            .enforced = true,
            .cpu_limit_ratio = NAN,
            .owner_uid = 1000,
        };

        snprintf(r.app_id, sizeof(r.app_id), "%s", app);
        snprintf(r.config, sizeof(r.config), "%s", config ? config : "");
        return r;
}

static const char *conf_of(const struct tuner_published_config *c, const char *key)
{
        for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->conf[i].key, key) == 0)
                        return c->conf[i].value;
        return NULL;
}

static struct tuner_published decide(struct tuner_run *runs, size_t n)
{
        struct tuner_bounds b;
        struct tuner_published p;
        struct util_error err = {0};

        tuner_bounds_default(&b);
        cr_assert_eq(tuner_publish_decide(runs, n, &b, ALL_OVERRIDES, 1000, "nightly", &p, &err), 0,
                     "%s", err.text);
        for (size_t i = 0; i < p.next.n; i++)
                cr_assert_eq(policy_published_check(p.next.conf[i].key, p.next.conf[i].value), 0,
                             "next: %s=%s", p.next.conf[i].key, p.next.conf[i].value);
        for (size_t i = 0; i < p.safe.n; i++)
                cr_assert_eq(policy_published_check(p.safe.conf[i].key, p.safe.conf[i].value), 0,
                             "safe: %s=%s", p.safe.conf[i].key, p.safe.conf[i].value);
        return p;
}

Test(publish, explore_with_safe_from_the_best_run_and_its_margins)
{
        struct tuner_run runs[] = {run("app-2", TUNER_OK, NULL), run("app-1", TUNER_OK, NULL)};
        struct tuner_published p;

        runs[1].objective = 3; /* app-1 packed better: safe is its settings */
        runs[1].params.heap_bytes = 2 * GiB;
        p = decide(runs, 2);
        cr_assert_str_eq(p.state, "explore");
        cr_assert(p.next.present && p.safe.present);
        cr_assert_str_eq(p.safe_from, "app-1");
        /* 2 GiB + 10 %, in whole MiB, up */
        cr_assert_str_eq(conf_of(&p.safe, "spark.executor.memory"), "2253m");
        cr_assert_str_eq(conf_of(&p.safe, "spark.executor.memoryOverhead"), "1127m");
        cr_assert_str_eq(conf_of(&p.safe, "spark.executor.cores"), "4");
        cr_assert(tuner_config_id_valid(p.next.id) && strncmp(p.next.id, "next-", 5) == 0);
        cr_assert(tuner_config_id_valid(p.safe.id) && strncmp(p.safe.id, "safe-", 5) == 0);
}

Test(publish, the_same_history_the_same_ids)
{
        struct tuner_run a[] = {run("app-2", TUNER_OK, NULL), run("app-1", TUNER_OK, NULL)};
        struct tuner_run b[] = {run("app-2", TUNER_OK, NULL), run("app-1", TUNER_OK, NULL)};
        struct tuner_published p = decide(a, 2), q = decide(b, 2);
        struct tuner_bounds bounds;
        struct tuner_published other;
        struct util_error err = {0};

        cr_assert_str_eq(p.next.id, q.next.id);
        cr_assert_str_eq(p.safe.id, q.safe.id);
        /* another owner's or job's settings are another configuration */
        tuner_bounds_default(&bounds);
        cr_assert_eq(
            tuner_publish_decide(b, 2, &bounds, ALL_OVERRIDES, 1001, "nightly", &other, &err), 0);
        cr_assert_str_neq(other.safe.id, p.safe.id);
}

Test(publish, no_success_yet_is_learning_without_safe)
{
        struct tuner_run runs[] = {run("app-1", TUNER_FAIL_TASKS, NULL)};
        struct tuner_published p = decide(runs, 1);

        cr_assert_str_eq(p.state, "learning");
        cr_assert(!p.safe.present);
        cr_assert(p.next.present);
}

Test(publish, a_failed_next_falls_back_to_safe)
{
        struct tuner_run runs[] = {run("app-3", TUNER_FAIL_OOM, "next-0123456789abcdef"),
                                   run("app-2", TUNER_OK, NULL), run("app-1", TUNER_OK, NULL)};
        struct tuner_published p = decide(runs, 3);

        cr_assert_str_eq(p.state, "fallback");
        cr_assert(!p.next.present);
        cr_assert(p.safe.present);
        cr_assert(strstr(p.reason, "next-0123456789abcdef") && strstr(p.reason, "oom"), "%s",
                  p.reason);
}

Test(publish, a_failure_without_a_tuned_next_is_not_a_fallback)
{
        /* the user's own settings failed: the tuner's next is what may help */
        struct tuner_run runs[] = {run("app-2", TUNER_FAIL_OOM, NULL),
                                   run("app-1", TUNER_OK, NULL)};
        struct tuner_published p = decide(runs, 2);

        cr_assert_str_eq(p.state, "explore");
        cr_assert(p.next.present);
}

Test(publish, two_failures_in_ten_hold_the_job_at_safe)
{
        struct tuner_run runs[12];

        for (size_t i = 0; i < 12; i++)
                runs[i] = run("app", TUNER_OK, "safe-0123456789abcdef");
        runs[7].failure = TUNER_FAIL_OOM;
        runs[9].failure = TUNER_FAIL_EXECUTOR_LOST;
        struct tuner_published p = decide(runs, 12);
        cr_assert_str_eq(p.state, "held");
        cr_assert(!p.next.present && p.safe.present);
        cr_assert(strstr(p.reason, "2 of the newest 10"), "%s", p.reason);
        /* once one of them leaves the newest 10, the job explores again */
        runs[7].failure = TUNER_OK;
        runs[10].failure = TUNER_FAIL_OOM;
        p = decide(runs, 12);
        cr_assert_str_eq(p.state, "explore");
}

Test(publish, unknown_sizes_are_never_published_as_numbers)
{
        struct tuner_run runs[] = {run("app-1", TUNER_OK, NULL)};
        struct tuner_published p;

        runs[0].params.heap_bytes = TUNER_UNKNOWN;
        runs[0].params.millicores = TUNER_UNKNOWN;
        p = decide(runs, 1);
        cr_assert_null(conf_of(&p.safe, "spark.executor.memory"));
        cr_assert_null(conf_of(&p.safe, "spark.executor.millicores"));
}

Test(publish, config_ids)
{
        cr_assert(tuner_config_id_valid("next-0123456789abcdef"));
        cr_assert(tuner_config_id_valid("safe-ffffffffffffffff"));
        cr_assert_not(tuner_config_id_valid("next-0123456789ABCDEF"));
        cr_assert_not(tuner_config_id_valid("next-0123456789abcde"));
        cr_assert_not(tuner_config_id_valid("next-0123456789abcdef0"));
        cr_assert_not(tuner_config_id_valid("other-0123456789abcd"));
        cr_assert_not(tuner_config_id_valid(""));
}

/* ---- the file ---- */

static char *tmpdir(void)
{
        char *d = strdup("/tmp/test-publish.XXXXXX");

        cr_assert_not_null(mkdtemp(d));
        return d;
}

Test(publish, the_file_is_root_s_atomic_and_complete)
{
        struct tuner_run runs[] = {run("app-2", TUNER_OK, NULL), run("app-1", TUNER_OK, NULL)};
        struct tuner_published p = decide(runs, 2);
        struct util_error err = {0};
        char *d = tmpdir(), path[512];
        struct stat st;
        json_t *doc;

        snprintf(path, sizeof(path), "%s/pub", d);
        cr_assert_eq(tuner_publish_write(path, 1000, "night ly/../x", &p, 1000, 600, &err), 0, "%s",
                     err.text);
        snprintf(path, sizeof(path), "%s/pub/1000", d);
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0711);
        snprintf(path, sizeof(path), "%s/pub/1000/night%%20ly%%2F..%%2Fx.json", d);
        cr_assert_eq(stat(path, &st), 0, "%s", path);
        cr_assert_eq(st.st_mode & 07777, 0644);
        doc = json_load_file(path, 0, NULL);
        cr_assert_not_null(doc);
        cr_assert_str_eq(json_string_value(json_object_get(doc, "schema")),
                         "sparkshim.published/v1");
        cr_assert_eq(json_integer_value(json_object_get(doc, "expires")), 1600);
        cr_assert_str_eq(json_string_value(json_object_get(doc, "job")), "night ly/../x");
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "next"), "id")),
                         p.next.id);
        json_decref(doc);
        /* replaced: no temporary file left beside it */
        cr_assert_eq(tuner_publish_write((snprintf(path, sizeof(path), "%s/pub", d), path), 1000,
                                         "night ly/../x", &p, 2000, 600, &err),
                     0);
        snprintf(path, sizeof(path), "rm -r %s/pub/1000/.tmp-* 2>/dev/null", d);
        cr_assert_neq(system(path), 0, "a temporary file was left");
        snprintf(path, sizeof(path), "rm -rf %s", d);
        cr_assert_eq(system(path), 0);
        free(d);
}

Test(publish, directories_others_may_write_are_refused)
{
        struct tuner_run runs[] = {run("app-1", TUNER_OK, NULL)};
        struct tuner_published p = decide(runs, 1);
        struct util_error err = {0};
        char *d = tmpdir(), path[512], link[512];

        snprintf(path, sizeof(path), "%s/pub", d);
        cr_assert_eq(mkdir(path, 0777), 0);
        cr_assert_eq(chmod(path, 0777), 0);
        cr_assert_eq(tuner_publish_write(path, 1000, "j", &p, 1, 600, &err), -EPERM);
        cr_assert(strstr(err.text, "refused"), "%s", err.text);
        cr_assert_eq(chmod(path, 0755), 0);
        /* a symlink in the owner's place is not followed */
        snprintf(link, sizeof(link), "%s/pub/1000", d);
        cr_assert_eq(symlink("/tmp", link), 0);
        cr_assert_lt(tuner_publish_write(path, 1000, "j", &p, 1, 600, &err), 0);
        cr_assert(strstr(err.text, "symbolic link"), "%s", err.text);
        /* a name too long once escaped is not published */
        char long_job[200];
        memset(long_job, '/', sizeof(long_job) - 1);
        long_job[sizeof(long_job) - 1] = '\0';
        cr_assert_eq(tuner_publish_write(path, 1001, long_job, &p, 1, 600, &err), -ENAMETOOLONG);
        snprintf(path, sizeof(path), "rm -rf %s", d);
        cr_assert_eq(system(path), 0);
        free(d);
}

Test(publish, published_names)
{
        char buf[256];

        cr_assert_eq(policy_published_name("etl.daily-1_x", buf, sizeof(buf)), 0);
        cr_assert_str_eq(buf, "etl.daily-1_x.json");
        cr_assert_eq(policy_published_name("..", buf, sizeof(buf)), 0);
        cr_assert_str_eq(buf, "%2E..json");
        cr_assert_eq(policy_published_name("a/b c", buf, sizeof(buf)), 0);
        cr_assert_str_eq(buf, "a%2Fb%20c.json");
        cr_assert_eq(policy_published_name("", buf, sizeof(buf)), -EINVAL);
}

Test(publish, allowed_keys_and_values)
{
        cr_assert_eq(policy_published_check("spark.executor.memory", "1536m"), 0);
        cr_assert_eq(policy_published_check("spark.executor.memory", "1g"), -EINVAL);
        cr_assert_eq(policy_published_check("spark.executor.memory", "1536m -Dx"), -EINVAL);
        cr_assert_eq(policy_published_check("spark.executor.cores", "0"), -EINVAL);
        cr_assert_eq(policy_published_check("spark.executor.cores", "4"), 0);
        cr_assert_eq(policy_published_check("spark.kubernetes.executor.request.cores", "1500m"), 0);
        cr_assert_eq(policy_published_check("spark.kubernetes.executor.request.cores", "1.5"),
                     -EINVAL);
        cr_assert_eq(policy_published_check("spark.executor.memoryBurst.ratio", "0.25"), 0);
        cr_assert_eq(policy_published_check("spark.executor.memoryBurst.ratio", "1.5"), -EINVAL);
        cr_assert_eq(policy_published_check("spark.executor.memoryBurst.ratio", "nan"), -EINVAL);
        cr_assert_eq(policy_published_check("spark.executor.extraJavaOptions", "-Dx=1"), -ENOENT);
        cr_assert_eq(policy_published_check("spark.sql.shuffle.partitions", "200"), 0);
}

Test(publish, a_job_that_never_set_its_sizes_is_not_moved_to_the_bounds)
{
        /* Spark's defaults and no sparkshim report: the sizes and the request are unknown;
         * the stages clamp unknown values to the maximum, which must never be published */
        struct tuner_run runs[] = {run("app-2", TUNER_OK, NULL), run("app-1", TUNER_OK, NULL)};
        struct tuner_published p;

        for (size_t i = 0; i < 2; i++) {
                runs[i].params.heap_bytes = TUNER_UNKNOWN;
                runs[i].params.overhead_bytes = TUNER_UNKNOWN;
                runs[i].params.millicores = TUNER_UNKNOWN;
                runs[i].has_reports = false;
                runs[i].cpu_util = runs[i].mem_util = runs[i].objective = NAN;
        }
        p = decide(runs, 2);
        for (size_t i = 0; i < p.next.n; i++)
                cr_assert(strcmp(p.next.conf[i].key, "spark.executor.memoryOverhead") != 0 &&
                              strcmp(p.next.conf[i].key,
                                     "spark.kubernetes.executor.request.cores") != 0 &&
                              strstr(p.next.conf[i].key, "SPARKSHIM_MILLICORES") == NULL &&
                              strstr(p.next.conf[i].key, "SPARKSHIM_MEMORY_OVERHEAD") == NULL,
                          "next publishes %s=%s for a job that never set it", p.next.conf[i].key,
                          p.next.conf[i].value);
        cr_assert_null(conf_of(&p.next, "spark.executor.memory"));
        cr_assert_null(conf_of(&p.next, "spark.executor.millicores"));
        cr_assert_null(conf_of(&p.safe, "spark.executor.memoryOverhead"));
}

Test(publish, safe_stays_within_the_bounds_when_a_value_is_unknown)
{
        struct tuner_run runs[] = {run("app-1", TUNER_OK, NULL)};
        struct tuner_published p;

        runs[0].params.heap_bytes = 64 * GiB; /* the policy's heap maximum */
        runs[0].params.overhead_bytes = TUNER_UNKNOWN;
        p = decide(runs, 1);
        cr_assert_str_eq(conf_of(&p.safe, "spark.executor.memory"), "65536m");
}

Test(publish, the_configurations_runs_were_submitted_with)
{
        struct tuner_run runs[] = {run("app-3", TUNER_OK, "next-0123456789abcdef"),
                                   run("app-2", TUNER_OK, "next-0123456789abcdef"),
                                   run("app-1", TUNER_OK, "safe-ffffffffffffffff"),
                                   run("app-0", TUNER_OK, NULL)};
        struct tuner_published p = decide(runs, 4);

        cr_assert_eq(p.n_ran, 2);
        cr_assert_str_eq(p.ran[0], "next-0123456789abcdef");
        cr_assert_str_eq(p.ran[1], "safe-ffffffffffffffff");
}
