/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The wrapped executor command line (policy_inputs_from_command), then the plan of the
 * default policy from what it read, as `sparkshim run -- CMD...` does. Input: the arguments
 * separated by NUL bytes, or one per line when there is no NUL (see fuzz_split()).
 */
#include <assert.h>
#include <string.h>

#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct util_error err = {0};
        struct policy_inputs in;
        struct policy_plan plan;
        struct policy p;
        char *buf, **argv;
        int argc, r;

        argc = fuzz_split(data, size, &buf, &argv);
        if (argc < 0)
                return 0;
        policy_inputs_init(&in);
        r = policy_inputs_from_command(&in, argc, argv, &err);
        if (r < 0) {
                assert(!strchr(err.text, '\n') || !"error text is one line");
        } else {
                assert(memchr(in.app_id, '\0', sizeof(in.app_id)));
                assert(memchr(in.executor_id, '\0', sizeof(in.executor_id)));
                policy_init_defaults(&p);
                if (policy_plan_compute(&p, &in, &plan, &err) == 0) {
                        json_t *j = policy_plan_to_json(&plan);

                        json_decref(j);
                }
                p.out_of_bounds = POLICY_BOUNDS_CLAMP;
                (void)policy_plan_compute(&p, &in, &plan, &err);
        }
        free(argv);
        free(buf);
        return 0;
}
