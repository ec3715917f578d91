/* SPDX-License-Identifier: Apache-2.0 */
/* classfile-edit IN OUT: the four kinds of edit of tests/agent/fixtures/Sample.class (one
 * each), written to OUT for tests/agent/classfile.sh to run in a JVM. Exit 0 when all four
 * were made. */
#include <stdio.h>
#include <stdlib.h>

#include "classfile.h"

int main(int argc, char **argv)
{
        static const struct jva_hook_class hooks = {.name = "sparkshim/agent/Hooks",
                                                    .guard = "armed"};
        static const struct jva_edit edits[] = {
            {JVA_EDIT_CALL, "acquire", "(JLjava/lang/Object;)J", "acquire", NULL, NULL},
            {JVA_EDIT_DENY, "page", "(J)Z", "page", NULL, NULL},
            {JVA_EDIT_GUARDED, "insert", "(Ljava/lang/Object;JIJZ)V", "insert", NULL, NULL},
            {JVA_EDIT_REPLACE_CALL, "maybe", "(Ljava/lang/Object;J)Z", "grant", "grant", "(J)J"},
        };
        struct jva_edit_result results[4];
        static uint8_t in[1 << 16];
        uint8_t *out = NULL;
        size_t len, out_len = 0;
        FILE *f;
        int r;

        if (argc != 3) {
                fprintf(stderr, "usage: classfile-edit IN OUT\n");
                return 2;
        }
        f = fopen(argv[1], "rb");
        if (!f) {
                perror(argv[1]);
                return 1;
        }
        len = fread(in, 1, sizeof(in), f);
        fclose(f);
        r = jva_class_edit(in, len, &hooks, edits, results, 4, &out, &out_len);
        for (int i = 0; i < 4; i++)
                printf("%s: %s\n", edits[i].method,
                       results[i].status ? results[i].reason : "edited");
        if (r != 4)
                return 1;
        f = fopen(argv[2], "wb");
        if (!f || fwrite(out, 1, out_len, f) != out_len || fclose(f) != 0) {
                perror(argv[2]);
                return 1;
        }
        free(out);
        return 0;
}
