/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Kubernetes executor pod's environment (policy_inputs_from_spark_env: SPARK_EXECUTOR_*,
 * SPARK_JAVA_OPT_<n>), then the wrapped command over it, as `sparkshim run` reads them.
 * Input: NAME=VALUE entries separated by NUL bytes, or one per line (see fuzz_split()).
 */
#include <assert.h>
#include <string.h>

#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static char *const command[] = {"java", "-Xmx1g", NULL};
        struct util_error err = {0};
        struct policy_inputs in;
        char *buf, **envp;

        if (fuzz_split(data, size, &buf, &envp) < 0)
                return 0;
        policy_inputs_init(&in);
        if (policy_inputs_from_spark_env(&in, envp, &err) == 0) {
                assert(memchr(in.app_id, '\0', sizeof(in.app_id)));
                assert(memchr(in.executor_id, '\0', sizeof(in.executor_id)));
                (void)policy_inputs_from_command(&in, 2, command, &err);
        }
        free(envp);
        free(buf);
        return 0;
}
