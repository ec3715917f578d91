/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy file: JSON, its validation and the error texts (policy_parse, json-locate.c),
 * then a plan from the accepted policy, as `sparkshim run` computes it.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct util_error err = {0};
        struct policy p;
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy_write writes[POLICY_WRITES_MAX];
        json_t *j;
        int r;

        r = policy_parse((const char *)data, size, "<fuzz>", &p, &err);
        if (r < 0) {
                /* one line, always terminated */
                assert(memchr(err.text, '\0', sizeof(err.text)));
                assert(!strchr(err.text, '\n'));
                return 0;
        }
        assert(r == 0);

        policy_inputs_init(&in);
        policy_input_set_u64(&in.heap_bytes, 4ull << 30, POLICY_SOURCE_FLAG, "--memory");
        policy_input_set_u64(&in.cores, 2, POLICY_SOURCE_COMMAND, "--cores");
        if (policy_plan_compute(&p, &in, &plan, &err) == 0) {
                size_t n = policy_plan_writes(&plan, writes);

                assert(n <= POLICY_WRITES_MAX);
                (void)policy_agent_threshold_bytes(&p.agent, &plan);
                j = policy_plan_to_json(&plan);
                json_decref(j);
        }
        return 0;
}
