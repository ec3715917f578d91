/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where is a value in the policy text? jansson reports positions only for syntax errors, so
 * this small scanner walks the original text of a document jansson already accepted and
 * finds the line and column of the value (or key) at a key path, for error messages.
 * Lines and columns count like jansson: 1-based, columns in UTF-8 characters.
 */
#include <errno.h>
#include <string.h>

#include "utf8.h"
#include "util.h"
#include "policy-internal.h"

struct scanner {
        const char *text;
        size_t len;
        size_t pos;
        unsigned line;
        unsigned column; /* column of text[pos] */
};

static int peek(const struct scanner *s)
{
        return s->pos < s->len ? (unsigned char)s->text[s->pos] : -1;
}

static void advance(struct scanner *s)
{
        unsigned char c;

        if (s->pos >= s->len)
                return;
        c = (unsigned char)s->text[s->pos++];
        if (c == '\n') {
                s->line++;
                s->column = 1;
        } else if ((c & 0xC0) != 0x80)
                s->column++; /* columns count characters: continuation bytes do not move */
}

static void skip_space(struct scanner *s)
{
        for (int c = peek(s); c == ' ' || c == '\t' || c == '\n' || c == '\r'; c = peek(s))
                advance(s);
}

static int read_hex4(struct scanner *s, unsigned *ret)
{
        unsigned v = 0;

        for (int i = 0; i < 4; i++) {
                int h = util_hex_digit(peek(s));
                if (h < 0)
                        return -EINVAL;
                v = v * 16 + (unsigned)h;
                advance(s);
        }
        *ret = v;
        return 0;
}

/*
 * Consume a string token; when match is not NULL, set *ret_equal to whether its decoded
 * content equals match (escapes such as \u0076 decoded, as jansson does for keys).
 */
static int scan_string(struct scanner *s, const char *match, bool *ret_equal)
{
        size_t mlen = match ? strlen(match) : 0, mpos = 0;
        bool equal = true;

        if (peek(s) != '"')
                return -EINVAL;
        advance(s);
        for (;;) {
                char buf[4];
                size_t n;
                int c = peek(s);

                if (c < 0)
                        return -EINVAL;
                advance(s);
                if (c == '"')
                        break;
                if (c != '\\') {
                        buf[0] = (char)c;
                        n = 1;
                } else {
                        int e = peek(s);
                        unsigned cp;

                        if (e < 0)
                                return -EINVAL;
                        advance(s);
                        switch (e) {
                        case 'b':
                                cp = '\b';
                                break;
                        case 'f':
                                cp = '\f';
                                break;
                        case 'n':
                                cp = '\n';
                                break;
                        case 'r':
                                cp = '\r';
                                break;
                        case 't':
                                cp = '\t';
                                break;
                        case 'u':
                                if (read_hex4(s, &cp) < 0)
                                        return -EINVAL;
                                if (cp >= 0xD800 && cp <= 0xDBFF && peek(s) == '\\') {
                                        unsigned low;
                                        advance(s);
                                        if (peek(s) != 'u')
                                                return -EINVAL;
                                        advance(s);
                                        if (read_hex4(s, &low) < 0)
                                                return -EINVAL;
                                        if (low >= 0xDC00 && low <= 0xDFFF)
                                                cp = 0x10000 + ((cp - 0xD800) << 10) +
                                                     (low - 0xDC00);
                                        else
                                                equal = false; /* not a key we look for */
                                }
                                break;
                        default: /* '"', '\\', '/' */
                                cp = (unsigned)e;
                                break;
                        }
                        n = util_utf8_put(cp, buf);
                }
                if (match && equal) {
                        if (mpos + n > mlen || memcmp(match + mpos, buf, n) != 0)
                                equal = false;
                        else
                                mpos += n;
                }
        }
        if (ret_equal)
                *ret_equal = match && equal && mpos == mlen;
        return 0;
}

/* Consume one value of any kind (nesting counted, strings skipped as tokens). */
static int skip_value(struct scanner *s)
{
        size_t depth = 0;

        do {
                int c;

                skip_space(s);
                c = peek(s);
                if (c < 0)
                        return -EINVAL;
                if (c == '"') {
                        if (scan_string(s, NULL, NULL) < 0)
                                return -EINVAL;
                } else if (c == '{' || c == '[') {
                        depth++;
                        advance(s);
                } else if (c == '}' || c == ']') {
                        if (depth == 0)
                                return -EINVAL;
                        depth--;
                        advance(s);
                } else if (c == ',' || c == ':') {
                        if (depth == 0)
                                return -EINVAL;
                        advance(s);
                } else {
                        /* number or literal: up to the next delimiter */
                        size_t start = s->pos;
                        for (c = peek(s); c >= 0 && !strchr(",:]} \t\r\n\"{[", c); c = peek(s))
                                advance(s);
                        if (s->pos == start)
                                return -EINVAL;
                }
        } while (depth > 0);
        return 0;
}

static void mark(const struct scanner *s, struct policy_json_locus *l)
{
        l->line = s->line;
        l->column = s->column;
        l->offset = s->pos;
        l->length = 0;
}

/* Move to the member value named key of the object at the scanner; optionally its key. */
static int enter_member(struct scanner *s, const char *key, struct policy_json_locus *ret_key)
{
        skip_space(s);
        if (peek(s) != '{')
                return -ENOENT;
        advance(s);
        skip_space(s);
        if (peek(s) == '}')
                return -ENOENT;
        for (;;) {
                struct policy_json_locus k;
                bool equal = false;

                skip_space(s);
                mark(s, &k);
                if (scan_string(s, key, &equal) < 0)
                        return -EINVAL;
                k.length = s->pos - k.offset;
                skip_space(s);
                if (peek(s) != ':')
                        return -EINVAL;
                advance(s);
                skip_space(s);
                if (equal) {
                        if (ret_key)
                                *ret_key = k;
                        return 0;
                }
                if (skip_value(s) < 0)
                        return -EINVAL;
                skip_space(s);
                if (peek(s) == '}')
                        return -ENOENT;
                if (peek(s) != ',')
                        return -EINVAL;
                advance(s);
        }
}

static int enter_element(struct scanner *s, size_t index)
{
        skip_space(s);
        if (peek(s) != '[')
                return -ENOENT;
        advance(s);
        skip_space(s);
        if (peek(s) == ']')
                return -ENOENT;
        for (size_t i = 0;; i++) {
                skip_space(s);
                if (i == index)
                        return 0;
                if (skip_value(s) < 0)
                        return -EINVAL;
                skip_space(s);
                if (peek(s) == ']')
                        return -ENOENT;
                if (peek(s) != ',')
                        return -EINVAL;
                advance(s);
        }
}

int policy_json_locate(const char *text, size_t len, const struct policy_json_step *path,
                       size_t depth, bool want_key, struct policy_json_locus *ret)
{
        struct scanner s = {.text = text, .len = len, .pos = 0, .line = 1, .column = 1};
        struct policy_json_locus key = {0}, value;
        int r;

        /* a UTF-8 byte order mark is not a character of the first line */
        if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
                s.pos = 3;

        for (size_t i = 0; i < depth; i++) {
                if (path[i].key)
                        r = enter_member(&s, path[i].key, &key);
                else
                        r = enter_element(&s, path[i].index);
                if (r < 0)
                        return r;
        }
        if (want_key) {
                if (depth == 0 || !path[depth - 1].key)
                        return -ENOENT;
                *ret = key;
                return 0;
        }
        skip_space(&s);
        mark(&s, &value);
        r = skip_value(&s);
        if (r < 0)
                return r;
        value.length = s.pos - value.offset;
        *ret = value;
        return 0;
}
