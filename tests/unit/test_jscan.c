/* SPDX-License-Identifier: Apache-2.0 */
/* The validating JSON scanner (tuner/util_jscan.h): valid and invalid texts, with jansson as the
 * reference, paths, and the value helpers. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <jansson.h>

#include "jscan.h"
#include "util.h"

static const char *const valid[] = {
    "{}",
    "[]",
    "0",
    "-0",
    "1.5e-3",
    "-12.25E+10",
    "\"\"",
    "true",
    "false",
    "null",
    " { \"a\" : [ 1 , 2 , { } ] , \"b\" : \"x\\\"y\\\\z\\/\\b\\f\\n\\r\\t\" } ",
    "\"\\u00e9\\u20ac\\ud83d\\ude00\"",
    "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
    "[[[[[[[[[[]]]]]]]]]]",
    "{\"a\":{\"b\":{\"c\":[1,{\"d\":null}]}}}",
};

static const char *const invalid[] = {
    "",
    " ",
    "{",
    "}",
    "[1,]",
    "{\"a\":1,}",
    "{\"a\"}",
    "{a:1}",
    "[1 2]",
    "01",
    "1.",
    ".5",
    "-",
    "1e",
    "1e+",
    "+1",
    "tru",
    "nul",
    "truex",
    "\"abc",
    "\"\\x\"",
    "\"\\u12\"",
    "\"\\ud800\"",
    "\"\\udc00\"",
    "\"\\ud800\\u0041\"",
    "\"a\tb\"",
    "\"\xc3\"",
    "\"\xc0\xaf\"",
    "\"\xed\xa0\x80\"",
    "\"\xf5\x80\x80\x80\"",
    "[1]x",
    "{} {}",
    "[\"a\",]",
    "'a'",
    "NaN",
    "Infinity",
};

Test(util_jscan, agrees_with_jansson)
{
        for (size_t i = 0; i < ELEMENTSOF(valid); i++) {
                json_error_t jerr;
                json_t *doc = json_loads(valid[i], JSON_DECODE_ANY, &jerr);
                cr_expect(doc != NULL, "jansson refuses %s: %s", valid[i], jerr.text);
                json_decref(doc);
                cr_expect_eq(util_jscan(valid[i], strlen(valid[i]), NULL, NULL, NULL), 0,
                             "util_jscan refuses %s", valid[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(invalid); i++) {
                json_error_t jerr;
                json_t *doc = json_loads(invalid[i], JSON_DECODE_ANY, &jerr);
                size_t offset = 99;
                const char *what = NULL;

                cr_expect(doc == NULL, "jansson takes %s", invalid[i]);
                json_decref(doc);
                cr_expect_eq(util_jscan(invalid[i], strlen(invalid[i]), NULL, &offset, &what),
                             -EINVAL, "util_jscan takes %s", invalid[i]);
                cr_expect(what != NULL && offset <= strlen(invalid[i]), "%s: what %s at %zu",
                          invalid[i], what ? what : "(none)", offset);
        }
}

static int count_ends(void *userdata, const char *path, size_t path_len, bool object)
{
        (void)path;
        (void)object;
        cr_assert_leq(path_len, UTIL_JSCAN_PATH_MAX);
        (*(size_t *)userdata)++;
        return 0;
}

Test(util_jscan, nul_bytes_and_any_depth)
{
        /* a million levels: a recursive scanner overflows the native stack long before (a
         * real Spark SQL plan nests 8 levels a sort-merge join, and 64 was the old limit) */
        const size_t levels = 1000000;
        char *deep = malloc(6 * levels + 2);
        const char *what = NULL;
        size_t ends = 0, n = 0, offset = 0;
        const struct util_jscan_visitor visitor = {NULL, count_ends, &ends};

        cr_assert(deep);
        cr_expect_eq(util_jscan("\"a\0b\"", 5, NULL, NULL, &what), -EINVAL);
        cr_expect_str_eq(what, "a NUL byte");
        cr_expect_eq(util_jscan("[1]\0", 4, NULL, NULL, NULL), -EINVAL, "a NUL after the value");

        memset(deep, '[', levels);
        deep[levels] = '1';
        memset(deep + levels + 1, ']', levels);
        cr_expect_eq(util_jscan(deep, 2 * levels + 1, &visitor, NULL, NULL), 0);
        cr_expect_eq(ends, levels, "%zu ends of %zu arrays", ends, levels);
        /* one ']' short: refused where the text ends */
        cr_expect_eq(util_jscan(deep, 2 * levels, NULL, &offset, &what), -EINVAL);
        cr_expect_str_eq(what, "expected ',' or ']'");
        cr_expect_eq(offset, 2 * levels);

        for (size_t i = 0; i < levels; i++, n += 5)
                memcpy(deep + n, "{\"a\":", 5);
        deep[n++] = '1';
        memset(deep + n, '}', levels);
        n += levels;
        ends = 0;
        cr_expect_eq(util_jscan(deep, n, &visitor, NULL, NULL), 0);
        cr_expect_eq(ends, levels, "%zu ends of %zu objects", ends, levels);
        /* a member's value missing deep inside (a value, as before, is read as a number) */
        deep[5 * levels] = '}';
        cr_expect_eq(util_jscan(deep, n, NULL, &offset, &what), -EINVAL);
        cr_expect_str_eq(what, "an invalid number");
        free(deep);
}

struct seen {
        char text[1024];
        size_t used;
};

static int record(void *userdata, const char *path, size_t path_len,
                  const struct util_jscan_value *v)
{
        struct seen *s = userdata;

        cr_assert_eq(strlen(path), path_len);
        s->used += (size_t)snprintf(s->text + s->used, sizeof(s->text) - s->used, "%s=%.*s;", path,
                                    (int)v->len, v->raw);
        return 0;
}

static int record_end(void *userdata, const char *path, size_t path_len, bool object)
{
        struct seen *s = userdata;

        s->used += (size_t)snprintf(s->text + s->used, sizeof(s->text) - s->used, "%s%s;", path,
                                    object ? "}" : "]");
        return 0;
}

static int stop_at_b(void *userdata, const char *path, size_t path_len,
                     const struct util_jscan_value *v)
{
        return strcmp(path, "b") == 0 ? -ENOENT : 0;
}

Test(util_jscan, paths)
{
        static const char doc[] = "{\"a\":{\"b\":1,\"c\":[true,{\"d\":\"x\"}]},\"e\":null}";
        struct seen s = {"", 0};
        struct util_jscan_visitor v = {record, record_end, &s};
        struct util_jscan_visitor stop = {stop_at_b, NULL, NULL};
        char longer[400];

        cr_assert_eq(util_jscan(doc, strlen(doc), &v, NULL, NULL), 0);
        cr_expect_str_eq(s.text, "a.b=1;a.c[]=true;a.c[].d=x;a.c[]};a.c];a};e=null;};");
        cr_expect_eq(util_jscan("{\"b\":2}", 7, &stop, NULL, NULL), -ENOENT, "the visitor's error");

        /* a path past the maximum is never a short one */
        snprintf(longer, sizeof(longer), "{\"%0200d\":{\"x\":1}}", 0);
        s.used = 0;
        s.text[0] = '\0';
        v.end = NULL;
        cr_assert_eq(util_jscan(longer, strlen(longer), &v, NULL, NULL), 0);
        cr_expect_eq(strlen(s.text), UTIL_JSCAN_PATH_MAX + 3, "cut path (+ \"=1;\"): %s", s.text);

        /* a dotted or escaped member name is not a path of nested members */
        s.used = 0;
        s.text[0] = '\0';
        {
                static const char dotted[] = "{\"a.b\":1,\"a\\u002eb\":2,\"c[]\":3}";
                cr_assert_eq(util_jscan(dotted, strlen(dotted), &v, NULL, NULL), 0);
        }
        cr_expect(strstr(s.text, "a.b=") == NULL && strstr(s.text, "c[]=") == NULL, "%s", s.text);
}

Test(util_jscan, values)
{
        struct util_jscan_value n = {UTIL_JSCAN_NUMBER, "9223372036854775807", 19};
        struct util_jscan_value big = {UTIL_JSCAN_NUMBER, "9223372036854775808", 19};
        struct util_jscan_value neg = {UTIL_JSCAN_NUMBER, "-9223372036854775808", 20};
        struct util_jscan_value frac = {UTIL_JSCAN_NUMBER, "1.25e2", 6};
        struct util_jscan_value str = {UTIL_JSCAN_STRING, "a\\n\\u00e9\\ud83d\\ude00", 22};
        struct util_jscan_value nul = {UTIL_JSCAN_STRING, "a\\u0000", 7};
        char buf[16];
        int64_t i;
        double d;

        cr_expect_eq(util_jscan_int64(&n, &i), 0);
        cr_expect_eq(i, INT64_MAX, "%" PRId64, i);
        cr_expect_eq(util_jscan_int64(&big, &i), -ERANGE);
        cr_expect_eq(util_jscan_int64(&neg, &i), 0);
        cr_expect_eq(i, INT64_MIN, "%" PRId64, i);
        cr_expect_eq(util_jscan_int64(&frac, &i), -EINVAL);
        cr_expect_eq(util_jscan_double(&frac, &d), 0);
        cr_expect_eq(d, 125.0, "%g", d);
        cr_expect_eq(util_jscan_string(&str, buf, sizeof(buf)), 0);
        cr_expect_str_eq(buf, "a\n\xc3\xa9\xf0\x9f\x98\x80");
        cr_expect_eq(util_jscan_string(&str, buf, 5), -ENAMETOOLONG);
        cr_expect_eq(util_jscan_string(&nul, buf, sizeof(buf)), -EINVAL,
                     "no NUL inside a C string");
        cr_expect(util_jscan_string_eq(
            &(struct util_jscan_value){UTIL_JSCAN_STRING, "fin\\u0061l", 10}, "final"));
        cr_expect(!util_jscan_string_eq(&(struct util_jscan_value){UTIL_JSCAN_STRING, "final", 5},
                                        "fina"));
}
