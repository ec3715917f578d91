/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster policy: defaults, valid and invalid documents, loading and the owner check. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"
#include "test_helpers.h"
#include "util.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

enum field_type { F_STRING, F_BOOL, F_DOUBLE, F_U64, F_UNSIGNED, F_ENUM, F_OVERRIDES };

static const struct {
        const char *name;
        enum field_type type;
        size_t offset;
        const char *const *enum_names;
} fields[] = {
#define FIELD(n, t)                                                                                \
        {                                                                                          \
#n, t, offsetof(struct policy, n), NULL                                            \
        }
    FIELD(cgroup_parent, F_STRING),
    FIELD(cpu_unlimited, F_BOOL),
    FIELD(overcommit, F_DOUBLE),
    FIELD(millicores_min, F_U64),
    FIELD(millicores_max, F_U64),
    FIELD(burst_ratio_default, F_DOUBLE),
    FIELD(burst_ratio_max, F_DOUBLE),
    {"protection", F_ENUM, offsetof(struct policy, protection),
     (const char *const[]){"low", "min", "none", NULL}},
    FIELD(memory_high_enabled, F_BOOL),
    FIELD(memory_high_factor, F_DOUBLE),
    FIELD(overhead_min_bytes, F_U64),
    FIELD(overhead_factor, F_DOUBLE),
    FIELD(memory_limit_max, F_U64),
    FIELD(pids_max, F_U64),
    FIELD(io_weight, F_UNSIGNED),
    FIELD(overrides, F_OVERRIDES),
    {"out_of_bounds", F_ENUM, offsetof(struct policy, out_of_bounds),
     (const char *const[]){"reject", "clamp", NULL}},
    {"fail_mode", F_ENUM, offsetof(struct policy, fail_mode),
     (const char *const[]){"closed", "open", NULL}},
    FIELD(grace_seconds, F_UNSIGNED),
    FIELD(report_path, F_STRING),
    FIELD(report_socket, F_STRING),
    FIELD(report_prometheus, F_STRING),
    FIELD(report_interval_seconds, F_UNSIGNED),
    {"report_sink_failure", F_ENUM, offsetof(struct policy, report_sink_failure),
     (const char *const[]){"warn", "refuse", NULL}},
    FIELD(agent.enabled, F_BOOL),
    FIELD(agent.path, F_STRING),
    {"agent.injection", F_ENUM, offsetof(struct policy, agent.injection),
     (const char *const[]){"auto", "agentpath", "java_tool_options", NULL}},
    FIELD(agent.force_bytes, F_U64),
    FIELD(agent.periodic_bytes, F_U64),
    FIELD(agent.allow_bytes, F_U64),
    FIELD(agent.allow_fraction, F_DOUBLE),
    FIELD(agent.records, F_U64),
    {"agent.threshold", F_ENUM, offsetof(struct policy, agent.threshold),
     (const char *const[]){"none", "bytes", "request", "limit", NULL}},
    FIELD(agent.threshold_bytes, F_U64),
    FIELD(agent.threshold_fraction, F_DOUBLE),
    FIELD(agent.cooldown_ms, F_U64),
    FIELD(agent.min_spill_bytes, F_U64),
    FIELD(agent.max_spills, F_U64),
    FIELD(agent.psi_stall_ms, F_U64),
    FIELD(agent.psi_window_ms, F_U64),
    FIELD(agent.heap_threshold, F_DOUBLE),
    {"agent.log", F_ENUM, offsetof(struct policy, agent.log),
     (const char *const[]){"error", "warn", "info", "debug", NULL}},
    FIELD(kubernetes_init, F_BOOL),
    FIELD(tuner.db, F_STRING),
    FIELD(tuner.job_key, F_STRING),
    FIELD(tuner.history_runs, F_UNSIGNED),
    FIELD(tuner.failure_bound, F_DOUBLE),
    FIELD(tuner.runtime_allowance, F_DOUBLE),
    FIELD(tuner.runtime_target, F_DOUBLE),
    FIELD(tuner.work_target, F_DOUBLE),
    FIELD(tuner.cpu_target, F_DOUBLE),
    FIELD(tuner.memory_target, F_DOUBLE),
    FIELD(tuner.seed, F_U64),
    FIELD(tuner.heap_min, F_U64),
    FIELD(tuner.heap_max, F_U64),
    FIELD(tuner.overhead_max, F_U64),
    FIELD(tuner.spill_fraction_min, F_DOUBLE),
    FIELD(tuner.spill_fraction_max, F_DOUBLE),
    FIELD(tuner.partitions_min, F_U64),
    FIELD(tuner.partitions_max, F_U64),
    FIELD(rolling.enabled, F_BOOL),
    FIELD(rolling.grace_seconds, F_U64),
    FIELD(rolling.min_age_seconds, F_U64),
    FIELD(rolling.disk_write_bytes, F_U64),
    FIELD(rolling.disk_write_cooldown_seconds, F_U64),
    FIELD(rolling.age_seconds, F_U64),
    FIELD(rolling.age_cooldown_seconds, F_U64),
    FIELD(rolling.memory_high_events, F_U64),
    FIELD(rolling.memory_high_window_seconds, F_U64),
    FIELD(rolling.memory_high_cooldown_seconds, F_U64),
    FIELD(rolling.pressure_some_percent, F_DOUBLE),
    FIELD(rolling.pressure_full_percent, F_DOUBLE),
    FIELD(rolling.pressure_window_seconds, F_U64),
    FIELD(rolling.pressure_cooldown_seconds, F_U64),
    FIELD(rolling.spills_ineffective, F_U64),
    FIELD(rolling.spills_fraction, F_DOUBLE),
    FIELD(rolling.spills_window_seconds, F_U64),
    FIELD(rolling.spills_cooldown_seconds, F_U64),
#undef FIELD
};

/* The field i of p as text (doubles with %.17g). */
static void field_text(const struct policy *p, size_t i, char *buf, size_t size)
{
        const void *at = (const char *)p + fields[i].offset;

        buf[0] = '\0';
        switch (fields[i].type) {
        case F_STRING:
                snprintf(buf, size, "%s", (const char *)at);
                break;
        case F_BOOL:
                snprintf(buf, size, "%s", *(const bool *)at ? "true" : "false");
                break;
        case F_DOUBLE:
                snprintf(buf, size, "%.17g", *(const double *)at);
                break;
        case F_U64:
                snprintf(buf, size, "%" PRIu64, *(const uint64_t *)at);
                break;
        case F_UNSIGNED:
                snprintf(buf, size, "%u", *(const unsigned *)at);
                break;
        case F_ENUM:
                snprintf(buf, size, "%s", fields[i].enum_names[*(const int *)at]);
                break;
        case F_OVERRIDES: {
                unsigned bits = *(const unsigned *)at;
                size_t used = 0;
                for (unsigned bit = 1; bit <= POLICY_OVERRIDE_NAME; bit <<= 1)
                        if (bits & bit)
                                used += (size_t)snprintf(
                                    buf + used, size - used, "%s%s", used ? "," : "",
                                    policy_override_name((enum policy_override)bit));
                break;
        }
        }
}

/* Check one "key=value" line of an .expect file against the parsed policy. */
static void check_field(const struct policy *p, const char *file, const char *key,
                        const char *expected)
{
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                char actual[POLICY_PATH_MAX + 1];

                if (strcmp(fields[i].name, key) != 0)
                        continue;
                if (fields[i].type == F_DOUBLE) {
                        double want = strtod(expected, NULL);
                        double got = *(const double *)((const char *)p + fields[i].offset);
                        cr_expect(fabs(want - got) < 1e-12, "%s: %s is %.17g, expected %s", file,
                                  key, got, expected);
                        return;
                }
                field_text(p, i, actual, sizeof(actual));
                cr_expect_str_eq(actual, expected, "%s: %s is \"%s\", expected \"%s\"", file, key,
                                 actual, expected);
                return;
        }
        cr_expect_fail("%s: unknown field %s in the .expect file", file, key);
}

/* Field by field: struct padding makes memcmp() meaningless. */
static void check_same_policy(const struct policy *a, const struct policy *b, const char *what)
{
        cr_expect_eq(a->version, b->version, "%s: version %u != %u", what, a->version, b->version);
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                char x[POLICY_PATH_MAX + 1], y[POLICY_PATH_MAX + 1];
                field_text(a, i, x, sizeof(x));
                field_text(b, i, y, sizeof(y));
                cr_expect_str_eq(x, y, "%s: %s \"%s\" != \"%s\"", what, fields[i].name, x, y);
        }
}

static void check_expect_file(const struct policy *p, const char *expect_path)
{
        char *text = read_text(expect_path, NULL);

        if (!text)
                return; /* a valid case without expectations only has to parse */
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                char *eq = strchr(line, '=');
                cr_assert(eq, "%s: line without '=': %s", expect_path, line);
                *eq = '\0';
                check_field(p, expect_path, line, eq + 1);
        }
        free(text);
}

Test(policy, defaults)
{
        struct policy p;

        policy_init_defaults(&p);
        cr_expect_eq(p.version, 1, "version %u", p.version);
        cr_expect_str_eq(p.cgroup_parent, "sparkshim", "cgroup_parent %s", p.cgroup_parent);
        cr_expect(!p.cpu_unlimited, "cpu_unlimited by default");
        cr_expect_eq(p.overcommit, 2.0, "overcommit %g", p.overcommit);
        cr_expect_eq(p.millicores_min, 1, "millicores_min %" PRIu64, p.millicores_min);
        cr_expect_eq(p.millicores_max, 256000, "millicores_max %" PRIu64, p.millicores_max);
        cr_expect_eq(p.burst_ratio_default, 0.0, "burst default %g", p.burst_ratio_default);
        cr_expect_eq(p.burst_ratio_max, 1.0, "burst max %g", p.burst_ratio_max);
        cr_expect_eq(p.protection, POLICY_PROTECTION_LOW, "protection %d", (int)p.protection);
        cr_expect(!p.memory_high_enabled, "memory.high off by default");
        cr_expect_eq(p.memory_high_factor, 0.9, "high factor %g", p.memory_high_factor);
        cr_expect_eq(p.overhead_min_bytes, 384 * MiB, "overhead min %" PRIu64,
                     p.overhead_min_bytes);
        cr_expect_eq(p.overhead_factor, 0.10, "overhead factor %g", p.overhead_factor);
        cr_expect_eq(p.memory_limit_max, 0, "limit max %" PRIu64, p.memory_limit_max);
        cr_expect_eq(p.pids_max, 0, "pids max %" PRIu64, p.pids_max);
        cr_expect_eq(p.io_weight, 0, "io weight %u", p.io_weight);
        cr_expect_eq(p.overrides, 0x1ffu, "overrides 0x%x", p.overrides);
        cr_expect_eq(p.out_of_bounds, POLICY_BOUNDS_REJECT, "out_of_bounds %d",
                     (int)p.out_of_bounds);
        cr_expect_eq(p.fail_mode, POLICY_FAIL_CLOSED, "fail_mode %d", (int)p.fail_mode);
        cr_expect_eq(p.grace_seconds, 10, "grace %u", p.grace_seconds);
        cr_expect_str_eq(p.report_path, "", "report path %s", p.report_path);
        cr_expect_eq(p.report_interval_seconds, 10, "report interval %u",
                     p.report_interval_seconds);
        cr_expect_eq(p.report_sink_failure, POLICY_SINK_WARN, "sink_failure %d",
                     (int)p.report_sink_failure);
        /* the agent: off, and when on, a threshold at the memory request */
        cr_expect(!p.agent.enabled, "agent on by default");
        cr_expect_str_eq(p.agent.path, "", "agent path %s", p.agent.path);
        cr_expect_eq(p.agent.injection, POLICY_AGENT_INJECT_AUTO, "injection %d",
                     (int)p.agent.injection);
        cr_expect_eq(p.agent.threshold, POLICY_AGENT_THRESHOLD_REQUEST, "threshold %d",
                     (int)p.agent.threshold);
        cr_expect_eq(p.agent.threshold_fraction, 1.0, "threshold fraction %g",
                     p.agent.threshold_fraction);
        cr_expect(p.agent.force_bytes == 0 && p.agent.periodic_bytes == 0 &&
                      p.agent.allow_bytes == 0 && p.agent.allow_fraction == 0 &&
                      p.agent.records == 0,
                  "a spill mode is on by default");
        cr_expect_eq(p.agent.cooldown_ms, 500, "cooldown %" PRIu64, p.agent.cooldown_ms);
        cr_expect_eq(p.agent.min_spill_bytes, 0, "min spill %" PRIu64, p.agent.min_spill_bytes);
        cr_expect_eq(p.agent.max_spills, 32, "max spills %" PRIu64, p.agent.max_spills);
        cr_expect_eq(p.agent.log, POLICY_AGENT_LOG_WARN, "log %d", (int)p.agent.log);
        cr_expect_str_eq(policy_override_name(POLICY_OVERRIDE_AGENT), "agent", "override name");
        cr_expect(!p.kubernetes_init, "kubernetes.init on by default");
        /* rolling: off, and when a trigger is set, SIGPWR then TERM after 10 minutes */
        cr_expect(!p.rolling.enabled, "rolling on by default");
        cr_expect_eq(p.rolling.grace_seconds, 600, "rolling grace %" PRIu64,
                     p.rolling.grace_seconds);
        cr_expect(p.rolling.disk_write_bytes == 0 && p.rolling.age_seconds == 0 &&
                      p.rolling.memory_high_events == 0 && p.rolling.pressure_some_percent == 0 &&
                      p.rolling.pressure_full_percent == 0 && p.rolling.spills_ineffective == 0,
                  "a rolling trigger is on by default");
        cr_expect_eq(p.rolling.memory_high_window_seconds, 60, "window %" PRIu64,
                     p.rolling.memory_high_window_seconds);
        cr_expect_eq(p.rolling.age_cooldown_seconds, 300, "cooldown %" PRIu64,
                     p.rolling.age_cooldown_seconds);
}

Test(policy, valid_fixtures)
{
        char dir[4096], *names[FIXTURE_LIST_MAX];
        size_t n;

        fixture_path("policy/valid", dir, sizeof(dir));
        n = list_fixtures(dir, ".json", names);
        cr_assert_geq(n, 6, "only %zu valid policy fixtures in %s", n, dir);
        for (size_t i = 0; i < n; i++) {
                char path[8192], expect[8192];
                struct util_error err = {0};
                struct policy p, q;
                size_t len;
                char *text;
                int r;

                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                r = policy_load_file(path, false, &p, &err);
                cr_expect_eq(r, 0, "%s: rc %d: %s", path, r, err.text);
                if (r < 0)
                        continue;
                cr_expect_eq(p.version, 1, "%s: version %u", path, p.version);

                /* policy_parse gives the same, also without a terminating NUL in range */
                text = read_text(path, &len);
                cr_assert(text, "cannot read %s", path);
                text[len] = 'x';
                r = policy_parse(text, len, path, &q, &err);
                cr_expect_eq(r, 0, "%s: policy_parse rc %d: %s", path, r, err.text);
                check_same_policy(&p, &q, path);
                free(text);

                sibling_path(path, ".json", ".expect", expect, sizeof(expect));
                check_expect_file(&p, expect);
                free(names[i]);
        }
}

Test(policy, invalid_fixtures)
{
        char dir[4096], *names[FIXTURE_LIST_MAX];
        size_t n;

        fixture_path("policy/invalid", dir, sizeof(dir));
        n = list_fixtures(dir, ".json", names);
        cr_assert_geq(n, 20, "only %zu invalid policy fixtures in %s", n, dir);
        for (size_t i = 0; i < n; i++) {
                char path[8192], errpath[8192], prefix[8300];
                struct util_error err = {0};
                struct policy p;
                char *want;
                int r;

                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                sibling_path(path, ".json", ".err", errpath, sizeof(errpath));
                want = read_text(errpath, NULL);
                cr_assert(want, "%s has no .err file", path);
                chomp(want);
                cr_assert(want[0], "%s is empty", errpath);

                memset(&p, 0xa5, sizeof(p));
                r = policy_load_file(path, false, &p, &err);
                cr_expect_eq(r, -EINVAL, "%s: rc %d, expected -EINVAL (%s)", path, r, err.text);
                cr_expect_eq(err.error, EINVAL, "%s: err.error %d", path, err.error);
                cr_expect(strstr(err.text, want) != NULL,
                          "%s:\n  error    \"%s\"\n  expected \"%s\"", names[i], err.text, want);
                /* one line, starting with the file name */
                cr_expect(strchr(err.text, '\n') == NULL, "%s: the error has a newline: %s", path,
                          err.text);
                snprintf(prefix, sizeof(prefix), "%s:", path);
                cr_expect(strncmp(err.text, prefix, strlen(prefix)) == 0,
                          "%s: the error does not start with the file: %s", path, err.text);
                /* on error the output is untouched */
                cr_expect_eq(p.version, 0xa5a5a5a5u, "%s: output changed on error", path);
                free(want);
                free(names[i]);
        }
}

Test(policy, example_in_conf_parses)
{
        const char *dir = getenv("CONF_DIR");
        char path[4096], expect[4096];
        struct util_error err = {0};
        struct policy p;
        int r;

        cr_assert(dir, "CONF_DIR is not set: run the suite through meson test");
        snprintf(path, sizeof(path), "%s/policy.json", dir);
        r = policy_load_file(path, false, &p, &err);
        cr_assert_eq(r, 0, "%s: rc %d: %s", path, r, err.text);
        /* the example is the full fixture: same expectations */
        fixture_path("policy/valid/full.expect", expect, sizeof(expect));
        check_expect_file(&p, expect);
}

Test(policy, string_source_and_length)
{
        static const char text[] = "{\"version\": 1, \"cpu\": {\"overcommit\": 0}}";
        struct util_error err = {0};
        struct policy p;
        int r;

        r = policy_parse(text, strlen(text), NULL, &p, &err);
        cr_expect_eq(r, -EINVAL, "rc %d", r);
        cr_expect(strncmp(err.text, "<string>:1:38: cpu.overcommit: 0 is out of range", 48) == 0,
                  "error \"%s\"", err.text);

        /* only len bytes count: the document is cut before its end */
        r = policy_parse(text, 14, "cut", &p, &err);
        cr_expect_eq(r, -EINVAL, "rc %d", r);
        cr_expect(strncmp(err.text, "cut:1:", 6) == 0, "error \"%s\"", err.text);

        /* err is optional */
        r = policy_parse(text, strlen(text), "x", &p, NULL);
        cr_expect_eq(r, -EINVAL, "rc %d without err", r);
}

Test(policy, key_control_characters_stay_on_one_line)
{
        static const char text[] = "{\"version\": 1, \"a\\nb\": 1}";
        struct util_error err = {0};
        struct policy p;
        int r;

        r = policy_parse(text, strlen(text), "t", &p, &err);
        cr_expect_eq(r, -EINVAL, "rc %d", r);
        cr_expect(strchr(err.text, '\n') == NULL, "newline in \"%s\"", err.text);
        cr_expect(strstr(err.text, "t:1:16: a?b: unknown key") != NULL, "error \"%s\"", err.text);
}

/* A temporary policy file with the given mode (and owner, when root can chown). */
static void make_policy_file(char path[64], mode_t mode)
{
        static const char text[] = "{\"version\": 1}\n";
        int fd;

        snprintf(path, 64, "/tmp/sparkshim-policy-XXXXXX");
        fd = mkstemp(path);
        cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
        cr_assert_eq(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1), "write");
        cr_assert_eq(fchmod(fd, mode), 0, "fchmod %o: %s", (unsigned)mode, strerror(errno));
        close(fd);
}

Test(policy, owner_check_rejects_group_or_world_writable)
{
        static const mode_t modes[] = {0666, 0664, 0646, 0620, 0602};

        for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
                char path[64], want[256];
                struct util_error err = {0};
                struct policy p;
                int r;

                make_policy_file(path, modes[i]);
                r = policy_load_file(path, true, &p, &err);
                cr_expect_eq(r, -EPERM, "mode %04o: rc %d (%s)", (unsigned)modes[i], r, err.text);
                cr_expect_eq(err.error, EPERM, "err.error %d", err.error);
                snprintf(want, sizeof(want),
                         "%s: owned by uid %u and mode %04o; the policy must be "
                         "owned by root and not writable by group or others",
                         path, (unsigned)geteuid(), (unsigned)modes[i]);
                cr_expect_str_eq(err.text, want, "error \"%s\", expected \"%s\"", err.text, want);

                /* without the check the same file loads */
                r = policy_load_file(path, false, &p, &err);
                cr_expect_eq(r, 0, "mode %04o without the check: rc %d (%s)", (unsigned)modes[i], r,
                             err.text);
                unlink(path);
        }
}

Test(policy, owner_check_accepts_root_owned_0644)
{
        char path[64];
        struct util_error err = {0};
        struct policy p;
        int r;

        if (geteuid() != 0)
                cr_skip_test("not root: a root-owned file cannot be made here");
        make_policy_file(path, 0644);
        r = policy_load_file(path, true, &p, &err);
        cr_expect_eq(r, 0, "root-owned 0644: rc %d (%s)", r, err.text);

        /* owned by someone else: refused even when not writable by others */
        cr_assert_eq(chown(path, 1000, 1000), 0, "chown: %s", strerror(errno));
        r = policy_load_file(path, true, &p, &err);
        cr_expect_eq(r, -EPERM, "uid 1000: rc %d", r);
        cr_expect(strstr(err.text, "owned by uid 1000 and mode 0644") != NULL, "error \"%s\"",
                  err.text);
        unlink(path);
}

Test(policy, load_errors)
{
        struct util_error err = {0};
        char path[64], link[80], big[64];
        struct policy p;
        int r, fd;

        r = policy_load_file("/nonexistent/sparkshim/policy.json", false, &p, &err);
        cr_expect_eq(r, -ENOENT, "missing file: rc %d", r);
        cr_expect_str_eq(
            err.text, "/nonexistent/sparkshim/policy.json: cannot open: No such file or directory",
            "error \"%s\"", err.text);

        /* symbolic links are not followed */
        make_policy_file(path, 0644);
        snprintf(link, sizeof(link), "%s.link", path);
        cr_assert_eq(symlink(path, link), 0, "symlink: %s", strerror(errno));
        r = policy_load_file(link, false, &p, &err);
        cr_expect_eq(r, -ELOOP, "symlink: rc %d (%s)", r, err.text);
        cr_expect(strstr(err.text, "symbolic link") != NULL, "error \"%s\"", err.text);
        unlink(link);
        unlink(path);

        /* a directory is not a policy */
        r = policy_load_file("/tmp", false, &p, &err);
        cr_expect_eq(r, -EINVAL, "directory: rc %d", r);
        cr_expect_str_eq(err.text, "/tmp: not a regular file", "error \"%s\"", err.text);

        /* more than 1 MiB */
        snprintf(big, sizeof(big), "/tmp/sparkshim-big-XXXXXX");
        fd = mkstemp(big);
        cr_assert(fd >= 0, "mkstemp");
        cr_assert_eq(ftruncate(fd, 1024 * 1024 + 1), 0, "ftruncate");
        close(fd);
        r = policy_load_file(big, false, &p, &err);
        cr_expect_eq(r, -EFBIG, "big file: rc %d (%s)", r, err.text);
        unlink(big);

        /* exactly 1 MiB of whitespace around a document is fine */
        fd = open(big, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        cr_assert(fd >= 0, "open %s", big);
        cr_assert_eq(write(fd, "{\"version\":1}", 13), 13, "write");
        for (size_t left = 1024 * 1024 - 13; left > 0;) {
                char spaces[4096];
                size_t n = left < sizeof(spaces) ? left : sizeof(spaces);
                memset(spaces, ' ', n);
                cr_assert_eq(write(fd, spaces, n), (ssize_t)n, "write");
                left -= n;
        }
        close(fd);
        r = policy_load_file(big, false, &p, &err);
        cr_expect_eq(r, 0, "1 MiB file: rc %d (%s)", r, err.text);
        unlink(big);
}

Test(policy, cgroup_paths)
{
        static const struct {
                const char *in;
                int rc;
                const char *out;
        } cases[] = {
            {"sparkshim", 0, "sparkshim"},
            {"/sparkshim", 0, "sparkshim"},
            {"//a/b//", 0, "a/b"},
            {"a//b", -EINVAL, NULL}, /* only leading and trailing slashes go */
            {"/kubepods.slice/spark-1_x/", 0, "kubepods.slice/spark-1_x"},
            {"a/..b/c.", 0, "a/..b/c."},
            {"", -EINVAL, NULL},
            {"/", -EINVAL, NULL},
            {"..", -EINVAL, NULL},
            {"a/../b", -EINVAL, NULL},
            {"./a", -EINVAL, NULL},
            {"a/.", -EINVAL, NULL},
            {"a b", -EINVAL, NULL},
            {"a:b", -EINVAL, NULL},
            {"a\\b", -EINVAL, NULL},
            {"sp\xc3\xa4rk", -EINVAL, NULL},
        };
        char out[POLICY_PATH_MAX], longname[300], small[8];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int r = policy_normalize_cgroup_path(cases[i].in, out, sizeof(out));
                cr_expect_eq(r, cases[i].rc, "\"%s\": rc %d, expected %d", cases[i].in, r,
                             cases[i].rc);
                if (r == 0 && cases[i].out)
                        cr_expect_str_eq(out, cases[i].out, "\"%s\" -> \"%s\", expected \"%s\"",
                                         cases[i].in, out, cases[i].out);
        }
        memset(longname, 'a', 256);
        longname[256] = '\0';
        cr_expect_eq(policy_normalize_cgroup_path(longname, out, sizeof(out)), -ENAMETOOLONG,
                     "a 256-character component is too long");
        cr_expect_eq(policy_normalize_cgroup_path("abcdefgh", small, sizeof(small)), -ENAMETOOLONG,
                     "8 characters do not fit 8 bytes");
        cr_expect_eq(policy_normalize_cgroup_path("/abcdefg/", small, sizeof(small)), 0,
                     "7 characters fit 8 bytes");
}

Test(policy, overrides)
{
        struct policy p;
        struct util_error err = {0};
        int r;

        cr_expect_str_eq(policy_override_name(POLICY_OVERRIDE_CGROUP_PARENT), "cgroup_parent",
                         "name of cgroup_parent");
        cr_expect_null(policy_override_name((enum policy_override)3), "two bits have no name");

        policy_init_defaults(&p);
        p.overrides &= ~(unsigned)POLICY_OVERRIDE_CGROUP_PARENT;
        r = policy_check_override(&p, POLICY_OVERRIDE_CGROUP_PARENT, POLICY_SOURCE_FLAG,
                                  "--cgroup-parent", &err);
        cr_expect_eq(r, -EPERM, "rc %d", r);
        cr_expect_str_eq(err.text,
                         "--cgroup-parent: set by the user, but the policy does not allow "
                         "overriding cgroup_parent",
                         "error \"%s\"", err.text);
        r = policy_check_override(&p, POLICY_OVERRIDE_CGROUP_PARENT, POLICY_SOURCE_POLICY, "x",
                                  &err);
        cr_expect_eq(r, 0, "a policy value is not an override: rc %d", r);
        r = policy_check_override(&p, POLICY_OVERRIDE_FAIL_MODE, POLICY_SOURCE_ENV,
                                  "SPARKSHIM_FAIL_MODE", &err);
        cr_expect_eq(r, 0, "fail_mode is allowed: rc %d", r);
}

/* ---- report file name templates (policy/template.c) ---- */

static const struct policy_template_values template_values = {
    .app_id = "app-20261203-0001", .executor_id = "3", .name = "app-20261203-0001-3"};

static void expect_expansion(const char *template, const struct policy_template_values *v,
                             const char *want)
{
        struct util_error err = {0};
        char out[POLICY_PATH_MAX];
        int r = policy_template_expand(template, v, out, sizeof(out), &err);

        cr_assert_eq(r, 0, "expand '%s': rc %d (%s)", template, r, err.text);
        cr_expect_str_eq(out, want, "expand '%s': '%s', expected '%s'", template, out, want);
}

Test(template, fields_expand_in_the_file_name)
{
        expect_expansion("/var/lib/node_exporter/textfile/sparkshim-{name}.prom", &template_values,
                         "/var/lib/node_exporter/textfile/sparkshim-app-20261203-0001-3.prom");
        expect_expansion("/var/log/sparkshim/{app_id}.{executor_id}.jsonl", &template_values,
                         "/var/log/sparkshim/app-20261203-0001.3.jsonl");
        expect_expansion("/t/{name}-{name}.prom", &template_values,
                         "/t/app-20261203-0001-3-app-20261203-0001-3.prom");
        /* no field: the path as written */
        expect_expansion("/var/lib/node_exporter/textfile/sparkshim.prom", &template_values,
                         "/var/lib/node_exporter/textfile/sparkshim.prom");
        expect_expansion("relative-{executor_id}.jsonl", &template_values, "relative-3.jsonl");
}

Test(template, hostile_values_stay_one_file_name)
{
        static const struct {
                const char *app_id, *want;
        } cases[] = {
            {"../x", "/t/_.._x.prom"}, /* no '/', no leading '.' */
            {"a/b", "/t/a_b.prom"},
            {"..", "/t/_...prom"},
            {".", "/t/_..prom"},
            {"", "/t/_.prom"}, /* an empty name is refused: '_' */
            {"a\nb\x01\x7f\xff", "/t/a_b___.prom"},
            {"sp\xc3\xa4rk", "/t/sp__rk.prom"}, /* UTF-8 too: bytes of a file name only */
            {"{name}", "/t/_name_.prom"},       /* a value is never expanded again */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                expect_expansion("/t/{app_id}.prom",
                                 &(struct policy_template_values){.app_id = cases[i].app_id},
                                 cases[i].want);
        /* NULL values are unknown: "" */
        expect_expansion("/t/x{app_id}{executor_id}{name}.prom",
                         &(struct policy_template_values){0}, "/t/x.prom");
}

Test(template, long_values_are_cut_with_a_hash)
{
        char a[128], b[128], ea[POLICY_TEMPLATE_FIELD_MAX + 1], eb[POLICY_TEMPLATE_FIELD_MAX + 1];

        memset(a, 'a', sizeof(a) - 1);
        a[sizeof(a) - 1] = '\0';
        memcpy(b, a, sizeof(b));
        b[100] = 'b';
        policy_template_escape(a, ea, sizeof(ea));
        policy_template_escape(b, eb, sizeof(eb));
        cr_expect_eq(strlen(ea), POLICY_TEMPLATE_FIELD_MAX, "escaped length %zu", strlen(ea));
        cr_expect_eq(strspn(ea, "a"), POLICY_TEMPLATE_FIELD_MAX - 17, "kept %zu", strspn(ea, "a"));
        cr_expect_eq(ea[POLICY_TEMPLATE_FIELD_MAX - 17], '-', "no '-' before the hash: %s", ea);
        cr_expect_str_neq(ea, eb, "two long values that share a beginning: both %s", ea);
        /* exactly the limit: kept whole */
        a[POLICY_TEMPLATE_FIELD_MAX] = '\0';
        policy_template_escape(a, ea, sizeof(ea));
        cr_expect_str_eq(ea, a, "a value of %d bytes was changed: %s", POLICY_TEMPLATE_FIELD_MAX,
                         ea);
        /* a small buffer is cut, never overrun */
        policy_template_escape("abcdef", ea, 4);
        cr_expect_str_eq(ea, "abc", "cut to '%s'", ea);
}

Test(template, bad_templates_are_refused)
{
        static const struct {
                const char *template;
                bool prometheus;
                int error;
                const char *says;
        } cases[] = {
            {"/t/{app_id}/x.prom", true, EINVAL, "in its directory part"},
            {"/t{name}/x.jsonl", false, EINVAL, "in its directory part"},
            {"/t/{nope}.prom", true, EINVAL, "'{nope}.prom', which is not a field"},
            {"/t/x}.jsonl", false, EINVAL, "which is not a field"},
            {"/t/{name.prom", true, EINVAL, "which is not a field"},
            {"/t/x.txt", true, EINVAL, "does not end in .prom"},
            {"/t/{name}.prom.tmp", true, EINVAL, "does not end in .prom"},
            {"/t/.x.prom", true, EINVAL, "starting with '.'"},
            {"/t/", false, EINVAL, "names a directory"},
            {"/t/..", false, EINVAL, "names a directory"},
            {"/t/{name}{name}{name}{name}.prom", true, ENAMETOOLONG, "may expand to 262 bytes"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct util_error err = {0};
                char out[POLICY_PATH_MAX];
                int r = policy_template_check(cases[i].template, cases[i].prometheus, &err);

                cr_expect_eq(r, -cases[i].error, "'%s': rc %d (%s)", cases[i].template, r,
                             err.text);
                cr_expect(strstr(err.text, cases[i].says), "'%s': '%s' does not say '%s'",
                          cases[i].template, err.text, cases[i].says);
                if (!cases[i].prometheus)
                        cr_expect_lt(policy_template_expand(cases[i].template, &template_values,
                                                            out, sizeof(out), &err),
                                     0, "'%s' expanded to '%s'", cases[i].template, out);
        }
        cr_expect_eq(policy_template_check("/t/sparkshim-{name}.prom", true, NULL), 1);
        cr_expect_eq(policy_template_check("/t/sparkshim.prom", true, NULL), 0);
        cr_expect_eq(policy_template_check("/t/{name}{name}{name}.jsonl", false, NULL), 1,
                     "three fields fit");
}

Test(template, a_small_buffer_is_an_error)
{
        struct util_error err = {0};
        char out[16];

        cr_expect_eq(policy_template_expand("/var/lib/x/{name}.prom", &template_values, out,
                                            sizeof(out), &err),
                     -ENAMETOOLONG, "%s", err.text);
}
