/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report's schema (report-schema.h): the key paths every report holds, each with its
 * type, and the check of a document against them. report-build.c writes reports of this
 * schema; report-read.c checks each line of a report file with it before it takes a figure
 * from it.
 */
#include <string.h>

#include "report-schema.h"
#include "util.h"

/* The key paths every report holds, and their types (plan/ only when the report has a plan). */
static const struct {
        const char *path;
        json_type type; /* JSON_NULL: any, null allowed */
} required[] = {
    {"schema", JSON_STRING},
    {"kind", JSON_STRING},
    {"identity/app_id", JSON_STRING},
    {"identity/executor_id", JSON_STRING},
    {"identity/host", JSON_STRING},
    {"identity/start", JSON_STRING},
    {"identity/end", JSON_STRING},
    {"identity/wall_seconds", JSON_REAL},
    {"plan/cpu/request_millicores", JSON_INTEGER},
    {"plan/memory/request_bytes", JSON_INTEGER},
    {"plan/memory/limit_bytes", JSON_INTEGER},
    {"enforcement/enforced", JSON_TRUE},
    {"usage/cpu/seconds", JSON_NULL},
    {"usage/cpu/throttled_seconds", JSON_NULL},
    {"usage/cpu/runq_wait/p95_us", JSON_NULL},
    {"usage/memory/peak_bytes", JSON_NULL},
    {"usage/memory/average_bytes", JSON_NULL},
    {"usage/memory/p95_bytes", JSON_NULL},
    {"usage/memory/anon_peak_bytes", JSON_NULL},
    {"usage/memory/oom_kills", JSON_NULL},
    {"usage/memory/high_events", JSON_NULL},
    {"usage/disk/read_bytes", JSON_NULL},
    {"usage/disk/write_bytes", JSON_NULL},
    {"usage/sources", JSON_OBJECT},
    {"utilization/cpu", JSON_NULL},
    {"utilization/memory", JSON_NULL},
    {"utilization/objective", JSON_NULL},
    {"samples", JSON_ARRAY},
};

int shim_report_validate(json_t *doc, struct util_error *err)
{
        if (!json_is_object(doc))
                return util_error_set(err, EINVAL, "not a JSON object");
        if (!json_is_string(json_object_get(doc, "schema")) ||
            strcmp(json_string_value(json_object_get(doc, "schema")), REPORT_SCHEMA) != 0)
                return util_error_set(err, EINVAL, "schema is not %s", REPORT_SCHEMA);
        for (size_t i = 0; i < ELEMENTSOF(required); i++) {
                char path[128], *save = NULL;
                json_t *v = doc;

                /* sparkshim probe watches cgroups without a plan */
                if (strncmp(required[i].path, "plan/", 5) == 0 &&
                    json_is_null(json_object_get(doc, "plan")))
                        continue;
                snprintf(path, sizeof(path), "%s", required[i].path);
                for (char *k = strtok_r(path, "/", &save); k && v; k = strtok_r(NULL, "/", &save))
                        v = json_object_get(v, k);
                if (!v)
                        return util_error_set(err, EINVAL, "%s is missing", required[i].path);
                if (required[i].type == JSON_NULL)
                        continue;
                if (required[i].type == JSON_TRUE   ? !json_is_boolean(v)
                    : required[i].type == JSON_REAL ? !json_is_number(v)
                                                    : json_typeof(v) != required[i].type)
                        return util_error_set(err, EINVAL, "%s has the wrong type",
                                              required[i].path);
        }
        return 0;
}
