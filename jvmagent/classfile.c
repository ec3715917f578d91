/* SPDX-License-Identifier: Apache-2.0 */
/* Class-file surgery for the agent's hooks: see classfile.h. JVMS chapter 4 is the map. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classfile.h"

#define ACC_PUBLIC       0x0001
#define ACC_PRIVATE      0x0002
#define ACC_PROTECTED    0x0004
#define ACC_STATIC       0x0008
#define ACC_FINAL        0x0010
#define ACC_SUPER        0x0020
#define ACC_SYNCHRONIZED 0x0020
#define ACC_VOLATILE     0x0040
#define ACC_BRIDGE       0x0040
#define ACC_NATIVE       0x0100
#define ACC_INTERFACE    0x0200
#define ACC_ABSTRACT     0x0400
#define ACC_STRICT       0x0800
#define ACC_SYNTHETIC    0x1000

enum {
        CP_UTF8 = 1,
        CP_INTEGER = 3,
        CP_FLOAT = 4,
        CP_LONG = 5,
        CP_DOUBLE = 6,
        CP_CLASS = 7,
        CP_STRING = 8,
        CP_FIELDREF = 9,
        CP_METHODREF = 10,
        CP_INTERFACE_METHODREF = 11,
        CP_NAME_AND_TYPE = 12,
        CP_METHOD_HANDLE = 15,
        CP_METHOD_TYPE = 16,
        CP_DYNAMIC = 17,
        CP_INVOKE_DYNAMIC = 18,
        CP_MODULE = 19,
        CP_PACKAGE = 20,
};

enum {
        OP_ACONST_NULL = 0x01,
        OP_ICONST_0 = 0x03,
        OP_LCONST_0 = 0x09,
        OP_FCONST_0 = 0x0b,
        OP_DCONST_0 = 0x0e,
        OP_ILOAD = 0x15, /* lload, fload, dload, aload follow */
        OP_ALOAD_0 = 0x2a,
        OP_IFEQ = 0x99,
        OP_TABLESWITCH = 0xaa,
        OP_LOOKUPSWITCH = 0xab,
        OP_IRETURN = 0xac, /* lreturn, freturn, dreturn, areturn, return follow */
        OP_RETURN = 0xb1,
        OP_GETSTATIC = 0xb2,
        OP_INVOKEVIRTUAL = 0xb6,
        OP_INVOKESPECIAL = 0xb7,
        OP_INVOKESTATIC = 0xb8,
        OP_WIDE = 0xc4,
};

#define SAME_FRAME_MAX      63
#define SAME_FRAME_EXTENDED 251
#define SITES_MAX           8 /* call sites replaced per edit */
#define OBJECT              "Ljava/lang/Object;"

/* ---- growing output buffer ---- */

struct buf {
        uint8_t *data;
        size_t len, cap;
        bool failed;
};

static void put(struct buf *b, const void *p, size_t n)
{
        /* an empty buffer (no wrapper methods when only calls are replaced) has data NULL:
         * memcpy from NULL is undefined even for 0 bytes */
        if (b->failed || n == 0)
                return;
        if (b->len + n > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                uint8_t *data;

                while (cap < b->len + n)
                        cap *= 2;
                data = realloc(b->data, cap);
                if (!data) {
                        b->failed = true;
                        return;
                }
                b->data = data;
                b->cap = cap;
        }
        memcpy(b->data + b->len, p, n);
        b->len += n;
}

static void put_u1(struct buf *b, unsigned v)
{
        uint8_t x = (uint8_t)v;
        put(b, &x, 1);
}

static void put_u2(struct buf *b, unsigned v)
{
        uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
        put(b, x, 2);
}

static void put_u4(struct buf *b, uint32_t v)
{
        uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
        put(b, x, 4);
}

static void set_u2(uint8_t *p, unsigned v)
{
        p[0] = (uint8_t)(v >> 8);
        p[1] = (uint8_t)v;
}

static unsigned get_u2(const uint8_t *p)
{
        return (unsigned)p[0] << 8 | p[1];
}

static uint32_t get_u4(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- the parsed class ---- */

struct method {
        size_t offset; /* of access_flags */
        unsigned access, name, descriptor;
        size_t code; /* offset of the code bytes; 0: no Code attribute */
        uint32_t code_len;
};

struct class
{
        const uint8_t *data;
        size_t len;
        unsigned major, access, this_class;
        unsigned cp_count;
        size_t *cp; /* cp[i]: offset of entry i's tag; 0 for index 0 and 2nd slots */
        size_t cp_end, methods_count_at, methods_end;
        unsigned n_methods;
        struct method *methods;
};

static void class_free(struct class *c)
{
        free(c->cp);
        free(c->methods);
}

/* Bounds-checked cursor over the input. */
struct cursor {
        const uint8_t *data;
        size_t len, pos;
        bool bad;
};

static bool need(struct cursor *r, size_t n)
{
        if (r->bad || n > r->len - r->pos) {
                r->bad = true;
                return false;
        }
        return true;
}

static unsigned read_u1(struct cursor *r)
{
        return need(r, 1) ? r->data[r->pos++] : 0;
}

static unsigned read_u2(struct cursor *r)
{
        unsigned v = need(r, 2) ? get_u2(r->data + r->pos) : 0;
        r->pos += r->bad ? 0 : 2;
        return v;
}

static uint32_t read_u4(struct cursor *r)
{
        uint32_t v = need(r, 4) ? get_u4(r->data + r->pos) : 0;
        r->pos += r->bad ? 0 : 4;
        return v;
}

static void skip(struct cursor *r, size_t n)
{
        if (need(r, n))
                r->pos += n;
}

static bool utf8_is(const struct class *c, unsigned index, const char *s, size_t n)
{
        size_t at;

        if (index == 0 || index >= c->cp_count || !(at = c->cp[index]) || c->data[at] != CP_UTF8)
                return false;
        return get_u2(c->data + at + 1) == n && memcmp(c->data + at + 3, s, n) == 0;
}

static bool utf8_eq(const struct class *c, unsigned index, const char *s)
{
        return utf8_is(c, index, s, strlen(s));
}

static int parse_constant_pool(struct cursor *r, struct class *c)
{
        c->cp_count = read_u2(r);
        if (r->bad || c->cp_count == 0)
                return -EINVAL;
        c->cp = calloc(c->cp_count, sizeof(*c->cp));
        if (!c->cp)
                return -ENOMEM;
        for (unsigned i = 1; i < c->cp_count; i++) {
                unsigned tag;

                c->cp[i] = r->pos;
                tag = read_u1(r);
                switch (tag) {
                case CP_UTF8:
                        skip(r, read_u2(r));
                        break;
                case CP_INTEGER:
                case CP_FLOAT:
                case CP_FIELDREF:
                case CP_METHODREF:
                case CP_INTERFACE_METHODREF:
                case CP_NAME_AND_TYPE:
                case CP_DYNAMIC:
                case CP_INVOKE_DYNAMIC:
                        skip(r, 4);
                        break;
                case CP_LONG:
                case CP_DOUBLE:
                        skip(r, 8);
                        i++; /* takes two slots */
                        break;
                case CP_CLASS:
                case CP_STRING:
                case CP_METHOD_TYPE:
                case CP_MODULE:
                case CP_PACKAGE:
                        skip(r, 2);
                        break;
                case CP_METHOD_HANDLE:
                        skip(r, 3);
                        break;
                default:
                        return -EINVAL;
                }
                if (r->bad)
                        return -EINVAL;
        }
        return 0;
}

/* index is the first slot of a constant pool entry with this tag */
static bool cp_is(const struct class *c, unsigned index, unsigned tag)
{
        return index > 0 && index < c->cp_count && c->cp[index] && c->data[c->cp[index]] == tag;
}

/*
 * Every index inside the constant pool names an entry of the right kind, as the JVM's
 * format check requires. The edit appends entries after the last one: an index past the end
 * of a malformed class would name one of them and give the class a meaning it did not have.
 */
static int check_constant_pool(const struct class *c)
{
        for (unsigned i = 1; i < c->cp_count; i++) {
                const uint8_t *e = c->data + c->cp[i];
                bool ok = true;

                if (!c->cp[i])
                        continue; /* the second slot of a long or double */
                switch (e[0]) {
                case CP_CLASS:
                case CP_STRING:
                case CP_METHOD_TYPE:
                case CP_MODULE:
                case CP_PACKAGE:
                        ok = cp_is(c, get_u2(e + 1), CP_UTF8);
                        break;
                case CP_FIELDREF:
                case CP_METHODREF:
                case CP_INTERFACE_METHODREF:
                        ok = cp_is(c, get_u2(e + 1), CP_CLASS) &&
                             cp_is(c, get_u2(e + 3), CP_NAME_AND_TYPE);
                        break;
                case CP_NAME_AND_TYPE:
                        ok = cp_is(c, get_u2(e + 1), CP_UTF8) && cp_is(c, get_u2(e + 3), CP_UTF8);
                        break;
                case CP_METHOD_HANDLE:
                        ok = cp_is(c, get_u2(e + 2), CP_FIELDREF) ||
                             cp_is(c, get_u2(e + 2), CP_METHODREF) ||
                             cp_is(c, get_u2(e + 2), CP_INTERFACE_METHODREF);
                        break;
                case CP_DYNAMIC:
                case CP_INVOKE_DYNAMIC:
                        ok = cp_is(c, get_u2(e + 3), CP_NAME_AND_TYPE);
                        break;
                }
                if (!ok)
                        return -EINVAL;
        }
        return 0;
}

/* attributes_count and the attributes; each one's name must be a Utf8 of the pool */
static void skip_attributes(struct cursor *r, const struct class *c)
{
        unsigned n = read_u2(r);

        for (unsigned i = 0; i < n && !r->bad; i++) {
                if (!cp_is(c, read_u2(r), CP_UTF8))
                        r->bad = true;
                skip(r, read_u4(r));
        }
}

/* A Code attribute's body (data[0..size)): the catch types and nested attribute names name
 * entries of the pool, and it ends where its size says. */
static bool code_valid(const struct class *c, const uint8_t *data, size_t size)
{
        struct cursor r = {.data = data, .len = size};
        unsigned n;

        skip(&r, 4);           /* max_stack, max_locals */
        skip(&r, read_u4(&r)); /* the code */
        n = read_u2(&r);       /* exception_table_length */
        for (unsigned i = 0; i < n && !r.bad; i++) {
                unsigned catch_type;

                skip(&r, 6);
                catch_type = read_u2(&r);
                if (catch_type != 0 && !cp_is(c, catch_type, CP_CLASS))
                        r.bad = true;
        }
        skip_attributes(&r, c);
        return !r.bad && r.pos == size;
}

static int parse(const uint8_t *data, size_t len, struct class *c)
{
        struct cursor r = {.data = data, .len = len};
        unsigned n;
        int ret;

        memset(c, 0, sizeof(*c));
        c->data = data;
        c->len = len;
        if (read_u4(&r) != 0xCAFEBABE)
                return -EINVAL;
        skip(&r, 2);
        c->major = read_u2(&r);
        ret = parse_constant_pool(&r, c);
        if (ret < 0)
                return ret;
        ret = check_constant_pool(c);
        if (ret < 0)
                return ret;
        c->cp_end = r.pos;
        c->access = read_u2(&r);
        c->this_class = read_u2(&r);
        if (!r.bad && !cp_is(c, c->this_class, CP_CLASS))
                return -EINVAL;
        n = read_u2(&r); /* super_class: 0 for java/lang/Object only */
        if (!r.bad && n != 0 && !cp_is(c, n, CP_CLASS))
                return -EINVAL;
        n = read_u2(&r); /* interfaces */
        for (unsigned i = 0; i < n && !r.bad; i++)
                if (!cp_is(c, read_u2(&r), CP_CLASS))
                        return -EINVAL;
        n = read_u2(&r);
        for (unsigned i = 0; i < n && !r.bad; i++) {
                skip(&r, 2); /* access */
                if (!cp_is(c, read_u2(&r), CP_UTF8) || !cp_is(c, read_u2(&r), CP_UTF8))
                        return -EINVAL;
                skip_attributes(&r, c);
        }
        c->methods_count_at = r.pos;
        c->n_methods = read_u2(&r);
        if (r.bad)
                return -EINVAL;
        c->methods = calloc(c->n_methods ? c->n_methods : 1, sizeof(*c->methods));
        if (!c->methods)
                return -ENOMEM;
        for (unsigned i = 0; i < c->n_methods && !r.bad; i++) {
                struct method *m = &c->methods[i];
                unsigned n_attributes;

                m->offset = r.pos;
                m->access = read_u2(&r);
                m->name = read_u2(&r);
                m->descriptor = read_u2(&r);
                if (!r.bad && (!cp_is(c, m->name, CP_UTF8) || !cp_is(c, m->descriptor, CP_UTF8)))
                        return -EINVAL;
                n_attributes = read_u2(&r);
                for (unsigned k = 0; k < n_attributes && !r.bad; k++) {
                        unsigned name = read_u2(&r);
                        uint32_t size = read_u4(&r);
                        size_t start = r.pos;

                        if (!r.bad && !cp_is(c, name, CP_UTF8))
                                return -EINVAL;
                        if (!r.bad && utf8_eq(c, name, "Code")) {
                                if (size < 8 || !need(&r, size) ||
                                    !code_valid(c, data + start, size))
                                        return -EINVAL;
                                m->code_len = get_u4(data + start + 4);
                                if (m->code_len > size - 8)
                                        return -EINVAL;
                                m->code = start + 8;
                        }
                        skip(&r, size);
                }
        }
        c->methods_end = r.pos;
        skip_attributes(&r, c);
        if (r.bad || r.pos != len)
                return -EINVAL;
        return 0;
}

static struct method *find_method(struct class *c, const char *name, const char *descriptor)
{
        for (unsigned i = 0; i < c->n_methods; i++)
                if (utf8_eq(c, c->methods[i].name, name) &&
                    utf8_eq(c, c->methods[i].descriptor, descriptor))
                        return &c->methods[i];
        return NULL;
}

/* ---- descriptors ---- */

/* The next type of a descriptor at *p: its first letter ('L' for any reference, arrays
 * included), *p moved past it; 0 when malformed. */
static char next_type(const char **p)
{
        const char *s = *p;
        char kind;

        while (*s == '[')
                s++;
        switch (*s) {
        case 'B':
        case 'C':
        case 'D':
        case 'F':
        case 'I':
        case 'J':
        case 'S':
        case 'Z':
                kind = s == *p ? *s : 'L';
                s++;
                break;
        case 'L':
                s = strchr(s, ';');
                if (!s)
                        return 0;
                s++;
                kind = 'L';
                break;
        default:
                return 0;
        }
        *p = s;
        return kind;
}

int jva_edit_hook_descriptor(const struct jva_edit *edit, char *buf, size_t size)
{
        const char *d =
            edit->kind == JVA_EDIT_REPLACE_CALL ? edit->callee_descriptor : edit->descriptor;
        struct buf out = {0};
        char kind;
        int ret = -EINVAL;

        assert(buf);
        if (!d || *d++ != '(')
                return -EINVAL;
        put(&out, "(" OBJECT, 1 + strlen(OBJECT));
        while (*d && *d != ')') {
                kind = next_type(&d);
                if (!kind)
                        goto out;
                if (kind == 'L')
                        put(&out, OBJECT, strlen(OBJECT));
                else
                        put_u1(&out, (unsigned)kind);
        }
        if (*d++ != ')')
                goto out;
        put_u1(&out, ')');
        switch (edit->kind) {
        case JVA_EDIT_CALL:
        case JVA_EDIT_GUARDED:
                put_u1(&out, 'V');
                break;
        case JVA_EDIT_DENY:
                put_u1(&out, 'Z');
                break;
        case JVA_EDIT_REPLACE_CALL:
                /* the callee's result stays on the stack for Spark's code: only a primitive
                 * (or nothing) keeps its verified type */
                if (strlen(d) != 1 || !strchr("BCDFIJSZV", d[0]))
                        goto out;
                put_u1(&out, (unsigned)d[0]);
                break;
        }
        if (out.failed) {
                ret = -ENOMEM;
                goto out;
        }
        if (out.len + 1 > size)
                goto out;
        memcpy(buf, out.data, out.len);
        buf[out.len] = '\0';
        ret = (int)out.len;
out:
        free(out.data);
        return ret;
}

/* ---- constant pool additions ---- */

struct pool {
        struct buf entries;
        unsigned next; /* index of the next entry added */
        bool full;
};

static unsigned pool_utf8(struct pool *p, const char *s)
{
        size_t n = strlen(s);

        if (p->next >= 0xffff || n > 0xffff) {
                p->full = true;
                return 0;
        }
        put_u1(&p->entries, CP_UTF8);
        put_u2(&p->entries, (unsigned)n);
        put(&p->entries, s, n);
        return p->next++;
}

static unsigned pool_pair(struct pool *p, unsigned tag, unsigned a, unsigned b)
{
        if (p->next >= 0xffff) {
                p->full = true;
                return 0;
        }
        put_u1(&p->entries, tag);
        put_u2(&p->entries, a);
        if (tag != CP_CLASS)
                put_u2(&p->entries, b);
        return p->next++;
}

static unsigned pool_class(struct pool *p, const char *name)
{
        return pool_pair(p, CP_CLASS, pool_utf8(p, name), 0);
}

static unsigned pool_member(struct pool *p, unsigned tag, unsigned klass, unsigned name,
                            unsigned descriptor)
{
        return pool_pair(p, tag, klass, pool_pair(p, CP_NAME_AND_TYPE, name, descriptor));
}

/* ---- bytecode ---- */

/* The length of the instruction at code[pc], 0 when it is not a valid one. */
static size_t instruction_length(const uint8_t *code, size_t len, size_t pc)
{
        static const uint8_t lengths[256] = {
            /* 0x00-0x0f */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            /* 0x10-0x1f */ 2, 3, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1,
            /* 0x20-0x2f */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            /* 0x30-0x3f */ 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1,
            /* 0x40-0x4f */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            /* 0x50-0x5f */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            /* 0x60-0x6f */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            /* 0x70-0x7f */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            /* 0x80-0x8f */ 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            /* 0x90-0x9f */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3,
            /* 0xa0-0xaf */ 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 0, 0, 1, 1, 1, 1,
            /* 0xb0-0xbf */ 1, 1, 3, 3, 3, 3, 3, 3, 3, 5, 5, 3, 2, 3, 1, 1,
            /* 0xc0-0xcf */ 3, 3, 1, 1, 0, 4, 3, 3, 5, 5, 0, 0, 0, 0, 0, 0,
        };
        unsigned op = code[pc];
        size_t at, n;

        if (op == OP_TABLESWITCH || op == OP_LOOKUPSWITCH) {
                at = (pc + 4) & ~(size_t)3; /* the operands start 4-byte aligned */
                if (at + 12 > len)
                        return 0;
                if (op == OP_TABLESWITCH) {
                        int32_t low = (int32_t)get_u4(code + at + 4);
                        int32_t high = (int32_t)get_u4(code + at + 8);
                        if (high < low)
                                return 0;
                        n = 12 + 4 * ((size_t)((int64_t)high - low) + 1);
                } else {
                        n = 8 + 8 * (size_t)get_u4(code + at + 4);
                }
                return at + n - pc;
        }
        if (op == OP_WIDE) {
                if (pc + 1 >= len)
                        return 0;
                return code[pc + 1] == 0x84 /* iinc */ ? 6 : 4;
        }
        return lengths[op];
}

/* Does Methodref `index` name `name` `descriptor`? */
static bool methodref_is(const struct class *c, unsigned index, const char *name,
                         const char *descriptor)
{
        size_t at, nat;

        if (index == 0 || index >= c->cp_count || !(at = c->cp[index]) ||
            c->data[at] != CP_METHODREF)
                return false;
        index = get_u2(c->data + at + 3);
        if (index == 0 || index >= c->cp_count || !(nat = c->cp[index]) ||
            c->data[nat] != CP_NAME_AND_TYPE)
                return false;
        return utf8_eq(c, get_u2(c->data + nat + 1), name) &&
               utf8_eq(c, get_u2(c->data + nat + 3), descriptor);
}

/* The offsets (in the class file) of the invokevirtual/invokespecial instructions in m that
 * call callee; at most SITES_MAX. Returns how many, or -EINVAL (bad code). */
static int find_calls(const struct class *c, const struct method *m, const char *callee,
                      const char *descriptor, size_t *sites)
{
        const uint8_t *code = c->data + m->code;
        int n = 0;

        for (size_t pc = 0; pc < m->code_len;) {
                size_t len = instruction_length(code, m->code_len, pc);

                if (len == 0 || len > m->code_len - pc)
                        return -EINVAL;
                if ((code[pc] == OP_INVOKEVIRTUAL || code[pc] == OP_INVOKESPECIAL) &&
                    methodref_is(c, get_u2(code + pc + 1), callee, descriptor)) {
                        if (n == SITES_MAX)
                                return -EINVAL;
                        sites[n++] = m->code + pc;
                }
                pc += len;
        }
        return n;
}

/* Push `this` and every argument of descriptor (already checked) onto the stack; the number
 * of local slots they take, or -EINVAL beyond 255. */
static int put_loads(struct buf *code, const char *descriptor)
{
        const char *d = descriptor + 1;
        unsigned slot = 1;

        put_u1(code, OP_ALOAD_0);
        while (*d != ')') {
                char kind = next_type(&d);
                unsigned op = kind == 'J'   ? OP_ILOAD + 1
                              : kind == 'F' ? OP_ILOAD + 2
                              : kind == 'D' ? OP_ILOAD + 3
                              : kind == 'L' ? OP_ILOAD + 4
                                            : OP_ILOAD;

                if (slot > 255)
                        return -EINVAL;
                put_u1(code, op);
                put_u1(code, slot);
                slot += kind == 'J' || kind == 'D' ? 2 : 1;
        }
        return (int)slot;
}

/* The *return and the zero constant for a descriptor's return type. */
static void return_ops(const char *descriptor, unsigned *ret_return, unsigned *ret_zero)
{
        char r = strchr(descriptor, ')')[1];

        switch (r) {
        case 'V':
                *ret_return = OP_RETURN;
                *ret_zero = 0;
                break;
        case 'J':
                *ret_return = OP_IRETURN + 1;
                *ret_zero = OP_LCONST_0;
                break;
        case 'F':
                *ret_return = OP_IRETURN + 2;
                *ret_zero = OP_FCONST_0;
                break;
        case 'D':
                *ret_return = OP_IRETURN + 3;
                *ret_zero = OP_DCONST_0;
                break;
        case 'L':
        case '[':
                *ret_return = OP_IRETURN + 4;
                *ret_zero = OP_ACONST_NULL;
                break;
        default:
                *ret_return = OP_IRETURN;
                *ret_zero = OP_ICONST_0;
                break;
        }
}

struct wrap_refs {
        unsigned code_name, frames_name; /* Utf8 "Code", "StackMapTable" */
        unsigned hook, original, guard;  /* Methodref, Methodref, Fieldref */
};

/* The wrapper method under m's name and descriptor (see classfile.h). */
static int put_wrapper(struct buf *out, const struct class *c, const struct method *m,
                       const struct jva_edit *edit, const struct wrap_refs *refs)
{
        struct buf code = {0};
        size_t branch = 0, target = 0;
        unsigned ret_op, zero_op, max_stack;
        int slots;

        if (edit->kind == JVA_EDIT_GUARDED) {
                put_u1(&code, OP_GETSTATIC);
                put_u2(&code, refs->guard);
                branch = code.len;
                put_u1(&code, OP_IFEQ);
                put_u2(&code, 0); /* set below */
        }
        slots = put_loads(&code, edit->descriptor);
        if (slots < 0) {
                free(code.data);
                return slots;
        }
        put_u1(&code, OP_INVOKESTATIC);
        put_u2(&code, refs->hook);
        return_ops(edit->descriptor, &ret_op, &zero_op);
        if (edit->kind == JVA_EDIT_DENY) {
                branch = code.len;
                put_u1(&code, OP_IFEQ);
                put_u2(&code, 0);
                if (ret_op != OP_RETURN)
                        put_u1(&code, zero_op);
                put_u1(&code, ret_op);
        }
        if (edit->kind != JVA_EDIT_CALL) {
                target = code.len;
                if (!code.failed)
                        set_u2(code.data + branch + 1, (unsigned)(target - branch));
        }
        put_loads(&code, edit->descriptor);
        put_u1(&code, OP_INVOKESPECIAL);
        put_u2(&code, refs->original);
        put_u1(&code, ret_op);
        if (code.failed) {
                free(code.data);
                return -ENOMEM;
        }
        max_stack = (unsigned)slots < 2 ? 2 : (unsigned)slots;

        /* method_info: the original's access, name and descriptor; one Code attribute */
        put_u2(out, m->access & ~(unsigned)(ACC_SYNCHRONIZED | ACC_BRIDGE | ACC_NATIVE |
                                            ACC_ABSTRACT | ACC_STRICT | ACC_SYNTHETIC));
        put_u2(out, m->name);
        put_u2(out, m->descriptor);
        put_u2(out, 1);
        {
                bool frame = target && c->major >= 50;
                uint32_t frame_len = target <= SAME_FRAME_MAX ? 1 : 3;
                uint32_t attrs_len = frame ? 6 + 2 + frame_len : 0;

                put_u2(out, refs->code_name);
                put_u4(out, (uint32_t)(2 + 2 + 4 + code.len + 2 + 2 + attrs_len));
                put_u2(out, max_stack);
                put_u2(out, (unsigned)slots);
                put_u4(out, (uint32_t)code.len);
                put(out, code.data, code.len);
                put_u2(out, 0); /* no exception handlers */
                put_u2(out, frame ? 1 : 0);
                if (frame) {
                        /* one frame where the branch lands: the locals of the method's entry
                         * (nothing was stored), an empty stack */
                        put_u2(out, refs->frames_name);
                        put_u4(out, 2 + frame_len);
                        put_u2(out, 1);
                        if (target <= SAME_FRAME_MAX) {
                                put_u1(out, (unsigned)target);
                        } else {
                                put_u1(out, SAME_FRAME_EXTENDED);
                                put_u2(out, (unsigned)target);
                        }
                }
        }
        free(code.data);
        return 0;
}

__attribute__((format(printf, 3, 4))) static void say(struct jva_edit_result *result, int status,
                                                      const char *format, ...)
{
        va_list ap;

        result->status = status;
        va_start(ap, format);
        vsnprintf(result->reason, sizeof(result->reason), format, ap);
        va_end(ap);
}

struct patch {
        size_t at;
        uint8_t bytes[4];
        unsigned n;
};

/* What jva_class_edit plans before it writes the class out. */
struct editing {
        const struct jva_hook_class *hooks;
        struct class c;
        struct pool pool;
        struct buf methods; /* the wrappers, appended to the methods */
        struct patch *patches;
        unsigned n_patches, n_wrappers, hooks_class, guard;
        struct wrap_refs refs;
};

/*
 * Can edit e apply to the class: 0 with its method, the hook's descriptor and (for a
 * replaced call) the call sites; or 1 when result says why not.
 */
static int check_edit(struct class *c, const struct jva_edit *e, struct jva_edit_result *result,
                      struct method **ret_m, char *hook_descriptor, size_t size, size_t *sites,
                      int *ret_k)
{
        struct method *m = find_method(c, e->method, e->descriptor);
        int k = 0;

        if (!m) {
                say(result, -ENOENT, "method not found (%s%s)", e->method, e->descriptor);
                return 1;
        }
        if (c->access & ACC_INTERFACE || m->access & ACC_STATIC || !m->code) {
                say(result, -EINVAL, "%s%s is not an instance method with code", e->method,
                    e->descriptor);
                return 1;
        }
        if (jva_edit_hook_descriptor(e, hook_descriptor, size) < 0) {
                say(result, -EINVAL, "cannot hook %s%s: unsupported descriptor", e->method,
                    e->descriptor);
                return 1;
        }
        if (e->kind == JVA_EDIT_REPLACE_CALL) {
                if (strcmp(e->callee, "<init>") == 0) {
                        say(result, -EINVAL, "cannot replace a constructor call");
                        return 1;
                }
                k = find_calls(c, m, e->callee, e->callee_descriptor, sites);
                if (k < 0) {
                        say(result, -EINVAL, "%s%s: code not understood", e->method, e->descriptor);
                        return 1;
                }
                if (k == 0) {
                        say(result, -ENOENT, "call not found (%s%s)", e->callee,
                            e->callee_descriptor);
                        return 1;
                }
        }
        *ret_m = m;
        *ret_k = k;
        return 0;
}

/* Each call site becomes an invokestatic of the hook. */
static void plan_call_sites(struct editing *ed, unsigned hook, const size_t *sites, int k)
{
        for (int s = 0; s < k; s++) {
                struct patch *p = &ed->patches[ed->n_patches++];

                p->at = sites[s];
                p->bytes[0] = OP_INVOKESTATIC;
                set_u2(p->bytes + 1, hook);
                p->n = 3;
        }
}

/*
 * The method is renamed (and made private); a wrapper under its name calls the hook. Returns
 * 0, 1 when result says why not, or -ENOMEM.
 */
static int plan_wrapper(struct editing *ed, const struct method *m, const struct jva_edit *e,
                        unsigned hook, struct jva_edit_result *result)
{
        struct patch *p = &ed->patches[ed->n_patches++];
        size_t before = ed->methods.len;
        char name[256];
        int r;

        snprintf(name, sizeof(name), "%s" JVA_RENAMED_SUFFIX, e->method);
        p->at = m->offset;
        set_u2(p->bytes, (m->access & ~(unsigned)(ACC_PUBLIC | ACC_PROTECTED)) | ACC_PRIVATE);
        set_u2(p->bytes + 2, pool_utf8(&ed->pool, name));
        p->n = 4;
        if (!ed->refs.code_name) {
                ed->refs.code_name = pool_utf8(&ed->pool, "Code");
                ed->refs.frames_name = pool_utf8(&ed->pool, "StackMapTable");
        }
        if (e->kind == JVA_EDIT_GUARDED && !ed->guard)
                ed->guard =
                    pool_member(&ed->pool, CP_FIELDREF, ed->hooks_class,
                                pool_utf8(&ed->pool, ed->hooks->guard), pool_utf8(&ed->pool, "Z"));
        ed->refs.hook = hook;
        ed->refs.guard = ed->guard;
        ed->refs.original = pool_member(&ed->pool, CP_METHODREF, ed->c.this_class,
                                        get_u2(p->bytes + 2), m->descriptor);
        r = put_wrapper(&ed->methods, &ed->c, m, e, &ed->refs);
        if (r < 0) {
                ed->n_patches--;
                ed->methods.len = before;
                say(result, r, "cannot wrap %s%s", e->method, e->descriptor);
                return r == -ENOMEM ? r : 1;
        }
        ed->n_wrappers++;
        return 0;
}

/* Plan one edit: 1 when made, 0 when result says why not, -ENOMEM. */
static int plan_edit(struct editing *ed, const struct jva_edit *e, struct jva_edit_result *result)
{
        char hook_descriptor[512];
        size_t sites[SITES_MAX];
        struct method *m;
        unsigned hook;
        int k, r;

        memset(result, 0, sizeof(*result));
        if (check_edit(&ed->c, e, result, &m, hook_descriptor, sizeof(hook_descriptor), sites,
                       &k) != 0)
                return 0;
        if (!ed->hooks_class)
                ed->hooks_class = pool_class(&ed->pool, ed->hooks->name);
        hook = pool_member(&ed->pool, CP_METHODREF, ed->hooks_class, pool_utf8(&ed->pool, e->hook),
                           pool_utf8(&ed->pool, hook_descriptor));
        if (e->kind == JVA_EDIT_REPLACE_CALL) {
                plan_call_sites(ed, hook, sites, k);
                return 1;
        }
        r = plan_wrapper(ed, m, e, hook, result);
        return r < 0 ? r : r == 0;
}

/* The class with the patches applied, the pool's new entries and the wrappers appended. */
static int emit_class(const struct editing *ed, const uint8_t *in, size_t in_len, struct buf *out)
{
        const struct class *c = &ed->c;
        uint8_t *copy = malloc(in_len);

        if (!copy)
                return -ENOMEM;
        memcpy(copy, in, in_len);
        for (unsigned i = 0; i < ed->n_patches; i++)
                memcpy(copy + ed->patches[i].at, ed->patches[i].bytes, ed->patches[i].n);
        put(out, copy, 8);
        put_u2(out, ed->pool.next);
        put(out, copy + 10, c->cp_end - 10);
        put(out, ed->pool.entries.data, ed->pool.entries.len);
        put(out, copy + c->cp_end, c->methods_count_at - c->cp_end);
        put_u2(out, c->n_methods + ed->n_wrappers);
        put(out, copy + c->methods_count_at + 2, c->methods_end - c->methods_count_at - 2);
        put(out, ed->methods.data, ed->methods.len);
        put(out, copy + c->methods_end, in_len - c->methods_end);
        free(copy);
        return out->failed ? -ENOMEM : 0;
}

static void editing_free(struct editing *ed)
{
        free(ed->patches);
        free(ed->pool.entries.data);
        free(ed->methods.data);
        class_free(&ed->c);
}

/* Parse the class and plan every edit: the number made, or -errno. */
static int plan_all(struct editing *ed, const uint8_t *in, size_t in_len,
                    const struct jva_edit *edits, struct jva_edit_result *results, unsigned n)
{
        int made = 0, r = parse(in, in_len, &ed->c);

        if (r < 0)
                return r;
        ed->patches = calloc((size_t)n * SITES_MAX + 1, sizeof(*ed->patches));
        if (!ed->patches)
                return -ENOMEM;
        ed->pool.next = ed->c.cp_count;
        for (unsigned i = 0; i < n; i++) {
                r = plan_edit(ed, &edits[i], &results[i]);
                if (r < 0)
                        return r;
                made += r;
        }
        if (ed->pool.full) {
                for (unsigned i = 0; i < n; i++)
                        if (results[i].status == 0)
                                say(&results[i], -EINVAL, "constant pool full");
                made = 0;
        }
        if (ed->pool.entries.failed || ed->methods.failed)
                return -ENOMEM;
        if (made > 0 && ed->c.n_methods + ed->n_wrappers > 0xffff)
                return -EINVAL;
        return made;
}

int jva_class_edit(const uint8_t *in, size_t in_len, const struct jva_hook_class *hooks,
                   const struct jva_edit *edits, struct jva_edit_result *results, unsigned n,
                   uint8_t **ret_out, size_t *ret_out_len)
{
        struct editing ed = {.hooks = hooks};
        struct buf out = {0};
        int made;

        assert(in);
        assert(hooks);
        assert(ret_out);
        assert(ret_out_len);
        assert(n == 0 || (edits && results));
        *ret_out = NULL;
        *ret_out_len = 0;
        made = plan_all(&ed, in, in_len, edits, results, n);
        if (made > 0) {
                int r = emit_class(&ed, in, in_len, &out);

                if (r < 0) {
                        free(out.data);
                        made = r;
                } else {
                        *ret_out = out.data;
                        *ret_out_len = out.len;
                }
        }
        editing_free(&ed);
        return made;
}

int jva_hook_class_build(const struct jva_hook_class *hooks, const struct jva_native *natives,
                         unsigned n, uint8_t **ret_out, size_t *ret_out_len)
{
        struct buf out = {0};
        unsigned count = 7 + 2 * n;

        assert(hooks);
        assert(ret_out);
        assert(ret_out_len);
        *ret_out = NULL;
        if (count > 0xffff)
                return -EINVAL;
        put_u4(&out, 0xCAFEBABE);
        put_u2(&out, 0);
        put_u2(&out, 52);
        put_u2(&out, count);
        /* #1 this, #2 its Utf8, #3 super, #4 its Utf8, #5 guard, #6 "Z", then name/descriptor
         * Utf8 pairs from #7 */
        put_u1(&out, CP_CLASS), put_u2(&out, 2);
        put_u1(&out, CP_UTF8), put_u2(&out, (unsigned)strlen(hooks->name));
        put(&out, hooks->name, strlen(hooks->name));
        put_u1(&out, CP_CLASS), put_u2(&out, 4);
        put_u1(&out, CP_UTF8), put_u2(&out, 16), put(&out, "java/lang/Object", 16);
        put_u1(&out, CP_UTF8), put_u2(&out, (unsigned)strlen(hooks->guard));
        put(&out, hooks->guard, strlen(hooks->guard));
        put_u1(&out, CP_UTF8), put_u2(&out, 1), put(&out, "Z", 1);
        for (unsigned i = 0; i < n; i++) {
                put_u1(&out, CP_UTF8), put_u2(&out, (unsigned)strlen(natives[i].name));
                put(&out, natives[i].name, strlen(natives[i].name));
                put_u1(&out, CP_UTF8), put_u2(&out, (unsigned)strlen(natives[i].descriptor));
                put(&out, natives[i].descriptor, strlen(natives[i].descriptor));
        }
        put_u2(&out, ACC_PUBLIC | ACC_FINAL | ACC_SUPER);
        put_u2(&out, 1);
        put_u2(&out, 3);
        put_u2(&out, 0); /* interfaces */
        put_u2(&out, 1); /* the guard */
        put_u2(&out, ACC_PUBLIC | ACC_STATIC | ACC_VOLATILE);
        put_u2(&out, 5);
        put_u2(&out, 6);
        put_u2(&out, 0);
        put_u2(&out, n);
        for (unsigned i = 0; i < n; i++) {
                put_u2(&out, ACC_PUBLIC | ACC_STATIC | ACC_NATIVE);
                put_u2(&out, 7 + 2 * i);
                put_u2(&out, 8 + 2 * i);
                put_u2(&out, 0);
        }
        put_u2(&out, 0); /* class attributes */
        if (out.failed) {
                free(out.data);
                return -ENOMEM;
        }
        *ret_out = out.data;
        *ret_out_len = out.len;
        return 0;
}
