/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's option string and the pure helpers beside it (byte sizes, anon parsing,
 * statistics file). Data-driven: every valid case with what it sets, every invalid one with
 * the exact line the JVM user sees. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-internal.h"
#include "options.h"
#include "util.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)
#define PiB (UINT64_C(1) << 50)

struct bytes_case {
        const char *text;
        int rc;
        uint64_t bytes;
};

static const struct bytes_case bytes_cases[] = {
    {"0", 0, 0},
    {"512", 0, 512},
    {"1b", 0, 1},
    {"64k", 0, 64 * KiB},
    {"64kb", 0, 64 * KiB},
    {"8m", 0, 8 * MiB},
    {"8MB", 0, 8 * MiB},
    {"1g", 0, GiB},
    {"1gb", 0, GiB},
    {"2t", 0, 2 * TiB},
    {"1p", 0, PiB},
    {"1pb", 0, PiB},
    {" 4G ", 0, 4 * GiB},
    {"007m", 0, 7 * MiB},
    {"9223372036854775807", 0, UINT64_C(9223372036854775807)},
    {"8191p", 0, 8191 * PiB},
    {"9223372036854775808", -ERANGE, 0},
    {"8192p", -ERANGE, 0},
    {"8589934592g", -ERANGE, 0},
    {"", -EINVAL, 0},
    {" ", -EINVAL, 0},
    {"m", -EINVAL, 0},
    {"12x", -EINVAL, 0},
    {"1.5g", -EINVAL, 0}, /* Spark: fractional values are not supported */
    {"-1", -EINVAL, 0},
    {"+1", -EINVAL, 0},
    {"1 g", -EINVAL, 0},
    {"1gib", -EINVAL, 0},
    {"0x10", -EINVAL, 0},
};

Test(options, parse_bytes)
{
        for (size_t i = 0; i < ELEMENTSOF(bytes_cases); i++) {
                const struct bytes_case *c = &bytes_cases[i];
                uint64_t v = 12345;
                int r = jva_parse_bytes(c->text, &v);

                cr_expect_eq(r, c->rc, "jva_parse_bytes(\"%s\") returned %d, expected %d", c->text,
                             r, c->rc);
                if (r == 0 && c->rc == 0)
                        cr_expect_eq(v, c->bytes,
                                     "jva_parse_bytes(\"%s\") = %" PRIu64 ", expected %" PRIu64,
                                     c->text, v, c->bytes);
        }
}

Test(options, defaults)
{
        struct jva_options o;
        struct util_error e;

        cr_assert_eq(jva_options_parse(NULL, &o, &e), 0);
        cr_expect_eq(o.log_level, JVA_LOG_WARN);
        cr_expect_eq(o.cooldown_ms, 500);
        cr_expect_eq(o.max_spills, 32);
        cr_expect_eq(o.stats_interval_s, 10);
        cr_expect_eq(o.psi_window_ms, 1000);
        cr_expect_eq(o.force_bytes, 0);
        cr_expect_str_empty(o.stats);
        cr_expect_not(jva_options_spill_enabled(&o), "no mode is on by default");
        cr_assert_eq(jva_options_parse("", &o, &e), 0, "empty string: %s", e.text);
}

Test(options, every_key)
{
        struct jva_options o;
        struct util_error e = {0};
        const char *text =
            "force-bytes=8m,allow-bytes=64m,allow-fraction=0.25,periodic=1g,records=1000,"
            "cgroup=/sys/fs/cgroup/x,threshold=6g,limit=8g,request=4g,stats=/tmp/s.jsonl,"
            "stats-interval=0,cooldown-ms=250,min-spill=1m,max-spills=7,psi-stall-ms=150,"
            "psi-window-ms=2000,heap-threshold=0.7,log=debug";
        int r = jva_options_parse(text, &o, &e);

        cr_assert_eq(r, 0, "parse failed: %s", e.text);
        cr_expect_eq(o.force_bytes, 8 * MiB);
        cr_expect_eq(o.allow_bytes, 64 * MiB);
        cr_expect_float_eq(o.allow_fraction, 0.25, 1e-12);
        cr_expect_eq(o.periodic_bytes, GiB);
        cr_expect_eq(o.records, 1000);
        cr_expect_str_eq(o.cgroup, "/sys/fs/cgroup/x");
        cr_expect_eq(o.threshold_bytes, 6 * GiB);
        cr_expect_eq(o.limit_bytes, 8 * GiB);
        cr_expect_eq(o.request_bytes, 4 * GiB);
        cr_expect_str_eq(o.stats, "/tmp/s.jsonl");
        cr_expect_eq(o.stats_interval_s, 0);
        cr_expect_eq(o.cooldown_ms, 250);
        cr_expect_eq(o.min_spill_bytes, MiB);
        cr_expect_eq(o.max_spills, 7);
        cr_expect_eq(o.psi_stall_ms, 150);
        cr_expect_eq(o.psi_window_ms, 2000);
        cr_expect_float_eq(o.heap_threshold, 0.7, 1e-12);
        cr_expect_eq(o.log_level, JVA_LOG_DEBUG);
        cr_expect(jva_options_spill_enabled(&o));
}

Test(options, pressure_sources)
{
        struct jva_options o;
        struct util_error e = {0};

        cr_assert_eq(jva_options_parse("allow-bytes=64m,psi-stall-ms=100", &o, &e), 0, "%s",
                     e.text);
        cr_expect_eq(o.psi_window_ms, 1000, "the default window");
        cr_expect(jva_options_pressure_source(&o));
        cr_assert_eq(jva_options_parse("allow-fraction=0.5,heap-threshold=0.8", &o, &e), 0, "%s",
                     e.text);
        cr_expect(jva_options_pressure_source(&o));
        cr_assert_eq(jva_options_parse("force-bytes=8m", &o, &e), 0, "%s", e.text);
        cr_expect_not(jva_options_pressure_source(&o));
}

Test(options, threshold_fraction)
{
        struct jva_options o;
        struct util_error e = {0};

        cr_assert_eq(jva_options_parse("threshold=0.5,limit=8g", &o, &e), 0, "%s", e.text);
        cr_expect_eq(o.threshold_bytes, 4 * GiB, "half of the limit, got %" PRIu64,
                     o.threshold_bytes);
        cr_assert_eq(jva_options_parse("request=2g,threshold=0.75", &o, &e), 0, "%s", e.text);
        cr_expect_eq(o.threshold_bytes, 1536 * MiB, "of the request without a limit");
        cr_assert_eq(jva_options_parse("threshold=1.0,limit=1g,request=512m", &o, &e), 0, "%s",
                     e.text);
        cr_expect_eq(o.threshold_bytes, GiB, "the limit wins over the request");
        cr_assert_eq(jva_options_parse("threshold=1,allow-bytes=1", &o, &e), 0, "%s", e.text);
        cr_expect_eq(o.threshold_bytes, 1, "no decimal point: bytes");
}

struct invalid_case {
        const char *text;
        const char *message; /* what follows "sparkshim-agent: error: " */
};

#define SIZE_RANGE(key, value, min)                                                                \
        key "=" value ": out of range; allowed: " min " to 9223372036854775807 bytes, as a byte "  \
            "size such as 512, 64k, 8m, 1g (suffixes k, m, g, t, p)"
#define NOT_SIZE(key, value)                                                                       \
        key "=" value ": not a size; allowed: a byte size such as 512, 64k, 8m, 1g (suffixes k, "  \
            "m, g, t, p)"
#define FRACTION "a fraction with a decimal point, above 0 and at most 1, such as 0.8"

static const struct invalid_case invalid_cases[] = {
    {"force-bytes=12x", NOT_SIZE("force-bytes", "12x")},
    {"force-bytes=1.5g", NOT_SIZE("force-bytes", "1.5g")},
    {"force-bytes=0", SIZE_RANGE("force-bytes", "0", "1")},
    {"allow-bytes=99999999999p,threshold=1g", SIZE_RANGE("allow-bytes", "99999999999p", "1")},
    {"periodic=-1", NOT_SIZE("periodic", "-1")},
    {"min-spill=1q", NOT_SIZE("min-spill", "1q")},
    {"limit=0", SIZE_RANGE("limit", "0", "1")},
    {"allow-fraction=0.0,threshold=1g", "allow-fraction=0.0: out of range; allowed: " FRACTION},
    {"allow-fraction=1.5,threshold=1g", "allow-fraction=1.5: out of range; allowed: " FRACTION},
    {"allow-fraction=1,threshold=1g", "allow-fraction=1: not a fraction; allowed: " FRACTION},
    {"allow-fraction=half,threshold=1g", "allow-fraction=half: not a fraction; allowed: " FRACTION},
    {"records=0", "records=0: out of range; allowed: an integer from 1 to 2147483647"},
    {"records=2147483648",
     "records=2147483648: out of range; allowed: an integer from 1 to 2147483647"},
    {"records=1k", "records=1k: not a whole number; allowed: an integer from 1 to 2147483647"},
    {"cooldown-ms=86400001",
     "cooldown-ms=86400001: out of range; allowed: an integer from 0 to 86400000"},
    {"stats-interval=-5",
     "stats-interval=-5: not a whole number; allowed: an integer from 0 to 86400"},
    {"cgroup=sys/fs/cgroup",
     "cgroup=sys/fs/cgroup: not an absolute path; allowed: the absolute path of a cgroup v2 "
     "directory"},
    {"stats=out.jsonl",
     "stats=out.jsonl: not an absolute path; allowed: the absolute path of a file to write"},
    {"log=verbose", "log=verbose: unknown level; allowed: error, warn, info, debug"},
    {"log=INFO", "log=INFO: unknown level; allowed: error, warn, info, debug"},
    {"threshold=lots",
     "threshold=lots: not a size or fraction; allowed: a byte size such as 6g, or a fraction "
     "of limit= (or request=) with a decimal point, such as 0.9"},
    {"threshold=1.2,limit=1g",
     "threshold=1.2: out of range; allowed: a byte size such as 6g, or a fraction of limit= "
     "(or request=) with a decimal point, such as 0.9"},
    {"threshold=0.9",
     "threshold=0.9: a fraction needs limit= or request=; allowed: a byte size, or a "
     "fraction together with limit= or request="},
    {"allow-bytes=1g",
     "allow-bytes=1g: applies under pressure only and no pressure source is given; allowed: "
     "allow-bytes together with threshold=, psi-stall-ms= or heap-threshold="},
    {"allow-fraction=0.5",
     "allow-fraction=0.5: applies under pressure only and no pressure source is given; "
     "allowed: allow-fraction together with threshold=, psi-stall-ms= or heap-threshold="},
    {"psi-stall-ms=0", "psi-stall-ms=0: out of range; allowed: an integer from 1 to 10000"},
    {"psi-window-ms=100", "psi-window-ms=100: out of range; allowed: an integer from 500 to 10000"},
    {"psi-stall-ms=600,psi-window-ms=500",
     "psi-stall-ms=600: longer than the window psi-window-ms=500; allowed: a stall at most the "
     "window"},
    {"heap-threshold=1.5", "heap-threshold=1.5: out of range; allowed: a fraction with a decimal "
                           "point, above 0 and at most 1, such as 0.8"},
    {"heap-threshold=1", "heap-threshold=1: not a fraction; allowed: a fraction with a decimal "
                         "point, above 0 and at most 1, such as 0.8"},
    {"limit=1g,request=2g", "request=2g: larger than limit=1g; allowed: a request at most "
                            "the limit"},
    {"bogus=1", "bogus=1: unknown option; allowed: force-bytes, allow-bytes, "
                "allow-fraction, periodic, records, cgroup, threshold, limit, request, "
                "stats, stats-interval, cooldown-ms, min-spill, max-spills, psi-stall-ms, "
                "psi-window-ms, heap-threshold, log"},
    {"Force-Bytes=1m", "Force-Bytes=1m: unknown option; allowed: force-bytes, allow-bytes, "
                       "allow-fraction, periodic, records, cgroup, threshold, limit, "
                       "request, stats, stats-interval, cooldown-ms, min-spill, max-spills, "
                       "psi-stall-ms, psi-window-ms, heap-threshold, log"},
    {"max-spills=-1", "max-spills=-1: not a whole number; allowed: an integer from 0 to "
                      "2147483647"},
    {"max-spills=2147483648", "max-spills=2147483648: out of range; allowed: an integer from 0 "
                              "to 2147483647"},
    {"force-bytes", "force-bytes=: no value; allowed: key=value pairs separated by commas"},
    {"force-bytes=", "force-bytes=: empty value; allowed: force-bytes=VALUE"},
    {"log=info,,force-bytes=1m", "=: empty option; allowed: key=value pairs separated by commas"},
    {"log=info,", "=: empty option; allowed: key=value pairs separated by commas"},
    {"log=info,log=debug", "log=debug: given twice (first log=info); allowed: each option once"},
};

Test(options, invalid)
{
        for (size_t i = 0; i < ELEMENTSOF(invalid_cases); i++) {
                const struct invalid_case *c = &invalid_cases[i];
                struct jva_options o;
                struct util_error e = {0};
                int r = jva_options_parse(c->text, &o, &e);

                cr_expect_lt(r, 0, "\"%s\" was accepted", c->text);
                if (r < 0) {
                        cr_expect_eq(e.error, -r, "\"%s\": error %d, returned %d", c->text, e.error,
                                     r);
                        cr_expect_str_eq(e.text, c->message, "\"%s\":\n  got  %s\n  want %s",
                                         c->text, e.text, c->message);
                }
        }
}

Test(options, no_error_struct)
{
        struct jva_options o;

        cr_expect_eq(jva_options_parse("force-bytes=12x", &o, NULL), -EINVAL);
        cr_expect_eq(jva_options_parse("records=0", &o, NULL), -ERANGE);
}

Test(pressure, memory_stat_anon)
{
        uint64_t v = 0;

        cr_expect_eq(jva_parse_memory_stat_anon("anon 1234\nfile 99\n", &v), 0);
        cr_expect_eq(v, 1234);
        cr_expect_eq(jva_parse_memory_stat_anon("file 99\nanon 77\nkernel 1\n", &v), 0);
        cr_expect_eq(v, 77);
        cr_expect_eq(jva_parse_memory_stat_anon("anon_thp 5\nanon 6", &v), 0,
                     "anon_thp is not anon");
        cr_expect_eq(v, 6);
        cr_expect_eq(jva_parse_memory_stat_anon("file 99\n", &v), -ENOENT);
        cr_expect_eq(jva_parse_memory_stat_anon("anon x\n", &v), -EINVAL);
        cr_expect_eq(jva_parse_memory_stat_anon("anon 12x\n", &v), -EINVAL);
}

Test(pressure, proc_status_anon)
{
        uint64_t v = 0;

        cr_expect_eq(
            jva_parse_proc_status_anon("Name:\tjava\nRssAnon:\t  2048 kB\nRssFile: 1 kB\n", &v), 0);
        cr_expect_eq(v, 2048 * KiB);
        cr_expect_eq(jva_parse_proc_status_anon("Name:\tjava\n", &v), -ENOENT);
        cr_expect_eq(jva_parse_proc_status_anon("RssAnon:\t2048 MB\n", &v), -EINVAL);
}

Test(pressure, read_self)
{
        uint64_t v = 0;
        int r = jva_read_anon(NULL, &v);

        cr_assert_eq(r, 0, "reading /proc/self/status: %s", strerror(-r));
        cr_expect_gt(v, 0, "this process has anonymous memory");
        cr_expect_eq(jva_read_anon("/nonexistent-cgroup", &v), -ENOENT);
}

Test(stats, json_lines)
{
        char path[] = "/tmp/sparkshim-agent-stats-XXXXXX";
        struct jva_stats stats;
        struct jva_operator op;
        struct jva_hook hooks[2] = {
            {.name = "A.b", .state = JVA_HOOK_ON},
            {.name = "C.d", .state = JVA_HOOK_OFF, .reason = "method \"d\" not found"},
        };
        struct jva_pressure pressure = {
            .source = "proc", .path = "/proc/self/status", .anon_bytes = 10, .peak_anon_bytes = 20};
        char buf[4096];
        FILE *f;
        size_t n;
        int fd = mkstemp(path);

        cr_assert_geq(fd, 0);
        close(fd);
        jva_stats_init(&stats);
        jva_stats_count_call(&stats, "UnsafeExternalSorter", 100);
        jva_stats_count_call(&stats, "UnsafeExternalSorter", 50);
        jva_stats_count_call(&stats, "BytesToBytesMap", 7);
        jva_stats_count_spill(&stats, "UnsafeExternalSorter", JVA_REASON_FORCE, 4096, 1000, 0,
                              false);
        jva_stats_count_spill(&stats, "UnsafeExternalSorter", JVA_REASON_PRESSURE, 0, 3000, 500,
                              false);
        cr_assert(jva_stats_get(&stats, "UnsafeExternalSorter", &op));
        cr_expect_eq(op.calls, 2);
        cr_expect_eq(op.requested_bytes, 150);
        cr_expect_eq(op.forced_spills[JVA_REASON_FORCE], 1);
        cr_expect_eq(op.forced_spills[JVA_REASON_PRESSURE], 1);
        cr_expect_eq(op.empty_spills, 1);
        cr_expect_eq(op.released_bytes, 4096);
        cr_expect_eq(op.spill_ns_max, 3000);
        cr_expect_eq(op.reaction_ns_max, 500);
        cr_expect_not(jva_stats_get(&stats, "Nope", &op));

        cr_assert_eq(jva_stats_write(&stats, path, true, hooks, 2, &pressure), 0);
        f = fopen(path, "r");
        cr_assert(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        unlink(path);
        cr_expect(strstr(buf, "\"record\":\"agent\""), "%s", buf);
        cr_expect(strstr(buf, "\"final\":true"), "%s", buf);
        cr_expect(strstr(buf, "{\"record\":\"hook\",\"hook\":\"A.b\",\"state\":\"on\"}\n"), "%s",
                  buf);
        cr_expect(strstr(buf, "\"reason\":\"method \\\"d\\\" not found\""), "escaped: %s", buf);
        cr_expect(strstr(buf, "\"peak_anon_bytes\":20"), "%s", buf);
        cr_expect(strstr(buf, "{\"record\":\"operator\",\"operator\":\"UnsafeExternalSorter\","
                              "\"calls\":2,\"requested_bytes\":150,\"forced_spills\":2,"
                              "\"forced_by\":{\"force-bytes\":1,\"periodic\":0,\"pressure\":1},"
                              "\"empty_spills\":1,\"failed_spills\":0,\"released_bytes\":4096,"),
                  "%s", buf);
        cr_expect(strstr(buf, "\"operator\":\"BytesToBytesMap\",\"calls\":1,"), "%s", buf);
        n = 0;
        for (char *p = buf; *p; p++)
                n += *p == '\n';
        cr_expect_eq(n, 6, "agent + 2 hooks + pressure + 2 operators, got %zu lines", n);
}

Test(stats, denials)
{
        char path[] = "/tmp/sparkshim-agent-stats-XXXXXX";
        struct jva_stats stats;
        struct jva_operator op;
        struct jva_pressure pressure = {
            .source = "proc", .path = "/proc/self/status", .execution_memory_bytes = 455501414};
        char buf[4096];
        FILE *f;
        size_t n;
        int fd = mkstemp(path);

        cr_assert_geq(fd, 0);
        close(fd);
        jva_stats_init(&stats);
        jva_stats_count_call(&stats, "ExternalSorter", 5 << 20);
        jva_stats_count_denial(&stats, "ExternalSorter", JVA_REASON_FORCE, 10 << 20, 0);
        jva_stats_count_denial(&stats, "ExternalSorter", JVA_REASON_PRESSURE, 9 << 20, 700);
        jva_stats_count_spill(&stats, "ExternalSorter", JVA_REASON_FORCE, 0, 100, 0, true);
        jva_stats_count_capped(&stats, "ExternalSorter");
        jva_stats_count_capped(&stats, "ExternalSorter");
        jva_stats_count_capped(&stats, "ExternalSorter");
        cr_assert(jva_stats_get(&stats, "ExternalSorter", &op));
        cr_expect_eq(op.capped, 3, "capped %" PRIu64, op.capped);
        cr_expect_eq(op.denials, 2, "denials %" PRIu64, op.denials);
        cr_expect_eq(op.forced_spills[JVA_REASON_FORCE], 1);
        cr_expect_eq(op.forced_spills[JVA_REASON_PRESSURE], 1);
        cr_expect_eq(op.released_bytes, 19 << 20, "released %" PRIu64, op.released_bytes);
        cr_expect_eq(op.failed_spills, 1);
        cr_expect_eq(op.spill_ns_total, 100, "denials are not timed: %" PRIu64, op.spill_ns_total);
        cr_expect_eq(op.reactions, 1);
        cr_expect_eq(op.reaction_ns_max, 700);

        cr_assert_eq(jva_stats_write(&stats, path, false, NULL, 0, &pressure), 0);
        f = fopen(path, "r");
        cr_assert(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        unlink(path);
        cr_expect(strstr(buf, "\"execution_memory_bytes\":455501414,\"anon_over\":false,"
                              "\"episodes\":0,\"psi\":null,\"heap\":null}\n"),
                  "%s", buf);
        cr_expect(strstr(buf, "\"operator\":\"ExternalSorter\",\"calls\":1,"
                              "\"requested_bytes\":5242880,\"forced_spills\":2,"),
                  "%s", buf);
        cr_expect(strstr(buf, "\"reaction_ns_max\":700,\"denials\":2,\"decision_ns_total\":0,"
                              "\"decision_ns_max\":0,\"capped\":3}\n"),
                  "%s", buf);
}

Test(stats, unwritable)
{
        struct jva_stats stats;

        jva_stats_init(&stats);
        cr_expect_eq(jva_stats_write(&stats, "/nonexistent-dir/stats.jsonl", true, NULL, 0, NULL),
                     -ENOENT);
}

Test(stats, pressure_sources)
{
        struct jva_stats stats;
        struct jva_pressure pressure = {
            .source = "cgroup",
            .path = "/sys/fs/cgroup/x",
            .threshold_bytes = 1000,
            .under_pressure = true,
            .episodes = 2,
            .psi_on = true,
            .psi_path = "/sys/fs/cgroup/x/memory.pressure",
            .psi_trigger = true,
            .psi_stall_us = 200000,
            .psi_window_us = 2000000,
            .psi_events = 3,
            .psi_over = true,
            .heap_on = true,
            .heap_after_gc_bytes = 600,
            .peak_heap_after_gc_bytes = 700,
            .heap_max_bytes = 1024,
            .heap_threshold_bytes = 512,
            .heap_crossings = 1,
            .heap_over = true,
        };
        char path[] = "/tmp/sparkshim-agent-stats-XXXXXX", buf[4096];
        int fd = mkstemp(path);
        size_t n;
        FILE *f;

        cr_assert(fd >= 0);
        close(fd);
        jva_stats_init(&stats);
        cr_assert_eq(jva_stats_write(&stats, path, true, NULL, 0, &pressure), 0);
        f = fopen(path, "r");
        cr_assert(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        unlink(path);
        cr_expect(strstr(buf,
                         "\"episodes\":2,\"psi\":{\"path\":\"/sys/fs/cgroup/x/memory.pressure\","
                         "\"trigger\":true,\"stall_us\":200000,\"window_us\":2000000,"
                         "\"events\":3,\"over\":true},\"heap\":{\"after_gc_bytes\":600,"
                         "\"peak_after_gc_bytes\":700,\"max_bytes\":1024,"
                         "\"threshold_bytes\":512,\"crossings\":1,\"over\":true}}\n"),
                  "%s", buf);
}
