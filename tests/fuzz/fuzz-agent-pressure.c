/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's readers of the executor's memory pressure (jvmagent/pressure.c, psi.c):
 * memory.stat "anon", /proc/self/status "RssAnon:" and the "some ... total=" of
 * memory.pressure. The first byte of the input picks the file ('0', '1', '2' in that order),
 * the rest is its text as the agent reads it (cut to its buffer).
 */
#include <assert.h>
#include <errno.h>

#include "agent-internal.h"
#include "fuzz.h"
#include "psi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint64_t v = 0;
        char *text;
        int r;

        if (size < 1)
                return 0;
        /* the agent reads memory.stat and status into 8 KiB, memory.pressure into 512 bytes */
        if (size - 1 > (data[0] % 3 == 2 ? 511u : 8191u))
                return 0;
        text = fuzz_strndup(data + 1, size - 1);
        if (!text)
                return 0;
        switch (data[0] % 3) {
        case 0:
                r = jva_parse_memory_stat_anon(text, &v);
                break;
        case 1:
                r = jva_parse_proc_status_anon(text, &v);
                break;
        default:
                r = jva_parse_psi_some_total(text, &v);
                break;
        }
        assert(r == 0 || r == -EINVAL || r == -ENOENT);
        free(text);
        return 0;
}
