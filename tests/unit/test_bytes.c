/* SPDX-License-Identifier: Apache-2.0 */
/* Quantities: Spark byte strings, JVM sizes, CPU quantities, Kubernetes quantity text. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "policy.h"
#include "util.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)
#define PiB (UINT64_C(1) << 50)

struct bytes_case {
        const char *text;
        enum policy_unit unit;
        int rc;
        uint64_t bytes;
};

static const struct bytes_case spark_cases[] = {
    /* the default unit applies without a suffix */
    {"1", POLICY_UNIT_MIB, 0, MiB},
    {"512", POLICY_UNIT_BYTES, 0, 512},
    {"4", POLICY_UNIT_GIB, 0, 4 * GiB},
    {"2", POLICY_UNIT_KIB, 0, 2 * KiB},
    {"0", POLICY_UNIT_MIB, 0, 0},
    {"007m", POLICY_UNIT_BYTES, 0, 7 * MiB},
    /* every suffix of JavaUtils.byteSuffixes */
    {"1b", POLICY_UNIT_MIB, 0, 0}, /* 1 byte in MiB truncates to 0, as Spark */
    {"1b", POLICY_UNIT_BYTES, 0, 1},
    {"1k", POLICY_UNIT_BYTES, 0, KiB},
    {"1kb", POLICY_UNIT_BYTES, 0, KiB},
    {"1m", POLICY_UNIT_BYTES, 0, MiB},
    {"1mb", POLICY_UNIT_BYTES, 0, MiB},
    {"1g", POLICY_UNIT_BYTES, 0, GiB},
    {"1gb", POLICY_UNIT_BYTES, 0, GiB},
    {"1t", POLICY_UNIT_BYTES, 0, TiB},
    {"1tb", POLICY_UNIT_BYTES, 0, TiB},
    {"1p", POLICY_UNIT_BYTES, 0, PiB},
    {"1pb", POLICY_UNIT_BYTES, 0, PiB},
    /* lower-cased and trimmed first */
    {"4G", POLICY_UNIT_MIB, 0, 4 * GiB},
    {"1gB", POLICY_UNIT_MIB, 0, GiB},
    {" 2g ", POLICY_UNIT_MIB, 0, 2 * GiB},
    {"\t384\n", POLICY_UNIT_MIB, 0, 384 * MiB},
    /* converted to the default unit the way ByteUnit.convertTo does: truncating */
    {"1500k", POLICY_UNIT_MIB, 0, MiB},
    {"1023k", POLICY_UNIT_MIB, 0, 0},
    {"3g", POLICY_UNIT_MIB, 0, 3 * GiB},
    /* limits of a Java long */
    {"9223372036854775807", POLICY_UNIT_BYTES, 0, UINT64_C(9223372036854775807)},
    {"9223372036854775808", POLICY_UNIT_BYTES, -ERANGE, 0},
    {"8191p", POLICY_UNIT_BYTES, 0, 8191 * PiB},
    {"8192p", POLICY_UNIT_BYTES, -ERANGE, 0},
    {"8796093022207", POLICY_UNIT_MIB, 0, UINT64_C(8796093022207) * MiB},
    {"8796093022208", POLICY_UNIT_MIB, -ERANGE, 0},
    {"99999999999999999999999", POLICY_UNIT_MIB, -ERANGE, 0},
    /* rejected */
    {"1.5g", POLICY_UNIT_MIB, -EINVAL, 0}, /* "Fractional values are not supported" */
    {"1.5", POLICY_UNIT_MIB, -EINVAL, 0},
    {"0.5m", POLICY_UNIT_BYTES, -EINVAL, 0},
    {"-1", POLICY_UNIT_MIB, -EINVAL, 0},
    {"+1", POLICY_UNIT_MIB, -EINVAL, 0},
    {"", POLICY_UNIT_MIB, -EINVAL, 0},
    {"   ", POLICY_UNIT_MIB, -EINVAL, 0},
    {"g", POLICY_UNIT_MIB, -EINVAL, 0},
    {"1x", POLICY_UNIT_MIB, -EINVAL, 0},
    {"12x", POLICY_UNIT_MIB, -EINVAL, 0},
    {"1kib", POLICY_UNIT_MIB, -EINVAL, 0},
    {"1gi", POLICY_UNIT_MIB, -EINVAL, 0},
    {"1 g", POLICY_UNIT_MIB, -EINVAL, 0},
    {"1g1", POLICY_UNIT_MIB, -EINVAL, 0},
    {"0x10", POLICY_UNIT_MIB, -EINVAL, 0},
    {"1e3", POLICY_UNIT_MIB, -EINVAL, 0},
    {"١", POLICY_UNIT_MIB, -EINVAL, 0}, /* only ASCII digits, like [0-9] */
};

Test(bytes, spark_byte_strings)
{
        for (size_t i = 0; i < ELEMENTSOF(spark_cases); i++) {
                const struct bytes_case *c = &spark_cases[i];
                uint64_t v = 12345;
                int r = policy_parse_spark_bytes(c->text, c->unit, &v);

                cr_expect_eq(r, c->rc, "spark bytes \"%s\" (unit %d): rc %d, expected %d", c->text,
                             (int)c->unit, r, c->rc);
                if (c->rc == 0)
                        cr_expect_eq(v, c->bytes,
                                     "spark bytes \"%s\" (unit %d): %" PRIu64 ", expected %" PRIu64,
                                     c->text, (int)c->unit, v, c->bytes);
                else
                        cr_expect_eq(v, 12345, "spark bytes \"%s\": output changed on error",
                                     c->text);
        }
        cr_expect_eq(policy_parse_spark_bytes(NULL, POLICY_UNIT_MIB, &(uint64_t){0}), -EINVAL,
                     "NULL is not a size");
}

struct jvm_case {
        const char *text;
        int rc;
        uint64_t bytes;
};

static const struct jvm_case jvm_cases[] = {
    {"4096m", 0, 4 * GiB},
    {"4096M", 0, 4 * GiB},
    {"4g", 0, 4 * GiB},
    {"4G", 0, 4 * GiB},
    {"1024", 0, 1024},
    {"512k", 0, 512 * KiB},
    {"512K", 0, 512 * KiB},
    {"1t", 0, TiB},
    {"1T", 0, TiB},
    {"0x100000", 0, MiB},
    {"0X10m", 0, 16 * MiB},
    {"1.5g", -EINVAL, 0},
    {"1gb", -EINVAL, 0},
    {"1b", -EINVAL, 0},
    {"1p", -EINVAL, 0},
    {"", -EINVAL, 0},
    {"g", -EINVAL, 0},
    {"-1g", -EINVAL, 0},
    {" 1g", -EINVAL, 0},
    {"1g ", -EINVAL, 0},
    {"99999999999999999999", -ERANGE, 0},
    {"8388608t", -ERANGE, 0},
    {"8388607t", 0, UINT64_C(8388607) * TiB},
};

Test(bytes, jvm_sizes)
{
        for (size_t i = 0; i < ELEMENTSOF(jvm_cases); i++) {
                const struct jvm_case *c = &jvm_cases[i];
                uint64_t v = 0;
                int r = policy_parse_jvm_bytes(c->text, &v);

                cr_expect_eq(r, c->rc, "jvm size \"%s\": rc %d, expected %d", c->text, r, c->rc);
                if (c->rc == 0)
                        cr_expect_eq(v, c->bytes, "jvm size \"%s\": %" PRIu64 ", expected %" PRIu64,
                                     c->text, v, c->bytes);
        }
}

struct cpu_case {
        const char *text;
        int rc;
        uint64_t millicores;
};

static const struct cpu_case cpu_cases[] = {
    {"0.5", 0, 500},
    {"2", 0, 2000},
    {"500m", 0, 500},
    {"1.25", 0, 1250},
    {"1.2500", 0, 1250},
    {"0.001", 0, 1},
    {"0.0001", 0, 1},    /* below a millicore: rounded up, like Kubernetes */
    {"1.0005", 0, 1001}, /* rounded up */
    {"1.0000", 0, 1000},
    {".5", 0, 500},
    {"5.", 0, 5000},
    {"1m", 0, 1},
    {"007", 0, 7000},
    {"100000", 0, 100000000},
    {"100000001m", -ERANGE, 0},
    {"100001", -ERANGE, 0},
    {"0", -EINVAL, 0},
    {"0m", -EINVAL, 0},
    {"0.000", -EINVAL, 0},
    {"", -EINVAL, 0},
    {".", -EINVAL, 0},
    {"m", -EINVAL, 0},
    {"-1", -EINVAL, 0},
    {"+1", -EINVAL, 0},
    {"1.5m", -EINVAL, 0},
    {"1e3", -EINVAL, 0},
    {"1k", -EINVAL, 0},
    {" 1", -EINVAL, 0},
    {"1 ", -EINVAL, 0},
    {"1..5", -EINVAL, 0},
    {"2 cores", -EINVAL, 0},
};

Test(bytes, cpu_quantities)
{
        for (size_t i = 0; i < ELEMENTSOF(cpu_cases); i++) {
                const struct cpu_case *c = &cpu_cases[i];
                uint64_t v = 0;
                int r = policy_parse_cpu_quantity(c->text, &v);

                cr_expect_eq(r, c->rc, "cpu quantity \"%s\": rc %d, expected %d", c->text, r,
                             c->rc);
                if (c->rc == 0)
                        cr_expect_eq(v, c->millicores,
                                     "cpu quantity \"%s\": %" PRIu64 "m, expected %" PRIu64 "m",
                                     c->text, v, c->millicores);
        }
}

static const struct cpu_case millicore_cases[] = {
    {"1500", 0, 1500},  {"1500m", 0, 1500},        {"1.5", 0, 1500}, {"0.25", 0, 250},
    {"1", 0, 1},        {"0", -EINVAL, 0},         {"", -EINVAL, 0}, {"abc", -EINVAL, 0},
    {"-5", -EINVAL, 0}, {"100000001", -ERANGE, 0},
};

Test(bytes, millicores)
{
        for (size_t i = 0; i < ELEMENTSOF(millicore_cases); i++) {
                const struct cpu_case *c = &millicore_cases[i];
                uint64_t v = 0;
                int r = policy_parse_millicores(c->text, &v);

                cr_expect_eq(r, c->rc, "millicores \"%s\": rc %d, expected %d", c->text, r, c->rc);
                if (c->rc == 0)
                        cr_expect_eq(v, c->millicores,
                                     "millicores \"%s\": %" PRIu64 ", expected %" PRIu64, c->text,
                                     v, c->millicores);
        }
}

Test(bytes, kubernetes_cpu_text)
{
        static const struct {
                uint64_t millicores;
                const char *text;
        } cases[] = {
            {500, "500m"}, {2000, "2"}, {1250, "1250m"}, {1, "1m"}, {0, "0"}, {64000, "64"},
        };
        char buf[32];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                policy_format_cpu_quantity(cases[i].millicores, buf, sizeof(buf));
                cr_expect_str_eq(buf, cases[i].text,
                                 "%" PRIu64 " millicores: \"%s\", expected \"%s\"",
                                 cases[i].millicores, buf, cases[i].text);
        }
}

Test(bytes, kubernetes_memory_text)
{
        static const struct {
                uint64_t bytes;
                const char *text;
        } cases[] = {
            {4608 * MiB, "4608Mi"},  {4 * GiB, "4Gi"},       {1234, "1234"},     {0, "0"},
            {1536 * KiB, "1572864"}, {2432 * MiB, "2432Mi"}, {11 * GiB, "11Gi"}, {MiB, "1Mi"},
        };
        char buf[32];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                policy_format_memory_quantity(cases[i].bytes, buf, sizeof(buf));
                cr_expect_str_eq(buf, cases[i].text, "%" PRIu64 " bytes: \"%s\", expected \"%s\"",
                                 cases[i].bytes, buf, cases[i].text);
        }
}

Test(bytes, format_truncates_safely)
{
        char buf[4];

        policy_format_memory_quantity(4608 * MiB, buf, sizeof(buf));
        cr_expect_eq(strlen(buf), 3, "truncated to the buffer: \"%s\"", buf);
        policy_format_cpu_quantity(1500, buf, sizeof(buf));
        cr_expect_eq(strlen(buf), 3, "truncated to the buffer: \"%s\"", buf);
}
