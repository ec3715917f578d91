/* SPDX-License-Identifier: Apache-2.0 */
/* A validating JSON scanner with path callbacks (util_jscan.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "utf8.h"

#define NUMBER_TEXT_MAX 64

struct level;

struct scanner {
        const char *p, *end;
        const struct util_jscan_visitor *visitor;
        char path[UTIL_JSCAN_PATH_MAX + 3];
        size_t path_len;
        struct level *stack, *inline_stack; /* the open containers, innermost last */
        size_t depth, cap;
        const char *error_at;
        const char *what;
};

static int fail(struct scanner *s, const char *at, const char *what)
{
        s->error_at = at;
        s->what = what;
        return -EINVAL;
}

static void skip_space(struct scanner *s)
{
        while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
                s->p++;
}

static int hex4(const char *p, unsigned *ret)
{
        unsigned v = 0;

        for (int i = 0; i < 4; i++) {
                char c = p[i];

                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (unsigned)(c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (unsigned)(c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (unsigned)(c - 'A' + 10);
                else
                        return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* At the opening quote; leaves p after the closing one, the raw bytes in *ret_raw/len. */
static int scan_string(struct scanner *s, const char **ret_raw, size_t *ret_len)
{
        const char *start = ++s->p;

        while (s->p < s->end) {
                unsigned char c = (unsigned char)*s->p;

                if (c == '"') {
                        *ret_raw = start;
                        *ret_len = (size_t)(s->p - start);
                        s->p++;
                        return 0;
                }
                if (c == '\\') {
                        unsigned u, low;

                        if (s->end - s->p < 2)
                                return fail(s, s->p, "an escape cut short");
                        switch (s->p[1]) {
                        case '"':
                        case '\\':
                        case '/':
                        case 'b':
                        case 'f':
                        case 'n':
                        case 'r':
                        case 't':
                                s->p += 2;
                                continue;
                        case 'u':
                                if (s->end - s->p < 6 || hex4(s->p + 2, &u) < 0)
                                        return fail(s, s->p,
                                                    "a \\u escape without four hex digits");
                                if (u >= 0xdc00 && u <= 0xdfff)
                                        return fail(s, s->p, "a lone low surrogate");
                                if (u >= 0xd800 && u <= 0xdbff) {
                                        if (s->end - s->p < 12 || s->p[6] != '\\' ||
                                            s->p[7] != 'u' || hex4(s->p + 8, &low) < 0 ||
                                            low < 0xdc00 || low > 0xdfff)
                                                return fail(s, s->p,
                                                            "a high surrogate without its low one");
                                        s->p += 12;
                                } else
                                        s->p += 6;
                                continue;
                        default:
                                return fail(s, s->p, "an invalid escape");
                        }
                }
                if (c < 0x20)
                        return fail(s, s->p, c ? "a control character in a string" : "a NUL byte");
                if (c < 0x80) {
                        s->p++;
                        continue;
                }
                {
                        size_t n = util_utf8_length_n((const unsigned char *)s->p,
                                                      (const unsigned char *)s->end);
                        if (!n)
                                return fail(s, s->p, "invalid UTF-8");
                        s->p += n;
                }
        }
        return fail(s, start - 1, "a string without its closing quote");
}

static int scan_number(struct scanner *s, struct util_jscan_value *v)
{
        const char *start = s->p, *p = s->p, *end = s->end;

        if (p < end && *p == '-')
                p++;
        if (p < end && *p == '0')
                p++;
        else if (p < end && *p >= '1' && *p <= '9')
                while (p < end && *p >= '0' && *p <= '9')
                        p++;
        else
                return fail(s, start, "an invalid number");
        if (p < end && *p == '.') {
                p++;
                if (p >= end || *p < '0' || *p > '9')
                        return fail(s, start, "an invalid number");
                while (p < end && *p >= '0' && *p <= '9')
                        p++;
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
                p++;
                if (p < end && (*p == '+' || *p == '-'))
                        p++;
                if (p >= end || *p < '0' || *p > '9')
                        return fail(s, start, "an invalid number");
                while (p < end && *p >= '0' && *p <= '9')
                        p++;
        }
        *v = (struct util_jscan_value){UTIL_JSCAN_NUMBER, start, (size_t)(p - start)};
        s->p = p;
        return 0;
}

static int scan_literal(struct scanner *s, const char *word, enum util_jscan_type type,
                        struct util_jscan_value *v)
{
        size_t n = strlen(word);

        if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
                return fail(s, s->p, "an invalid literal");
        *v = (struct util_jscan_value){type, s->p, n};
        s->p += n;
        return 0;
}

/* Append a path component; a path past the maximum stays at the maximum (never matches). */
static void push(struct scanner *s, const char *text, size_t len, bool member)
{
        size_t room = UTIL_JSCAN_PATH_MAX - s->path_len;
        size_t sep = member && s->path_len ? 1 : 0;

        /* a member name with a '.', a '[' or an escape would make a path another's
         * ({"a.b": 1} and {"a": {"b": 1}}): its path, like one too long, matches nothing */
        if (sep + len > room || (member && (memchr(text, '.', len) || memchr(text, '[', len) ||
                                            memchr(text, '\\', len)))) {
                memset(s->path + s->path_len, '~', room);
                s->path_len = UTIL_JSCAN_PATH_MAX;
                return;
        }
        if (sep)
                s->path[s->path_len++] = '.';
        memcpy(s->path + s->path_len, text, len);
        s->path_len += len;
}

/* Levels kept in util_jscan()'s own frame; deeper documents grow a heap copy. */
#define INLINE_LEVELS 64

/* A container being read: its kind, and the path's length at it (restored after each
 * member). Two bytes a level, and a level needs a byte of input: the stack never costs
 * more than twice the document (four times with the doubling). */
struct level {
        uint8_t saved; /* <= UTIL_JSCAN_PATH_MAX */
        bool object;
};
_Static_assert(UTIL_JSCAN_PATH_MAX <= UINT8_MAX, "struct level keeps the path's length in a byte");

/* Enter the container at s->p ('{' or '['). */
static int open_level(struct scanner *s, bool object)
{
        if (s->depth == s->cap) {
                size_t cap = s->cap * 2;
                struct level *grown;

                if (s->stack == s->inline_stack) {
                        grown = malloc(cap * sizeof(*grown));
                        if (grown)
                                memcpy(grown, s->stack, s->depth * sizeof(*grown));
                } else
                        grown = realloc(s->stack, cap * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                s->stack = grown;
                s->cap = cap;
        }
        s->stack[s->depth++] = (struct level){(uint8_t)s->path_len, object};
        s->p++;
        return 0;
}

/* Leave the innermost container (its closing bracket read): the visitor's end at its path. */
static int close_level(struct scanner *s)
{
        const struct level *l = &s->stack[--s->depth];

        s->path_len = l->saved;
        if (s->visitor && s->visitor->end) {
                s->path[s->path_len] = '\0';
                return s->visitor->end(s->visitor->userdata, s->path, s->path_len, l->object);
        }
        return 0;
}

/* Before a member's value: an object's key and ':' (at s->p, spaces skipped), or an
 * array's "[]", appended to the path. */
static int begin_member(struct scanner *s, bool object)
{
        const char *key;
        size_t key_len;
        int r;

        if (!object) {
                push(s, "[]", 2, false);
                return 0;
        }
        if (s->p >= s->end || *s->p != '"')
                return fail(s, s->p, "an object member without a string key");
        r = scan_string(s, &key, &key_len);
        if (r < 0)
                return r;
        skip_space(s);
        if (s->p >= s->end || *s->p != ':')
                return fail(s, s->p, "a member without ':'");
        s->p++;
        push(s, key, key_len, true);
        return 0;
}

/* A value that is not a container, at s->p: the visitor's scalar at the path. */
static int scan_scalar(struct scanner *s)
{
        struct util_jscan_value v;
        int r;

        switch (*s->p) {
        case '"':
                v.type = UTIL_JSCAN_STRING;
                r = scan_string(s, &v.raw, &v.len);
                break;
        case 't':
                r = scan_literal(s, "true", UTIL_JSCAN_TRUE, &v);
                break;
        case 'f':
                r = scan_literal(s, "false", UTIL_JSCAN_FALSE, &v);
                break;
        case 'n':
                r = scan_literal(s, "null", UTIL_JSCAN_NULL, &v);
                break;
        default:
                r = scan_number(s, &v);
                break;
        }
        if (r < 0)
                return r;
        if (s->visitor && s->visitor->scalar) {
                s->path[s->path_len] = '\0';
                return s->visitor->scalar(s->visitor->userdata, s->path, s->path_len, &v);
        }
        return 0;
}

/*
 * One value, nested to any depth, without recursion (a deep SQL plan in an event log nests
 * hundreds of levels; the native stack is no place for what the input decides): each
 * container's state is a struct level on s->stack.
 */
static int scan_value(struct scanner *s)
{
        int r;

        for (;;) {
                /* a value is expected */
                skip_space(s);
                if (s->p >= s->end)
                        return fail(s, s->p, "a value is missing");
                if (*s->p == '{' || *s->p == '[') {
                        bool object = *s->p == '{';

                        r = open_level(s, object);
                        if (r < 0)
                                return r;
                        skip_space(s);
                        if (s->p < s->end && *s->p == (object ? '}' : ']')) {
                                s->p++;
                                r = close_level(s);
                        } else {
                                r = begin_member(s, object);
                                if (r < 0)
                                        return r;
                                continue; /* the first member's value */
                        }
                } else
                        r = scan_scalar(s);
                if (r < 0)
                        return r;
                /* a value ended: close the containers that end with it, up to one with more */
                for (;;) {
                        const struct level *l;

                        if (s->depth == 0)
                                return 0;
                        l = &s->stack[s->depth - 1];
                        s->path_len = l->saved;
                        skip_space(s);
                        if (s->p < s->end && *s->p == ',') {
                                s->p++;
                                skip_space(s);
                                r = begin_member(s, l->object);
                                if (r < 0)
                                        return r;
                                break; /* the next member's value */
                        }
                        if (s->p < s->end && *s->p == (l->object ? '}' : ']')) {
                                s->p++;
                                r = close_level(s);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        return fail(s, s->p,
                                    l->object ? "expected ',' or '}'" : "expected ',' or ']'");
                }
        }
}

int util_jscan(const char *text, size_t len, const struct util_jscan_visitor *visitor,
               size_t *ret_offset, const char **ret_what)
{
        struct level inline_stack[INLINE_LEVELS];
        struct scanner s = {.p = text,
                            .end = text + len,
                            .visitor = visitor,
                            .stack = inline_stack,
                            .inline_stack = inline_stack,
                            .cap = INLINE_LEVELS};
        int r = scan_value(&s);

        if (s.stack != inline_stack)
                free(s.stack);
        if (r == 0) {
                skip_space(&s);
                if (s.p != s.end)
                        r = fail(&s, s.p, "text after the value");
        }
        if (r == -EINVAL && s.what) {
                if (ret_offset)
                        *ret_offset = (size_t)(s.error_at - text);
                if (ret_what)
                        *ret_what = s.what;
        }
        return r;
}

int util_jscan_int64(const struct util_jscan_value *v, int64_t *ret)
{
        const char *p = v->raw, *end = v->raw + v->len;
        bool negative = false;
        uint64_t u = 0;

        if (v->type != UTIL_JSCAN_NUMBER)
                return -EINVAL;
        if (p < end && *p == '-') {
                negative = true;
                p++;
        }
        if (p == end)
                return -EINVAL;
        for (; p < end; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL; /* a fraction or an exponent */
                if (u > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
                        return -ERANGE;
                u = u * 10 + (uint64_t)(*p - '0');
        }
        if (negative ? u > (uint64_t)INT64_MAX + 1 : u > (uint64_t)INT64_MAX)
                return -ERANGE;
        *ret = negative ? (int64_t)(0 - u) : (int64_t)u;
        return 0;
}

int util_jscan_double(const struct util_jscan_value *v, double *ret)
{
        char text[NUMBER_TEXT_MAX];
        char *end;
        double d;

        if (v->type != UTIL_JSCAN_NUMBER || v->len >= sizeof(text))
                return -EINVAL;
        memcpy(text, v->raw, v->len);
        text[v->len] = '\0';
        errno = 0;
        d = strtod(text, &end);
        if (*end || errno == ERANGE)
                return -EINVAL;
        *ret = d;
        return 0;
}

int util_jscan_string(const struct util_jscan_value *v, char *buf, size_t size)
{
        const char *p = v->raw, *end = v->raw + v->len;
        size_t n = 0;

        if (v->type != UTIL_JSCAN_STRING || size == 0)
                return -EINVAL;
        /* the scanner validated the escapes; here they are only undone */
        while (p < end) {
                char one[4];
                size_t k = 1;

                if (*p != '\\') {
                        one[0] = *p++;
                } else {
                        unsigned u = 0, low = 0;

                        switch (p[1]) {
                        case 'b':
                                one[0] = '\b';
                                p += 2;
                                break;
                        case 'f':
                                one[0] = '\f';
                                p += 2;
                                break;
                        case 'n':
                                one[0] = '\n';
                                p += 2;
                                break;
                        case 'r':
                                one[0] = '\r';
                                p += 2;
                                break;
                        case 't':
                                one[0] = '\t';
                                p += 2;
                                break;
                        case 'u':
                                if (end - p < 6 || hex4(p + 2, &u) < 0)
                                        return -EINVAL;
                                p += 6;
                                if (u >= 0xd800 && u <= 0xdbff) {
                                        if (end - p < 6 || hex4(p + 2, &low) < 0)
                                                return -EINVAL;
                                        u = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
                                        p += 6;
                                }
                                if (u == 0)
                                        return -EINVAL;
                                k = util_utf8_put(u, one);
                                break;
                        default:
                                one[0] = p[1];
                                p += 2;
                                break;
                        }
                }
                if (n + k >= size)
                        return -ENAMETOOLONG;
                memcpy(buf + n, one, k);
                n += k;
        }
        buf[n] = '\0';
        return 0;
}

bool util_jscan_string_eq(const struct util_jscan_value *v, const char *s)
{
        size_t n = strlen(s);

        /* the documents' own strings have no escapes; one that has them is unescaped */
        if (v->type != UTIL_JSCAN_STRING)
                return false;
        if (!memchr(v->raw, '\\', v->len))
                return v->len == n && memcmp(v->raw, s, n) == 0;
        {
                char buf[256];
                return n < sizeof(buf) && util_jscan_string(v, buf, sizeof(buf)) == 0 &&
                       strcmp(buf, s) == 0;
        }
}
