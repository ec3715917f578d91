/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a java command line runs: its main class, read as the JDK's launcher reads its
 * options (the launcher's own option table, JDK 8 to 25), and whether that is a Spark
 * executor backend. Used by the java personality of `sparkshim java-home`.
 */
#include <stdbool.h>
#include <string.h>

#include "policy.h"

/* The executor backends that Spark 3.3 to 4.x start (standalone, YARN, Kubernetes, Mesos). */
static const char *const backends[] = {
        "org.apache.spark.executor.CoarseGrainedExecutorBackend",
        "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend",
        "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
        "org.apache.spark.executor.MesosExecutorBackend",
};

/* The launcher's options whose value is the next argument (java.c's IsWhiteSpaceOption). */
static const char *const with_value[] = {
        "-cp",           "-classpath",    "--class-path",    "-p",
        "--module-path", "--upgrade-module-path", "--add-modules", "--limit-modules",
        "--add-exports", "--add-opens",   "--add-reads",     "--patch-module",
        "--enable-native-access", "--source", "--illegal-native-access",
};

/* Options after which the launcher runs no main class: it prints and exits. */
static const char *const no_main[] = {
        "-version",       "--version",        "-h",              "-help",
        "--help",         "-?",               "-X",              "--help-extra",
        "--list-modules", "-d",               "--describe-module", "--validate-modules",
        "--dry-run",
};

static bool in(const char *const list[], size_t n, const char *s)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(list[i], s) == 0)
                        return true;
        return false;
}

#define IN(list, s) in(list, sizeof(list) / sizeof((list)[0]), s)

bool policy_java_is_backend(const char *class_name)
{
        return class_name && IN(backends, class_name);
}

enum policy_java_main policy_java_main_class(int argc, char *const argv[], const char **ret_class)
{
        *ret_class = NULL;
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];

                if (a[0] != '-') {
                        /* the launcher expands an @argfile: what follows is unknown here */
                        if (a[0] == '@')
                                return POLICY_JAVA_MAIN_UNKNOWN;
                        *ret_class = a;
                        return POLICY_JAVA_MAIN_CLASS;
                }
                if (strcmp(a, "-jar") == 0)
                        return POLICY_JAVA_MAIN_JAR;
                if (strcmp(a, "-m") == 0 || strcmp(a, "--module") == 0 ||
                    strncmp(a, "--module=", 9) == 0) {
                        const char *m = strncmp(a, "--module=", 9) == 0 ? a + 9
                                        : i + 1 < argc               ? argv[i + 1]
                                                                     : NULL;
                        const char *slash = m ? strchr(m, '/') : NULL;

                        if (!slash)
                                return POLICY_JAVA_MAIN_MODULE;
                        *ret_class = slash + 1;
                        return POLICY_JAVA_MAIN_CLASS;
                }
                if (IN(no_main, a))
                        return POLICY_JAVA_MAIN_NONE;
                if (IN(with_value, a))
                        i++;
        }
        return POLICY_JAVA_MAIN_NONE;
}

bool policy_java_runs_executor(int argc, char *const argv[], bool env_options)
{
        const char *main_class;
        enum policy_java_main m = policy_java_main_class(argc, argv, &main_class);

        if (m == POLICY_JAVA_MAIN_CLASS && policy_java_is_backend(main_class))
                return true;
        /*
         * The launcher reads more than argv here (an @argfile, JDK_JAVA_OPTIONS): what runs
         * cannot be known before it does. A backend's name as a whole argument counts then,
         * so that a reading that errs wraps a command, and never lets an executor through.
         */
        if (m == POLICY_JAVA_MAIN_UNKNOWN || env_options)
                for (int i = 1; i < argc; i++)
                        if (policy_java_is_backend(argv[i]))
                                return true;
        return false;
}
