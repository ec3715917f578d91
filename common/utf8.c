/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 (utf8.h). */
#include "utf8.h"

#include <string.h>

size_t util_utf8_length_n(const unsigned char *s, const unsigned char *end)
{
        unsigned char c, lo = 0x80, hi = 0xbf;
        size_t n;

        if (s >= end)
                return 0;
        c = s[0];
        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                if (c == 0xe0)
                        lo = 0xa0; /* overlong */
                else if (c == 0xed)
                        hi = 0x9f; /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                if (c == 0xf0)
                        lo = 0x90; /* overlong */
                else if (c == 0xf4)
                        hi = 0x8f; /* past U+10FFFF */
        } else {
                return 0; /* a continuation byte, 0xc0-0xc1 (overlong), 0xf5-0xff */
        }
        if ((size_t)(end - s) < n || s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < n; i++)
                if (s[i] < 0x80 || s[i] > 0xbf)
                        return 0;
        return n;
}

size_t util_utf8_length(const unsigned char *s)
{
        return util_utf8_length_n(s, s + strnlen((const char *)s, 4));
}

bool util_utf8_valid(const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t n;

        for (; *p; p += n)
                if (!(n = util_utf8_length(p)))
                        return false;
        return true;
}

void util_utf8_sanitize(char *s)
{
        unsigned char *p = (unsigned char *)s;
        size_t n;

        for (; *p; p += n)
                if (!(n = util_utf8_length(p))) {
                        *p = '?';
                        n = 1;
                }
}

size_t util_utf8_put(unsigned cp, char out[4])
{
        if (cp < 0x80) {
                out[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char)(0xc0 | (cp >> 6));
                out[1] = (char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char)(0xe0 | (cp >> 12));
                out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char)(0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        return 4;
}
