/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to tuner/ (eventlog.c): the lines of one event log file, decompressed by the codec
 * of its name as Spark's CompressionCodec writes them:
 *   .zstd    zstd-jni's ZstdOutputStream: standard zstd frames (libzstd's streaming API);
 *   .lz4     lz4-java's LZ4BlockOutputStream: "LZ4Block" + a token (method | level) + the
 *            compressed and original lengths and the XXH32 of the block (seed 0x9747b28c,
 *            the low 28 bits), little-endian; an empty block ends a stream, streams may follow;
 *   .snappy  snappy-java's SnappyOutputStream: the 16-byte header (0x82 "SNAPPY" 0, version,
 *            compatible version) then chunks of a big-endian length and a raw snappy block;
 *   .lzf     compress-lzf's LZFOutputStream: "ZV" chunks, stored (0) or LZF-compressed (1);
 *   anything else is plain text. A trailing ".inprogress" is skipped when picking the codec.
 * Every codec and the checksum come from Debian's libraries: libzstd, liblz4, libsnappy,
 * liblzf, libxxhash (an earlier version wrote XXH32 and the LZF decoder by hand).
 * Every size is bounded (a block's lengths, a line, the total decompressed bytes); a file cut
 * short inside a block is an error unless the stream was opened as in progress, where the
 * writer may not have flushed it yet: then what was decoded is the end.
 *
 * Not thread-safe; one stream per thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim-common.h"

enum tuner_codec {
        TUNER_CODEC_PLAIN = 0,
        TUNER_CODEC_ZSTD,
        TUNER_CODEC_LZ4,
        TUNER_CODEC_SNAPPY,
        TUNER_CODEC_LZF,
};

#define TUNER_STREAM_LINE_MAX  (UINT64_C(64) << 20) /* one event's JSON */
#define TUNER_STREAM_TOTAL_MAX (UINT64_C(16) << 30) /* decompressed bytes of one file */
#define TUNER_STREAM_BLOCK_MAX (UINT64_C(64) << 20) /* one lz4/snappy/lzf block, either side */
/*
 * A compressed file decompresses to at most TUNER_STREAM_EXPANSION_MAX x the compressed bytes
 * decoded so far + TUNER_STREAM_EXPANSION_SLACK, checked as it decompresses (zstd reaches
 * about 20x on event logs, lz4 and snappy less): a few KB of zstd holding gigabytes of blank
 * lines is refused after a few MB. The compressed bytes count at most the file's allocated
 * blocks (st_blocks), never its size: a sparse tail costs the writer nothing and lifts nothing.
 * The files of one input (a rolling directory) share one bound and one slack
 * (tuner_stream_set_expansion_base); eventlog.c shares one more over an ingest run.
 */
#define TUNER_STREAM_EXPANSION_MAX   1000
#define TUNER_STREAM_EXPANSION_SLACK (UINT64_C(64) << 20)

/* The codec of a file name (its last component's suffix, ".inprogress" skipped). */
enum tuner_codec tuner_codec_of(const char *name);
const char *tuner_codec_name(enum tuner_codec c); /* "plain", "zstd", ... */
/* true when name ends in ".inprogress" */
bool tuner_name_in_progress(const char *name);

struct tuner_stream;

/*
 * Open path (O_RDONLY|O_CLOEXEC|O_NOCTTY, a regular file) with the codec of its name; name is
 * what errors say. in_progress allows a cut-off last block. 0 or -errno with err
 * "<name>: <reason>".
 */
/* name relative to dirfd (AT_FDCWD: a path); path is what messages call it. A symlink, a
 * FIFO or anything but a regular file is refused without blocking. */
int tuner_stream_open_at(int dirfd, const char *name, const char *path, bool in_progress,
                         struct tuner_stream **ret, struct util_error *err);
int tuner_stream_open(const char *path, bool in_progress, struct tuner_stream **ret,
                      struct util_error *err);
/* The same over an open fd (the stream owns it from then on, also on failure). */
int tuner_stream_open_fd(int fd, const char *name, enum tuner_codec codec, bool in_progress,
                         struct tuner_stream **ret, struct util_error *err);
void tuner_stream_free(struct tuner_stream *s);
/* Bounds for tests and fuzzing (defaults above). */
void tuner_stream_set_limits(struct tuner_stream *s, uint64_t line_max, uint64_t total_max);
/* The expansion bound of a compressed stream (defaults above; ratio 0: none). A plain file has
 * none. */
void tuner_stream_set_expansion(struct tuner_stream *s, uint64_t ratio, uint64_t slack);
/* What the compressed files of the same input read before this one spent (the sums of their
 * tuner_stream_spent()): the bound is then ratio x (compressed + this file's) + slack over
 * expanded + this file's output, and input (a directory; NULL: none) is what a refusal names:
 * "<input>: <n> bytes decompressed from <m> compressed bytes of its files, up to <name> ...". */
void tuner_stream_set_expansion_base(struct tuner_stream *s, const char *input, uint64_t compressed,
                                     uint64_t expanded);
/* What s spent so far: the compressed bytes decoded (at most its allocated bytes; 0 for a
 * plain file) and the bytes decompressed. */
void tuner_stream_spent(const struct tuner_stream *s, uint64_t *ret_compressed,
                        uint64_t *ret_total);
/* true when the last -EFBIG was total_max's (tuner_stream_set_limits) */
bool tuner_stream_over_total(const struct tuner_stream *s);

/*
 * The next line, without its newline: 1 and *ret_line, *ret_len (valid until the next call;
 * NUL-terminated) and *ret_terminated (false for a last line without a newline), 0 at the end,
 * or -errno with err "<name>: <reason>" (-EFBIG past a bound, -EINVAL for corrupt data, -EIO).
 * Past the expansion bound: -EFBIG with "<name>: <n> bytes decompressed from <m> compressed
 * bytes (<n/m> x); allowed: up to 1000 x the compressed bytes + 64 MiB".
 */
int tuner_stream_line(struct tuner_stream *s, const char **ret_line, size_t *ret_len,
                      bool *ret_terminated, struct util_error *err);
/* 1-based number of the line last returned */
uint64_t tuner_stream_lineno(const struct tuner_stream *s);
/* The owner of the file the stream reads, from its descriptor (never a second look up by
 * name, which another inode could answer): 0 with *ret, or -errno. */
int tuner_stream_owner(const struct tuner_stream *s, uint32_t *ret);

/* libxxhash's XXH32 (lz4-java's block checksum: tuner_xxh32(data, len, 0x9747b28c) & 0xfffffff) */
uint32_t tuner_xxh32(const void *data, size_t len, uint32_t seed);
