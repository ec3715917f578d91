/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness: `sparkshim ingest` on untrusted report lines (tuner/report-ingest.c,
 * tuner_report_line): the whole input as one line, then each of its newline-separated lines,
 * as cli-ingest.c feeds them. What an accepted line yields is checked against the promises of
 * store.h and tuner.h: ids NUL-terminated and non-empty, an exit either a status or a signal,
 * figures non-negative or unknown.
 *
 * Built and run by hand (from the source root, after `meson setup build`):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *     -D_GNU_SOURCE -Ibuild -Ituner -Icommon $(pkg-config --cflags jansson) \
 *     tuner/report-ingest.c tuner/util_jscan.c common/util.c common/log.c
 * tests/fuzz/fuzz-report-ingest.c \
 *     $(pkg-config --libs jansson) -lm -o /tmp/fuzz-report-ingest
 *   /tmp/fuzz-report-ingest -max_total_time=60 -max_len=65536 tests/fuzz/corpus/report-ingest
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "store.h"

static void check(const char *line, size_t len)
{
        struct tuner_executor e;
        struct util_error err;
        int r = tuner_report_line(line, len, &e, &err);

        if (r == 1) {
                if (!memchr(e.app_id, '\0', sizeof(e.app_id)) || !e.app_id[0] ||
                    !memchr(e.executor_id, '\0', sizeof(e.executor_id)) ||
                    !memchr(e.host, '\0', sizeof(e.host)))
                        __builtin_trap();
                if ((e.exit_signal != 0) != (e.exit_status == -1) || e.exit_status > 255)
                        __builtin_trap();
                if (e.cpu_peak_util < 0 || e.wall_seconds < 0 || e.cpu_seconds < 0 ||
                    e.forced_spills < -1 || !(e.burst_ratio <= 1 || isnan(e.burst_ratio)))
                        __builtin_trap();
        } else if (r < 0) {
                if (r != -EINVAL && r != -ENOMEM)
                        __builtin_trap();
                if (!memchr(err.text, '\0', sizeof(err.text)) || !err.text[0])
                        __builtin_trap();
        } else if (r != 0) {
                __builtin_trap();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *p = (const char *)data, *end = p + size;

        check(p, size);
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t len = (size_t)((nl ? nl : end) - p);

                check(p, len);
                p += len + 1;
        }
        return 0;
}
