/* SPDX-License-Identifier: Apache-2.0 */
/* Class-file surgery (jvmagent/classfile.c) on a real javac class file
 * (tests/agent/fixtures/Sample.class): which edits are made, which are refused and why, that
 * the result parses again with the renamed originals in it, that broken input is refused.
 * The JVM's own verifier runs the edited class in tests/agent/classfile.sh. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classfile.h"
#include "util.h"

/*
 * The editor's memcpy calls go through here (the executable is linked with
 * -Wl,--wrap=memcpy): a NULL source or destination is undefined behaviour even for 0 bytes,
 * and UBSan is not always there to say so.
 */
void *__real_memcpy(void *dst, const void *src, size_t n);
void *__wrap_memcpy(void *dst, const void *src, size_t n);
static unsigned null_memcpy;

void *__wrap_memcpy(void *dst, const void *src, size_t n)
{
        if (!dst || !src) {
                null_memcpy++;
                return dst;
        }
        return __real_memcpy(dst, src, n);
}

static const struct jva_hook_class hooks = {.name = "sparkshim/agent/Hooks", .guard = "armed"};

static uint8_t *read_fixture(size_t *ret_len)
{
        char path[4096];
        FILE *f;
        uint8_t *data = malloc(1 << 16);

        snprintf(path, sizeof(path), "%s/Sample.class", FIXTURES);
        f = fopen(path, "rb");
        cr_assert(f, "cannot open %s", path);
        *ret_len = fread(data, 1, 1 << 16, f);
        fclose(f);
        cr_assert_gt(*ret_len, 100, "%s: %zu bytes", path, *ret_len);
        return data;
}

static const struct jva_edit good[] = {
    {JVA_EDIT_CALL, "acquire", "(JLjava/lang/Object;)J", "acquire", NULL, NULL},
    {JVA_EDIT_DENY, "page", "(J)Z", "page", NULL, NULL},
    {JVA_EDIT_GUARDED, "insert", "(Ljava/lang/Object;JIJZ)V", "insert", NULL, NULL},
    {JVA_EDIT_REPLACE_CALL, "maybe", "(Ljava/lang/Object;J)Z", "grant", "grant", "(J)J"},
};

Test(classfile, makes_every_kind_of_edit)
{
        size_t len, out_len = 0, again_len = 0;
        uint8_t *in = read_fixture(&len), *out = NULL, *again = NULL;
        struct jva_edit_result results[4], check[4];
        /* the renamed originals are in the output, the wrappers kept the old names */
        struct jva_edit renamed[4] = {
            {JVA_EDIT_CALL, "acquire$sparkshim", "(JLjava/lang/Object;)J", "x", NULL, NULL},
            {JVA_EDIT_CALL, "page$sparkshim", "(J)Z", "x", NULL, NULL},
            {JVA_EDIT_CALL, "acquire", "(JLjava/lang/Object;)J", "x", NULL, NULL},
            /* the call was replaced: maybe() no longer calls grant() */
            {JVA_EDIT_REPLACE_CALL, "maybe", "(Ljava/lang/Object;J)Z", "x", "grant", "(J)J"},
        };
        int r = jva_class_edit(in, len, &hooks, good, results, 4, &out, &out_len);

        cr_assert_eq(r, 4, "edits made: %d", r);
        for (int i = 0; i < 4; i++)
                cr_expect_eq(results[i].status, 0, "edit %d: %d %s", i, results[i].status,
                             results[i].reason);
        cr_assert(out);
        cr_expect_gt(out_len, len, "the class grew: %zu -> %zu", len, out_len);

        r = jva_class_edit(out, out_len, &hooks, renamed, check, 4, &again, &again_len);
        cr_expect_eq(r, 3, "edits on the edited class: %d", r);
        cr_expect_eq(check[0].status, 0, "%s", check[0].reason);
        cr_expect_eq(check[1].status, 0, "%s", check[1].reason);
        cr_expect_eq(check[2].status, 0, "%s", check[2].reason);
        cr_expect_eq(check[3].status, -ENOENT, "%d %s", check[3].status, check[3].reason);
        cr_expect_str_eq(check[3].reason, "call not found (grant(J)J)");
        free(in);
        free(out);
        free(again);
}

Test(classfile, refuses_what_it_cannot_edit_and_says_why)
{
        static const struct jva_edit bad[] = {
            {JVA_EDIT_CALL, "nope", "()V", "h", NULL, NULL},
            {JVA_EDIT_CALL, "helper", "()V", "h", NULL, NULL},
            {JVA_EDIT_CALL, "acquire", "(J)J", "h", NULL, NULL},
            /* the walker gets through pick()'s tableswitch and finds no such call */
            {JVA_EDIT_REPLACE_CALL, "pick", "(I)I", "h", "release", "(J)J"},
            /* a call returning a reference cannot be replaced by an Object-typed hook */
            {JVA_EDIT_REPLACE_CALL, "maybe", "(Ljava/lang/Object;J)Z", "h", "grant",
             "(J)Ljava/lang/String;"},
        };
        size_t len, out_len = 7;
        uint8_t *in = read_fixture(&len), *out = (uint8_t *)"x";
        struct jva_edit_result results[5];
        int r = jva_class_edit(in, len, &hooks, bad, results, 5, &out, &out_len);

        cr_expect_eq(r, 0, "nothing made: %d", r);
        cr_expect_null(out);
        cr_expect_eq(out_len, 0);
        cr_expect_eq(results[0].status, -ENOENT);
        cr_expect_str_eq(results[0].reason, "method not found (nope()V)");
        cr_expect_eq(results[1].status, -EINVAL);
        cr_expect_str_eq(results[1].reason, "helper()V is not an instance method with code");
        cr_expect_eq(results[2].status, -ENOENT);
        cr_expect_str_eq(results[2].reason, "method not found (acquire(J)J)");
        cr_expect_eq(results[3].status, -ENOENT);
        cr_expect_str_eq(results[3].reason, "call not found (release(J)J)");
        cr_expect_eq(results[4].status, -EINVAL);
        free(in);
}

Test(classfile, a_call_inside_a_switch_arm_is_found)
{
        static const struct jva_edit edit = {
            JVA_EDIT_REPLACE_CALL, "pick", "(I)I", "grant", "grant", "(J)J"};
        size_t len, out_len;
        uint8_t *in = read_fixture(&len), *out = NULL;
        struct jva_edit_result result;
        int r = jva_class_edit(in, len, &hooks, &edit, &result, 1, &out, &out_len);

        cr_expect_eq(r, 1, "%d %s", r, result.reason);
        free(in);
        free(out);
}

/* Spark's Spillable: only a call replaced, so no wrapper methods are added (defect 12) */
Test(classfile, only_call_replacements_copy_no_null_buffer)
{
        static const struct jva_edit edit = {
            JVA_EDIT_REPLACE_CALL, "maybe", "(Ljava/lang/Object;J)Z", "grant", "grant", "(J)J"};
        size_t len, out_len = 0;
        uint8_t *in = read_fixture(&len), *out = NULL;
        struct jva_edit_result result;
        int r;

        null_memcpy = 0;
        r = jva_class_edit(in, len, &hooks, &edit, &result, 1, &out, &out_len);
        cr_expect_eq(r, 1, "%d %s", r, result.reason);
        cr_expect_not_null(out);
        cr_expect_eq(out_len > len, true, "the class grew: %zu -> %zu", len, out_len);
        cr_expect_eq(null_memcpy, 0, "memcpy called with a NULL buffer %u times", null_memcpy);
        free(in);
        free(out);
}

Test(classfile, refuses_broken_class_files)
{
        size_t len, out_len;
        uint8_t *in = read_fixture(&len), *out = NULL;
        struct jva_edit_result results[4];

        /* every truncation, and a bad magic */
        for (size_t cut = 0; cut < len; cut += 7)
                cr_expect_eq(jva_class_edit(in, cut, &hooks, good, results, 4, &out, &out_len),
                             -EINVAL, "truncated at %zu", cut);
        in[0] = 0xCB;
        cr_expect_eq(jva_class_edit(in, len, &hooks, good, results, 4, &out, &out_len), -EINVAL);
        cr_expect_null(out);
        free(in);
}

/*
 * Found by tests/fuzz/fuzz-classfile: an index past the end of the constant pool named
 * nothing in the class as given, but after the edit appended its entries it named one of
 * them, so a class the JVM would refuse came out as another, valid one. Sample.class gets a
 * class attribute (it has none) whose name is #N: a Utf8 of the pool is fine, #32 (the pool
 * holds #1..#31) and beyond must be refused, leaving the class alone.
 */
Test(classfile, refuses_indexes_past_the_constant_pool)
{
        static const unsigned names[] = {11 /* Utf8 "held" */, 32, 33, 0xffff, 0 /* none */};
        size_t len, out_len;
        uint8_t *in = read_fixture(&len), *out = NULL;
        struct jva_edit_result results[4];

        cr_assert_eq(in[8] << 8 | in[9], 32, "Sample.class: constant_pool_count changed");
        cr_assert_eq(in[len - 2] << 8 | in[len - 1], 0, "Sample.class: has class attributes");
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                uint8_t *class = malloc(len + 6);
                int r;

                memcpy(class, in, len);
                class[len - 1] = 1; /* attributes_count */
                class[len] = (uint8_t)(names[i] >> 8);
                class[len + 1] = (uint8_t)names[i];
                memset(class + len + 2, 0, 4); /* attribute_length */
                r = jva_class_edit(class, len + 6, &hooks, good, results, 4, &out, &out_len);
                if (i == 0) {
                        cr_expect_eq(r, 4, "attribute named #%u: edits made: %d", names[i], r);
                } else {
                        cr_expect_eq(r, -EINVAL, "attribute named #%u: want -EINVAL, got %d",
                                     names[i], r);
                        cr_expect_null(out, "attribute named #%u: a class came out", names[i]);
                }
                free(out);
                out = NULL;
                free(class);
        }
        free(in);
}

Test(classfile, hook_descriptors)
{
        struct {
                struct jva_edit edit;
                const char *want;
        } cases[] = {
            {{JVA_EDIT_CALL, "m", "(JLorg/apache/spark/memory/MemoryConsumer;)J", "h", NULL, NULL},
             "(Ljava/lang/Object;JLjava/lang/Object;)V"},
            {{JVA_EDIT_DENY, "m", "(J)Z", "h", NULL, NULL}, "(Ljava/lang/Object;J)Z"},
            {{JVA_EDIT_GUARDED, "m", "([BI[[JLjava/lang/String;D)V", "h", NULL, NULL},
             "(Ljava/lang/Object;Ljava/lang/Object;ILjava/lang/Object;Ljava/lang/Object;D)V"},
            {{JVA_EDIT_REPLACE_CALL, "m", "()V", "h", "c", "(J)J"}, "(Ljava/lang/Object;J)J"},
        };
        char buf[256];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int n = jva_edit_hook_descriptor(&cases[i].edit, buf, sizeof(buf));
                cr_expect_eq(n, (int)strlen(cases[i].want), "case %zu: %d", i, n);
                cr_expect_str_eq(buf, cases[i].want, "case %zu", i);
        }
        {
                struct jva_edit bad[] = {
                    {JVA_EDIT_CALL, "m", "(Q)V", "h", NULL, NULL},
                    {JVA_EDIT_CALL, "m", "(Ljava/lang/Object)V", "h", NULL, NULL},
                    {JVA_EDIT_CALL, "m", "J", "h", NULL, NULL},
                    {JVA_EDIT_REPLACE_CALL, "m", "()V", "h", "c", "(J)[J"},
                };
                for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                        cr_expect_eq(jva_edit_hook_descriptor(&bad[i], buf, sizeof(buf)), -EINVAL,
                                     "bad case %zu", i);
                cr_expect_eq(jva_edit_hook_descriptor(&good[0], buf, 8), -EINVAL, "too small");
        }
}

Test(classfile, builds_the_hook_class)
{
        static const struct jva_native natives[] = {
            {"acquire", "(Ljava/lang/Object;JLjava/lang/Object;)V"},
            {"page", "(Ljava/lang/Object;J)Z"},
        };
        /* its natives are not editable methods: parse it back through the editor */
        static const struct jva_edit edit = {JVA_EDIT_CALL, "page", "(Ljava/lang/Object;J)Z",
                                             "h",           NULL,   NULL};
        uint8_t *bytes = NULL, *out = NULL;
        size_t len = 0, out_len;
        struct jva_edit_result result;

        cr_assert_eq(jva_hook_class_build(&hooks, natives, 2, &bytes, &len), 0);
        cr_expect_eq(jva_class_edit(bytes, len, &hooks, &edit, &result, 1, &out, &out_len), 0);
        cr_expect_eq(result.status, -EINVAL, "%s", result.reason);
        free(bytes);
}
