/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's logger: one line per message on stderr, prefixed so it stands out in executor
 * logs. Safe from any thread: one fprintf per line, and stdio locks the stream. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "agent-internal.h"

static enum jva_log_level max_level = JVA_LOG_WARN;

void jva_log_set_level(enum jva_log_level level)
{
        __atomic_store_n(&max_level, level, __ATOMIC_RELAXED);
}

bool jva_log_enabled(enum jva_log_level level)
{
        return level <= __atomic_load_n(&max_level, __ATOMIC_RELAXED);
}

void jva_log(enum jva_log_level level, const char *format, ...)
{
        char line[1024];
        va_list ap;

        if (!jva_log_enabled(level))
                return;
        va_start(ap, format);
        vsnprintf(line, sizeof(line), format, ap);
        va_end(ap);
        fprintf(stderr, "sparkshim-agent: %s: %s\n", jva_log_level_name(level), line);
}

uint64_t jva_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
