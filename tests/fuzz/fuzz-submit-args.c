/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The java personality's reading of a spark-submit command (policy/submit-args.c): the
 * arguments after the SparkSubmit class, and a properties file's text. Input: the properties
 * text, a line "%%", then the arguments separated by NUL bytes, or one per line when there is
 * no NUL (see fuzz_split()); without the "%%" line, arguments only.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "policy.h"

static const char separator[] = "\n%%\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *args = data;
        size_t args_size = size, text_size = 0;
        struct policy_submit s, prefix;
        struct util_error err = {0};
        char *buf, **argv;
        const char *job;
        int argc, r;

        for (size_t i = 0; i + sizeof(separator) - 1 <= size; i++)
                if (memcmp(data + i, separator, sizeof(separator) - 1) == 0) {
                        text_size = i;
                        args = data + i + sizeof(separator) - 1;
                        args_size = size - i - (sizeof(separator) - 1);
                        break;
                }
        argc = fuzz_split(args, args_size, &buf, &argv);
        if (argc < 0)
                return 0;
        policy_submit_init(&s);
        r = policy_submit_parse(argc, argv, &s, &err);
        assert(r == 0 || r == -EINVAL || r == -ENOMEM);
        assert(r == 0 || err.text[0]);
        if (r == 0) {
                /* the resource, when there is one, is the first argument not taken as an option */
                assert(s.submission ? s.resource < argc && argv[s.resource][0] != '-'
                                    : s.resource == argc);
                /* nothing after the resource counts: the same settings without it */
                if (s.submission) {
                        policy_submit_init(&prefix);
                        assert(policy_submit_parse(s.resource + 1, argv, &prefix, NULL) == 0);
                        assert(prefix.n_settings == s.n_settings && prefix.submission);
                        policy_submit_free(&prefix);
                }
                r = policy_submit_add_properties(&s, (const char *)data, text_size,
                                                 POLICY_SUBMIT_PROPERTIES, "fuzz", &err);
                assert(r == 0 || r == -EINVAL || r == -ENOMEM);
                for (size_t i = 0; i < s.n_settings; i++)
                        assert(policy_submit_get(&s, s.settings[i].key) != NULL);
                job = policy_submit_job(&s, "spark.app.name");
                assert(!job || job[0]);
                (void)policy_submit_opted_out(&s);
        }
        policy_submit_free(&s);
        free(argv);
        free(buf);
        return 0;
}
