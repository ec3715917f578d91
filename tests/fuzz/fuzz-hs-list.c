/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness: what `sparkshim tune-service` reads from a Spark History Server
 * (tuner/history-server.c): its application list (tuner_hs_parse_list), and the names of
 * the entries of a logs archive (tuner_hs_entry_name_ok). First byte '0': the input is a
 * list; else an entry name (NUL-terminated at the input's end). An attempt given to the
 * callback has ids of the allowed characters and lengths; a name taken has no "..", no
 * leading '/' or '.', at most one '/' after an eventlog_v2_ directory.
 */
#include <string.h>

#include "fuzz.h"
#include "history-server.h"

static bool allowed(const char *s, size_t max, bool colon)
{
        size_t n = strlen(s);

        if (n == 0 || n > max)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.' ||
                      (colon && *s == ':')))
                        return false;
        return true;
}

static int each(void *userdata, const struct tuner_hs_attempt *a)
{
        (void)userdata;
        if (!allowed(a->app_id, 127, true) ||
            (a->attempt_id && !allowed(a->attempt_id, 32, false)) || a->end_ms < 0 ||
            a->last_updated_ms < 0)
                __builtin_trap();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct util_error err = {0};
        char name[512];
        size_t dir;

        if (size == 0)
                return 0;
        if (data[0] == '0') {
                (void)tuner_hs_parse_list((const char *)data + 1, size - 1, each, NULL, &err);
                return 0;
        }
        if (size - 1 >= sizeof(name))
                return 0;
        memcpy(name, data + 1, size - 1);
        name[size - 1] = '\0';
        if (tuner_hs_entry_name_ok(name, &dir)) {
                const char *slash = strchr(name, '/');

                if (name[0] == '/' || name[0] == '.' || (slash && strchr(slash + 1, '/')) ||
                    (slash && (slash[1] == '.' || strncmp(name, "eventlog_v2_", 12) != 0)) ||
                    (slash && dir != (size_t)(slash - name)) || (!slash && dir != 0))
                        __builtin_trap();
        }
        return 0;
}
