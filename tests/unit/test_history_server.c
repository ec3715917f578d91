/* SPDX-License-Identifier: Apache-2.0 */
/* A Spark History Server's application list and logs archive names (tuner/history-server.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "history-server.h"

struct seen {
        char ids[8][160];
        size_t n;
};

static int each(void *userdata, const struct tuner_hs_attempt *a)
{
        struct seen *s = userdata;

        snprintf(s->ids[s->n++], sizeof(s->ids[0]), "%s/%s/%s/%lld/%lld", a->app_id,
                 a->attempt_id ? a->attempt_id : "-", a->spark_user ? a->spark_user : "-",
                 (long long)a->end_ms, (long long)a->last_updated_ms);
        return s->n == 8 ? -ECANCELED : 0;
}

Test(history_server, the_list_as_spark_3_5_answers)
{
        static const char list[] =
            "[ {\"id\" : \"local-1\", \"name\" : \"n\", \"attempts\" : [ {\"completed\" : true, "
            "\"sparkUser\" : \"alice\", \"endTimeEpoch\" : 10, \"lastUpdatedEpoch\" : 11} ]},"
            " {\"id\" : \"application_1_2\", \"attempts\" : ["
            "  {\"attemptId\" : \"2\", \"completed\" : true, \"endTimeEpoch\" : 20, "
            "\"lastUpdatedEpoch\" : 21},"
            "  {\"attemptId\" : \"1\", \"completed\" : false, \"endTimeEpoch\" : 0, "
            "\"lastUpdatedEpoch\" : 1},"
            "  {\"attemptId\" : \"../x\", \"completed\" : true, \"endTimeEpoch\" : 5, "
            "\"lastUpdatedEpoch\" : 6}]},"
            " {\"id\" : \"a/b\", \"attempts\" : [ {\"completed\" : true, \"endTimeEpoch\" : 1, "
            "\"lastUpdatedEpoch\" : 1} ]},"
            " {\"id\" : \"c\", \"attempts\" : [ {\"completed\" : true, \"endTimeEpoch\" : \"1\", "
            "\"lastUpdatedEpoch\" : 1} ]},"
            " 7 ]";
        struct seen s = {0};
        struct util_error err = {0};

        cr_assert_eq(tuner_hs_parse_list(list, strlen(list), each, &s, &err), 0, "%s", err.text);
        cr_assert_eq(s.n, 2);
        cr_assert_str_eq(s.ids[0], "local-1/-/alice/10/11");
        cr_assert_str_eq(s.ids[1], "application_1_2/2/-/20/21");
}

Test(history_server, not_a_list)
{
        struct seen s = {0};
        struct util_error err = {0};

        cr_assert_eq(tuner_hs_parse_list("{}", 2, each, &s, &err), -EINVAL);
        cr_assert_eq(tuner_hs_parse_list("[", 1, each, &s, &err), -EINVAL);
        cr_assert_eq(s.n, 0);
}

Test(history_server, entry_names)
{
        size_t dir = 99;

        cr_assert(tuner_hs_entry_name_ok("local-1796317883102", &dir) && dir == 0);
        cr_assert(tuner_hs_entry_name_ok("app-2026.zstd", &dir) && dir == 0);
        cr_assert(tuner_hs_entry_name_ok("eventlog_v2_app-1/events_1_app-1.zstd", &dir) &&
                  dir == 17);
        cr_assert(tuner_hs_entry_name_ok("eventlog_v2_app-1/appstatus_app-1", &dir));
        cr_assert_not(tuner_hs_entry_name_ok("../etc/passwd", &dir));
        cr_assert_not(tuner_hs_entry_name_ok("/etc/passwd", &dir));
        cr_assert_not(tuner_hs_entry_name_ok(".hidden", &dir));
        cr_assert_not(tuner_hs_entry_name_ok("", &dir));
        cr_assert_not(tuner_hs_entry_name_ok("dir/file", &dir));
        cr_assert_not(tuner_hs_entry_name_ok("eventlog_v2_a/../x", &dir));
        cr_assert_not(tuner_hs_entry_name_ok("eventlog_v2_a/b/c", &dir));
        cr_assert_not(tuner_hs_entry_name_ok("eventlog_v2_a/", &dir));
        cr_assert_not(tuner_hs_entry_name_ok("a b", &dir));
}
