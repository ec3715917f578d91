/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness: the event-log decompressor (tuner/decompress.c) on untrusted files. The
 * first input byte picks the codec (its low 3 bits mod 5: plain, zstd, lz4, snappy, lzf, so
 * '0'..'4') and, with bit 3, an in-progress stream ('8'..'<'); the rest is the file, read through a
 * memfd line by line with small bounds (lines of 4 KiB, 4 MiB in all), so that the bounds are
 * exercised too. Seeds in tests/fuzz/corpus/decompress/: the start of real Spark logs in each
 * codec.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "decompress.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct tuner_stream *s;
        struct util_error err;
        const char *line;
        size_t len;
        bool terminated;
        enum tuner_codec codec;
        bool in_progress;
        int fd, r;

        if (size < 1)
                return 0;
        codec = (enum tuner_codec)((data[0] & 7) % 5);
        in_progress = data[0] & 8;
        data++;
        size--;
        fd = memfd_create("eventlog", MFD_CLOEXEC);
        if (fd < 0)
                return 0;
        if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
                close(fd);
                return 0;
        }
        if (tuner_stream_open_fd(fd, "fuzz", codec, in_progress, &s, &err) < 0)
                return 0;
        tuner_stream_set_limits(s, 4096, 4 << 20);
        while ((r = tuner_stream_line(s, &line, &len, &terminated, &err)) > 0)
                if (len > 4096 || line[len] != '\0')
                        __builtin_trap();
        tuner_stream_free(s);
        return 0;
}
