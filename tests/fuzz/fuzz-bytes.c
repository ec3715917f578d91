/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark byte strings, JVM sizes, CPU quantities and millicores (policy/bytes.c): every
 * parser on the same text, and the quantity formatters on what they accept.
 */
#include <assert.h>
#include <stdio.h>

#include "fuzz.h"
#include "policy.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const enum policy_unit units[] = {POLICY_UNIT_BYTES, POLICY_UNIT_KIB,
                                                 POLICY_UNIT_MIB, POLICY_UNIT_GIB};
        char *s = fuzz_strndup(data, size);
        char text[64];
        uint64_t v;

        if (!s)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (policy_parse_spark_bytes(s, units[i], &v) == 0)
                        policy_format_memory_quantity(v, text, sizeof(text));
        if (policy_parse_jvm_bytes(s, &v) == 0)
                policy_format_memory_quantity(v, text, sizeof(text));
        if (policy_parse_cpu_quantity(s, &v) == 0)
                policy_format_cpu_quantity(v, text, sizeof(text));
        if (policy_parse_millicores(s, &v) == 0) {
                assert(v > 0);
                policy_format_cpu_quantity(v, text, sizeof(text));
        }
        free(s);
        return 0;
}
