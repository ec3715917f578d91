/* SPDX-License-Identifier: Apache-2.0 */
/* common/utf8.h: the one UTF-8 validator, encoder and sanitiser (RFC 3629's table 3-7). */
#include <criterion/criterion.h>
#include <string.h>

#include "utf8.h"
#include "util.h"

struct seq {
        const char *bytes;
        size_t len;  /* bytes to look at */
        size_t want; /* util_utf8_length_n */
};

Test(utf8, length_at_every_boundary)
{
        static const struct seq cases[] = {
            {"A", 1, 1},
            {"\x7f", 1, 1},
            {"\xc2\x80", 2, 2},         /* U+0080 */
            {"\xc1\xbf", 2, 0},         /* overlong U+007F */
            {"\xc0\x80", 2, 0},         /* overlong NUL */
            {"\xdf\xbf", 2, 2},         /* U+07FF */
            {"\xe0\x9f\xbf", 3, 0},     /* overlong U+07FF */
            {"\xe0\xa0\x80", 3, 3},     /* U+0800 */
            {"\xed\x9f\xbf", 3, 3},     /* U+D7FF */
            {"\xed\xa0\x80", 3, 0},     /* U+D800, a surrogate */
            {"\xed\xbf\xbf", 3, 0},     /* U+DFFF */
            {"\xef\xbf\xbf", 3, 3},     /* U+FFFF */
            {"\xf0\x8f\xbf\xbf", 4, 0}, /* overlong U+FFFF */
            {"\xf0\x90\x80\x80", 4, 4}, /* U+10000 */
            {"\xf4\x8f\xbf\xbf", 4, 4}, /* U+10FFFF */
            {"\xf4\x90\x80\x80", 4, 0}, /* U+110000 */
            {"\xf5\x80\x80\x80", 4, 0},
            {"\xff", 1, 0},
            {"\x80", 1, 0},         /* a stray continuation byte */
            {"\xe2\x82\xac", 2, 0}, /* cut by end */
            {"\xe2\x28\xac", 3, 0}, /* a bad continuation byte */
            {"", 0, 0},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const unsigned char *s = (const unsigned char *)cases[i].bytes;
                size_t got = util_utf8_length_n(s, s + cases[i].len);

                cr_expect_eq(got, cases[i].want, "case %zu: %zu, expected %zu", i, got,
                             cases[i].want);
        }
        /* the NUL-terminated form stops at the NUL */
        cr_expect_eq(util_utf8_length((const unsigned char *)"\xe2\x82"), 0);
        cr_expect_eq(util_utf8_length((const unsigned char *)"\xe2\x82\xac!"), 3);
        cr_expect_eq(util_utf8_length((const unsigned char *)""), 0);
}

Test(utf8, valid_and_sanitized)
{
        char s[] = "ok \xe2\x82\xac \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 end\xe2\x82";

        cr_expect(util_utf8_valid("plain \xe2\x82\xac \xf0\x9f\x98\x80"));
        cr_expect(!util_utf8_valid(s));
        util_utf8_sanitize(s);
        cr_expect_str_eq(s, "ok \xe2\x82\xac ?( ??? ???? end??", "\"%s\"", s);
        cr_expect(util_utf8_valid(s));
}

Test(utf8, put_round_trips)
{
        static const unsigned points[] = {0,      0x41,   0x7f,   0x80,    0x7ff,   0x800,
                                          0xd7ff, 0xe000, 0xffff, 0x10000, 0x10ffff};

        for (size_t i = 0; i < ELEMENTSOF(points); i++) {
                char out[4];
                size_t n = util_utf8_put(points[i], out);

                cr_expect(n >= 1 && n <= 4, "U+%04X: %zu bytes", points[i], n);
                if (points[i])
                        cr_expect_eq(
                            util_utf8_length_n((unsigned char *)out, (unsigned char *)out + n), n,
                            "U+%04X does not read back", points[i]);
        }
}
