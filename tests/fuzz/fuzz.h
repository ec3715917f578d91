/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the libFuzzer harnesses (tests/fuzz/fuzz-*.c): turning the fuzzer's bytes into
 * the NUL-terminated strings and string vectors the parsers take.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A malloc'd NUL-terminated copy of data[0..size) (NULL only on ENOMEM). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1);

        if (!s)
                return NULL;
        if (size)
                memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/*
 * Split data into a NULL-terminated vector of strings: at NUL bytes when data has any (so
 * that every byte, newlines included, can be part of an entry), else at newlines (so that
 * seeds are readable one-entry-per-line files, like tests/unit/fixtures/cmdline/ *.argv).
 * *ret_buf holds the strings; free both. Returns the number of entries, -1 on ENOMEM.
 */
static inline int fuzz_split(const uint8_t *data, size_t size, char **ret_buf, char ***ret_vec)
{
        char separator = memchr(data, '\0', size) ? '\0' : '\n';
        char *buf = fuzz_strndup(data, size);
        char **vec;
        size_t n = 1;
        int count = 0;

        if (!buf)
                return -1;
        for (size_t i = 0; i < size; i++)
                n += buf[i] == separator;
        vec = calloc(n + 1, sizeof(*vec));
        if (!vec) {
                free(buf);
                return -1;
        }
        for (size_t i = 0, start = 0; i <= size; i++) {
                if (i < size && buf[i] != separator)
                        continue;
                buf[i] = '\0';
                /* a trailing separator ends the last entry, it does not start an empty one */
                if (i == size && start == size && count > 0)
                        break;
                vec[count++] = buf + start;
                start = i + 1;
        }
        vec[count] = NULL;
        *ret_buf = buf;
        *ret_vec = vec;
        return count;
}
