/* SPDX-License-Identifier: Apache-2.0 */
/* The decompressed lines of one event log file (decompress.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <lz4.h>
#include <liblzf/lzf.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "decompress.h"
#include "lines.h"
#include "util.h"

#define PLAIN_CHUNK    (UINT64_C(1) << 20)
#define LZ4_MAGIC      "LZ4Block"
#define LZ4_HEADER     21 /* magic, token, compressed length, length, checksum */
#define LZ4_METHOD_RAW 0x10
#define LZ4_METHOD_LZ4 0x20
#define LZ4_SEED       UINT32_C(0x9747b28c)
#define SNAPPY_HEADER  16
#define LZF_HEADER_RAW 5
#define LZF_HEADER_LZF 7

static const uint8_t snappy_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

struct tuner_stream {
        int fd;
        char name[256];
        enum tuner_codec codec;
        bool in_progress;
        /* raw bytes read from fd: [in_start, in_end) are pending */
        uint8_t *in;
        size_t in_start, in_end, in_cap;
        bool in_eof;
        /* decompressed bytes: [out_pos, out_len) are pending */
        uint8_t *out;
        size_t out_pos, out_len, out_cap;
        ZSTD_DStream *zstd;
        size_t zstd_hint; /* ZSTD_decompressStream's last return: 0 = at a frame's end */
        bool header_seen; /* snappy */
        uint64_t total, total_max;
        /* the expansion bound (decompress.h): raw bytes read from fd, the file's allocated
         * bytes (st_blocks) when it was last looked at */
        uint64_t raw_read, allocated, expansion_ratio, expansion_slack;
        /* what the input's files before this one spent (tuner_stream_set_expansion_base) */
        char input[256];
        uint64_t base_compressed, base_expanded;
        bool over_total;         /* refused by total_max */
        struct util_lines lines; /* the line being read, up to lines.line_max */
};

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
        size_t n = strlen(suffix);

        return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

bool tuner_name_in_progress(const char *name)
{
        return has_suffix(name, strlen(name), ".inprogress");
}

enum tuner_codec tuner_codec_of(const char *name)
{
        const char *base = strrchr(name, '/');
        size_t len;

        base = base ? base + 1 : name;
        len = strlen(base);
        if (has_suffix(base, len, ".inprogress"))
                len -= strlen(".inprogress");
        if (has_suffix(base, len, ".zstd"))
                return TUNER_CODEC_ZSTD;
        if (has_suffix(base, len, ".lz4"))
                return TUNER_CODEC_LZ4;
        if (has_suffix(base, len, ".snappy"))
                return TUNER_CODEC_SNAPPY;
        if (has_suffix(base, len, ".lzf"))
                return TUNER_CODEC_LZF;
        return TUNER_CODEC_PLAIN;
}

const char *tuner_codec_name(enum tuner_codec c)
{
        switch (c) {
        case TUNER_CODEC_PLAIN:
                return "plain";
        case TUNER_CODEC_ZSTD:
                return "zstd";
        case TUNER_CODEC_LZ4:
                return "lz4";
        case TUNER_CODEC_SNAPPY:
                return "snappy";
        case TUNER_CODEC_LZF:
                return "lzf";
        }
        return "unknown";
}

static uint32_t read_le32(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t read_be32(const uint8_t *p)
{
        return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

static uint32_t read_be16(const uint8_t *p)
{
        return (uint32_t)p[0] << 8 | p[1];
}

uint32_t tuner_xxh32(const void *data, size_t len, uint32_t seed)
{
        return XXH32(data, len, seed);
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
        size_t n = *cap ? *cap : 4096;
        uint8_t *p;

        if (need <= *cap)
                return 0;
        while (n < need)
                n *= 2;
        p = realloc(*buf, n);
        if (!p)
                return -ENOMEM;
        *buf = p;
        *cap = n;
        return 0;
}

static int read_some(struct tuner_stream *s, uint8_t *buf, size_t size, size_t *ret,
                     struct util_error *err)
{
        ssize_t n;

        do
                n = read(s->fd, buf, size);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return util_error_set(err, errno, "%s: %s", s->name, strerror(errno));
        s->raw_read += (uint64_t)n;
        *ret = (size_t)n;
        return 0;
}

/* Make need raw bytes pending: 0, 1 when the file ends first, or -errno. */
static int want_in(struct tuner_stream *s, size_t need, struct util_error *err)
{
        while (s->in_end - s->in_start < need) {
                size_t n, size;
                int r;

                if (s->in_eof)
                        return 1;
                if (s->in_start > 0) {
                        memmove(s->in, s->in + s->in_start, s->in_end - s->in_start);
                        s->in_end -= s->in_start;
                        s->in_start = 0;
                }
                /* grow with the data that arrives, not with the length a header claims */
                size = need;
                if (size > s->in_cap && size > (s->in_cap < 65536 ? 65536 : s->in_cap * 2))
                        size = s->in_cap < 65536 ? 65536 : s->in_cap * 2;
                r = grow(&s->in, &s->in_cap, size < 65536 ? 65536 : size);
                if (r < 0)
                        return util_error_set(err, r, "%s: out of memory", s->name);
                r = read_some(s, s->in + s->in_end, s->in_cap - s->in_end, &n, err);
                if (r < 0)
                        return r;
                if (n == 0)
                        s->in_eof = true;
                s->in_end += n;
        }
        return 0;
}

/* The file ends inside a block: the end of what the writer flushed, or corruption. */
static int cut_short(struct tuner_stream *s, const char *what, struct util_error *err)
{
        if (s->in_progress)
                return 0;
        return util_error_set(err, EINVAL, "%s: the %s data ends inside %s", s->name,
                              tuner_codec_name(s->codec), what);
}

static int out_reserve(struct tuner_stream *s, size_t size, struct util_error *err)
{
        if (grow(&s->out, &s->out_cap, size) < 0)
                return util_error_set(err, ENOMEM, "%s: out of memory", s->name);
        return 0;
}

static int next_plain(struct tuner_stream *s, struct util_error *err)
{
        size_t n;
        int r;

        r = out_reserve(s, PLAIN_CHUNK, err);
        if (r < 0)
                return r;
        r = read_some(s, s->out, PLAIN_CHUNK, &n, err);
        if (r < 0)
                return r;
        s->out_len = n;
        return n > 0;
}

static int next_zstd(struct tuner_stream *s, struct util_error *err)
{
        int r;

        if (!s->zstd) {
                s->zstd = ZSTD_createDStream();
                if (!s->zstd)
                        return util_error_set(err, ENOMEM, "%s: out of memory", s->name);
                ZSTD_initDStream(s->zstd);
                /* a window past the block bound is a bomb, not a Spark event log */
                ZSTD_DCtx_setParameter(s->zstd, ZSTD_d_windowLogMax, 27);
        }
        r = out_reserve(s, ZSTD_DStreamOutSize(), err);
        if (r < 0)
                return r;
        for (;;) {
                ZSTD_inBuffer in;
                ZSTD_outBuffer out = {s->out, s->out_cap, 0};
                size_t z;

                if (s->in_start == s->in_end) {
                        r = want_in(s, 1, err);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                return s->zstd_hint ? cut_short(s, "a frame", err) : 0;
                }
                in = (ZSTD_inBuffer){s->in + s->in_start, s->in_end - s->in_start, 0};
                z = ZSTD_decompressStream(s->zstd, &out, &in);
                if (ZSTD_isError(z))
                        return util_error_set(err, EINVAL, "%s: corrupt zstd data: %s", s->name,
                                              ZSTD_getErrorName(z));
                s->in_start += in.pos;
                s->zstd_hint = z;
                if (out.pos > 0) {
                        s->out_len = out.pos;
                        return 1;
                }
        }
}

static int next_lz4(struct tuner_stream *s, struct util_error *err)
{
        for (;;) {
                const uint8_t *h;
                uint32_t method, clen, dlen, sum;
                int r;

                r = want_in(s, LZ4_HEADER, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        return s->in_end == s->in_start ? 0 : cut_short(s, "a block header", err);
                h = s->in + s->in_start;
                if (memcmp(h, LZ4_MAGIC, 8) != 0)
                        return util_error_set(
                            err, EINVAL,
                            "%s: not lz4-java block data (no \"LZ4Block\" magic at "
                            "a block's start)",
                            s->name);
                method = h[8] & 0xf0;
                clen = read_le32(h + 9);
                dlen = read_le32(h + 13);
                sum = read_le32(h + 17);
                if (method != LZ4_METHOD_RAW && method != LZ4_METHOD_LZ4)
                        return util_error_set(err, EINVAL,
                                              "%s: lz4 block method 0x%02x; allowed: 0x10 (raw), "
                                              "0x20 (lz4)",
                                              s->name, (unsigned)method);
                if (clen > TUNER_STREAM_BLOCK_MAX || dlen > TUNER_STREAM_BLOCK_MAX ||
                    (method == LZ4_METHOD_RAW && clen != dlen))
                        return util_error_set(err, EINVAL,
                                              "%s: lz4 block of %" PRIu32 " -> %" PRIu32
                                              " bytes; allowed: up to %" PRIu64 " (raw: equal)",
                                              s->name, clen, dlen, TUNER_STREAM_BLOCK_MAX);
                /* LZ4 expands at most ~255 times: a larger claim would only cost memory */
                if (method == LZ4_METHOD_LZ4 && dlen / 255 > clen)
                        return util_error_set(err, EINVAL,
                                              "%s: lz4 block of %" PRIu32 " -> %" PRIu32
                                              " bytes: more than LZ4 can expand",
                                              s->name, clen, dlen);
                if (clen == 0 && dlen == 0) { /* the end of one stream; another may follow */
                        s->in_start += LZ4_HEADER;
                        continue;
                }
                r = want_in(s, LZ4_HEADER + (size_t)clen, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        return cut_short(s, "a block", err);
                r = out_reserve(s, dlen ? dlen : 1, err);
                if (r < 0)
                        return r;
                h = s->in + s->in_start;
                if (method == LZ4_METHOD_RAW)
                        memcpy(s->out, h + LZ4_HEADER, dlen);
                else if (LZ4_decompress_safe((const char *)h + LZ4_HEADER, (char *)s->out,
                                             (int)clen, (int)dlen) != (int)dlen)
                        return util_error_set(err, EINVAL, "%s: corrupt lz4 block", s->name);
                if ((tuner_xxh32(s->out, dlen, LZ4_SEED) & 0xfffffff) != sum)
                        return util_error_set(err, EINVAL, "%s: lz4 block checksum mismatch",
                                              s->name);
                s->in_start += LZ4_HEADER + (size_t)clen;
                s->out_len = dlen;
                if (dlen > 0)
                        return 1;
        }
}

static int next_snappy(struct tuner_stream *s, struct util_error *err)
{
        for (;;) {
                const uint8_t *h;
                size_t dlen;
                uint32_t clen;
                int r;

                r = want_in(s, 4, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        return s->in_end == s->in_start ? 0 : cut_short(s, "a chunk header", err);
                h = s->in + s->in_start;
                /* a stream header: at the start, and where another stream was appended */
                if (h[0] == snappy_magic[0]) {
                        r = want_in(s, SNAPPY_HEADER, err);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                return cut_short(s, "the stream header", err);
                        h = s->in + s->in_start;
                        if (memcmp(h, snappy_magic, sizeof(snappy_magic)) != 0)
                                return util_error_set(err, EINVAL,
                                                      "%s: not snappy-java stream data (bad "
                                                      "header magic)",
                                                      s->name);
                        s->in_start += SNAPPY_HEADER;
                        s->header_seen = true;
                        continue;
                }
                if (!s->header_seen)
                        return util_error_set(err, EINVAL,
                                              "%s: not snappy-java stream data (no \\x82SNAPPY "
                                              "header)",
                                              s->name);
                clen = read_be32(h);
                if (clen > TUNER_STREAM_BLOCK_MAX)
                        return util_error_set(err, EINVAL,
                                              "%s: snappy chunk of %" PRIu32
                                              " bytes; allowed: up to %" PRIu64,
                                              s->name, clen, TUNER_STREAM_BLOCK_MAX);
                r = want_in(s, 4 + (size_t)clen, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        return cut_short(s, "a chunk", err);
                h = s->in + s->in_start + 4;
                /* snappy expands at most ~22 times (a 3-byte copy of 64 bytes) */
                if (snappy_uncompressed_length((const char *)h, clen, &dlen) != SNAPPY_OK ||
                    dlen > TUNER_STREAM_BLOCK_MAX || dlen / 32 > clen)
                        return util_error_set(err, EINVAL,
                                              "%s: corrupt snappy chunk (bad length; allowed: up "
                                              "to %" PRIu64 " bytes)",
                                              s->name, TUNER_STREAM_BLOCK_MAX);
                r = out_reserve(s, dlen ? dlen : 1, err);
                if (r < 0)
                        return r;
                if (snappy_uncompress((const char *)h, clen, (char *)s->out, &dlen) != SNAPPY_OK)
                        return util_error_set(err, EINVAL, "%s: corrupt snappy chunk", s->name);
                s->in_start += 4 + (size_t)clen;
                s->out_len = dlen;
                if (dlen > 0)
                        return 1;
        }
}

/* LZF (liblzf's format, as compress-lzf writes it): 0 or -1 when in does not make out. */
static int lzf_decode(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
        if (in_len > UINT_MAX || out_len > UINT_MAX)
                return -1;
        return lzf_decompress(in, (unsigned)in_len, out, (unsigned)out_len) == out_len ? 0 : -1;
}

static int next_lzf(struct tuner_stream *s, struct util_error *err)
{
        for (;;) {
                const uint8_t *h;
                size_t header, clen, dlen;
                int r;

                r = want_in(s, LZF_HEADER_RAW, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        return s->in_end == s->in_start ? 0 : cut_short(s, "a chunk header", err);
                h = s->in + s->in_start;
                if (h[0] != 'Z' || h[1] != 'V' || h[2] > 1)
                        return util_error_set(err, EINVAL,
                                              "%s: not compress-lzf chunk data (no \"ZV\" and "
                                              "type 0 or 1 at a chunk's start)",
                                              s->name);
                header = h[2] == 0 ? LZF_HEADER_RAW : LZF_HEADER_LZF;
                r = want_in(s, header, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        return cut_short(s, "a chunk header", err);
                h = s->in + s->in_start;
                clen = read_be16(h + 3);
                dlen = header == LZF_HEADER_RAW ? clen : read_be16(h + 5);
                r = want_in(s, header + clen, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        return cut_short(s, "a chunk", err);
                r = out_reserve(s, dlen ? dlen : 1, err);
                if (r < 0)
                        return r;
                h = s->in + s->in_start;
                if (header == LZF_HEADER_RAW)
                        memcpy(s->out, h + header, dlen);
                else if (lzf_decode(h + header, clen, s->out, dlen) < 0)
                        return util_error_set(err, EINVAL, "%s: corrupt lzf chunk", s->name);
                s->in_start += header + clen;
                s->out_len = dlen;
                if (dlen > 0)
                        return 1;
        }
}

/* The bytes of fd on disk: a sparse file's holes are not counted (UINT64_MAX if unknown). */
static uint64_t allocated_bytes(int fd)
{
        struct stat st;

        if (fstat(fd, &st) < 0 || st.st_blocks < 0)
                return UINT64_MAX;
        return (uint64_t)st.st_blocks * 512;
}

static uint64_t expansion_allowed(const struct tuner_stream *s, uint64_t compressed)
{
        if (compressed > UINT64_MAX - s->base_compressed)
                return UINT64_MAX;
        compressed += s->base_compressed;
        if (compressed > (UINT64_MAX - s->expansion_slack) / s->expansion_ratio)
                return UINT64_MAX;
        return compressed * s->expansion_ratio + s->expansion_slack;
}

/* The compressed bytes the decoder took: those read minus those still pending, and no more
 * than the file holds on disk (a hole reads as zeros that were never written). */
static uint64_t compressed_consumed(const struct tuner_stream *s)
{
        uint64_t consumed = s->raw_read - (s->in_end - s->in_start);

        return consumed < s->allocated ? consumed : s->allocated;
}

static uint64_t expanded(const struct tuner_stream *s)
{
        return s->total > UINT64_MAX - s->base_expanded ? UINT64_MAX : s->total + s->base_expanded;
}

/*
 * The output so far (with the input's files before this one) against the compressed bytes the
 * decoder took. An in-progress log grows while it is read: its blocks are looked at again
 * before it is refused.
 */
static int check_expansion(struct tuner_stream *s, struct util_error *err)
{
        uint64_t consumed = s->raw_read - (s->in_end - s->in_start);
        uint64_t compressed = compressed_consumed(s), out = expanded(s);
        char slack[32];

        if (s->codec == TUNER_CODEC_PLAIN || s->expansion_ratio == 0 ||
            out <= expansion_allowed(s, compressed))
                return 0;
        if (consumed > s->allocated) {
                s->allocated = allocated_bytes(s->fd);
                compressed = compressed_consumed(s);
                if (out <= expansion_allowed(s, compressed))
                        return 0;
        }
        if (s->expansion_slack % (UINT64_C(1) << 20) == 0)
                snprintf(slack, sizeof(slack), "%" PRIu64 " MiB", s->expansion_slack >> 20);
        else
                snprintf(slack, sizeof(slack), "%" PRIu64 " bytes", s->expansion_slack);
        compressed += s->base_compressed;
        if (s->input[0])
                return util_error_set(err, EFBIG,
                                      "%s: %" PRIu64 " bytes decompressed from %" PRIu64
                                      " compressed bytes of its files, up to %s (%" PRIu64
                                      " x); allowed: up to %" PRIu64
                                      " x the compressed bytes + %s (a compression bomb?)",
                                      s->input, out, compressed, s->name,
                                      out / (compressed ? compressed : 1), s->expansion_ratio,
                                      slack);
        return util_error_set(err, EFBIG,
                              "%s: %" PRIu64 " bytes decompressed from %" PRIu64
                              " compressed bytes (%" PRIu64 " x); allowed: up to %" PRIu64
                              " x the compressed bytes + %s (a compression bomb?)",
                              s->name, out, compressed, out / (compressed ? compressed : 1),
                              s->expansion_ratio, slack);
}

/* More decompressed bytes in out: 1, 0 at the end, or -errno. */
static int next_out(struct tuner_stream *s, struct util_error *err)
{
        int r = 0;

        s->out_pos = s->out_len = 0;
        switch (s->codec) {
        case TUNER_CODEC_PLAIN:
                r = next_plain(s, err);
                break;
        case TUNER_CODEC_ZSTD:
                r = next_zstd(s, err);
                break;
        case TUNER_CODEC_LZ4:
                r = next_lz4(s, err);
                break;
        case TUNER_CODEC_SNAPPY:
                r = next_snappy(s, err);
                break;
        case TUNER_CODEC_LZF:
                r = next_lzf(s, err);
                break;
        }
        if (r <= 0) {
                s->out_len = 0;
                return r;
        }
        if (s->out_len > s->total_max - s->total) {
                s->over_total = true;
                return util_error_set(err, EFBIG,
                                      "%s: more than %" PRIu64 " bytes once decompressed", s->name,
                                      s->total_max);
        }
        s->total += s->out_len;
        r = check_expansion(s, err);
        return r < 0 ? r : 1;
}

int tuner_stream_line(struct tuner_stream *s, const char **ret_line, size_t *ret_len,
                      bool *ret_terminated, struct util_error *err)
{
        for (;;) {
                const char *p, *end;
                int r;

                if (s->out_pos == s->out_len) {
                        r = next_out(s, err);
                        if (r < 0)
                                return r;
                        if (r == 0) {
                                *ret_terminated = false;
                                r = util_lines_rest(&s->lines, ret_line, ret_len);
                                if (r < 0)
                                        return util_error_set(err, ENOMEM, "%s: out of memory",
                                                              s->name);
                                return r;
                        }
                }
                p = (const char *)s->out + s->out_pos;
                end = (const char *)s->out + s->out_len;
                r = util_lines_take(&s->lines, &p, end, ret_line, ret_len);
                s->out_pos = (size_t)((const uint8_t *)p - s->out);
                if (r == -EMSGSIZE)
                        return util_error_set(err, EFBIG,
                                              "%s:%" PRIu64 ": a line longer than %zu bytes",
                                              s->name, s->lines.lineno, s->lines.line_max);
                if (r < 0)
                        return util_error_set(err, ENOMEM, "%s: out of memory", s->name);
                if (r == 1) {
                        *ret_terminated = true;
                        return 1;
                }
        }
}

uint64_t tuner_stream_lineno(const struct tuner_stream *s)
{
        return s->lines.lineno;
}

int tuner_stream_owner(const struct tuner_stream *s, uint32_t *ret)
{
        struct stat st;

        if (fstat(s->fd, &st) < 0)
                return -errno;
        *ret = (uint32_t)st.st_uid;
        return 0;
}

void tuner_stream_set_limits(struct tuner_stream *s, uint64_t line_max, uint64_t total_max)
{
        s->lines.line_max = line_max > SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)line_max;
        s->total_max = total_max;
}

void tuner_stream_set_expansion(struct tuner_stream *s, uint64_t ratio, uint64_t slack)
{
        s->expansion_ratio = ratio;
        s->expansion_slack = slack;
}

void tuner_stream_set_expansion_base(struct tuner_stream *s, const char *input, uint64_t compressed,
                                     uint64_t expanded)
{
        snprintf(s->input, sizeof(s->input), "%s", input ? input : "");
        s->base_compressed = compressed;
        s->base_expanded = expanded;
}

void tuner_stream_spent(const struct tuner_stream *s, uint64_t *ret_compressed, uint64_t *ret_total)
{
        *ret_compressed = s->codec == TUNER_CODEC_PLAIN ? 0 : compressed_consumed(s);
        *ret_total = s->total;
}

bool tuner_stream_over_total(const struct tuner_stream *s)
{
        return s->over_total;
}

void tuner_stream_free(struct tuner_stream *s)
{
        if (!s)
                return;
        if (s->fd >= 0)
                close(s->fd);
        ZSTD_freeDStream(s->zstd);
        free(s->in);
        free(s->out);
        util_lines_free(&s->lines);
        free(s);
}

int tuner_stream_open_fd(int fd, const char *name, enum tuner_codec codec, bool in_progress,
                         struct tuner_stream **ret, struct util_error *err)
{
        struct tuner_stream *s = calloc(1, sizeof(*s));

        if (!s) {
                close(fd);
                return util_error_set(err, ENOMEM, "%s: out of memory", name);
        }
        s->fd = fd;
        snprintf(s->name, sizeof(s->name), "%s", name);
        s->codec = codec;
        s->in_progress = in_progress;
        s->lines.line_max = TUNER_STREAM_LINE_MAX;
        s->total_max = TUNER_STREAM_TOTAL_MAX;
        s->expansion_ratio = TUNER_STREAM_EXPANSION_MAX;
        s->expansion_slack = TUNER_STREAM_EXPANSION_SLACK;
        s->allocated = allocated_bytes(fd);
        *ret = s;
        return 0;
}

int tuner_stream_open_at(int dirfd, const char *name, const char *path, bool in_progress,
                         struct tuner_stream **ret, struct util_error *err)
{
        struct stat st;
        int fd, e;

        /* the files are the job's users': no symlink is followed (root would read where it
         * points), and a FIFO must not block the open (O_NONBLOCK; refused below) */
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0) {
                e = errno;
                return util_error_set(err, e, "%s: %s", path,
                                      e == ELOOP ? "a symbolic link (refused)" : strerror(e));
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                e = S_ISREG(st.st_mode) ? errno : EINVAL;
                close(fd);
                return util_error_set(err, e, "%s: %s", path,
                                      e == EINVAL ? "not a regular file" : strerror(e));
        }
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
                e = errno;
                close(fd);
                return util_error_set(err, e, "%s: %s", path, strerror(e));
        }
        return tuner_stream_open_fd(fd, path, tuner_codec_of(path), in_progress, ret, err);
}

int tuner_stream_open(const char *path, bool in_progress, struct tuner_stream **ret,
                      struct util_error *err)
{
        return tuner_stream_open_at(AT_FDCWD, path, path, in_progress, ret, err);
}
