/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sparkshim's own SPARKSHIM_* variables in the executor's environment
 * (policy_inputs_from_env), then the plan of the default policy from them.
 * Input: NAME=VALUE entries separated by NUL bytes, or one per line (see fuzz_split()).
 */
#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct util_error err = {0};
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;
        char *buf, **envp;

        if (fuzz_split(data, size, &buf, &envp) < 0)
                return 0;
        policy_inputs_init(&in);
        if (policy_inputs_from_env(&in, envp, &err) == 0) {
                policy_init_defaults(&p);
                if (in.heap_bytes.source == POLICY_SOURCE_NONE)
                        policy_input_set_u64(&in.heap_bytes, 1ull << 30, POLICY_SOURCE_COMMAND,
                                             "-Xmx");
                (void)policy_plan_compute(&p, &in, &plan, &err);
        }
        free(envp);
        free(buf);
        return 0;
}
