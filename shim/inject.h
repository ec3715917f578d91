/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JVMTI agent (libsparkshim-agent.so, sparkshim-agent(7)) in `sparkshim run`: how it is
 * put into the executor's launch (-agentpath: in the java command, or JAVA_TOOL_OPTIONS)
 * and the option string derived from the plan, and the run's private directory where the
 * agent writes its statistics. The agent's statistics file turned into the report's "agent"
 * object is measure/agent-stats.h (included below, through measure.h).
 *
 * No global state; only the private directory's removal logs (a warning). Functions
 * returning int give >= 0 or -errno.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "measure.h" /* struct shim_agent_run, enum shim_agent_method (agent-stats.h) */
#include "policy.h"

/* The variables a JVM takes options from, besides its command line. */
#define SHIM_AGENT_ENV "JAVA_TOOL_OPTIONS"

/* Is argv0 a java launcher (its last path component is "java")? */
bool shim_agent_is_java_launcher(const char *argv0);

/*
 * The method for a policy's injection setting and a command: auto gives agentpath for a java
 * launcher and java_tool_options otherwise (a script such as entrypoint.sh that execs java
 * later). agentpath for a command that is not a java launcher is -EINVAL.
 */
int shim_agent_choose_method(enum policy_agent_injection injection, const char *argv0,
                             enum shim_agent_method *ret);

/*
 * Does the command load the policy's agent itself? Looks for -agentpath:<lib>[=...] where lib
 * is the same file as agent_path (stat: same device and inode; a library of the same name
 * elsewhere, or -agentlib:, is not it), in argv (NULL-terminated) and in the JVM option
 * variables of envp (JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, _JAVA_OPTIONS, SPARK_JAVA_OPT_<n>).
 * Returns 1 with ret_where ("argv[2]", "JAVA_TOOL_OPTIONS") and ret_stats (its stats= value,
 * "" when none: a path the user chose, which a root caller must not open) filled, or 0.
 */
int shim_agent_find_loaded(const char *agent_path, char *const argv[], char *const envp[],
                           char *ret_where, size_t where_size, char *ret_stats, size_t stats_size);

/* Can the agent take s as a path value (absolute, no ',' no blanks, no quotes)? */
bool shim_agent_option_path_ok(const char *s);

/* What the option string is made of. */
struct shim_agent_params {
        const struct policy_agent *agent;
        uint64_t threshold_bytes; /* policy_agent_threshold_bytes(); 0 = none */
        uint64_t limit_bytes;     /* the plan's, passed as limit= / request= (0 = omitted) */
        uint64_t request_bytes;
        const char *cgroup_dir; /* the executor's cgroup directory; NULL = omitted */
        const char *stats_path; /* NULL = no statistics */
        unsigned stats_interval_seconds;
};

/*
 * The agent's option string ("force-bytes=...,threshold=...,stats=..."), in the agent's
 * syntax: sizes in bytes, fractions with a decimal point. -EINVAL when a path cannot be
 * passed (shim_agent_option_path_ok), -ENAMETOOLONG when it does not fit size.
 */
int shim_agent_options(const struct shim_agent_params *p, char *buf, size_t size);

/*
 * A copy of argv with `arg` inserted right after argv[0] (the java executable): a malloc'd,
 * NULL-terminated array whose strings are argv's and arg (not copied). NULL on ENOMEM.
 */
char **shim_agent_argv(char *const argv[], const char *arg);

/*
 * The value JAVA_TOOL_OPTIONS gets: the existing value (NULL or "" for none) with arg
 * appended after one blank, so that options already there are kept. malloc'd; NULL on ENOMEM.
 */
char *shim_agent_java_tool_options(const char *existing, const char *arg);

/*
 * The run's private directory for the agent's statistics, <base>/agent.<pid>.XXXXXX (mkdtemp)
 * into dir, after the directories of shims that are gone were removed from base. As root, base
 * is the build's run directory (SPARKSHIM_RUNDIR: made 0711 when missing, refused when anyone
 * but root could change it) and the directory is made 1733; otherwise base is $TMPDIR (else
 * /tmp). Returns 0, or -errno with why set.
 */
int shim_agent_dir_make(char *dir, size_t size, struct util_error *why);

/* Remove a private directory and what the agent left in it ("" : nothing); a failure is logged. */
void shim_agent_dir_remove(const char *dir);
