/* SPDX-License-Identifier: Apache-2.0 */
/* STUB: replaced by the event-log helper's file at merge */
#include <errno.h>
#include <stdlib.h>

#include "eventlog.h"

bool tuner_eventlog_detect(const char *path)
{
        (void)path;
        return false;
}

int tuner_eventlog_read(const char *path, struct tuner_app *ret, struct shim_error *err)
{
        (void)ret;
        return shim_error_set(err, EOPNOTSUPP, "%s: event logs are not read by this build", path);
}

struct tuner_eventlog *tuner_eventlog_new(void)
{
        return NULL;
}

void tuner_eventlog_free(struct tuner_eventlog *el)
{
        (void)el;
}

int tuner_eventlog_line(struct tuner_eventlog *el, const char *line, size_t len,
                        struct shim_error *err)
{
        (void)el;
        (void)line;
        (void)len;
        return shim_error_set(err, EOPNOTSUPP, "event logs are not read by this build");
}

int tuner_eventlog_finish(struct tuner_eventlog *el, struct tuner_app *ret, struct shim_error *err)
{
        (void)el;
        (void)ret;
        return shim_error_set(err, EOPNOTSUPP, "event logs are not read by this build");
}
