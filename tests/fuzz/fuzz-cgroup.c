/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup v2 and /proc file parsers of shim/collect.c, in memory: the first byte of the
 * input picks the file, the rest is its text as util_read_at() would hand it over (cut to
 * the reader's buffer, the final newline removed). collect.c is included so that its static
 * parsers are reachable; the harness links nothing else of it.
 */
#include "../../measure/collect.c"

#include <assert.h>

#include "fuzz.h"

enum file {
        FILE_CPU_STAT,
        FILE_MEMORY_STAT,
        FILE_MEMORY_EVENTS,
        FILE_MEMORY_CURRENT, /* and memory.peak */
        FILE_IO_STAT,
        FILE_PRESSURE, /* cpu, memory, io */
        FILE_PROC_IO,
        FILE_PROC_STATUS,
        FILE_COUNT,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct util_error err = {0};
        struct collect_cgroup c = {0};
        struct collect_procs p = {0};
        struct collect_psi psi;
        const struct key_field cpu_fields[] = {
            {"usage_usec", &c.cpu_usage_us},       {"user_usec", &c.cpu_user_us},
            {"system_usec", &c.cpu_system_us},     {"nr_periods", &c.cpu_nr_periods},
            {"nr_throttled", &c.cpu_nr_throttled}, {"throttled_usec", &c.cpu_throttled_us},
        };
        const struct key_field memory_fields[] = {
            {"anon", &c.memory_anon},
            {"file", &c.memory_file},
        };
        const struct key_field event_fields[] = {
            {"low", &c.events_low}, {"high", &c.events_high},         {"max", &c.events_max},
            {"oom", &c.events_oom}, {"oom_kill", &c.events_oom_kill},
        };
        enum file file;
        size_t max;
        char *text;
        int r;

        if (size < 1)
                return 0;
        file = (enum file)(data[0] % FILE_COUNT);
        data++;
        size--;
        max = (file == FILE_PROC_IO || file == FILE_PROC_STATUS ? PROC_FILE_MAX : CGROUP_FILE_MAX) -
              1;
        if (size > max)
                return 0; /* util_read_at: -EFBIG, never parsed */
        if (size > 0 && data[size - 1] == '\n')
                size--;
        text = fuzz_strndup(data, size);
        if (!text)
                return 0;

        switch (file) {
        case FILE_CPU_STAT:
                r = parse_keyed("cpu.stat", text, cpu_fields, ELEMENTSOF(cpu_fields), &err);
                break;
        case FILE_MEMORY_STAT:
                r = parse_keyed("memory.stat", text, memory_fields, ELEMENTSOF(memory_fields),
                                &err);
                break;
        case FILE_MEMORY_EVENTS:
                r = parse_keyed("memory.events", text, event_fields, ELEMENTSOF(event_fields),
                                &err);
                break;
        case FILE_MEMORY_CURRENT:
                r = parse_single("memory.current", text, &c.memory_current, &err);
                break;
        case FILE_IO_STAT:
                r = parse_io_stat(text, &c, &err);
                break;
        case FILE_PRESSURE:
                r = parse_pressure("memory.pressure", text, &psi, &err);
                break;
        case FILE_PROC_IO:
                r = parse_proc_io(100, text, &p, &err);
                break;
        case FILE_PROC_STATUS:
                r = parse_proc_status(100, text, &p, &err);
                break;
        default:
                abort();
        }
        if (r < 0) {
                /* set_error() makes the text one printable line, whatever the file held */
                assert(err.error == -r);
                for (const char *s = err.text; *s; s++)
                        assert((unsigned char)*s >= ' ' && *s != 0x7f);
        } else
                assert(r == 0);
        free(text);
        return 0;
}
