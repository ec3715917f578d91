/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness: the tuner's JSON scanner (tuner/util_jscan.c), differentially against
 * jansson. Whatever jansson parses (JSON_DECODE_ANY | JSON_ALLOW_NUL) without a NUL byte in
 * the text, the scanner must take;
 * whatever the scanner takes, jansson must parse too, except for what jansson refuses beyond
 * the grammar (integers or reals out of its range). Every path handed to the visitor is
 * NUL-terminated at its length, and at most UTIL_JSCAN_PATH_MAX long.
 *
 * Built and run by hand (from the source root):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *     -D_GNU_SOURCE -Ituner -Icommon tuner/util_jscan.c tests/fuzz/fuzz-util_jscan.c \
 *     $(pkg-config --cflags --libs jansson) -o /tmp/fuzz-util_jscan
 *   /tmp/fuzz-util_jscan -max_total_time=60 tests/fuzz/corpus/util_jscan
 */
#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "jscan.h"

static int visit(void *userdata, const char *path, size_t path_len,
                 const struct util_jscan_value *v)
{
        char buf[64];
        int64_t i;
        double d;

        if (path_len > UTIL_JSCAN_PATH_MAX || strlen(path) != path_len)
                __builtin_trap();
        if (v->type == UTIL_JSCAN_NUMBER) {
                (void)util_jscan_int64(v, &i);
                (void)util_jscan_double(v, &d);
        } else if (v->type == UTIL_JSCAN_STRING) {
                int r = util_jscan_string(v, buf, sizeof(buf));
                if (r == 0 && strlen(buf) >= sizeof(buf))
                        __builtin_trap();
        }
        return 0;
}

static int visit_end(void *userdata, const char *path, size_t path_len, bool object)
{
        if (path_len > UTIL_JSCAN_PATH_MAX || strlen(path) != path_len)
                __builtin_trap();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const struct util_jscan_visitor visitor = {visit, visit_end, NULL};
        json_error_t jerr;
        json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        size_t offset = 0;
        const char *what = NULL;
        int r = util_jscan((const char *)data, size, &visitor, &offset, &what);

        /* jansson parses what the scanner refuses (jansson takes a NUL byte after the value as
         * the end of the text; the scanner refuses every NUL byte) */
        if (doc && r != 0 && !memchr(data, '\0', size))
                __builtin_trap();
        if (!doc && r == 0 && !strstr(jerr.text, "too big") && !strstr(jerr.text, "overflow") &&
            !strstr(jerr.text, "nesting") && !strstr(jerr.text, "maximum"))
                __builtin_trap(); /* the scanner takes what jansson refuses */
        if (r < 0 && (r != -EINVAL || !what || offset > size))
                __builtin_trap();
        json_decref(doc);
        return 0;
}
