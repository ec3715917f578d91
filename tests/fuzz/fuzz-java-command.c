/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The java personality's reading of a command line (policy/java-command.c): which main
 * class the launcher runs, and whether that is an executor. Input: the arguments separated
 * by NUL bytes, or one per line when there is no NUL (see fuzz_split()).
 */
#include <assert.h>
#include <string.h>

#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *main_class;
        enum policy_java_main m;
        char *buf, **argv;
        int argc;
        bool plain, env;

        argc = fuzz_split(data, size, &buf, &argv);
        if (argc < 0)
                return 0;
        m = policy_java_main_class(argc, argv, &main_class);
        /* the class, when there is one, is one of the arguments (or inside -m's) */
        assert((m == POLICY_JAVA_MAIN_CLASS) == (main_class != NULL));
        if (main_class) {
                bool found = false;
                for (int i = 1; i < argc && !found; i++)
                        found = main_class >= argv[i] && main_class <= argv[i] + strlen(argv[i]);
                assert(found);
        }
        plain = policy_java_runs_executor(argc, argv, false);
        env = policy_java_runs_executor(argc, argv, true);
        /* JDK_JAVA_OPTIONS can only make more commands wrapped */
        assert(!plain || env);
        free(argv);
        free(buf);
        return 0;
}
