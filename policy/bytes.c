/* SPDX-License-Identifier: Apache-2.0 */
/* Quantities: Spark byte strings, JVM sizes, CPU quantities, Kubernetes quantity text. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"
#include "util.h"

static bool is_digit(char c)
{
        /* not isdigit(): locale-independent, ASCII only, like Java's [0-9] */
        return c >= '0' && c <= '9';
}

static char ascii_lower(char c)
{
        return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

void policy_trim(const char *s, const char **ret_begin, size_t *ret_len)
{
        size_t len = strlen(s);

        while (len > 0 && (unsigned char)s[0] <= ' ') {
                s++;
                len--;
        }
        while (len > 0 && (unsigned char)s[len - 1] <= ' ')
                len--;
        *ret_begin = s;
        *ret_len = len;
}

uint64_t policy_floor_u64(double x)
{
        double r;

        if (!(x > 0))
                return 0;
        if (x >= 18446744073709551615.0)
                return UINT64_MAX;
        r = nearbyint(x);
        /* 0.9 * 1000 is 900.0000000000001 or 899.9999999999999 depending on the operands;
         * the policy means 900, so snap to an integer within a relative 1e-9 first. */
        if (fabs(x - r) <= 1e-9 * fmax(1.0, x))
                return (uint64_t)r;
        return (uint64_t)floor(x);
}

uint64_t policy_ceil_u64(double x)
{
        double r;

        if (!(x > 0))
                return 0;
        if (x >= 18446744073709551615.0)
                return UINT64_MAX;
        r = nearbyint(x);
        if (fabs(x - r) <= 1e-9 * fmax(1.0, x))
                return (uint64_t)r;
        return (uint64_t)ceil(x);
}

/* Parse n ASCII digits; -ERANGE above max. */
static int parse_digits(const char *s, size_t n, uint64_t max, uint64_t *ret)
{
        uint64_t v = 0;

        if (n == 0)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!is_digit(s[i]))
                        return -EINVAL;
                if (v > (max - (uint64_t)(s[i] - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        *ret = v;
        return 0;
}

static unsigned unit_shift(enum policy_unit u)
{
        switch (u) {
        case POLICY_UNIT_KIB:
                return 10;
        case POLICY_UNIT_MIB:
                return 20;
        case POLICY_UNIT_GIB:
                return 30;
        case POLICY_UNIT_BYTES:
        default:
                return 0;
        }
}

/*
 * JavaUtils.byteStringAs(str, unit): the count is converted from the suffix's unit to the
 * default unit (truncating when the suffix is smaller: "1500k" as MiB is 1 MiB) and we return
 * that count in bytes, so callers see exactly the size Spark uses.
 */
int policy_parse_spark_bytes(const char *s, enum policy_unit default_unit, uint64_t *ret)
{
        static const struct {
                const char *suffix;
                unsigned shift;
        } suffixes[] = {
            {"b", 0},   {"k", 10}, {"kb", 10}, {"m", 20}, {"mb", 20}, {"g", 30},
            {"gb", 30}, {"t", 40}, {"tb", 40}, {"p", 50}, {"pb", 50},
        };
        unsigned target = unit_shift(default_unit), shift = target;
        const char *begin;
        size_t len, ndigits = 0;
        uint64_t value, count;
        int r;

        if (!s)
                return -EINVAL;
        policy_trim(s, &begin, &len);
        while (ndigits < len && is_digit(begin[ndigits]))
                ndigits++;
        if (ndigits == 0)
                return -EINVAL;

        if (ndigits < len) {
                char suffix[3];
                size_t slen = len - ndigits;
                bool found = false;

                if (slen > 2)
                        return -EINVAL;
                for (size_t i = 0; i < slen; i++)
                        suffix[i] = ascii_lower(begin[ndigits + i]);
                suffix[slen] = '\0';
                for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
                        if (strcmp(suffix, suffixes[i].suffix) == 0) {
                                shift = suffixes[i].shift;
                                found = true;
                                break;
                        }
                if (!found)
                        return -EINVAL; /* also "1.5g": Spark rejects fractions */
        }

        r = parse_digits(begin, ndigits, POLICY_BYTES_MAX, &value);
        if (r < 0)
                return r;

        /* ByteUnit.convertTo: from the suffix's unit to the default unit */
        if (shift > target) {
                if (value > (POLICY_BYTES_MAX >> (shift - target)))
                        return -ERANGE;
                count = value << (shift - target);
        } else
                count = value >> (target - shift);

        if (count > (POLICY_BYTES_MAX >> target))
                return -ERANGE;
        *ret = count << target;
        return 0;
}

/* HotSpot's atojulong(): decimal or 0x-hex digits, at most one suffix character. */
int policy_parse_jvm_bytes(const char *s, uint64_t *ret)
{
        unsigned long long n;
        unsigned shift;
        char *end = NULL;
        bool hex;

        if (!s || !is_digit(s[0]))
                return -EINVAL;
        hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
        errno = 0;
        n = strtoull(s, &end, hex ? 16 : 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || end == s || strlen(end) > 1)
                return -EINVAL;

        switch (*end) {
        case '\0':
                shift = 0;
                break;
        case 'k':
        case 'K':
                shift = 10;
                break;
        case 'm':
        case 'M':
                shift = 20;
                break;
        case 'g':
        case 'G':
                shift = 30;
                break;
        case 't':
        case 'T':
                shift = 40;
                break;
        default:
                return -EINVAL;
        }
        if (n > (POLICY_BYTES_MAX >> shift))
                return -ERANGE;
        *ret = (uint64_t)n << shift;
        return 0;
}

/*
 * Kubernetes CPU quantities in the forms Spark documents: "2", "0.5", "500m". Decimals
 * beyond the millicore are rounded up, as Kubernetes does ("0.0001" -> 1m). Zero is invalid.
 */
int policy_parse_cpu_quantity(const char *s, uint64_t *ret_millicores)
{
        size_t len, nint = 0, nfrac = 0;
        uint64_t whole = 0, milli = 0, v;
        bool round_up = false;
        int r;

        if (!s)
                return -EINVAL;
        len = strlen(s);
        if (len == 0)
                return -EINVAL;

        if (s[len - 1] == 'm') {
                r = parse_digits(s, len - 1, POLICY_MILLICORES_LIMIT, &v);
                if (r < 0)
                        return r;
                if (v == 0)
                        return -EINVAL;
                *ret_millicores = v;
                return 0;
        }

        while (nint < len && is_digit(s[nint]))
                nint++;
        if (nint < len) {
                if (s[nint] != '.')
                        return -EINVAL;
                for (size_t i = nint + 1; i < len; i++) {
                        if (!is_digit(s[i]))
                                return -EINVAL;
                        nfrac++;
                }
        }
        if (nint + nfrac == 0)
                return -EINVAL;

        if (nint > 0) {
                r = parse_digits(s, nint, POLICY_MILLICORES_LIMIT / 1000, &whole);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < nfrac; i++) {
                unsigned d = (unsigned)(s[nint + 1 + i] - '0');
                if (i < 3)
                        milli = milli * 10 + d;
                else if (d != 0)
                        round_up = true;
        }
        for (size_t i = nfrac; i < 3; i++)
                milli *= 10;

        v = whole * 1000 + milli + (round_up ? 1 : 0);
        if (v == 0)
                return -EINVAL;
        if (v > POLICY_MILLICORES_LIMIT)
                return -ERANGE;
        *ret_millicores = v;
        return 0;
}

int policy_parse_millicores(const char *s, uint64_t *ret_millicores)
{
        uint64_t v;
        int r;

        if (!s || s[0] == '\0')
                return -EINVAL;
        if (strchr(s, '.') || s[strlen(s) - 1] == 'm')
                return policy_parse_cpu_quantity(s, ret_millicores);
        r = parse_digits(s, strlen(s), POLICY_MILLICORES_LIMIT, &v);
        if (r < 0)
                return r;
        if (v == 0)
                return -EINVAL;
        *ret_millicores = v;
        return 0;
}

void policy_format_cpu_quantity(uint64_t millicores, char *buf, size_t size)
{
        if (millicores % 1000 == 0)
                snprintf(buf, size, "%" PRIu64, millicores / 1000);
        else
                snprintf(buf, size, "%" PRIu64 "m", millicores);
}

void policy_format_memory_quantity(uint64_t bytes, char *buf, size_t size)
{
        if (bytes > 0 && bytes % POLICY_GIB == 0)
                snprintf(buf, size, "%" PRIu64 "Gi", bytes / POLICY_GIB);
        else if (bytes > 0 && bytes % POLICY_MIB == 0)
                snprintf(buf, size, "%" PRIu64 "Mi", bytes / POLICY_MIB);
        else
                snprintf(buf, size, "%" PRIu64, bytes);
}
