/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The java personality's reading of a command line (policy/java-command.c): over the
 * command lines that Spark 3.3 to 4.0 build on YARN, standalone and Kubernetes
 * (the .argv files of fixtures/java: a name ending in "-executor.argv" is an executor, any other is
 * not).
 */
#include <criterion/criterion.h>

#include "policy.h"
#include "test_helpers.h"
#include "util.h"

Test(java, command_fixtures)
{
        char dir[4096], path[4200], *names[FIXTURE_LIST_MAX];
        size_t n, executors = 0;

        fixture_path("java", dir, sizeof(dir));
        n = list_fixtures(dir, ".argv", names);
        cr_assert_geq(n, 20, "only %zu fixtures in %s", n, dir);
        for (size_t i = 0; i < n; i++) {
                struct argv_file a;
                size_t len = strlen(names[i]);
                bool want = len > 14 && strcmp(names[i] + len - 14, "-executor.argv") == 0;

                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                load_argv(path, &a);
                cr_expect_eq(policy_java_runs_executor(a.argc, a.argv, false), want,
                             "%s: read as %s", names[i], want ? "not an executor" : "an executor");
                /* JDK_JAVA_OPTIONS set: the reading may only err towards wrapping */
                if (want)
                        cr_expect(policy_java_runs_executor(a.argc, a.argv, true),
                                  "%s: not an executor with JDK_JAVA_OPTIONS set", names[i]);
                executors += want;
                free(a.text);
                free(names[i]);
        }
        cr_expect_geq(executors, 9,
                      "%zu executor fixtures; want YARN, standalone and k8s of 3.3, 3.5, 4.0",
                      executors);
}

Test(java, main_class_after_options_with_values)
{
        char *argv[] = {"java",
                        "-cp",
                        "a.jar",
                        "--add-opens",
                        "java.base/java.lang=ALL-UNNAMED",
                        "-p",
                        "mods",
                        "--class-path=b.jar",
                        "-Dx=y",
                        "org.example.Main",
                        "arg",
                        NULL};
        const char *main_class;

        cr_assert_eq(policy_java_main_class(11, argv, &main_class), POLICY_JAVA_MAIN_CLASS);
        cr_expect_str_eq(main_class, "org.example.Main");
}

Test(java, no_main_class)
{
        char *version[] = {"java", "-Xmx1g", "-version",
                           "org.apache.spark.executor.CoarseGrainedExecutorBackend", NULL};
        char *help[] = {"java", "--help", NULL};
        char *bare[] = {"java", "-cp", NULL};
        char *jar[] = {"java", "-jar", "x.jar", NULL};
        char *module[] = {"java", "--module=spark.core", NULL};
        const char *main_class;

        cr_expect_eq(policy_java_main_class(4, version, &main_class), POLICY_JAVA_MAIN_NONE);
        cr_expect_null(main_class);
        cr_expect_eq(policy_java_main_class(2, help, &main_class), POLICY_JAVA_MAIN_NONE);
        cr_expect_eq(policy_java_main_class(2, bare, &main_class), POLICY_JAVA_MAIN_NONE);
        cr_expect_eq(policy_java_main_class(3, jar, &main_class), POLICY_JAVA_MAIN_JAR);
        cr_expect_eq(policy_java_main_class(2, module, &main_class), POLICY_JAVA_MAIN_MODULE);
        /* -version runs no class; the backend's name wraps it all the same (harmless) */
        cr_expect(policy_java_runs_executor(4, version, false));
        cr_expect_not(policy_java_runs_executor(2, help, false));
        cr_expect_not(policy_java_runs_executor(3, jar, false));
}

Test(java, module_main_class)
{
        char *eq[] = {"java",
                      "--module=spark.core/org.apache.spark.executor.CoarseGrainedExecutorBackend",
                      NULL};
        char *sp[] = {"java", "--module", "spark.core/org.example.Main", NULL};
        const char *main_class;

        cr_assert_eq(policy_java_main_class(2, eq, &main_class), POLICY_JAVA_MAIN_CLASS);
        cr_expect_str_eq(main_class, "org.apache.spark.executor.CoarseGrainedExecutorBackend");
        cr_expect(policy_java_runs_executor(2, eq, false));
        cr_assert_eq(policy_java_main_class(3, sp, &main_class), POLICY_JAVA_MAIN_CLASS);
        cr_expect_str_eq(main_class, "org.example.Main");
}

/* What the launcher reads differently from argv: the backend's name decides. */
Test(java, launcher_rewrites_err_towards_wrapping)
{
        char *hidden[] = {"java", "@/home/u/opts", "org.example.Tool",
                          "org.apache.spark.executor.CoarseGrainedExecutorBackend", NULL};
        char *plain[] = {"java", "@/home/u/opts", "org.example.Tool", NULL};
        char *value[] = {"java",
                         "--add-modules",
                         "@/tmp/f",
                         "ALL-DEFAULT",
                         "org.apache.spark.executor.CoarseGrainedExecutorBackend",
                         NULL};
        char *source[] = {"java", "--source 17 --add-modules", "ALL-DEFAULT",
                          "org.apache.spark.executor.CoarseGrainedExecutorBackend", NULL};
        char *jar[] = {
            "java",          "-jar", "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend",
            "--executor-id", "1",    NULL};
        char *slash[] = {"java", "-cp", "x",
                         "org/apache/spark/executor/CoarseGrainedExecutorBackend", NULL};
        char *near[] = {"java", "-cp", "x",
                        "org/apache/spark/executor/CoarseGrainedExecutorBackendX", NULL};
        const char *main_class;

        cr_expect_eq(policy_java_main_class(4, hidden, &main_class), POLICY_JAVA_MAIN_UNKNOWN);
        cr_expect(policy_java_runs_executor(4, hidden, false));
        cr_expect_not(policy_java_runs_executor(3, plain, false));
        cr_expect_eq(policy_java_main_class(5, value, &main_class), POLICY_JAVA_MAIN_UNKNOWN);
        cr_expect(policy_java_runs_executor(5, value, false));
        cr_expect_eq(policy_java_main_class(4, source, &main_class), POLICY_JAVA_MAIN_UNKNOWN);
        cr_expect(policy_java_runs_executor(4, source, false));
        cr_expect(policy_java_runs_executor(5, jar, false));
        cr_expect(policy_java_runs_executor(4, slash, false));
        cr_expect_not(policy_java_runs_executor(4, near, false));
}

/* spark-class runs Spark's launcher with the class as its argument: that is not one. */
Test(java, sparks_launcher_is_not_an_executor)
{
        char *launcher[] = {"java",
                            "-Xmx128m",
                            "-cp",
                            "/opt/spark/jars/*",
                            "org.apache.spark.launcher.Main",
                            "org.apache.spark.executor.CoarseGrainedExecutorBackend",
                            "--executor-id",
                            "1",
                            NULL};
        char *hidden[] = {"java",
                          "-cp",
                          "@/tmp/f",
                          "org.apache.spark.launcher.Main",
                          "org.apache.spark.executor.CoarseGrainedExecutorBackend",
                          NULL};

        cr_expect_not(policy_java_runs_executor(8, launcher, false));
        /* unless the launcher may read something else: JDK_JAVA_OPTIONS, an @argfile */
        cr_expect(policy_java_runs_executor(8, launcher, true));
        cr_expect(policy_java_runs_executor(5, hidden, false));
}

Test(java, backends)
{
        cr_expect(policy_java_is_backend("org.apache.spark.executor.CoarseGrainedExecutorBackend"));
        cr_expect(
            policy_java_is_backend("org.apache.spark.executor.YarnCoarseGrainedExecutorBackend"));
        cr_expect(policy_java_is_backend(
            "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"));
        cr_expect_not(
            policy_java_is_backend("org.apache.spark.executor.CoarseGrainedExecutorBackendX"));
        cr_expect_not(policy_java_is_backend("org.apache.spark.deploy.yarn.ExecutorLauncher"));
        cr_expect_not(policy_java_is_backend(NULL));
}

Test(java, option_variables_end_the_launchers_exemption)
{
        char *launcher[] = {"java",
                            "-cp",
                            "/opt/spark/jars/*",
                            "org.apache.spark.launcher.Main",
                            "org.apache.spark.executor.CoarseGrainedExecutorBackend",
                            NULL};
        /* each can add a -javaagent that runs the backend in the launcher's JVM */
        char *set[][3] = {
            {"PATH=/bin", "JAVA_TOOL_OPTIONS=-javaagent:/tmp/a.jar", NULL},
            {"_JAVA_OPTIONS=-javaagent:/tmp/a.jar", "PATH=/bin", NULL},
            {"JDK_JAVA_OPTIONS=-Dx=1", NULL, NULL},
            /* getenv(3) takes the first; the JVM may not: any non-empty one counts */
            {"JAVA_TOOL_OPTIONS=", "JAVA_TOOL_OPTIONS=-javaagent:/tmp/a.jar", NULL},
            /* an OpenJ9 VM's own */
            {"OPENJ9_JAVA_OPTIONS=-javaagent:/tmp/a.jar", NULL, NULL},
            {"IBM_JAVA_OPTIONS=-javaagent:/tmp/a.jar", NULL, NULL},
        };
        char *unset[][4] = {
            {"PATH=/bin", NULL, NULL, NULL},
            {"JAVA_TOOL_OPTIONS=", "_JAVA_OPTIONS=", "JDK_JAVA_OPTIONS=", NULL},
            {"NOT_JAVA_OPTIONS=-javaagent:/tmp/a.jar", "JAVA_TOOL_OPTIONSX=-Dx=1",
             "JAVA_OPTIONS=-Dx=1", NULL},
        };

        for (size_t i = 0; i < ELEMENTSOF(set); i++) {
                cr_expect(policy_java_env_options(set[i]), "%s %s: not seen as options", set[i][0],
                          set[i][1] ? set[i][1] : "");
                cr_expect(policy_java_runs_executor(5, launcher, policy_java_env_options(set[i])),
                          "%s %s: Spark's launcher naming a backend ran unwrapped", set[i][0],
                          set[i][1] ? set[i][1] : "");
        }
        for (size_t i = 0; i < ELEMENTSOF(unset); i++) {
                cr_expect_not(policy_java_env_options(unset[i]), "%s %s: seen as options",
                              unset[i][0], unset[i][1] ? unset[i][1] : "");
                cr_expect_not(
                    policy_java_runs_executor(5, launcher, policy_java_env_options(unset[i])),
                    "%s: Spark's launcher wrapped", unset[i][0]);
        }
        cr_expect_not(policy_java_env_options(NULL), "a NULL environment has options");
}
