/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JVM agent's statistics file (JSON lines written by jvmagent/stats.c inside the
 * executor's JVM) merged into the report's "agent" object (sparkshim-report(5)).
 *
 * The file is written by the job's code: it is untrusted input read by root. It is opened
 * without following a symlink (in its last two components), only when it is a regular
 * file (checked before and after the open, which never blocks), and read up to
 * SHIM_AGENT_STATS_MAX bytes. Every record is checked for the type and range of each
 * member; names are bounded and printable; totals are summed with overflow checks (a
 * record that would overflow a total is refused as malformed).
 *
 * No logging, no global state. Functions returning int give >= 0 or -errno.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policy.h"

#define SHIM_AGENT_STATS_MAX (1024 * 1024) /* a larger statistics file is not read */
#define SHIM_AGENT_NAME_MAX  256           /* operator, hook, mode, source, version */
#define SHIM_AGENT_TEXT_MAX  4096          /* a hook's reason, a pressure source's path */

#define SHIM_AGENT_OPTIONS_MAX 10240

/* How `sparkshim run` put the agent into the launch (shim/inject.h does it). */
enum shim_agent_method {
        SHIM_AGENT_METHOD_NONE = 0,
        SHIM_AGENT_METHOD_AGENTPATH,
        SHIM_AGENT_METHOD_JAVA_TOOL_OPTIONS,
};

/* "agentpath", "java_tool_options"; NULL for none. */
const char *shim_agent_method_name(enum shim_agent_method m);

/* The injection as it went, for the report. */
struct shim_agent_run {
        bool enabled;     /* the policy (or --agent) asks for the agent */
        bool injected;    /* sparkshim added it to the launch */
        char reason[512]; /* why it is not injected (or a note); "" when none */
        enum shim_agent_method method;
        char path[POLICY_PATH_MAX];
        char options[SHIM_AGENT_OPTIONS_MAX];
        uint64_t threshold_bytes;         /* 0 = none */
        const char *threshold_of;         /* "request", "limit", "bytes", NULL */
        char stats_path[POLICY_PATH_MAX]; /* the statistics to merge; "" = none */
};

/*
 * The report's "agent" object for a run: the injection, and what the statistics file holds
 * now (hooks, pressure, operators, totals). A missing, unreadable or partly invalid file is
 * said in "stats" and never an error. New reference; NULL only on ENOMEM.
 */
json_t *shim_agent_report_json(const struct shim_agent_run *run);

/*
 * The statistics members of the "agent" object ("stats", "hooks", "pressure", "operators",
 * "totals") for text, the len bytes of a statistics file named path in messages (NULL
 * allowed; text need not be NUL-terminated and may hold any bytes). New reference; NULL
 * only on ENOMEM.
 */
json_t *shim_agent_stats_parse(const char *text, size_t len, const char *path);

/*
 * Read the statistics file at path (absolute) into a malloc'd buffer with a NUL after its
 * len bytes. -ELOOP for a symlink (the file or its directory), -EINVAL for anything but a
 * regular file, -EFBIG above SHIM_AGENT_STATS_MAX, other -errno from open/read.
 */
int shim_agent_stats_read(const char *path, char **ret, size_t *ret_len);
