/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spark.decommission.enabled from an executor's command line (policy/decommission.c).
 * Input: the arguments separated by NUL bytes, or one per line when there is no NUL
 * (fuzz_split()).
 */
#include <assert.h>
#include <string.h>

#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct policy_decommission_conf c;
        char *buf, **argv;
        int argc;

        argc = fuzz_split(data, size, &buf, &argv);
        if (argc < 0)
                return 0;
        policy_decommission_from_command(argc, argv, &c);
        assert(c.enabled >= POLICY_DECOMMISSION_UNSET && c.enabled <= POLICY_DECOMMISSION_INVALID);
        assert(strlen(c.signal) < sizeof(c.signal) && strlen(c.value) < sizeof(c.value));
        assert((c.enabled == POLICY_DECOMMISSION_UNSET) == (c.origin[0] == '\0'));
        free(argv);
        free(buf);
        return 0;
}
