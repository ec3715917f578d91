/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTF-8, written once (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
 * The job's ids, command line and event logs may hold any bytes; the report (jansson), the
 * Prometheus files (node_exporter drops a whole file for one bad byte), PostgreSQL and the
 * log all want valid UTF-8, and the JSON scanner must refuse what is not.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * The length (1-4) of the valid UTF-8 sequence that starts at s and ends before end, or 0
 * when none does: a stray continuation byte, an overlong form, a surrogate, past U+10FFFF,
 * or a sequence cut by end. 0 for an empty range.
 */
size_t util_utf8_length_n(const unsigned char *s, const unsigned char *end);

/* The same in a NUL-terminated string (it reads no further than the NUL; 0 at the NUL). */
size_t util_utf8_length(const unsigned char *s);

/* Is the NUL-terminated s all valid UTF-8? */
bool util_utf8_valid(const char *s);

/* Replace, in place, each byte of s that is not part of valid UTF-8 with '?'. */
void util_utf8_sanitize(char *s);

/* Write code point cp (up to U+10FFFF) as UTF-8 at out; returns its length, 1-4. */
size_t util_utf8_put(unsigned cp, char out[4]);
