/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Class-file surgery for the agent's hooks (plain C, no JVM; unit tested).
 *
 * The agent calls into itself from Spark's own bytecode instead of through JVMTI breakpoints:
 * the breakpoint and local-variable capabilities slow every compiled method of the JVM a
 * little, hit or not (docs/benchmarks.md), while a call inserted at class load costs only
 * where it is. Every edit keeps the method's own code byte for byte, so no offset, exception
 * range or stack map frame of Spark's code moves:
 *  - a wrap renames the method to NAME$sparkshim (made private) and adds a small method under
 *    the old name and descriptor that calls the hook, then the original, and returns its
 *    value: JVA_EDIT_CALL calls it always, JVA_EDIT_GUARDED only while the hook class's
 *    static volatile boolean field is true, JVA_EDIT_DENY returns 0 / false without calling
 *    the original when the hook returns true;
 *  - JVA_EDIT_REPLACE_CALL turns the invokevirtual/invokespecial of one callee inside the
 *    method into an invokestatic of the hook with the same stack effect (same length).
 * The hook is a static native method of the hook class. Its descriptor is the method's (or
 * callee's) with `this` first and every reference type widened to java/lang/Object:
 * jva_edit_hook_descriptor() says which, and jva_hook_class() builds the hook class.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define JVA_RENAMED_SUFFIX "$sparkshim"

enum jva_edit_kind {
        JVA_EDIT_CALL,         /* hook(this, args...)V, then the original */
        JVA_EDIT_GUARDED,      /* if (GUARD) hook(this, args...)V; then the original */
        JVA_EDIT_DENY,         /* if (hook(this, args...)Z) return 0; else the original */
        JVA_EDIT_REPLACE_CALL, /* inside the method: callee(args) -> hook(receiver, args) */
};

struct jva_edit {
        enum jva_edit_kind kind;
        const char *method, *descriptor;        /* the instance method edited */
        const char *hook;                       /* the hook class's native method */
        const char *callee, *callee_descriptor; /* JVA_EDIT_REPLACE_CALL only */
};

struct jva_edit_result {
        int status;       /* 0 done; -ENOENT method (or call) not found; -EINVAL cannot */
        char reason[200]; /* why not, when status < 0 */
};

/* The hook class: internal name and the guard field of JVA_EDIT_GUARDED. */
struct jva_hook_class {
        const char *name;  /* e.g. "sparkshim/agent/Hooks" */
        const char *guard; /* a static volatile boolean field */
};

/*
 * The hook's descriptor for `edit` into buf. Returns its length, or -EINVAL when the
 * descriptor is malformed or does not fit (JVA_EDIT_REPLACE_CALL: the callee must return a
 * primitive or void).
 */
int jva_edit_hook_descriptor(const struct jva_edit *edit, char *buf, size_t size);

/*
 * Apply edits[0..n) to the class file in[0..in_len). Every edit gets its result in
 * results[i]; an edit that cannot be made leaves its method alone. When at least one edit
 * was made, *ret_out is a malloc'd new class file (the caller frees it) and the return value
 * is the number made; 0 (and *ret_out NULL) when none was; -EINVAL when the class file
 * cannot be parsed (results then say nothing), -ENOMEM.
 */
int jva_class_edit(const uint8_t *in, size_t in_len, const struct jva_hook_class *hooks,
                   const struct jva_edit *edits, struct jva_edit_result *results, unsigned n,
                   uint8_t **ret_out, size_t *ret_out_len);

struct jva_native {
        const char *name, *descriptor;
};

/*
 * A class file (version 52) for the hook class: public final, the guard field, and one
 * public static native method per natives[i]. 0 and a malloc'd *ret_out, or -EINVAL /
 * -ENOMEM.
 */
int jva_hook_class_build(const struct jva_hook_class *hooks, const struct jva_native *natives,
                         unsigned n, uint8_t **ret_out, size_t *ret_out_len);
