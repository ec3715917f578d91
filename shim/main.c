/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sparkshim: resource-control entrypoint for Spark executors. See sparkshim(1).
 *
 * The program's front: the usage, the choice of a command (or of the java personality) and
 * what a build with test hooks changes. Only this file reads SPARKSHIM_TEST_HOOKS and
 * SPARKSHIM_TUNER_PATH: it is compiled twice (sparkshim, and sparkshim-test with the hooks),
 * libshim once. The options are options.c's, run is run.c's, plan cmd-plan.c's.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "run.h"
#include "shim.h"
#include "util.h"

extern char **environ;

static void usage(FILE *f)
{
        fputs(
            "Usage: sparkshim run [OPTIONS] -- COMMAND [ARGS...]\n"
            "       sparkshim plan [OPTIONS] [--format json|cgroup|k8s] [-- COMMAND...]\n"
            "       sparkshim check [--policy FILE] [--init]\n"
            "       sparkshim report [--json] [--all] FILE...\n"
            "       sparkshim probe (--cgroup PATH | --pid PID) [--interval S] [--count N] "
            "[--no-bpf]\n"
            "       sparkshim java-home --jdk JDK_DIR [--policy FILE] DIR\n"
            "       DIR/bin/java ARGS...   (the java personality: an executor as by run, else the "
            "JDK's java)\n"
            "       sparkshim ingest [--db DB] [--job KEY] FILE...   (the tuner: "
            "sparkshim-tune(1))\n"
            "       sparkshim tune --job KEY [--db DB] [--format conf|properties|json]\n"
            "       sparkshim report --job KEY [--db DB] [--json]\n"
            "       sparkshim tune-service [--once [--force]] [--policy FILE]   (the fleet loop)\n"
            "\n"
            "Enforce a Spark executor's CPU (millicores) and memory (memoryBurst) plan\n"
            "through cgroup v2, as its launch wrapper or as its container's PID 1.\n"
            "\n"
            "Options:\n"
            "  --policy FILE          cluster policy (default " SPARKSHIM_DEFAULT_POLICY
            "); java-home:\n"
            "                         the policy of the home's executors\n"
            "  --name NAME            executor cgroup name (default from --app-id/--executor-id)\n"
            "  --cgroup-parent PATH   parent cgroup below the cgroup2 mount\n"
            "  --cores N              task concurrency (spark.executor.cores)\n"
            "  --millicores M         CPU request: millicores (500, 500m) or cores (0.5)\n"
            "  --limit-millicores M   CPU limit, same forms (default request x overcommit)\n"
            "  --memory SIZE          executor heap (Spark size, MiB when no suffix)\n"
            "  --memory-overhead SIZE memory overhead (MiB when no suffix)\n"
            "  --offheap SIZE         off-heap memory, enables it (bytes when no suffix)\n"
            "  --pyspark-memory SIZE  Python worker memory (MiB when no suffix)\n"
            "  --burst-ratio R        memoryBurst ratio in [0,1]: overhead request x (1 - R)\n"
            "  --init                 init mode: set up the namespace's cgroup root (implied as "
            "PID 1)\n"
            "  --fail-mode MODE       closed (refuse to run) or open (run unenforced)\n"
            "  --grace SECONDS        after TERM, wait this long before killing the cgroup\n"
            "  --signal-group         forward signals to the command's process group\n"
            "  --format FMT           plan output: json (default), cgroup or k8s\n"
            "  --report FILE          append the run's reports (JSON lines) to FILE, whose name\n"
            "                         may hold {app_id}, {executor_id}, {name}\n"
            "  --report-socket PATH   send them to a unix stream socket too\n"
            "  --report-stdout        write them to standard output too\n"
            "  --report-interval S    seconds between sample lines (policy default 10)\n"
            "  --prometheus FILE      a Prometheus textfile (*.prom, same fields) kept up to date\n"
            "                         while the executor runs, removed when it ends\n"
            "  --no-bpf               measure without the eBPF probes\n"
            "  --no-taskstats         measure without taskstats\n"
            "  --agent, --no-agent    inject the JVMTI spill agent into the executor JVM, or not\n"
            "  --agent-path FILE      the agent library (default " SPARKSHIM_AGENT_PATH ")\n"
            "  --json, --all          report: re-emit the reports as JSON lines; include samples\n"
            "  --cgroup PATH, --pid PID  probe: the cgroup v2 directory, or a process's cgroup\n"
            "  --jdk JDK_DIR          java-home: the JDK that DIR mirrors, but for bin/java\n"
            "  --interval S, --count N   probe: seconds between samples (default 1); stop after N\n"
            "  -v, --verbose          more log output (repeat for debug)\n"
            "  -q, --quiet            errors only\n"
            "  -h, --help             this text\n"
            "      --version          print the version\n"
            "\n"
            "Exit status: the command's, 128+N when it was killed by signal N, 126 when it\n"
            "cannot be executed, 127 when it is not found; the shim's own failures: 120 usage,\n"
            "121 policy, 122 settings rejected by the policy, 123 the cgroup or the JVM agent\n"
            "could not be set up (fail mode closed), 124 internal error, 125 report sink\n"
            "unusable. See sparkshim(1).\n",
            f);
}

/*
 * A home's java runs for every launch of a job, in the job's environment: a build whose
 * test hooks read that environment (SPARKSHIM_CGROUP_ROOT) must never be one.
 */
#ifdef SPARKSHIM_TEST_HOOKS
#define TEST_HOOKS_REFUSED                                                                         \
        "this program is sparkshim-test, built with test hooks that read the environment (the "    \
        "job's, in a home); allowed: the installed sparkshim, built without them"
#endif

#ifdef SPARKSHIM_TEST_HOOKS
/* What the test suites change through the environment, in sparkshim-test only. */
static void apply_test_hooks(struct shim_options *o)
{
        const char *v;

        /* sparkshim-test only (built for the test suites, never installed): another cgroup mount */
        if ((v = shim_getenv_nonempty("SPARKSHIM_CGROUP_ROOT")))
                o->cgroup_root = v;
        /* and another pin root for the node's probe set (tests/bpf/test-node-full.sh) */
        if ((v = shim_getenv_nonempty("SPARKSHIM_PROBE_ROOT")))
                o->probe_root = v;
}
#endif

/* Shim-level settings from the environment, below the flags; then sparkshim-test's hooks. */
static void apply_environment(struct shim_options *o)
{
        shim_options_environment(o);
#ifdef SPARKSHIM_TEST_HOOKS
        apply_test_hooks(o);
#endif
}

/* The options from optind on: --help and --version answered here, at once. */
static void parse_options(int argc, char **argv, struct shim_options *o)
{
        switch (shim_options_parse(argc, argv, o)) {
        case SHIM_OPTIONS_HELP:
                usage(stdout);
                exit(0);
        case SHIM_OPTIONS_VERSION:
                printf("sparkshim %s\n", SPARKSHIM_VERSION);
                exit(0);
        case SHIM_OPTIONS_PARSED:
                break;
        }
}

/* Was this program executed as "java" (bin/java of a java home)? */
static bool is_java(const char *argv0)
{
        const char *slash = strrchr(argv0, '/');

        return strcmp(slash ? slash + 1 : argv0, "java") == 0;
}

/*
 * The java personality: this program as bin/java of a `sparkshim java-home`. An executor
 * backend runs as `sparkshim run -- JDK/bin/java ARGS` would (unless the policy's
 * java.executors is "exec"); anything else is the JDK's java at once, nothing added.
 */
static int java_personality(struct shim_options *o, int argc, char **argv)
{
        char real[PATH_MAX], home_policy[PATH_MAX];
        struct util_error err = {0};
        struct policy policy;

        util_log_set_level(UTIL_LOG_WARN);
#ifdef SPARKSHIM_TEST_HOOKS
        log_error("java: refused as a home's java: %s", TEST_HOOKS_REFUSED);
        return SHIM_EXIT_NOT_FOUND;
#endif
        if (shim_java_locate(argv[0], real, sizeof(real), home_policy, sizeof(home_policy), &err) <
            0) {
                log_error("java: %s", err.text);
                return SHIM_EXIT_NOT_FOUND;
        }
        argv[0] = real;
        /* the policy java-home --policy gave the home, as --policy gives run its own */
        if (home_policy[0]) {
                o->policy_path = home_policy;
                o->policy_explicit = true;
        }
        if (policy_java_runs_executor(argc, argv, policy_java_env_options(environ))) {
                apply_environment(o);
                shim_policy_load(o, &policy);
                if (policy.java_executors == POLICY_JAVA_RUN)
                        return shim_cmd_run(o, argc, argv);
                log_info("java: policy %s has java.executors \"exec\": the executor runs as the "
                         "JDK's java",
                         o->policy_path);
        } else {
                const char *main_class;

                /* spark-submit's JVM: the job's published settings (PUBLISHED SETTINGS AT SUBMIT)
                 */
                if (policy_java_main_class(argc, argv, &main_class) == POLICY_JAVA_MAIN_CLASS &&
                    strcmp(main_class, POLICY_SUBMIT_CLASS) == 0)
                        for (int i = 1; i < argc; i++)
                                if (argv[i] == main_class) {
                                        argv = shim_submit_apply(argc, argv, i, o->policy_path,
                                                                 o->policy_explicit);
                                        break;
                                }
        }
        execv(real, argv);
        log_error("java: cannot execute %s: %s", real, strerror(errno));
        return errno == ENOENT ? SHIM_EXIT_NOT_FOUND : SHIM_EXIT_CANNOT_RUN;
}

/* `sparkshim report --job KEY`: the per-job view over the tuner's history (sparkshim-tune(1)). */
static bool wants_history(int argc, char **argv)
{
        for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (strcmp(argv[i], "--job") == 0 || strncmp(argv[i], "--job=", 6) == 0)
                        return true;
        return false;
}

/*
 * ingest, tune and report --job are sparkshim-tuner's (tuner/): that program links SQLite,
 * libpq and OpenBLAS, which the launch wrapper around every executor must not load. Its path
 * is fixed at build time (docs/security.md).
 */
static int exec_tuner(char **argv)
{
        argv[0] = (char *)"sparkshim-tuner";
        execv(SPARKSHIM_TUNER_PATH, argv);
        log_error("%s: cannot execute %s (sparkshim's tuner, installed with it): %s", argv[1],
                  SPARKSHIM_TUNER_PATH, strerror(errno));
        return errno == ENOENT ? SHIM_EXIT_NOT_FOUND : SHIM_EXIT_CANNOT_RUN;
}

/* `sparkshim java-home --jdk JDK [--policy POLICY] DIR`: args is DIR. */
static int cmd_java_home(struct shim_options *o, int argc, char **args)
{
        struct util_error err = {0};
        char policy_path[PATH_MAX];
        struct policy policy;

        if (!o->jdk || argc != 1)
                shim_die(SHIM_EXIT_USAGE,
                         "java-home: give --jdk JDK_DIR and one DIR; see sparkshim --help");
        if (o->policy_explicit) {
                /* the home's executors will load it as run --policy does: refuse now what
                 * they would */
                shim_policy_load(o, &policy);
                if (!realpath(o->policy_path, policy_path))
                        shim_die(SHIM_EXIT_POLICY, "java-home: --policy %s: %s", o->policy_path,
                                 strerror(errno));
        }
#ifdef SPARKSHIM_TEST_HOOKS
        shim_die(SHIM_EXIT_USAGE, "java-home: refused: %s", TEST_HOOKS_REFUSED);
#endif
        if (shim_java_home(o->jdk, o->policy_explicit ? policy_path : NULL, args[0], &err) < 0)
                shim_die(err.error == EINVAL || err.error == EEXIST || err.error == ENOENT ||
                                 err.error == EPERM
                             ? SHIM_EXIT_USAGE
                             : SHIM_EXIT_INTERNAL,
                         "java-home: %s", err.text);
        return 0;
}

/* A command of this program's own, with its options parsed: args are the words after them. */
static int dispatch(const char *command, struct shim_options *o, int argc, char **args)
{
        if (strcmp(command, "run") == 0)
                return shim_cmd_run(o, argc, args);
        if (strcmp(command, "plan") == 0)
                return shim_cmd_plan(o, argc, args);
        if (strcmp(command, "check") == 0) {
                if (argc > 0)
                        shim_die(SHIM_EXIT_USAGE, "check: unexpected argument '%s'", args[0]);
                return shim_check(o->policy_path, o->policy_explicit, o->cgroup_root, o->init);
        }
        if (strcmp(command, "report") == 0)
                return shim_cmd_report(argc, args, o->json, o->all);
        if (strcmp(command, "probe") == 0) {
                if (!o->probe_cgroup == !o->probe_pid)
                        shim_die(SHIM_EXIT_USAGE,
                                 "probe: give exactly one of --cgroup PATH and --pid PID");
                return shim_cmd_probe(o->probe_cgroup, (pid_t)o->probe_pid, o->cgroup_root,
                                      o->probe_interval ? o->probe_interval : 1, o->probe_count,
                                      !o->no_bpf);
        }
        if (strcmp(command, "java-home") == 0)
                return cmd_java_home(o, argc, args);
        return SHIM_EXIT_USAGE; /* not reached: the command was checked above */
}

static bool known_command(const char *command)
{
        static const char *const commands[] = {"run",    "plan",  "check",
                                               "report", "probe", "java-home",
                                               "ingest", "tune",  "tune-service"};
        bool known = false;

        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                known = known || strcmp(command, commands[i]) == 0;
        return known;
}

int main(int argc, char **argv)
{
        struct shim_options o = {
            .policy_path = SPARKSHIM_DEFAULT_POLICY,
            .cgroup_root = "/sys/fs/cgroup",
            .grace = -1,
            .report_interval = -1,
            .agent = -1,
        };
        const char *command;

        policy_inputs_init(&o.inputs);
        if (argc >= 1 && is_java(argv[0]))
                return java_personality(&o, argc, argv);
        if (argc < 2) {
                usage(stderr);
                return SHIM_EXIT_USAGE;
        }
        command = argv[1];
        if (command[0] == '-') {
                /* only --help / --version make sense before a command */
                parse_options(argc, argv, &o);
                usage(stderr);
                return SHIM_EXIT_USAGE;
        }
        if (strcmp(command, "ingest") == 0 || strcmp(command, "tune") == 0 ||
            strcmp(command, "tune-service") == 0 ||
            (strcmp(command, "report") == 0 && wants_history(argc, argv)))
                return exec_tuner(argv);
        if (!known_command(command)) {
                log_error("'%s' is not a command; allowed: run, plan, check, report, probe, "
                          "java-home, ingest, tune, tune-service (see sparkshim --help)",
                          command);
                return SHIM_EXIT_USAGE;
        }
        optind = 2;
        parse_options(argc, argv, &o);
        util_log_set_level(o.verbosity < 0    ? UTIL_LOG_ERROR
                           : o.verbosity == 0 ? UTIL_LOG_WARN
                           : o.verbosity == 1 ? UTIL_LOG_INFO
                                              : UTIL_LOG_DEBUG);
        apply_environment(&o);
        return dispatch(command, &o, argc - optind, argv + optind);
}
