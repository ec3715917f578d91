/* SPDX-License-Identifier: Apache-2.0 */
/* Declarations shared by the files of the policy library; not installed, not public. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

#define POLICY_KIB (UINT64_C(1) << 10)
#define POLICY_MIB (UINT64_C(1) << 20)
#define POLICY_GIB (UINT64_C(1) << 30)

/* Largest byte count we accept: Spark keeps sizes in a Java long. */
#define POLICY_BYTES_MAX ((uint64_t)INT64_MAX)

/* Upper bound of millicores anywhere (100000 cores), keeps all CPU arithmetic far from overflow. */
#define POLICY_MILLICORES_LIMIT UINT64_C(100000000)

/*
 * The JVM options entrypoint.sh takes from SPARK_JAVA_OPT_* lines of envp, in its order,
 * as NUL-terminated copies in one allocation (*ret_storage, freed by the caller with
 * *ret_lines). Returns their number, -ENOMEM or -E2BIG.
 */
ssize_t policy_spark_java_opts(char *const envp[], char ***ret_lines, char **ret_storage);

/* One step of a path into a JSON document: an object key, or an array index when key is NULL. */
struct policy_json_step {
        const char *key;
        size_t index;
};

/* Where a value (or key) sits in the text: 1-based line and column (UTF-8 characters). */
struct policy_json_locus {
        unsigned line;
        unsigned column;
        size_t offset; /* byte offset of the token */
        size_t length; /* bytes of the whole value (or key token) */
};

/*
 * Find the value at path (depth steps) in a JSON text that jansson already accepted, or the
 * key token of the last step when want_key is true. depth 0 is the top-level value.
 * Returns 0, -ENOENT when the path is not in the text, -EINVAL when the text is not JSON.
 */
int policy_json_locate(const char *text, size_t len, const struct policy_json_step *path,
                       size_t depth, bool want_key, struct policy_json_locus *ret);

/* Java's String.trim(): the bounds of s without leading/trailing characters <= ' '. */
void policy_trim(const char *s, const char **ret_begin, size_t *ret_len);

/* x rounded down (up) to an integer, treating values within 1e-9 relative of one as it. */
uint64_t policy_floor_u64(double x);
uint64_t policy_ceil_u64(double x);
