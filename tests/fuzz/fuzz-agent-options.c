/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's option string (-agentpath:libsparkshim-agent.so=<this>), which the JVM hands
 * to Agent_OnLoad, and the agent's own byte-string parser.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct jva_options options;
        struct util_error error = {0};
        char *s = fuzz_strndup(data, size);
        uint64_t bytes;
        int r;

        if (!s)
                return 0;
        r = jva_options_parse(s, &options, &error);
        if (r == 0) {
                assert(memchr(options.cgroup, '\0', sizeof(options.cgroup)));
                assert(memchr(options.stats, '\0', sizeof(options.stats)));
                (void)jva_options_spill_enabled(&options);
                (void)jva_options_pressure_source(&options);
                (void)jva_log_level_name(options.log_level);
        } else {
                assert(r == -EINVAL || r == -ERANGE);
                assert(memchr(error.text, '\0', sizeof(error.text)));
        }
        r = jva_parse_bytes(s, &bytes);
        assert(r == 0 || r == -EINVAL || r == -ERANGE);
        free(s);
        return 0;
}
