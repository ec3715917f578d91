/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sparkshim executable's command line and its commands run and plan, private to shim/:
 * the options (options.c), the policy, the overrides and the plan that run and plan share
 * (cmd-plan.c), and `sparkshim run` (run.c). main.c parses, dispatches and decides what a
 * build with test hooks changes (fields of struct shim_options); nothing here reads
 * SPARKSHIM_TEST_HOOKS. These functions log, and on a usage, policy or setup error they
 * exit with the shim's exit code (shim_die), as the executable does.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

/* The command line and the shim-level environment; main.c sets the defaults. */
struct shim_options {
        const char *policy_path;
        bool policy_explicit;
        const char *name;
        const char *name_origin;
        const char *cgroup_parent;
        const char *cgroup_parent_origin;
        const char *fail_mode;
        const char *fail_mode_origin;
        const char *format;
        const char *cgroup_root; /* sparkshim-test: SPARKSHIM_CGROUP_ROOT (main.c) */
        long grace;              /* -1 = policy */
        const char *grace_origin;
        const char *report_file, *report_socket, *prometheus;
        long report_interval; /* -1 = policy */
        bool report_stdout, no_bpf, no_taskstats;
        const char *probe_root;   /* sparkshim-test only: SPARKSHIM_PROBE_ROOT (main.c) */
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

/* Log fmt as an error and exit with code (SHIM_EXIT_*). */
_Noreturn void shim_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- options (options.c) ---- */

/* getenv(), with "" as unset. */
const char *shim_getenv_nonempty(const char *name);

/* What shim_options_parse() found besides the options. */
enum shim_options_result {
        SHIM_OPTIONS_PARSED,  /* every option taken */
        SHIM_OPTIONS_HELP,    /* -h/--help: the rest not read; the caller prints the usage */
        SHIM_OPTIONS_VERSION, /* --version: the rest not read; the caller prints the version */
};

/*
 * The options of argv from optind on, up to the first argument that is not one (getopt's
 * "+"): into o. A bad option or value exits 120 (SHIM_EXIT_USAGE) with one line.
 */
enum shim_options_result shim_options_parse(int argc, char **argv, struct shim_options *o);

/* Shim-level settings from the environment (SPARKSHIM_*), below the flags. */
void shim_options_environment(struct shim_options *o);

/* ---- the policy, the overrides and the plan, shared by run and plan (cmd-plan.c) ---- */

/* The policy o names (--policy, else the built-in default; a missing default file: defaults). */
void shim_policy_load(const struct shim_options *o, struct policy *p);

/*
 * The policy loaded, the shim-level overrides (fail mode, cgroup parent, name, grace, agent)
 * applied as the policy allows, and the plan computed from the executor's inputs (o->inputs,
 * Spark's environment, the command's argc words cmd, SPARKSHIM_*).
 */
void shim_plan_compute(struct shim_options *o, int argc, char **cmd, struct policy *policy,
                       struct policy_plan *plan);

/*
 * The cgroup name: --name, else <app-id>-<executor-id> made safe, else executor-<pid>;
 * escaped so that it is never a kernel interface file's name (shim_cgroup_escape_name).
 */
void shim_executor_name(const struct shim_options *o, bool init_mode, char *buf, size_t size);

/* `sparkshim plan`: the exit status. */
int shim_cmd_plan(struct shim_options *o, int argc, char **cmd);

/* ---- sparkshim run (run.c) ---- */

/* `sparkshim run -- COMMAND`: argc words cmd. The exit status (the command's, or the shim's). */
int shim_cmd_run(struct shim_options *o, int argc, char **cmd);
