/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Report file name templates (policy/template.c): a template from a policy or a flag, with
 * the job user's app id, executor id and name. Whatever the values, an accepted template
 * expands to a path in the template's own directory whose file name is bounded, has no
 * '/' and does not start with '.'.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "policy.h"

/* entries (NUL- or newline-separated): template, app id, executor id, name */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *buf = NULL, **v = NULL, out[POLICY_PATH_MAX], escaped[POLICY_TEMPLATE_FIELD_MAX + 1];
        struct util_error err;
        int n = fuzz_split(data, size, &buf, &v);

        if (n < 0)
                return 0;
        for (int i = 1; i < n; i++) {
                policy_template_escape(v[i], escaped, sizeof(escaped));
                assert(strlen(escaped) <= POLICY_TEMPLATE_FIELD_MAX);
                assert(strspn(escaped, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789_.-") == strlen(escaped));
        }
        policy_template_check(v[0], true, &err);
        if (policy_template_expand(v[0],
                                   &(struct policy_template_values){
                                       .app_id = n > 1 ? v[1] : NULL,
                                       .executor_id = n > 2 ? v[2] : NULL,
                                       .name = n > 3 ? v[3] : NULL,
                                   },
                                   out, sizeof(out), &err) == 0) {
                const char *slash = strrchr(v[0], '/'), *name = strrchr(out, '/');
                size_t dir = slash ? (size_t)(slash - v[0]) + 1 : 0;

                name = name ? name + 1 : out;
                assert(strncmp(out, v[0], dir) == 0);
                assert(name == out + dir);
                assert(name[0] && name[0] != '.');
                assert(strlen(name) <= POLICY_TEMPLATE_NAME_MAX);
        }
        free(v);
        free(buf);
        return 0;
}
