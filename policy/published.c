/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `sparkshim tune-service` publishes for a job and the java personality adds at
 * spark-submit (sparkshim-tune(1), PUBLISHED SETTINGS): the file name of a job's settings,
 * and the only keys, with the only values, either side lets through. One table for both, so
 * that the service never publishes what the personality would refuse, and the personality
 * refuses whatever else a file holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "util.h"

int policy_published_name(const char *job, char *buf, size_t size)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t n = 0;

        if (!job || !*job)
                return -EINVAL;
        for (const unsigned char *c = (const unsigned char *)job; *c; c++) {
                bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                             (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' ||
                             (*c == '.' && c != (const unsigned char *)job);

                if (n + (plain ? 1 : 3) + sizeof(".json") > size ||
                    n + (plain ? 1 : 3) > POLICY_PUBLISHED_NAME_MAX)
                        return -ENAMETOOLONG;
                if (plain) {
                        buf[n++] = (char)*c;
                } else {
                        buf[n++] = '%';
                        buf[n++] = hex[*c >> 4];
                        buf[n++] = hex[*c & 15];
                }
        }
        memcpy(buf + n, ".json", sizeof(".json"));
        return 0;
}

enum value_kind { V_COUNT, V_SIZE, V_MILLICORES, V_K8S_CORES, V_FRACTION };

static const struct {
        const char *key;
        enum value_kind kind;
        uint64_t max; /* V_COUNT, V_MILLICORES */
} allowed[] = {
    {"spark.executor.cores", V_COUNT, 1024},
    {"spark.executor.memory", V_SIZE, 0},
    {"spark.executor.memoryOverhead", V_SIZE, 0},
    {"spark.executor.millicores", V_MILLICORES, 1024000},
    {"spark.kubernetes.executor.request.cores", V_K8S_CORES, 1024000},
    {"spark.executor.memoryBurst.ratio", V_FRACTION, 0},
    {"spark.executor.sparkshim.spillFraction", V_FRACTION, 0},
    {"spark.sql.shuffle.partitions", V_COUNT, 1000000},
    {"spark.executorEnv.SPARKSHIM_MILLICORES", V_MILLICORES, 1024000},
    {"spark.executorEnv.SPARKSHIM_MEMORY_OVERHEAD", V_SIZE, 0},
    {"spark.executorEnv.SPARKSHIM_BURST_RATIO", V_FRACTION, 0},
    {"spark.executorEnv.SPARKSHIM_SPILL_FRACTION", V_FRACTION, 0},
};

/* an integer in [1, max] of decimal digits only */
static bool count_ok(const char *v, uint64_t max)
{
        uint64_t u = 0;

        if (!*v || strlen(v) > 10)
                return false;
        for (const char *c = v; *c; c++) {
                if (*c < '0' || *c > '9')
                        return false;
                u = u * 10 + (uint64_t)(*c - '0');
        }
        return u >= 1 && u <= max;
}

int policy_published_check(const char *key, const char *value)
{
        uint64_t bytes;
        size_t len;

        if (!key || !value)
                return -EINVAL;
        len = strlen(value);
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
                if (strcmp(allowed[i].key, key) != 0)
                        continue;
                switch (allowed[i].kind) {
                case V_COUNT:
                case V_MILLICORES:
                        return count_ok(value, allowed[i].max) ? 0 : -EINVAL;
                case V_K8S_CORES: {
                        char digits[16];

                        if (len < 2 || len >= sizeof(digits) || value[len - 1] != 'm')
                                return -EINVAL;
                        memcpy(digits, value, len - 1);
                        digits[len - 1] = '\0';
                        return count_ok(digits, allowed[i].max) ? 0 : -EINVAL;
                }
                case V_SIZE:
                        /* whole MiB as the tuner prints them ("1536m"), within 1 TiB */
                        if (len < 2 || len > 8 || value[len - 1] != 'm' ||
                            policy_parse_spark_bytes(value, POLICY_UNIT_MIB, &bytes) < 0 ||
                            bytes == 0 || bytes > (UINT64_C(1) << 40))
                                return -EINVAL;
                        for (size_t c = 0; c + 1 < len; c++)
                                if (value[c] < '0' || value[c] > '9')
                                        return -EINVAL;
                        return 0;
                case V_FRACTION: {
                        /* "0.xx" or "1.00" as the tuner prints them */
                        double d;

                        if (len < 1 || len > 6 || strspn(value, "0123456789.") != len ||
                            util_parse_double(value, &d) < 0 || !(d >= 0 && d <= 1))
                                return -EINVAL;
                        return 0;
                }
                }
        }
        return -ENOENT;
}
