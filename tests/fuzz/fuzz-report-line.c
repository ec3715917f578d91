/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness: `sparkshim report` on untrusted report files (measure/report-read.c):
 * the per-line parse, validation (shim_report_validate) and summary into rows and totals,
 * then the same bytes as a whole file through the bounded line reader (with a small line
 * limit, so that over-long lines are exercised too). The first input byte picks --json (bit
 * 0) and --all (bit 1): the seeds in tests/fuzz/corpus/report-line/ start with '0'..'3'.
 *
 * Built and run by hand (from the source root, after `meson setup build && meson compile -C build`;
 * monitor.c, which holds shim_report_validate, is linked with the build's libraries):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *     -D_GNU_SOURCE -DSPARKSHIM_HAVE_BPF=1 -Ibuild -Ibuild/bpf -Ibpf -Ishim -Imeasure -Ipolicy \
 *     -Icommon $(pkg-config --cflags libnl-genl-3.0 jansson) \
 *     measure/report-read.c shim/monitor.c shim/log.c tests/fuzz/fuzz-report-line.c \
 *     build/shim/libcollect.a build/shim/libinject.a build/bpf/libprobe.a \
 *     build/policy/libpolicy.a build/common/libcommon.a \
 *     $(pkg-config --libs libbpf libnl-genl-3.0 jansson) -lm -o /tmp/fuzz-report-line
 *   /tmp/fuzz-report-line -max_total_time=60 -max_len=65536 /tmp/corpus-report-line
 * tests/fuzz/corpus/report-line
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "report-read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

static void check_totals(const struct shim_report_reader *r)
{
        /* the documented promise: a saturated, never negative, spill total */
        if (r->totals.spills < 0)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct shim_report_reader r;
        struct util_error err;
        bool as_json, all;
        int fd;

        if (!devnull) {
                devnull = fopen("/dev/null", "we");
                util_log_set_level(UTIL_LOG_ERROR); /* bad lines are warnings */
        }
        if (size < 1 || !devnull)
                return 0;
        as_json = data[0] & 1;
        all = data[0] & 2;
        data++;
        size--;

        /* the input as one line */
        shim_report_reader_init(&r, devnull, as_json, all);
        shim_report_reader_line(&r, (const char *)data, size, &err);
        shim_report_print_total(&r);
        check_totals(&r);

        /* and as a file of lines, through the bounded reader */
        fd = memfd_create("report", MFD_CLOEXEC);
        if (fd < 0)
                return 0;
        if (write(fd, data, size) == (ssize_t)size && lseek(fd, 0, SEEK_SET) == 0) {
                shim_report_reader_init(&r, devnull, as_json, all);
                r.line_max = 4096;
                r.input_max = 1 << 20;
                shim_report_reader_fd(&r, fd, "fuzz.jsonl", &err);
                shim_report_print_total(&r);
                check_totals(&r);
        }
        close(fd);
        return 0;
}
