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

#include <stddef.h>

#include <jansson.h>

#define SHIM_AGENT_STATS_MAX (1024 * 1024) /* a larger statistics file is not read */
#define SHIM_AGENT_NAME_MAX  256           /* operator, hook, mode, source, version */
#define SHIM_AGENT_TEXT_MAX  4096          /* a hook's reason, a pressure source's path */

struct shim_agent_run; /* shim/inject.h */

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
