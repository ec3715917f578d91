/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sparkshim's options: the command line (getopt_long) into struct shim_options, with the
 * flags that set the plan's executor inputs, those of the reports, the probe and the output
 * format, and the shim-level settings from the environment below the flags. A bad value
 * exits 120 with one line that says what is allowed. The usage text is main.c's.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "shim.h"
#include "util.h"

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

/* One line, at most 1 KiB, and the exit code. */
_Noreturn void shim_die(int code, const char *fmt, ...)
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
                shim_die(
                    SHIM_EXIT_USAGE,
                    "%s: '%s' is not a CPU amount; allowed: millicores >= 1 as 500 or 500m, or "
                    "cores as 0.5",
                    flag, s);
        return v;
}

static uint64_t parse_size(const char *flag, const char *s, enum policy_unit unit)
{
        uint64_t v;

        if (policy_parse_spark_bytes(s, unit, &v) < 0)
                shim_die(
                    SHIM_EXIT_USAGE,
                    "%s: '%s' is not a size; allowed: digits with an optional suffix b, k, m, g, "
                    "t, p (%s when none)",
                    flag, s, unit == POLICY_UNIT_MIB ? "MiB" : "bytes");
        return v;
}

const char *shim_getenv_nonempty(const char *name)
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
                        shim_die(SHIM_EXIT_USAGE,
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
                        shim_die(SHIM_EXIT_USAGE,
                                 "--burst-ratio: '%s' is not a ratio; allowed: 0 to 1", optarg);
                policy_input_set_double(&in->burst_ratio, d, POLICY_SOURCE_FLAG, "--burst-ratio");
                break;
        default:
                return false;
        }
        return true;
}

/* A flag of the reports, the probe or the output format: true when c is one. */
static bool report_option(int c, struct shim_options *o)
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
                        shim_die(
                            SHIM_EXIT_USAGE,
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
                        shim_die(SHIM_EXIT_USAGE, "--pid: '%s' is not a process id", optarg);
                o->probe_pid = (long)u;
                break;
        case OPT_INTERVAL:
                if (util_parse_u64(optarg, &u) < 0 || u < 1 || u > 3600)
                        shim_die(SHIM_EXIT_USAGE,
                                 "--interval: '%s' is not a number of seconds; allowed: 1 to 3600",
                                 optarg);
                o->probe_interval = (unsigned)u;
                break;
        case OPT_COUNT:
                if (util_parse_u64(optarg, &u) < 0 || u > 1000000)
                        shim_die(
                            SHIM_EXIT_USAGE,
                            "--count: '%s' is not a count; allowed: 0 (until the end) to 1000000",
                            optarg);
                o->probe_count = (unsigned)u;
                break;
        case OPT_FORMAT:
                if (strcmp(optarg, "json") != 0 && strcmp(optarg, "cgroup") != 0 &&
                    strcmp(optarg, "k8s") != 0)
                        shim_die(SHIM_EXIT_USAGE,
                                 "--format: '%s' is not a format; allowed: json, cgroup, k8s",
                                 optarg);
                o->format = optarg;
                break;
        default:
                return false;
        }
        return true;
}

enum shim_options_result shim_options_parse(int argc, char **argv, struct shim_options *o)
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
                                shim_die(
                                    SHIM_EXIT_USAGE,
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
                        return SHIM_OPTIONS_HELP;
                case OPT_VERSION:
                        return SHIM_OPTIONS_VERSION;
                case ':':
                        shim_die(SHIM_EXIT_USAGE, "%s: needs a value; see sparkshim --help",
                                 argv[optind - 1]);
                default:
                        if (optopt)
                                shim_die(SHIM_EXIT_USAGE,
                                         "-%c: unknown option; see sparkshim --help", optopt);
                        shim_die(SHIM_EXIT_USAGE, "%s: unknown option; see sparkshim --help",
                                 argv[optind - 1]);
                }
        }
        return SHIM_OPTIONS_PARSED;
}

/* Shim-level settings from the environment, below the flags. */
void shim_options_environment(struct shim_options *o)
{
        const char *v;
        uint64_t u;

        /*
         * The policy is the admin's: only --policy (the admin's launch configuration) or the
         * built-in default choose it. The environment is the job user's (docs/security.md).
         */
        if (shim_getenv_nonempty("SPARKSHIM_POLICY"))
                log_warn(
                    "SPARKSHIM_POLICY is not read: the policy is chosen by --policy only; using %s",
                    o->policy_path);
        if (!o->name && (v = shim_getenv_nonempty("SPARKSHIM_NAME"))) {
                o->name = v;
                o->name_origin = "SPARKSHIM_NAME";
        }
        if (!o->cgroup_parent && (v = shim_getenv_nonempty("SPARKSHIM_CGROUP_PARENT"))) {
                o->cgroup_parent = v;
                o->cgroup_parent_origin = "SPARKSHIM_CGROUP_PARENT";
        }
        if (!o->fail_mode && (v = shim_getenv_nonempty("SPARKSHIM_FAIL_MODE"))) {
                o->fail_mode = v;
                o->fail_mode_origin = "SPARKSHIM_FAIL_MODE";
        }
        if (o->grace < 0 && (v = shim_getenv_nonempty("SPARKSHIM_GRACE"))) {
                if (util_parse_u64(v, &u) < 0 || u > 3600)
                        shim_die(
                            SHIM_EXIT_USAGE,
                            "SPARKSHIM_GRACE: '%s' is not a number of seconds; allowed: 0 to 3600",
                            v);
                o->grace = (long)u;
                o->grace_origin = "SPARKSHIM_GRACE";
        }
        if (o->agent < 0 && (v = shim_getenv_nonempty("SPARKSHIM_AGENT"))) {
                if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
                        shim_die(SHIM_EXIT_USAGE,
                                 "SPARKSHIM_AGENT: '%s' is not a switch; allowed: on, off", v);
                o->agent = strcmp(v, "on") == 0;
                o->agent_origin = "SPARKSHIM_AGENT";
        }
        if (!o->agent_path && (v = shim_getenv_nonempty("SPARKSHIM_AGENT_PATH"))) {
                o->agent_path = v;
                o->agent_path_origin = "SPARKSHIM_AGENT_PATH";
        }
}
