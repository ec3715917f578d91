/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spark.decommission.enabled on an executor's command line (policy_decommission_from_command)
 * over recorded executor command lines, and Spark's boolean reading.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"
#include "test_helpers.h"
#include "util.h"

static struct policy_decommission_conf from_fixture(const char *rel)
{
        struct policy_decommission_conf c;
        struct argv_file a;
        char path[4096];

        fixture_path(rel, path, sizeof(path));
        load_argv(path, &a);
        policy_decommission_from_command(a.argc, a.argv, &c);
        free(a.text);
        return c;
}

/*
 * Recorded with spark.decommission.enabled=true (local-cluster: a real Master, Worker and
 * ExecutorRunner): the executor registered its SIGPWR handler, yet its command line has no
 * trace of the setting (SparkConf.isExecutorStartupConf keeps only spark.auth*, spark.rpc*,
 * spark.network*, spark.ssl* (4.0) and *.port settings).
 */
Test(decommission, recorded_standalone_executors_carry_nothing)
{
        static const char *const fixtures[] = {
            "rolling/standalone-3.5.9-decommission-on.argv",
            "rolling/standalone-4.0.4-decommission-on.argv",
            "java/yarn-3.5-executor.argv",
            "java/k8s-4.0-executor.argv",
            "java/standalone-3.5-executor.argv",
        };

        for (size_t i = 0; i < ELEMENTSOF(fixtures); i++) {
                struct policy_decommission_conf c = from_fixture(fixtures[i]);

                cr_expect_eq(c.enabled, POLICY_DECOMMISSION_UNSET, "%s: %s", fixtures[i],
                             policy_decommission_name(c.enabled));
                cr_expect(!c.signal_set, "%s: a signal", fixtures[i]);
                cr_expect_str_eq(c.origin, "", "%s: origin %s", fixtures[i], c.origin);
        }
}

Test(decommission, spark_boolean)
{
        static const struct {
                const char *arg;
                enum policy_decommission want;
        } cases[] = {
            {"-Dspark.decommission.enabled=true", POLICY_DECOMMISSION_ON},
            {"-Dspark.decommission.enabled=TRUE", POLICY_DECOMMISSION_ON},
            {"-Dspark.decommission.enabled= True\t", POLICY_DECOMMISSION_ON},
            {"-Dspark.decommission.enabled=\x01true\x1f", POLICY_DECOMMISSION_ON}, /* Java trim */
            {"-Dspark.decommission.enabled=false", POLICY_DECOMMISSION_OFF},
            {"-Dspark.decommission.enabled=FaLsE", POLICY_DECOMMISSION_OFF},
            {"-Dspark.decommission.enabled=yes", POLICY_DECOMMISSION_INVALID},
            {"-Dspark.decommission.enabled=1", POLICY_DECOMMISSION_INVALID},
            {"-Dspark.decommission.enabled=", POLICY_DECOMMISSION_INVALID},
            {"-Dspark.decommission.enabled", POLICY_DECOMMISSION_INVALID},
            {"-Dspark.decommission.enabled=t rue", POLICY_DECOMMISSION_INVALID},
            {"-Dspark.decommission.enabledX=true", POLICY_DECOMMISSION_UNSET},
            {"-Dspark.decommission.enable=true", POLICY_DECOMMISSION_UNSET},
            {"-Xspark.decommission.enabled=true", POLICY_DECOMMISSION_UNSET},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *argv[] = {"java", (char *)cases[i].arg,
                                "org.apache.spark.executor.CoarseGrainedExecutorBackend", NULL};
                struct policy_decommission_conf c;

                policy_decommission_from_command(3, argv, &c);
                cr_expect_eq(c.enabled, cases[i].want, "%s: %s, expected %s", cases[i].arg,
                             policy_decommission_name(c.enabled),
                             policy_decommission_name(cases[i].want));
        }
}

Test(decommission, jvm_options_only_last_wins)
{
        char *argv[] = {"java",
                        "-Dspark.decommission.enabled=false",
                        "-Dspark.executor.decommission.signal= USR2 ",
                        "-Dspark.decommission.enabled=true",
                        "org.apache.spark.executor.CoarseGrainedExecutorBackend",
                        "-Dspark.decommission.enabled=false", /* the program's argument */
                        "-Dspark.executor.decommission.signal=HUP",
                        NULL};
        struct policy_decommission_conf c;

        policy_decommission_from_command(7, argv, &c);
        cr_expect_eq(c.enabled, POLICY_DECOMMISSION_ON, "%s", policy_decommission_name(c.enabled));
        cr_expect_str_eq(c.value, "true");
        cr_expect_str_eq(c.origin, "-Dspark.decommission.enabled");
        cr_expect(c.signal_set);
        cr_expect_str_eq(c.signal, "USR2");
}

Test(decommission, without_a_certain_main_class_every_argument_counts)
{
        /* an @argfile: the launcher's to read; the -D after it may be a JVM option */
        char *argv[] = {"java", "@opts", "-Dspark.decommission.enabled=true", NULL};
        char *longsig[] = {"java", "-Dspark.executor.decommission.signal=AVERYLONGSIGNALNAME",
                           "Main", NULL};
        struct policy_decommission_conf c;

        policy_decommission_from_command(3, argv, &c);
        cr_expect_eq(c.enabled, POLICY_DECOMMISSION_ON);
        policy_decommission_from_command(3, longsig, &c);
        cr_expect(c.signal_set);
        cr_expect_str_eq(c.signal, "", "a signal name that does not fit: %s", c.signal);
        policy_decommission_from_command(0, (char *[]){NULL}, &c);
        cr_expect_eq(c.enabled, POLICY_DECOMMISSION_UNSET);
}
