/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness: the JVM agent's statistics file as root reads it
 * (measure/agent-stats.c, shim_agent_stats_parse), i.e. whatever the job's code writes there.
 * The input is the whole file. Seeds: tests/fuzz/corpus/agent-stats/.
 *
 * Built and run by hand (from the source root, after `meson setup build && meson compile -C
 * build`):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *     -D_GNU_SOURCE -Ibuild -Ishim -Imeasure -Ipolicy -Icommon \
 *     measure/agent-stats.c shim/inject.c common/util.c tests/fuzz/fuzz-agent-stats.c \
 *     build/policy/libpolicy.a $(pkg-config --cflags --libs jansson) -lm -o /tmp/fuzz-agent-stats
 *   /tmp/fuzz-agent-stats -max_total_time=60 -max_len=65536 /tmp/corpus-agent-stats
 * tests/fuzz/corpus/agent-stats
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "agent-stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_t *j, *totals;
        char *text;

        if (size > SHIM_AGENT_STATS_MAX)
                return 0; /* never read past the limit */
        j = shim_agent_stats_parse((const char *)data, size, "stats.jsonl");
        if (!j)
                return 0; /* out of memory */
        /* what the report promises: totals are never negative, and the object serialises */
        totals = json_object_get(j, "totals");
        if (json_is_object(totals)) {
                const char *key;
                json_t *v;

                json_object_foreach(totals, key,
                                    v) if ((json_is_integer(v) && json_integer_value(v) < 0) ||
                                           (json_is_real(v) && json_real_value(v) < 0))
                    __builtin_trap();
        }
        text = json_dumps(j, JSON_COMPACT);
        free(text);
        json_decref(j);
        return 0;
}
