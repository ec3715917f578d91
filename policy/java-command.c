/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a java command line runs: its main class, read as the JDK's launcher reads its
 * options (the launcher's own option table, JDK 8 to 25), and whether that is a Spark
 * executor backend. Used by the java personality of `sparkshim java-home`.
 */
#include <stdbool.h>
#include <string.h>

#include "policy.h"
#include "util.h"

/* The executor backends that Spark 3.3 to 4.x start (standalone, YARN, Kubernetes, Mesos). */
static const char *const backends[] = {
    "org.apache.spark.executor.CoarseGrainedExecutorBackend",
    "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend",
    "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
    "org.apache.spark.executor.MesosExecutorBackend",
};

/* The launcher's options whose value is the next argument (java.c's IsWhiteSpaceOption). */
static const char *const with_value[] = {
    "-cp",
    "-classpath",
    "--class-path",
    "-p",
    "--module-path",
    "--upgrade-module-path",
    "--add-modules",
    "--limit-modules",
    "--add-exports",
    "--add-opens",
    "--add-reads",
    "--patch-module",
    "--enable-native-access",
    "--source",
    "--illegal-native-access",
};

/* Options after which the launcher runs no main class: it prints and exits. */
static const char *const no_main[] = {
    "-version",
    "--version",
    "-h",
    "-help",
    "--help",
    "-?",
    "-X",
    "--help-extra",
    "--list-modules",
    "-d",
    "--describe-module",
    "--validate-modules",
    "--dry-run",
};

static bool in(const char *const list[], size_t n, const char *s)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(list[i], s) == 0)
                        return true;
        return false;
}

#define LENGTH(list) (ELEMENTSOF(list))
#define IN(list, s)  in(list, LENGTH(list), s)

bool policy_java_is_backend(const char *class_name)
{
        return class_name && IN(backends, class_name);
}

/* A backend's name, also as the launcher takes it with '/' for '.' (org/apache/...). */
static bool names_backend(const char *arg)
{
        for (size_t b = 0; b < LENGTH(backends); b++) {
                const char *n = backends[b], *a = arg;

                while (*n && (*a == *n || (*a == '/' && *n == '.'))) {
                        a++;
                        n++;
                }
                if (!*n && !*a)
                        return true;
        }
        return false;
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
                                        : i + 1 < argc                  ? argv[i + 1]
                                                                        : NULL;
                        const char *slash = m ? strchr(m, '/') : NULL;

                        if (!slash)
                                return POLICY_JAVA_MAIN_MODULE;
                        *ret_class = slash + 1;
                        return POLICY_JAVA_MAIN_CLASS;
                }
                if (IN(no_main, a))
                        return POLICY_JAVA_MAIN_NONE;
                /* the launcher splits "--source N --opt" at its spaces */
                if (strncmp(a, "--source", 8) == 0 && strpbrk(a, " \t\n"))
                        return POLICY_JAVA_MAIN_UNKNOWN;
                if (IN(with_value, a)) {
                        /* and expands an @argfile in a value's place too */
                        if (i + 1 < argc && argv[i + 1][0] == '@')
                                return POLICY_JAVA_MAIN_UNKNOWN;
                        i++;
                }
        }
        return POLICY_JAVA_MAIN_NONE;
}

/*
 * The variables the JDK reads options from besides the command line (JAVA_TOOL_OPTIONS by
 * the VM, _JAVA_OPTIONS by HotSpot, JDK_JAVA_OPTIONS by the java launcher, JDK 9 on;
 * OPENJ9_JAVA_OPTIONS and its older name IBM_JAVA_OPTIONS by an OpenJ9 VM): a -javaagent
 * in any of them runs code before the main class, which can start a backend.
 */
static const char *const option_variables[] = {
    "JAVA_TOOL_OPTIONS",   "_JAVA_OPTIONS",    "JDK_JAVA_OPTIONS",
    "OPENJ9_JAVA_OPTIONS", "IBM_JAVA_OPTIONS",
};

bool policy_java_env_options(char *const envp[])
{
        for (size_t i = 0; envp && envp[i]; i++)
                for (size_t v = 0; v < LENGTH(option_variables); v++) {
                        size_t n = strlen(option_variables[v]);

                        /* set and not empty; an empty value adds no option */
                        if (strncmp(envp[i], option_variables[v], n) == 0 && envp[i][n] == '=' &&
                            envp[i][n + 1] != '\0')
                                return true;
                }
        return false;
}

bool policy_java_runs_executor(int argc, char *const argv[], bool env_options)
{
        const char *main_class;
        enum policy_java_main m = policy_java_main_class(argc, argv, &main_class);

        if (m == POLICY_JAVA_MAIN_CLASS && policy_java_is_backend(main_class))
                return true;
        /*
         * Spark's launcher (spark-class runs it first, with the class to run as its
         * argument) prints a command and runs none: not an executor, when nothing the
         * command line does not show can have changed what the launcher reads.
         */
        if (m == POLICY_JAVA_MAIN_CLASS && !env_options &&
            strcmp(main_class, "org.apache.spark.launcher.Main") == 0)
                return false;
        /*
         * Spark passes the backend's class as an argument of its own, and no option of the
         * job's can take that argument away; what the job's options can change is how the
         * launcher reads the rest (an @argfile, "--source" split at spaces, -jar or -m of a
         * file the job put in the working directory that then calls the backend). So the
         * backend's name anywhere counts: a reading that errs wraps a command, and never
         * lets an executor through unwrapped.
         */
        for (int i = 1; i < argc; i++)
                if (names_backend(argv[i]))
                        return true;
        return false;
}
