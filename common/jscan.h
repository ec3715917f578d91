/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A validating JSON scanner for the tuner's hot path (ingesting reports, docs/tuner.md):
 * one pass over a document (RFC 8259: strings with valid escapes and UTF-8, no control
 * characters, numbers by the grammar, nesting to any depth), calling back for every scalar
 * with its path. It allocates only for documents nested deeper than 64 levels: a stack of 2
 * bytes a level, at most one level a byte of input, on the heap and never the native stack
 * (real Spark SQL plans in event logs nest hundreds of levels: 8 a sort-merge join). jansson builds
 * a tree of every value of a report, sample series included, and that was 3/4 of ingest's time; the
 * scanner reads the same text about ten times faster and hands over only what the caller looks at.
 *
 * Paths: object members joined with '.', array elements as "[]": "identity.app_id",
 * "identity.argv[]", "samples[].t_seconds". A path longer than UTIL_JSCAN_PATH_MAX, or through
 * a member whose name holds '.', '[' or an escape, is delivered as UTIL_JSCAN_PATH_MAX
 * characters ending in '~' and never equals a path the caller knows.
 *
 * Not thread-safe per struct util_jscan; no global state.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UTIL_JSCAN_PATH_MAX 128

enum util_jscan_type {
        UTIL_JSCAN_NULL = 0,
        UTIL_JSCAN_FALSE,
        UTIL_JSCAN_TRUE,
        UTIL_JSCAN_NUMBER,
        UTIL_JSCAN_STRING, /* raw: the bytes between the quotes, escapes not undone */
};

struct util_jscan_value {
        enum util_jscan_type type;
        const char *raw; /* into the document */
        size_t len;
};

struct util_jscan_visitor {
        /* a scalar at path; a negative return stops the scan with that value */
        int (*scalar)(void *userdata, const char *path, size_t path_len,
                      const struct util_jscan_value *v);
        /* an object or array at path ends (optional): the end of one array element, say */
        int (*end)(void *userdata, const char *path, size_t path_len, bool object);
        void *userdata;
};

/*
 * Scan text[0..len) (need not be NUL-terminated; a NUL byte is an error). Returns 0, the
 * visitor's negative value, -ENOMEM (a deep document's stack), or -EINVAL with *ret_offset
 * (if not NULL) the byte offset of the first error and *ret_what a static description.
 */
int util_jscan(const char *text, size_t len, const struct util_jscan_visitor *visitor,
               size_t *ret_offset, const char **ret_what);

/* A number as an int64 (no fraction, no exponent, in range): 0 or -EINVAL / -ERANGE. */
int util_jscan_int64(const struct util_jscan_value *v, int64_t *ret);
/* A number as a double: 0 or -EINVAL. */
int util_jscan_double(const struct util_jscan_value *v, double *ret);
/*
 * A string's value, escapes undone, into buf (size bytes with its NUL): 0, -EINVAL when it is
 * not a string or holds \u0000, -ENAMETOOLONG when it does not fit.
 */
int util_jscan_string(const struct util_jscan_value *v, char *buf, size_t size);
/* Whether a string's value equals s (escapes undone). */
bool util_jscan_string_eq(const struct util_jscan_value *v, const char *s);
