/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sparkshim: resource-control entrypoint for Spark executors. See sparkshim(1).
 */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "inject.h"
#include "measure.h"
#include "shim.h"
#include "util.h"

extern char **environ;

struct options {
        const char *policy_path;
        bool policy_explicit;
        const char *name;
        const char *name_origin;
        const char *cgroup_parent;
        const char *cgroup_parent_origin;
        const char *fail_mode;
        const char *fail_mode_origin;
        const char *format;
        const char *cgroup_root;
        long grace; /* -1 = policy */
        const char *grace_origin;
        const char *report_file, *report_socket, *prometheus;
        long report_interval; /* -1 = policy */
        bool report_stdout, no_bpf, no_taskstats;
        const char *probe_root;   /* sparkshim-test only: SPARKSHIM_PROBE_ROOT */
        bool json, all;           /* report */
        const char *jdk;          /* java-home */
        const char *probe_cgroup; /* probe */
        long probe_pid;
        unsigned probe_interval, probe_count;
        int agent; /* -1: policy, 0: --no-agent, 1: --agent */
        const char *agent_origin;
        const char *agent_path;
        const char *agent_path_origin;
        bool init;
        bool signal_group;
        int verbosity;
        struct policy_inputs inputs;
};

enum {
        OPT_POLICY = 0x100,
        OPT_NAME,
        OPT_CGROUP_PARENT,
        OPT_CORES,
        OPT_MILLICORES,
        OPT_LIMIT_MILLICORES,
        OPT_MEMORY,
        OPT_OVERHEAD,
        OPT_OFFHEAP,
        OPT_PYSPARK,
        OPT_BURST,
        OPT_INIT,
        OPT_FAIL_MODE,
        OPT_GRACE,
        OPT_SIGNAL_GROUP,
        OPT_FORMAT,
        OPT_REPORT,
        OPT_REPORT_SOCKET,
        OPT_REPORT_STDOUT,
        OPT_REPORT_INTERVAL,
        OPT_PROMETHEUS,
        OPT_NO_BPF,
        OPT_NO_TASKSTATS,
        OPT_JSON,
        OPT_ALL,
        OPT_CGROUP,
        OPT_PID,
        OPT_INTERVAL,
        OPT_COUNT,
        OPT_VERSION,
        OPT_AGENT,
        OPT_NO_AGENT,
        OPT_AGENT_PATH,
        OPT_JDK,
};

static const struct option long_options[] = {
    {"policy", required_argument, NULL, OPT_POLICY},
    {"name", required_argument, NULL, OPT_NAME},
    {"cgroup-parent", required_argument, NULL, OPT_CGROUP_PARENT},
    {"cores", required_argument, NULL, OPT_CORES},
    {"millicores", required_argument, NULL, OPT_MILLICORES},
    {"limit-millicores", required_argument, NULL, OPT_LIMIT_MILLICORES},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"memory-overhead", required_argument, NULL, OPT_OVERHEAD},
    {"offheap", required_argument, NULL, OPT_OFFHEAP},
    {"pyspark-memory", required_argument, NULL, OPT_PYSPARK},
    {"burst-ratio", required_argument, NULL, OPT_BURST},
    {"init", no_argument, NULL, OPT_INIT},
    {"fail-mode", required_argument, NULL, OPT_FAIL_MODE},
    {"grace", required_argument, NULL, OPT_GRACE},
    {"signal-group", no_argument, NULL, OPT_SIGNAL_GROUP},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"report", required_argument, NULL, OPT_REPORT},
    {"report-socket", required_argument, NULL, OPT_REPORT_SOCKET},
    {"report-stdout", no_argument, NULL, OPT_REPORT_STDOUT},
    {"report-interval", required_argument, NULL, OPT_REPORT_INTERVAL},
    {"prometheus", required_argument, NULL, OPT_PROMETHEUS},
    {"no-bpf", no_argument, NULL, OPT_NO_BPF},
    {"no-taskstats", no_argument, NULL, OPT_NO_TASKSTATS},
    {"json", no_argument, NULL, OPT_JSON},
    {"all", no_argument, NULL, OPT_ALL},
    {"cgroup", required_argument, NULL, OPT_CGROUP},
    {"pid", required_argument, NULL, OPT_PID},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"count", required_argument, NULL, OPT_COUNT},
    {"agent", no_argument, NULL, OPT_AGENT},
    {"no-agent", no_argument, NULL, OPT_NO_AGENT},
    {"agent-path", required_argument, NULL, OPT_AGENT_PATH},
    {"jdk", required_argument, NULL, OPT_JDK},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

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

static _Noreturn void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void die(int code, const char *fmt, ...)
{
        char line[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        log_error("%s", line);
        exit(code);
}

static uint64_t parse_millicores(const char *flag, const char *s)
{
        uint64_t v = 0;

        if (policy_parse_millicores(s, &v) < 0 || v == 0)
                die(SHIM_EXIT_USAGE,
                    "%s: '%s' is not a CPU amount; allowed: millicores >= 1 as 500 or 500m, or "
                    "cores as 0.5",
                    flag, s);
        return v;
}

static uint64_t parse_size(const char *flag, const char *s, enum policy_unit unit)
{
        uint64_t v;

        if (policy_parse_spark_bytes(s, unit, &v) < 0)
                die(SHIM_EXIT_USAGE,
                    "%s: '%s' is not a size; allowed: digits with an optional suffix b, k, m, g, "
                    "t, p (%s when none)",
                    flag, s, unit == POLICY_UNIT_MIB ? "MiB" : "bytes");
        return v;
}

static const char *getenv_nonempty(const char *name)
{
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

/* A flag that sets an executor input of the plan: true when c is one. */
static bool plan_option(int c, struct policy_inputs *in)
{
        uint64_t u;
        double d;

        switch (c) {
        case OPT_CORES:
                if (util_parse_u64(optarg, &u) < 0 || u == 0 || u > 4096)
                        die(SHIM_EXIT_USAGE,
                            "--cores: '%s' is not a core count; allowed: 1 to 4096", optarg);
                policy_input_set_u64(&in->cores, u, POLICY_SOURCE_FLAG, "--cores");
                break;
        case OPT_MILLICORES:
                policy_input_set_u64(&in->millicores, parse_millicores("--millicores", optarg),
                                     POLICY_SOURCE_FLAG, "--millicores");
                break;
        case OPT_LIMIT_MILLICORES:
                policy_input_set_u64(&in->limit_millicores,
                                     parse_millicores("--limit-millicores", optarg),
                                     POLICY_SOURCE_FLAG, "--limit-millicores");
                break;
        case OPT_MEMORY:
                policy_input_set_u64(&in->heap_bytes,
                                     parse_size("--memory", optarg, POLICY_UNIT_MIB),
                                     POLICY_SOURCE_FLAG, "--memory");
                break;
        case OPT_OVERHEAD:
                policy_input_set_u64(&in->overhead_bytes,
                                     parse_size("--memory-overhead", optarg, POLICY_UNIT_MIB),
                                     POLICY_SOURCE_FLAG, "--memory-overhead");
                break;
        case OPT_OFFHEAP:
                policy_input_set_u64(&in->offheap_bytes,
                                     parse_size("--offheap", optarg, POLICY_UNIT_BYTES),
                                     POLICY_SOURCE_FLAG, "--offheap");
                policy_input_set_bool(&in->offheap_enabled, true, POLICY_SOURCE_FLAG, "--offheap");
                break;
        case OPT_PYSPARK:
                policy_input_set_u64(&in->pyspark_bytes,
                                     parse_size("--pyspark-memory", optarg, POLICY_UNIT_MIB),
                                     POLICY_SOURCE_FLAG, "--pyspark-memory");
                break;
        case OPT_BURST:
                if (util_parse_double(optarg, &d) < 0 || d < 0 || d > 1)
                        die(SHIM_EXIT_USAGE, "--burst-ratio: '%s' is not a ratio; allowed: 0 to 1",
                            optarg);
                policy_input_set_double(&in->burst_ratio, d, POLICY_SOURCE_FLAG, "--burst-ratio");
                break;
        default:
                return false;
        }
        return true;
}

/* A flag of the reports, the probe or the output format: true when c is one. */
static bool report_option(int c, struct options *o)
{
        uint64_t u;

        switch (c) {
        case OPT_REPORT:
                o->report_file = optarg;
                break;
        case OPT_REPORT_SOCKET:
                o->report_socket = optarg;
                break;
        case OPT_REPORT_STDOUT:
                o->report_stdout = true;
                break;
        case OPT_REPORT_INTERVAL:
                if (util_parse_u64(optarg, &u) < 0 || u < 1 || u > 3600)
                        die(SHIM_EXIT_USAGE,
                            "--report-interval: '%s' is not a number of seconds; allowed: 1 to "
                            "3600",
                            optarg);
                o->report_interval = (long)u;
                break;
        case OPT_PROMETHEUS:
                o->prometheus = optarg;
                break;
        case OPT_NO_BPF:
                o->no_bpf = true;
                break;
        case OPT_NO_TASKSTATS:
                o->no_taskstats = true;
                break;
        case OPT_JSON:
                o->json = true;
                break;
        case OPT_ALL:
                o->all = true;
                break;
        case OPT_CGROUP:
                o->probe_cgroup = optarg;
                break;
        case OPT_PID:
                if (util_parse_u64(optarg, &u) < 0 || u < 1 || u > 4194304)
                        die(SHIM_EXIT_USAGE, "--pid: '%s' is not a process id", optarg);
                o->probe_pid = (long)u;
                break;
        case OPT_INTERVAL:
                if (util_parse_u64(optarg, &u) < 0 || u < 1 || u > 3600)
                        die(SHIM_EXIT_USAGE,
                            "--interval: '%s' is not a number of seconds; allowed: 1 to 3600",
                            optarg);
                o->probe_interval = (unsigned)u;
                break;
        case OPT_COUNT:
                if (util_parse_u64(optarg, &u) < 0 || u > 1000000)
                        die(SHIM_EXIT_USAGE,
                            "--count: '%s' is not a count; allowed: 0 (until the end) to 1000000",
                            optarg);
                o->probe_count = (unsigned)u;
                break;
        case OPT_FORMAT:
                if (strcmp(optarg, "json") != 0 && strcmp(optarg, "cgroup") != 0 &&
                    strcmp(optarg, "k8s") != 0)
                        die(SHIM_EXIT_USAGE,
                            "--format: '%s' is not a format; allowed: json, cgroup, k8s", optarg);
                o->format = optarg;
                break;
        default:
                return false;
        }
        return true;
}

static void parse_options(int argc, char **argv, struct options *o)
{
        int c;

        opterr = 0; /* our own one-line messages below */
        while ((c = getopt_long(argc, argv, "+:vqh", long_options, NULL)) != -1) {
                uint64_t u;

                if (plan_option(c, &o->inputs) || report_option(c, o))
                        continue;
                switch (c) {
                case OPT_POLICY:
                        o->policy_path = optarg;
                        o->policy_explicit = true;
                        break;
                case OPT_NAME:
                        o->name = optarg;
                        o->name_origin = "--name";
                        break;
                case OPT_CGROUP_PARENT:
                        o->cgroup_parent = optarg;
                        o->cgroup_parent_origin = "--cgroup-parent";
                        break;
                case OPT_INIT:
                        o->init = true;
                        break;
                case OPT_FAIL_MODE:
                        o->fail_mode = optarg;
                        o->fail_mode_origin = "--fail-mode";
                        break;
                case OPT_GRACE:
                        if (util_parse_u64(optarg, &u) < 0 || u > 3600)
                                die(SHIM_EXIT_USAGE,
                                    "--grace: '%s' is not a number of seconds; allowed: 0 to 3600",
                                    optarg);
                        o->grace = (long)u;
                        o->grace_origin = "--grace";
                        break;
                case OPT_SIGNAL_GROUP:
                        o->signal_group = true;
                        break;
                case OPT_AGENT:
                case OPT_NO_AGENT:
                        o->agent = c == OPT_AGENT;
                        o->agent_origin = c == OPT_AGENT ? "--agent" : "--no-agent";
                        break;
                case OPT_AGENT_PATH:
                        o->agent_path = optarg;
                        o->agent_path_origin = "--agent-path";
                        break;
                case OPT_JDK:
                        o->jdk = optarg;
                        break;
                case 'v':
                        o->verbosity++;
                        break;
                case 'q':
                        o->verbosity = -1;
                        break;
                case 'h':
                        usage(stdout);
                        exit(0);
                case OPT_VERSION:
                        printf("sparkshim %s\n", SPARKSHIM_VERSION);
                        exit(0);
                case ':':
                        die(SHIM_EXIT_USAGE, "%s: needs a value; see sparkshim --help",
                            argv[optind - 1]);
                default:
                        if (optopt)
                                die(SHIM_EXIT_USAGE, "-%c: unknown option; see sparkshim --help",
                                    optopt);
                        die(SHIM_EXIT_USAGE, "%s: unknown option; see sparkshim --help",
                            argv[optind - 1]);
                }
        }
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

/* Shim-level settings from the environment, below the flags. */
static void apply_environment(struct options *o)
{
        const char *v;
        uint64_t u;

        /*
         * The policy is the admin's: only --policy (the admin's launch configuration) or the
         * built-in default choose it. The environment is the job user's (docs/security.md).
         */
        if (getenv_nonempty("SPARKSHIM_POLICY"))
                log_warn(
                    "SPARKSHIM_POLICY is not read: the policy is chosen by --policy only; using %s",
                    o->policy_path);
        if (!o->name && (v = getenv_nonempty("SPARKSHIM_NAME"))) {
                o->name = v;
                o->name_origin = "SPARKSHIM_NAME";
        }
        if (!o->cgroup_parent && (v = getenv_nonempty("SPARKSHIM_CGROUP_PARENT"))) {
                o->cgroup_parent = v;
                o->cgroup_parent_origin = "SPARKSHIM_CGROUP_PARENT";
        }
        if (!o->fail_mode && (v = getenv_nonempty("SPARKSHIM_FAIL_MODE"))) {
                o->fail_mode = v;
                o->fail_mode_origin = "SPARKSHIM_FAIL_MODE";
        }
        if (o->grace < 0 && (v = getenv_nonempty("SPARKSHIM_GRACE"))) {
                if (util_parse_u64(v, &u) < 0 || u > 3600)
                        die(SHIM_EXIT_USAGE,
                            "SPARKSHIM_GRACE: '%s' is not a number of seconds; allowed: 0 to 3600",
                            v);
                o->grace = (long)u;
                o->grace_origin = "SPARKSHIM_GRACE";
        }
        if (o->agent < 0 && (v = getenv_nonempty("SPARKSHIM_AGENT"))) {
                if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
                        die(SHIM_EXIT_USAGE,
                            "SPARKSHIM_AGENT: '%s' is not a switch; allowed: on, off", v);
                o->agent = strcmp(v, "on") == 0;
                o->agent_origin = "SPARKSHIM_AGENT";
        }
        if (!o->agent_path && (v = getenv_nonempty("SPARKSHIM_AGENT_PATH"))) {
                o->agent_path = v;
                o->agent_path_origin = "SPARKSHIM_AGENT_PATH";
        }
#ifdef SPARKSHIM_TEST_HOOKS
        /* sparkshim-test only (built for the test suites, never installed): another cgroup mount */
        if ((v = getenv_nonempty("SPARKSHIM_CGROUP_ROOT")))
                o->cgroup_root = v;
        /* and another pin root for the node's probe set (tests/bpf/test-node-full.sh) */
        if ((v = getenv_nonempty("SPARKSHIM_PROBE_ROOT")))
                o->probe_root = v;
#endif
}

static void load_policy(const struct options *o, struct policy *p)
{
        struct util_error err = {0};
        int r;

        policy_init_defaults(p);
        r = policy_load_file(o->policy_path, geteuid() == 0, p, &err);
        if (r == -ENOENT && !o->policy_explicit) {
                log_info("no policy at %s; using the built-in defaults", o->policy_path);
                policy_init_defaults(p);
                return;
        }
        if (r < 0)
                die(SHIM_EXIT_POLICY, "%s", err.text);
}

/* Apply the shim-level overrides (fail mode, cgroup parent) that the policy must allow. */
static void apply_overrides(const struct options *o, struct policy *p)
{
        struct util_error err = {0};
        enum policy_source source;

        if (o->fail_mode) {
                enum policy_fail_mode m;
                if (strcmp(o->fail_mode, "open") == 0)
                        m = POLICY_FAIL_OPEN;
                else if (strcmp(o->fail_mode, "closed") == 0)
                        m = POLICY_FAIL_CLOSED;
                else
                        die(SHIM_EXIT_USAGE, "%s: '%s' is not a fail mode; allowed: open, closed",
                            o->fail_mode_origin, o->fail_mode);
                source = o->fail_mode_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if (m != p->fail_mode && policy_check_override(p, POLICY_OVERRIDE_FAIL_MODE, source,
                                                               o->fail_mode_origin, &err) < 0)
                        die(SHIM_EXIT_PLAN, "%s", err.text);
                p->fail_mode = m;
        }
        if (o->cgroup_parent) {
                char parent[POLICY_PATH_MAX];

                if (policy_normalize_cgroup_path(o->cgroup_parent, parent, sizeof(parent)) < 0)
                        die(SHIM_EXIT_USAGE,
                            "%s: '%s' is not a cgroup path; allowed: components of [A-Za-z0-9_.-], "
                            "none '.' or '..'",
                            o->cgroup_parent_origin, o->cgroup_parent);
                source = o->cgroup_parent_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if (strcmp(parent, p->cgroup_parent) != 0 &&
                    policy_check_override(p, POLICY_OVERRIDE_CGROUP_PARENT, source,
                                          o->cgroup_parent_origin, &err) < 0)
                        die(SHIM_EXIT_PLAN, "%s", err.text);
                snprintf(p->cgroup_parent, sizeof(p->cgroup_parent), "%s", parent);
        }
        if (o->name) {
                /* whatever the name, a taken leaf is never shared (make_leaf): this gates the
                 * choice */
                source = o->name_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if (policy_check_override(p, POLICY_OVERRIDE_NAME, source, o->name_origin, &err) <
                    0)
                        die(SHIM_EXIT_PLAN, "%s", err.text);
        }
        if (o->grace >= 0) {
                /* a shorter grace only hurts the executor's own shutdown; a longer one holds the
                 * node */
                source = o->grace_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if ((unsigned)o->grace > p->grace_seconds &&
                    policy_check_override(p, POLICY_OVERRIDE_GRACE, source, o->grace_origin, &err) <
                        0)
                        die(SHIM_EXIT_PLAN, "%s", err.text);
                p->grace_seconds = (unsigned)o->grace;
        }
        if (o->agent >= 0) {
                source = o->agent_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if ((o->agent == 1) != p->agent.enabled &&
                    policy_check_override(p, POLICY_OVERRIDE_AGENT, source, o->agent_origin, &err) <
                        0)
                        die(SHIM_EXIT_PLAN, "%s", err.text);
                p->agent.enabled = o->agent == 1;
        }
        if (o->agent_path) {
                const char *current = p->agent.path[0] ? p->agent.path : SPARKSHIM_AGENT_PATH;

                /* the JVM ends the library's path at the first '=' of -agentpath: */
                if (!shim_agent_option_path_ok(o->agent_path) || strchr(o->agent_path, '=') ||
                    strlen(o->agent_path) >= sizeof(p->agent.path))
                        die(SHIM_EXIT_USAGE,
                            "%s: '%s' is not a usable agent path; allowed: an absolute path "
                            "without blanks, "
                            "quotes, '\\', ',' or '='",
                            o->agent_path_origin, o->agent_path);
                source = o->agent_path_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if (strcmp(o->agent_path, current) != 0 &&
                    policy_check_override(p, POLICY_OVERRIDE_AGENT, source, o->agent_path_origin,
                                          &err) < 0)
                        die(SHIM_EXIT_PLAN, "%s", err.text);
                snprintf(p->agent.path, sizeof(p->agent.path), "%s", o->agent_path);
        }
}

static void compute_plan(struct options *o, const struct policy *p, int argc, char **cmd,
                         struct policy_plan *plan)
{
        struct util_error err = {0};

        if (policy_inputs_from_spark_env(&o->inputs, environ, &err) < 0)
                die(SHIM_EXIT_USAGE, "%s", err.text);
        if (argc > 0 && policy_inputs_from_command(&o->inputs, argc, cmd, &err) < 0)
                die(SHIM_EXIT_USAGE, "%s", err.text);
        if (policy_inputs_from_env(&o->inputs, environ, &err) < 0)
                die(SHIM_EXIT_USAGE, "%s", err.text);
        if (policy_inputs_check(&o->inputs, &err) < 0)
                die(SHIM_EXIT_USAGE, "%s", err.text);
        if (policy_plan_compute(p, &o->inputs, plan, &err) < 0)
                die(SHIM_EXIT_PLAN, "%s", err.text);
        if (plan->clamped[0])
                log_warn("clamped to the policy's bounds: %s", plan->clamped);
}

/*
 * The cgroup name: --name, else <app-id>-<executor-id> made safe, else executor-<pid>;
 * escaped so that it is never a kernel interface file's name (shim_cgroup_escape_name).
 */
static void executor_name(const struct options *o, bool init_mode, char *buf, size_t size)
{
        char name[POLICY_NAME_MAX];
        size_t len;

        if (o->name) {
                if (!shim_cgroup_name_valid(o->name))
                        die(SHIM_EXIT_USAGE,
                            "%s: '%.200s' is not a valid cgroup name; allowed: 1-100 of "
                            "[A-Za-z0-9_.-], not '.' or '..'",
                            o->name_origin, o->name);
                shim_cgroup_escape_name(o->name, buf, size);
                return;
        }
        if (init_mode)
                snprintf(name, sizeof(name), "executor");
        else if (o->inputs.app_id[0] || o->inputs.executor_id[0])
                snprintf(name, sizeof(name), "%s%s%s", o->inputs.app_id,
                         o->inputs.app_id[0] && o->inputs.executor_id[0] ? "-" : "",
                         o->inputs.executor_id);
        else
                snprintf(name, sizeof(name), "executor-%d", (int)getpid());
        len = strnlen(name, sizeof(name));
        if (len > 100)
                name[len = 100] = '\0';
        for (size_t i = 0; i < len; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
                            name[i]))
                        name[i] = '_';
        if (!shim_cgroup_name_valid(name))
                snprintf(name, sizeof(name), "executor-%d", (int)getpid());
        shim_cgroup_escape_name(name, buf, size);
}

static int print_plan(const struct options *o, const struct policy *policy,
                      const struct policy_plan *plan, const char *parent, const char *name)
{
        struct policy_write w[POLICY_WRITES_MAX];
        size_t n = policy_plan_writes(plan, w);
        const char *format = o->format ? o->format : "json";

        if (strcmp(format, "cgroup") == 0) {
                for (size_t i = 0; i < n; i++)
                        printf("%s %s\n", w[i].file, w[i].value);
        } else if (strcmp(format, "k8s") == 0) {
                char rc[32], rm[32], lc[32], lm[32];
                policy_format_cpu_quantity(plan->cpu_request_millicores, rc, sizeof(rc));
                policy_format_memory_quantity(plan->memory_request_bytes, rm, sizeof(rm));
                policy_format_cpu_quantity(plan->cpu_limit_millicores, lc, sizeof(lc));
                policy_format_memory_quantity(plan->memory_limit_bytes, lm, sizeof(lm));
                printf("resources:\n  requests:\n    cpu: \"%s\"\n    memory: \"%s\"\n"
                       "  limits:\n",
                       rc, rm);
                if (!plan->cpu_unlimited)
                        printf("    cpu: \"%s\"\n", lc);
                printf("    memory: \"%s\"\n", lm);
        } else {
                const struct policy_agent *a = &policy->agent;
                uint64_t threshold = policy_agent_threshold_bytes(a, plan);
                json_t *j = policy_plan_to_json(plan);
                json_t *cg = json_pack("{s:s, s:s}", "parent", parent, "name", name);
                json_t *agent =
                    json_pack("{s:b, s:s, s:o}", "enabled", a->enabled, "path",
                              a->path[0] ? a->path : SPARKSHIM_AGENT_PATH, "threshold_bytes",
                              threshold ? json_integer((json_int_t)threshold) : json_null());
                char *text;

                json_t *k8s = json_pack("{s:b}", "init", policy->kubernetes_init);

                if (!j || !cg || json_object_set_new(j, "cgroup", cg) < 0 || !agent ||
                    json_object_set_new(j, "agent", agent) < 0 || !k8s ||
                    json_object_set_new(j, "kubernetes", k8s) < 0)
                        die(SHIM_EXIT_INTERNAL, "out of memory");
                text = json_dumps(j, JSON_INDENT(2));
                json_decref(j);
                if (!text)
                        die(SHIM_EXIT_INTERNAL, "out of memory");
                puts(text);
                free(text);
        }
        return fflush(stdout) == 0 ? 0 : SHIM_EXIT_INTERNAL;
}

static void log_plan(const struct policy_plan *plan, const struct policy_write *w, size_t n,
                     const char *where)
{
        char limit[32] = "unlimited";

        if (!plan->cpu_unlimited)
                snprintf(limit, sizeof(limit), "%" PRIu64 "m", plan->cpu_limit_millicores);
        log_info("plan: cpu request %" PRIu64 "m limit %s; memory request %" PRIu64
                 " limit %" PRIu64 " bytes (burst ratio %.2f)",
                 plan->cpu_request_millicores, limit, plan->memory_request_bytes,
                 plan->memory_limit_bytes, plan->burst_ratio);
        for (size_t i = 0; i < n; i++)
                log_info("%s/%s = %s", where, w[i].file, w[i].value);
}

static bool monitor_rolling_term(void *data)
{
        return shim_monitor_rolling_term(data);
}

static void monitor_started(void *data, pid_t pid)
{
        shim_monitor_pid(data, pid);
}

static const char *nonempty(const char *a, const char *b)
{
        return a && *a ? a : b && *b ? b : NULL;
}

/*
 * Set up the executor's cgroup: enforced, or (fail_mode open, and measuring) a
 * measurement-only leaf.
 */
static bool setup_cgroup(const struct options *o, const struct policy *policy, bool init_mode,
                         const char *name, const struct policy_write *w, size_t n,
                         const char *command, bool measuring, struct shim_cgroup *cg, char *reason,
                         size_t size)
{
        struct shim_cgroup_host host = {0};
        struct util_error err = {0};
        int r;

        r = shim_cgroup_detect(o->cgroup_root, &host);
        if (r < 0)
                util_error_set(&err, r, "cannot inspect %s: %s", o->cgroup_root, strerror(-r));
        else if (init_mode)
                r = shim_cgroup_setup_init(&host, name, w, n, cg, &err);
        else
                r = shim_cgroup_setup_wrap(&host, policy->cgroup_parent, name, w, n, cg, &err);
        if (r >= 0)
                return true;
        if (policy->fail_mode == POLICY_FAIL_CLOSED)
                die(SHIM_EXIT_CGROUP, "cannot enforce the plan: %s (fail_mode closed)", err.text);
        snprintf(reason, size, "%s", err.text);
        log_warn("not enforcing the plan: %s; running %s unconstrained (fail_mode open)", err.text,
                 command);
        /* still measure in a leaf of our own where the hierarchy allows one */
        if (measuring &&
            (host.layout == SHIM_CGROUP_UNIFIED || host.layout == SHIM_CGROUP_HYBRID)) {
                r = init_mode ? shim_cgroup_setup_init(&host, name, NULL, 0, cg, &err)
                              : shim_cgroup_setup_wrap(&host, policy->cgroup_parent, name, NULL, 0,
                                                       cg, &err);
                if (r >= 0)
                        log_info("measuring %s in %s (no limits)", command, cg->path);
                else
                        log_warn("no cgroup to measure %s in either: %s", command, err.text);
        }
        return false;
}

/* ---------------------------------------------------------------- the JVM agent */

/* The agent cannot be injected: refuse the start (fail_mode closed) or run without it. */
static void agent_unusable(const struct policy *p, struct shim_agent_run *run, const char *why)
{
        if (p->fail_mode == POLICY_FAIL_CLOSED)
                die(SHIM_EXIT_CGROUP, "cannot inject the JVM agent: %s (fail_mode closed)", why);
        log_warn("not injecting the JVM agent: %s; running without it (fail_mode open)", why);
        snprintf(run->reason, sizeof(run->reason), "%s", why);
        run->method = SHIM_AGENT_METHOD_NONE;
}

/*
 * Everything about the agent that can refuse the start, before anything is created: the
 * method, the library, an agent the command loads already.
 */
static void prepare_agent(const struct options *o, const struct policy *p, char **cmd,
                          struct shim_agent_run *run)
{
        const struct policy_agent *a = &p->agent;
        char where[64], stats[POLICY_PATH_MAX], why[UTIL_ERROR_TEXT_MAX], resolved[POLICY_PATH_MAX];
        struct util_error problem = {0};
        int r;

        *run = (struct shim_agent_run){.enabled = a->enabled};
        if (!a->enabled) {
                snprintf(run->reason, sizeof(run->reason), "disabled by %s",
                         o->agent == 0 ? o->agent_origin : "the policy (agent.enabled is false)");
                return;
        }
        snprintf(run->path, sizeof(run->path), "%s", a->path[0] ? a->path : SPARKSHIM_AGENT_PATH);

        r = shim_agent_find_loaded(run->path, cmd, environ, where, sizeof(where), stats,
                                   sizeof(stats));
        if (r < 0)
                die(SHIM_EXIT_INTERNAL, "out of memory");
        if (r > 0) {
                struct util_error perr = {0};

                /*
                 * The command loads the policy's agent with options of its own: a user value
                 * like any other. Two copies would both hook the same methods, so it is that
                 * one or none. Its statistics file is the user's choice: root does not read it.
                 */
                if (policy_check_override(p, POLICY_OVERRIDE_AGENT, POLICY_SOURCE_COMMAND, where,
                                          &perr) < 0)
                        die(SHIM_EXIT_PLAN, "%s (the command loads the JVM agent itself)",
                            perr.text);
                snprintf(run->reason, sizeof(run->reason),
                         "the command loads the agent already (%s); not injected a second time, "
                         "its statistics not read",
                         where);
                log_info("JVM agent: %s", run->reason);
                return;
        }

        if (shim_agent_choose_method(a->injection, cmd[0], &run->method) < 0) {
                snprintf(why, sizeof(why),
                         "agent.injection is agentpath, but %.200s is not a java launcher; allowed "
                         "there: auto or java_tool_options",
                         cmd[0]);
                agent_unusable(p, run, why);
                return;
        }
        /* root loads it into the JVM: only root may be able to change it (docs/security.md) */
        if (util_trusted_file(run->path, resolved, sizeof(resolved), &problem) < 0) {
                snprintf(why, sizeof(why),
                         "agent library %s: %s; allowed: a regular file owned by root and not "
                         "writable by group or others, in directories likewise",
                         run->path, problem.text);
                agent_unusable(p, run, why);
                return;
        }
        /* the JVM loads exactly the file that was checked */
        if (!shim_agent_option_path_ok(resolved) || strchr(resolved, '=')) {
                snprintf(why, sizeof(why),
                         "agent library %s resolves to %s, which -agentpath: cannot carry",
                         run->path, resolved);
                agent_unusable(p, run, why);
                return;
        }
        snprintf(run->path, sizeof(run->path), "%s", resolved);
}

/*
 * Where root makes the agent's private directory: the admin's run directory
 * (SPARKSHIM_RUNDIR, built in), never $TMPDIR, which is the user's. It is made 0711 when
 * missing, and refused when anyone but root could change it. A shim that is not root has
 * no one to guard against: it uses $TMPDIR as any program does.
 */
static int private_dir_base(char *buf, size_t size, char *why, size_t why_size)
{
        const char *tmp = getenv_nonempty("TMPDIR");
        struct stat st;

        if (geteuid() != 0) {
                snprintf(buf, size, "%s",
                         tmp && shim_agent_option_path_ok(tmp) && strlen(tmp) < 1024 ? tmp
                                                                                     : "/tmp");
                return 0;
        }
        if (mkdir(SPARKSHIM_RUNDIR, 0711) < 0 && errno != EEXIST) {
                snprintf(why, why_size, "cannot create %s: %s", SPARKSHIM_RUNDIR, strerror(errno));
                return -errno;
        }
        if (lstat(SPARKSHIM_RUNDIR, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
            (st.st_mode & (S_IWGRP | S_IWOTH))) {
                snprintf(why, why_size, "%s is not a directory that only root can change",
                         SPARKSHIM_RUNDIR);
                return -EPERM;
        }
        snprintf(buf, size, "%s", SPARKSHIM_RUNDIR);
        return 0;
}

/* Remove the private run directory and what the agent left in it. */
static void remove_private_dir(const char *dir)
{
        _cleanup_close_ int fd = -1;
        DIR *d;

        if (!dir[0])
                return;
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && (d = fdopendir(fd))) {
                fd = -1; /* the DIR owns it */
                for (struct dirent *de; (de = readdir(d));)
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                unlinkat(dirfd(d), de->d_name, 0);
                closedir(d);
        }
        if (rmdir(dir) < 0 && errno != ENOENT)
                log_warn("cannot remove %s: %s", dir, strerror(errno));
}

/* Private directories of shims that are gone (agent.<pid>.XXXXXX, the pid dead): removed. */
static void sweep_private_dirs(const char *base)
{
        _cleanup_close_ int fd = -1;
        struct dirent *de;
        DIR *d;

        if (geteuid() != 0)
                return; /* $TMPDIR is not ours to sweep */
        fd = open(base, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || !(d = fdopendir(fd)))
                return;
        fd = -1; /* the DIR owns it */
        while ((de = readdir(d))) {
                char path[POLICY_PATH_MAX];
                int pid;

                if (sscanf(de->d_name, "agent.%d.", &pid) != 1 || pid <= 0 || kill(pid, 0) == 0 ||
                    errno != ESRCH)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
                remove_private_dir(path);
        }
        closedir(d);
}

/* The run's private directory for the agent's statistics: <base>/agent.<pid>.XXXXXX. */
static int make_private_dir(char *dir, size_t size, char *why, size_t why_size)
{
        char base[POLICY_PATH_MAX];
        int r;

        r = private_dir_base(base, sizeof(base), why, why_size);
        if (r < 0)
                return r;
        sweep_private_dirs(base);
        snprintf(dir, size, "%s/agent.%d.XXXXXX", base, (int)getpid());
        if (!mkdtemp(dir)) {
                r = -errno;
                snprintf(why, why_size, "cannot create %s: %s", dir, strerror(-r));
                return r;
        }
        /* a JVM that runs as another user writes here too; no one but root lists it */
        if (geteuid() == 0 && chmod(dir, 01733) < 0) {
                r = -errno;
                snprintf(why, why_size, "cannot chmod %s: %s", dir, strerror(-r));
                remove_private_dir(dir);
                return r;
        }
        return 0;
}

/*
 * Put the agent into the launch: the option string from the plan, the executor's cgroup and
 * a statistics file in a private directory (when measuring), then -agentpath: after the java
 * executable, or JAVA_TOOL_OPTIONS. Returns the command to start (cmd, or a new argv), or
 * NULL when the agent cannot be added and fail_mode is closed (logged).
 */
static char **inject_agent(const struct policy *p, const struct policy_plan *plan,
                           const struct shim_cgroup *cg, bool measuring, unsigned interval,
                           char **cmd, struct shim_agent_run *run, char *dir, size_t dir_size)
{
        const struct policy_agent *a = &p->agent;
        _cleanup_free_ char *arg = NULL, *value = NULL;
        char stats[POLICY_PATH_MAX] = "";
        const char *cgroup_dir = NULL;
        char **argv = cmd;
        int r;

        if (!run->enabled || run->method == SHIM_AGENT_METHOD_NONE)
                return cmd;

        /* memory.stat anon is the agent's pressure source; without it the agent reads its
         * own RssAnon (a hybrid host's leaf has no memory controller) */
        if (cg->leaf_fd >= 0 && faccessat(cg->leaf_fd, "memory.stat", F_OK, 0) == 0) {
                if (shim_agent_option_path_ok(cg->path))
                        cgroup_dir = cg->path;
                else
                        log_warn(
                            "JVM agent: cgroup %s cannot be passed to the agent (',' or blanks); "
                            "it reads the JVM's own anonymous memory instead",
                            cg->path);
        }
        if (measuring) {
                char why[512];

                if (make_private_dir(dir, dir_size, why, sizeof(why)) < 0) {
                        log_warn(
                            "JVM agent: no directory for its statistics: %s; the report has none",
                            why);
                        dir[0] = '\0';
                } else {
                        snprintf(stats, sizeof(stats), "%s/stats.jsonl", dir);
                        snprintf(run->stats_path, sizeof(run->stats_path), "%s", stats);
                }
        }

        run->threshold_bytes = policy_agent_threshold_bytes(a, plan);
        run->threshold_of = a->threshold == POLICY_AGENT_THRESHOLD_REQUEST ? "request"
                            : a->threshold == POLICY_AGENT_THRESHOLD_LIMIT ? "limit"
                            : a->threshold == POLICY_AGENT_THRESHOLD_BYTES ? "bytes"
                                                                           : NULL;
        if (run->threshold_bytes > plan->memory_limit_bytes)
                log_warn("JVM agent: threshold %" PRIu64 " bytes is above the memory limit %" PRIu64
                         " bytes: it is never reached",
                         run->threshold_bytes, plan->memory_limit_bytes);
        r = shim_agent_options(
            &(struct shim_agent_params){
                .agent = a,
                .threshold_bytes = run->threshold_bytes,
                .limit_bytes = plan->memory_limit_bytes,
                .request_bytes = plan->memory_request_bytes,
                .cgroup_dir = cgroup_dir,
                .stats_path = stats[0] ? stats : NULL,
                .stats_interval_seconds = interval,
            },
            run->options, sizeof(run->options));
        if (r < 0 || asprintf(&arg, "-agentpath:%s=%s", run->path, run->options) < 0) {
                arg = NULL;
                snprintf(run->reason, sizeof(run->reason), "cannot build the agent's options: %s",
                         strerror(r < 0 ? -r : ENOMEM));
                goto fail;
        }
        if (run->method == SHIM_AGENT_METHOD_AGENTPATH) {
                argv = shim_agent_argv(cmd, arg);
                if (!argv) {
                        snprintf(run->reason, sizeof(run->reason), "out of memory");
                        goto fail;
                }
                arg = NULL; /* the new argv holds it until exit */
        } else {
                value = shim_agent_java_tool_options(getenv(SHIM_AGENT_ENV), arg);
                if (!value || setenv(SHIM_AGENT_ENV, value, 1) < 0) {
                        snprintf(run->reason, sizeof(run->reason), "cannot set %s: %s",
                                 SHIM_AGENT_ENV, strerror(value ? errno : ENOMEM));
                        goto fail;
                }
        }
        run->injected = true;
        log_info("JVM agent: %s -agentpath:%s=%s",
                 run->method == SHIM_AGENT_METHOD_AGENTPATH ? "command line" : SHIM_AGENT_ENV,
                 run->path, run->options);
        return argv;
fail:
        run->method = SHIM_AGENT_METHOD_NONE;
        run->options[0] = '\0';
        run->stats_path[0] = '\0';
        remove_private_dir(dir);
        dir[0] = '\0';
        if (p->fail_mode == POLICY_FAIL_CLOSED) {
                log_error("cannot inject the JVM agent: %s (fail_mode closed)", run->reason);
                return NULL;
        }
        log_warn("not injecting the JVM agent: %s; running without it (fail_mode open)",
                 run->reason);
        return cmd;
}

/*
 * The monitor and its sinks, opened before anything is created: one that cannot be opened
 * stops us now (report.sink_failure refuse) or is said now.
 */
static struct shim_monitor *open_monitor(const struct options *o, const struct policy *policy,
                                         const char *name, bool *ret_measuring,
                                         unsigned *ret_interval)
{
        const char *report_file = nonempty(o->report_file, policy->report_path);
        const char *report_socket = nonempty(o->report_socket, policy->report_socket);
        const char *prometheus = nonempty(o->prometheus, policy->report_prometheus);
        struct shim_monitor *monitor = NULL;
        struct util_error err = {0};
        struct util_error perr = {0};
        int r;

        /* the policy's templates were checked when it was loaded, the flags' are now */
        if (o->report_file && policy_template_check(o->report_file, false, &perr) < 0)
                die(SHIM_EXIT_USAGE,
                    "--report: '%.200s' %s; allowed: a path whose file name may hold {app_id}, "
                    "{executor_id}, {name}",
                    o->report_file, perr.text);
        if (o->prometheus && policy_template_check(o->prometheus, true, &perr) < 0)
                die(SHIM_EXIT_USAGE,
                    "--prometheus: '%.200s' %s; allowed: a path of a *.prom file whose name may "
                    "hold {app_id}, {executor_id}, {name}",
                    o->prometheus, perr.text);
        /* with nowhere to report, measuring would only cost the launch time */
        *ret_measuring = report_file || report_socket || prometheus || o->report_stdout ||
                         policy->rolling.enabled; /* rolling decides on what is measured */
        *ret_interval =
            o->report_interval > 0 ? (unsigned)o->report_interval : policy->report_interval_seconds;
        r = shim_monitor_open(
            &(struct shim_monitor_config){
                .file = report_file,
                .socket = report_socket,
                .prometheus = prometheus,
                .to_stdout = o->report_stdout,
                .interval_seconds = *ret_interval,
                .use_bpf = !o->no_bpf,
                .probe_root = o->probe_root,
                .use_taskstats = !o->no_taskstats,
                .sink_failure_refuse = policy->report_sink_failure == POLICY_SINK_REFUSE,
                .own_thread = true,
                .names = {.app_id = o->inputs.app_id,
                          .executor_id = o->inputs.executor_id,
                          .name = name},
                .rolling = policy->rolling,
            },
            &monitor, &err);
        if (r < 0)
                die(SHIM_EXIT_REPORT, "%s", err.text);
        return monitor;
}

/* An OOM kill in the executor's cgroup: said, and the exit status is 137 (128 + SIGKILL). */
static int oom_status(const struct shim_memory_events *ev, int code, const char *command,
                      const char *cgroup, const struct policy_plan *plan)
{
        if (ev->oom_kill == 0)
                return code;
        log_error("%s was OOM-killed in %s: memory.events oom %" PRIu64 " oom_kill %" PRIu64
                  " max %" PRIu64 " high %" PRIu64 " low %" PRIu64 " (memory.max %" PRIu64 ")",
                  command, cgroup, ev->oom, ev->oom_kill, ev->max, ev->high, ev->low,
                  plan->memory_limit_bytes);
        return code == 128 + SIGKILL || code == 0 ? 128 + SIGKILL : code;
}

/* The final report (before the cgroup goes: it needs the final readings), then the cleanup. */
static void end_run(struct shim_monitor *monitor, int code, const struct shim_memory_events *ev,
                    struct shim_cgroup *cg, const char *agent_dir)
{
        struct util_error err = {0};
        int r;

        if (shim_monitor_finish(monitor, code, ev, &err) < 0)
                log_warn("the final report did not reach every sink: %s", err.text);
        shim_monitor_free(monitor);
        if (cg->leaf_fd >= 0) {
                r = shim_cgroup_destroy(cg);
                if (r < 0)
                        log_warn("cannot remove cgroup %s: %s", cg->path, strerror(-r));
        }
        remove_private_dir(agent_dir);
        /* reap what is already dead */
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

static int cmd_run(struct options *o, int argc, char **cmd)
{
        struct shim_cgroup cg = SHIM_CGROUP_INIT;
        struct policy_write w[POLICY_WRITES_MAX];
        struct util_error err = {0};
        struct shim_monitor *monitor = NULL;
        struct shim_memory_events ev;
        struct policy_plan plan;
        struct policy policy;
        char name[POLICY_NAME_MAX], reason[UTIL_ERROR_TEXT_MAX] = "",
                                    agent_dir[POLICY_PATH_MAX] = "";
        bool pid1 = getpid() == 1, init_mode = o->init || pid1, enforced, have_events = false,
             measuring;
        static struct shim_agent_run agent; /* 19 KiB: not on the stack */
        char **argv;
        unsigned interval;
        size_t n;
        int code, r;

        if (argc == 0)
                die(SHIM_EXIT_USAGE,
                    "run: no command given; usage: sparkshim run [OPTIONS] -- COMMAND [ARGS...]");
        load_policy(o, &policy);
        apply_overrides(o, &policy);
        compute_plan(o, &policy, argc, cmd, &plan);
        n = policy_plan_writes(&plan, w);
        executor_name(o, init_mode, name, sizeof(name));
        prepare_agent(o, &policy, cmd, &agent);

        monitor = open_monitor(o, &policy, name, &measuring, &interval);

        r = shim_signals_block();
        if (r < 0)
                die(SHIM_EXIT_INTERNAL, "cannot block signals: %s", strerror(-r));
        if (!pid1 && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                log_warn(
                    "cannot become a subreaper: %s; orphans of the executor are reaped by init",
                    strerror(errno));

        enforced = setup_cgroup(o, &policy, init_mode, name, w, n, cmd[0], measuring, &cg, reason,
                                sizeof(reason));
        if (cg.leaf_fd >= 0 && strcmp(cg.leaf_name, name) != 0) {
                /* the name was taken (make_leaf): the sinks' file names hold {name} */
                snprintf(name, sizeof(name), "%s", cg.leaf_name);
                shim_monitor_free(monitor);
                monitor = open_monitor(o, &policy, name, &measuring, &interval);
        }
        if (enforced)
                log_plan(&plan, w, n, cg.path);
        argv = inject_agent(&policy, &plan, &cg, measuring, interval, cmd, &agent, agent_dir,
                            sizeof(agent_dir));
        if (!argv) {
                shim_monitor_free(monitor);
                if (cg.leaf_fd >= 0)
                        shim_cgroup_destroy(&cg);
                return SHIM_EXIT_CGROUP;
        }
        if (measuring) {
                struct shim_monitor_identity id = {.app_id = o->inputs.app_id,
                                                   .executor_id = o->inputs.executor_id,
                                                   .name = name,
                                                   .command = cmd[0],
                                                   .argv = argv,
                                                   .mode = init_mode ? "init" : "wrap"};
                if (shim_monitor_set_agent(monitor, &agent) < 0)
                        log_warn("out of memory: the reports have no agent section");
                shim_monitor_start(monitor, &id, &plan, enforced, reason, cg.leaf_fd,
                                   cg.leaf_fd >= 0 ? cg.path : NULL);
        }

        memset(&err, 0, sizeof(err));
        code = shim_supervise(
            &(struct shim_supervise_opts){
                .argv = argv,
                .cgroup_fd = cg.leaf_fd,
                .signal_group = o->signal_group,
                .grace_seconds = policy.grace_seconds,
                .cgroup = cg.leaf_fd >= 0 ? &cg : NULL,
                /* the monitor samples and writes in its own thread */
                .on_start = monitor_started,
                .on_rolling_term = monitor_rolling_term,
                .data = monitor,
            },
            &err);
        if (code < 0) {
                log_error("%s", err.text);
                code = err.error == ENOMEM || !enforced ? SHIM_EXIT_INTERNAL : SHIM_EXIT_CGROUP;
        } else if (err.text[0]) {
                log_error("%s", err.text);
        }

        if (enforced && shim_cgroup_memory_events(&cg, &ev) == 0) {
                have_events = true;
                code = oom_status(&ev, code, cmd[0], cg.path, &plan);
        }
        end_run(monitor, code, have_events ? &ev : NULL, &cg, agent_dir);
        if (argv != cmd) {
                free(argv[1]);
                free(argv);
        }
        return code;
}

static int cmd_plan(struct options *o, int argc, char **cmd)
{
        struct policy_plan plan;
        struct policy policy;
        char name[POLICY_NAME_MAX];

        load_policy(o, &policy);
        apply_overrides(o, &policy);
        compute_plan(o, &policy, argc, cmd, &plan);
        executor_name(o, o->init, name, sizeof(name));
        return print_plan(o, &policy, &plan, policy.cgroup_parent, name);
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
static int java_personality(struct options *o, int argc, char **argv)
{
        char real[PATH_MAX], home_policy[PATH_MAX];
        struct util_error err = {0};
        struct policy policy;

        shim_log_set_level(SHIM_LOG_WARN);
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
                load_policy(o, &policy);
                if (policy.java_executors == POLICY_JAVA_RUN)
                        return cmd_run(o, argc, argv);
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

int main(int argc, char **argv)
{
        struct options o = {
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
        {
                static const char *const commands[] = {"run",    "plan",  "check",
                                                       "report", "probe", "java-home",
                                                       "ingest", "tune",  "tune-service"};
                bool known = false;

                for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                        known = known || strcmp(command, commands[i]) == 0;
                if (!known) {
                        log_error(
                            "'%s' is not a command; allowed: run, plan, check, report, probe, "
                            "java-home, ingest, tune, tune-service (see sparkshim --help)",
                            command);
                        return SHIM_EXIT_USAGE;
                }
        }
        optind = 2;
        parse_options(argc, argv, &o);
        shim_log_set_level(o.verbosity < 0    ? SHIM_LOG_ERROR
                           : o.verbosity == 0 ? SHIM_LOG_WARN
                           : o.verbosity == 1 ? SHIM_LOG_INFO
                                              : SHIM_LOG_DEBUG);
        apply_environment(&o);

        if (strcmp(command, "run") == 0)
                return cmd_run(&o, argc - optind, argv + optind);
        if (strcmp(command, "plan") == 0)
                return cmd_plan(&o, argc - optind, argv + optind);
        if (strcmp(command, "check") == 0) {
                if (optind < argc)
                        die(SHIM_EXIT_USAGE, "check: unexpected argument '%s'", argv[optind]);
                return shim_check(o.policy_path, o.policy_explicit, o.cgroup_root, o.init);
        }
        if (strcmp(command, "report") == 0)
                return shim_cmd_report(argc - optind, argv + optind, o.json, o.all);
        if (strcmp(command, "probe") == 0) {
                if (!o.probe_cgroup == !o.probe_pid)
                        die(SHIM_EXIT_USAGE,
                            "probe: give exactly one of --cgroup PATH and --pid PID");
                return shim_cmd_probe(o.probe_cgroup, (pid_t)o.probe_pid, o.cgroup_root,
                                      o.probe_interval ? o.probe_interval : 1, o.probe_count,
                                      !o.no_bpf);
        }
        if (strcmp(command, "java-home") == 0) {
                struct util_error err = {0};
                char policy_path[PATH_MAX];
                struct policy policy;

                if (!o.jdk || argc - optind != 1)
                        die(SHIM_EXIT_USAGE,
                            "java-home: give --jdk JDK_DIR and one DIR; see sparkshim --help");
#ifdef SPARKSHIM_TEST_HOOKS
                die(SHIM_EXIT_USAGE, "java-home: refused: %s", TEST_HOOKS_REFUSED);
#endif
                if (o.policy_explicit) {
                        /* the home's executors will load it as run --policy does: refuse now what
                         * they would */
                        load_policy(&o, &policy);
                        if (!realpath(o.policy_path, policy_path))
                                die(SHIM_EXIT_POLICY, "java-home: --policy %s: %s", o.policy_path,
                                    strerror(errno));
                }
                if (shim_java_home(o.jdk, o.policy_explicit ? policy_path : NULL, argv[optind],
                                   &err) < 0)
                        die(err.error == EINVAL || err.error == EEXIST || err.error == ENOENT ||
                                    err.error == EPERM
                                ? SHIM_EXIT_USAGE
                                : SHIM_EXIT_INTERNAL,
                            "java-home: %s", err.text);
                return 0;
        }
        return SHIM_EXIT_USAGE; /* not reached: the command was checked above */
}
