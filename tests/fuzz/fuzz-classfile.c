/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's class-file reader and editor (jvmagent/classfile.c) on the bytes a JVM hands
 * to ClassFileLoadHook, with the agent's own edits (every target of agent.c at once). A
 * class the editor cannot handle must come back unchanged (an error or 0 edits, no output);
 * a class it edited must be one it can read again.
 */
#include <assert.h>
#include <errno.h>

#include "classfile.h"
#include "fuzz.h"
#include "util.h"

/* the descriptors of jvmagent/agent.c's targets[] */
#define ACQUIRE_SIGNATURE        "(JLorg/apache/spark/memory/MemoryConsumer;)J"
#define MAYBE_SPILL_SIGNATURE    "(Ljava/lang/Object;J)Z"
#define NEW_PAGE_SIGNATURE       "(J)Z"
#define INSERT_SIGNATURE_UNSAFE  "(Ljava/lang/Object;JIJZ)V"
#define INSERT_SIGNATURE_SHUFFLE "(Ljava/lang/Object;JII)V"
#define INSERT_KV_SIGNATURE      "(Ljava/lang/Object;JILjava/lang/Object;JIJZ)V"

static const struct jva_hook_class hooks = {.name = "sparkshim/agent/Hooks", .guard = "armed"};
static const struct jva_edit edits[] = {
    {JVA_EDIT_CALL, "acquireExecutionMemory", ACQUIRE_SIGNATURE, "acquire", NULL, NULL},
    {JVA_EDIT_REPLACE_CALL, "maybeSpill", MAYBE_SPILL_SIGNATURE, "spillableAcquire",
     "acquireMemory", "(J)J"},
    {JVA_EDIT_DENY, "acquireNewPage", NEW_PAGE_SIGNATURE, "newPage", NULL, NULL},
    {JVA_EDIT_GUARDED, "insertRecord", INSERT_SIGNATURE_UNSAFE, "insertUnsafe", NULL, NULL},
    {JVA_EDIT_GUARDED, "insertKVRecord", INSERT_KV_SIGNATURE, "insertUnsafeKV", NULL, NULL},
    {JVA_EDIT_GUARDED, "insertRecord", INSERT_SIGNATURE_SHUFFLE, "insertShuffle", NULL, NULL},
};
#define N_EDITS ELEMENTSOF(edits)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct jva_edit_result results[N_EDITS], again[N_EDITS];
        uint8_t *out = NULL, *out2 = NULL;
        size_t out_len = 0, out2_len = 0;
        int r, r2;

        r = jva_class_edit(data, size, &hooks, edits, results, N_EDITS, &out, &out_len);
        if (r <= 0) {
                assert(r == 0 || r == -EINVAL || r == -ENOMEM);
                assert(!out || !"no edit, yet a new class");
                return 0;
        }
        assert((unsigned)r <= N_EDITS && out && out_len > 0);
        for (unsigned i = 0, made = 0; i < N_EDITS; i++) {
                made += results[i].status == 0;
                assert(i < N_EDITS - 1 || made == (unsigned)r);
        }
        /* what the JVM gets must at least be a class file this reader accepts */
        r2 = jva_class_edit(out, out_len, &hooks, edits, again, N_EDITS, &out2, &out2_len);
        assert(r2 >= 0 || !"the edited class cannot be read back");
        free(out2);
        free(out);
        return 0;
}
