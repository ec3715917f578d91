/* SPDX-License-Identifier: Apache-2.0 */
/* Executor inputs: the wrapped command line, the environment, precedence between sources. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"
#include "policy.h"
#include "test_helpers.h"
#include "util.h"

#define MiB      (UINT64_C(1) << 20)
#define GiB      (UINT64_C(1) << 30)
#define ARGV_MAX 256

/* The input fields an .expect file can name. */
enum input_kind { I_U64, I_DOUBLE, I_BOOL };

static const struct {
        const char *name;
        enum input_kind kind;
        size_t offset;
} inputs[] = {
#define U(n)                                                                                       \
        {                                                                                          \
#n, I_U64, offsetof(struct policy_inputs, n)                                       \
        }
#define D(n)                                                                                       \
        {                                                                                          \
#n, I_DOUBLE, offsetof(struct policy_inputs, n)                                    \
        }
#define B(n)                                                                                       \
        {                                                                                          \
#n, I_BOOL, offsetof(struct policy_inputs, n)                                      \
        }
    U(cores),          U(millicores),      U(limit_millicores), U(heap_bytes),
    U(overhead_bytes), D(overhead_factor), B(offheap_enabled),  U(offheap_bytes),
    U(pyspark_bytes),  D(burst_ratio),
#undef U
#undef D
#undef B
};

static enum policy_source input_source(const struct policy_inputs *in, size_t i,
                                       const char **ret_origin)
{
        const char *at = (const char *)in + inputs[i].offset;

        switch (inputs[i].kind) {
        case I_U64:
                *ret_origin = ((const struct policy_u64_input *)at)->origin;
                return ((const struct policy_u64_input *)at)->source;
        case I_DOUBLE:
                *ret_origin = ((const struct policy_double_input *)at)->origin;
                return ((const struct policy_double_input *)at)->source;
        case I_BOOL:
                *ret_origin = ((const struct policy_bool_input *)at)->origin;
                return ((const struct policy_bool_input *)at)->source;
        }
        return POLICY_SOURCE_NONE;
}

static void input_text(const struct policy_inputs *in, size_t i, char *buf, size_t size)
{
        const char *at = (const char *)in + inputs[i].offset;

        switch (inputs[i].kind) {
        case I_U64:
                snprintf(buf, size, "%" PRIu64, ((const struct policy_u64_input *)at)->value);
                break;
        case I_DOUBLE:
                snprintf(buf, size, "%.17g", ((const struct policy_double_input *)at)->value);
                break;
        case I_BOOL:
                snprintf(buf, size, "%s",
                         ((const struct policy_bool_input *)at)->value ? "true" : "false");
                break;
        }
}

/*
 * Check an .expect file: "<input>=<value>" and "<input>.origin=<origin>" for inputs that must
 * be set (with POLICY_SOURCE_COMMAND), app_id/executor_id, and "write.<file>=<value>" for the
 * complete, ordered list of cgroup writes under the default policy. Inputs not named must be
 * unset.
 */
static void check_expect(const char *name, const struct policy_inputs *in, char *expect)
{
        bool named[ELEMENTSOF(inputs)] = {false};
        struct policy_write writes[POLICY_WRITES_MAX];
        struct util_error err = {0};
        struct policy_plan plan;
        struct policy p;
        size_t nwrites = 0, wi = 0;
        bool saw_app = false, saw_executor = false;
        int r;

        policy_init_defaults(&p);
        r = policy_plan_compute(&p, in, &plan, &err);
        cr_assert_eq(r, 0, "%s: the plan under the default policy failed: %s", name, err.text);
        nwrites = policy_plan_writes(&plan, writes);

        for (char *line = strtok(expect, "\n"); line; line = strtok(NULL, "\n")) {
                char *eq = strchr(line, '='), *key = line, *value;
                bool found = false;

                if (line[0] == '#')
                        continue;
                cr_assert(eq, "%s: line without '=': %s", name, line);
                *eq = '\0';
                value = eq + 1;

                if (strncmp(key, "write.", 6) == 0) {
                        cr_expect(wi < nwrites,
                                  "%s: expected write %s=%s, but the plan has only %zu", name,
                                  key + 6, value, nwrites);
                        if (wi < nwrites) {
                                cr_expect_str_eq(writes[wi].file, key + 6,
                                                 "%s: write %zu is %s, expected %s", name, wi,
                                                 writes[wi].file, key + 6);
                                cr_expect_str_eq(writes[wi].value, value,
                                                 "%s: %s is \"%s\", expected \"%s\"", name,
                                                 writes[wi].file, writes[wi].value, value);
                        }
                        wi++;
                        continue;
                }
                if (strcmp(key, "app_id") == 0) {
                        cr_expect_str_eq(in->app_id, value, "%s: app_id \"%s\", expected \"%s\"",
                                         name, in->app_id, value);
                        saw_app = true;
                        continue;
                }
                if (strcmp(key, "executor_id") == 0) {
                        cr_expect_str_eq(in->executor_id, value,
                                         "%s: executor_id \"%s\", expected \"%s\"", name,
                                         in->executor_id, value);
                        saw_executor = true;
                        continue;
                }

                for (size_t i = 0; i < ELEMENTSOF(inputs); i++) {
                        size_t n = strlen(inputs[i].name);
                        const char *origin;
                        enum policy_source source;
                        char actual[64];

                        if (strncmp(key, inputs[i].name, n) != 0 ||
                            (key[n] != '\0' && strcmp(key + n, ".origin") != 0))
                                continue;
                        found = true;
                        source = input_source(in, i, &origin);
                        cr_expect_eq(source, POLICY_SOURCE_COMMAND, "%s: %s has source %s", name,
                                     inputs[i].name, policy_source_name(source));
                        if (key[n] != '\0') {
                                cr_expect_str_eq(origin, value,
                                                 "%s: %s origin \"%s\", expected \"%s\"", name,
                                                 inputs[i].name, origin, value);
                                break;
                        }
                        named[i] = true;
                        if (inputs[i].kind == I_DOUBLE) {
                                double want = strtod(value, NULL);
                                double got =
                                    ((const struct policy_double_input *)((const char *)in +
                                                                          inputs[i].offset))
                                        ->value;
                                cr_expect(fabs(got - want) < 1e-12, "%s: %s is %.17g, expected %s",
                                          name, inputs[i].name, got, value);
                        } else {
                                input_text(in, i, actual, sizeof(actual));
                                cr_expect_str_eq(actual, value, "%s: %s is %s, expected %s", name,
                                                 inputs[i].name, actual, value);
                        }
                        break;
                }
                cr_expect(found, "%s: unknown key %s", name, key);
        }

        for (size_t i = 0; i < ELEMENTSOF(inputs); i++) {
                const char *origin;
                enum policy_source source = input_source(in, i, &origin);
                cr_expect(named[i] || source == POLICY_SOURCE_NONE,
                          "%s: %s was set (by \"%s\") but the fixture does not expect it", name,
                          inputs[i].name, origin);
        }
        if (!saw_app)
                cr_expect_str_eq(in->app_id, "", "%s: unexpected app_id %s", name, in->app_id);
        if (!saw_executor)
                cr_expect_str_eq(in->executor_id, "", "%s: unexpected executor_id %s", name,
                                 in->executor_id);
        if (wi > 0)
                cr_expect_eq(wi, nwrites, "%s: the plan has %zu writes, the fixture lists %zu",
                             name, nwrites, wi);
}

Test(inputs, command_fixtures)
{
        char dir[4096], *names[FIXTURE_LIST_MAX];
        size_t n;

        fixture_path("cmdline", dir, sizeof(dir));
        n = list_fixtures(dir, ".argv", names);
        cr_assert_geq(n, 3, "only %zu command fixtures in %s", n, dir);
        for (size_t i = 0; i < n; i++) {
                char path[8192], expect_path[8192];
                struct util_error err = {0};
                struct policy_inputs in;
                struct argv_file a;
                char *expect;
                int r;

                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                load_argv(path, &a);
                policy_inputs_init(&in);
                r = policy_inputs_from_command(&in, a.argc, a.argv, &err);
                cr_expect_eq(r, 0, "%s: rc %d: %s", names[i], r, err.text);

                sibling_path(path, ".argv", ".expect", expect_path, sizeof(expect_path));
                expect = read_text(expect_path, NULL);
                cr_assert(expect, "%s has no .expect file", path);
                if (r == 0)
                        check_expect(names[i], &in, expect);
                free(expect);
                free(a.text);
                free(names[i]);
        }
}

Test(inputs, invalid_command_fixtures)
{
        char dir[4096], *names[FIXTURE_LIST_MAX];
        size_t n;

        fixture_path("cmdline/invalid", dir, sizeof(dir));
        n = list_fixtures(dir, ".argv", names);
        cr_assert_geq(n, 10, "only %zu invalid command fixtures in %s", n, dir);
        for (size_t i = 0; i < n; i++) {
                char path[8192], err_path[8192];
                struct util_error err = {0};
                struct policy_inputs in, before;
                struct argv_file a;
                char *want;
                int r;

                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                load_argv(path, &a);
                sibling_path(path, ".argv", ".err", err_path, sizeof(err_path));
                want = read_text(err_path, NULL);
                cr_assert(want, "%s has no .err file", path);
                chomp(want);

                policy_inputs_init(&in);
                policy_input_set_u64(&in.heap_bytes, 42, POLICY_SOURCE_POLICY, "sentinel");
                memcpy(&before, &in, sizeof(in)); /* bytes, padding included */
                r = policy_inputs_from_command(&in, a.argc, a.argv, &err);
                cr_expect_lt(r, 0, "%s: rc %d, expected an error", names[i], r);
                cr_expect(strstr(err.text, want) != NULL,
                          "%s:\n  error    \"%s\"\n  expected \"%s\"", names[i], err.text, want);
                cr_expect(strchr(err.text, '\n') == NULL, "%s: newline in the error", names[i]);
                cr_expect(memcmp(&in, &before, sizeof(in)) == 0, "%s: inputs changed on error",
                          names[i]);
                free(want);
                free(a.text);
                free(names[i]);
        }
}

Test(inputs, command_basics)
{
        char *only_program[] = {"java", NULL};
        char *unknown[] = {"java",     "-D",     "-Dspark.executor.memoryx=1",
                           "-Dfoo",    "-Xms1g", "-X",
                           "--coresx", "4",      "-XX:+UseG1GC",
                           NULL};
        char *last_wins[] = {"java", "-Xmx1g",    "-Xmx2g",        "B", "--cores",
                             "2",    "--cores=5", "--executor-id", "a", "--executor-id=b",
                             NULL};
        struct util_error err = {0};
        struct policy_inputs in;
        int r;

        policy_inputs_init(&in);
        r = policy_inputs_from_command(&in, 1, only_program, &err);
        cr_expect_eq(r, 0, "only argv[0]: rc %d", r);
        cr_expect_eq(in.heap_bytes.source, POLICY_SOURCE_NONE, "nothing set");

        r = policy_inputs_from_command(&in, 0, only_program, &err);
        cr_expect_eq(r, 0, "argc 0: rc %d", r);

        /* argv[0] is the program, never an option */
        {
                char *prog[] = {"-Xmx1g", NULL};
                r = policy_inputs_from_command(&in, 1, prog, &err);
                cr_expect_eq(r, 0, "rc %d", r);
                cr_expect_eq(in.heap_bytes.source, POLICY_SOURCE_NONE, "argv[0] was read");
        }

        r = policy_inputs_from_command(&in, 9, unknown, &err);
        cr_expect_eq(r, 0, "unknown options are ignored: rc %d (%s)", r, err.text);
        cr_expect_eq(in.heap_bytes.source, POLICY_SOURCE_NONE, "-Xms is not the heap limit");
        cr_expect_eq(in.cores.source, POLICY_SOURCE_NONE, "--coresx is not --cores");

        r = policy_inputs_from_command(&in, 10, last_wins, &err);
        cr_expect_eq(r, 0, "rc %d (%s)", r, err.text);
        cr_expect_eq(in.heap_bytes.value, 2 * GiB, "the last -Xmx wins: %" PRIu64,
                     in.heap_bytes.value);
        cr_expect_eq(in.cores.value, 5, "the last --cores wins: %" PRIu64, in.cores.value);
        cr_expect_str_eq(in.executor_id, "b", "the last --executor-id wins: %s", in.executor_id);
        cr_expect_str_eq(in.cores.origin, "--cores", "origin %s", in.cores.origin);
}

Test(inputs, spark_memory_only_without_xmx)
{
        char *argv[] = {"java", "-Dspark.executor.memory=3g", "-Dspark.executor.cores=6",
                        "-Dspark.kubernetes.executor.request.cores=0.25", NULL};
        struct util_error err = {0};
        struct policy_inputs in;
        int r;

        policy_inputs_init(&in);
        r = policy_inputs_from_command(&in, 4, argv, &err);
        cr_assert_eq(r, 0, "rc %d (%s)", r, err.text);
        cr_expect_eq(in.heap_bytes.value, 3 * GiB, "heap %" PRIu64, in.heap_bytes.value);
        cr_expect_str_eq(in.heap_bytes.origin, "-Dspark.executor.memory", "origin %s",
                         in.heap_bytes.origin);
        cr_expect_eq(in.cores.value, 6, "cores %" PRIu64, in.cores.value);
        cr_expect_str_eq(in.cores.origin, "-Dspark.executor.cores", "origin %s", in.cores.origin);
        cr_expect_eq(in.millicores.value, 250, "millicores %" PRIu64, in.millicores.value);
}

Test(inputs, environment)
{
        char *env[] = {"PATH=/usr/bin",
                       "SPARKSHIM_CORES=3",
                       "SPARKSHIM_MILLICORES=0.75",
                       "SPARKSHIM_LIMIT_MILLICORES=2500",
                       "SPARKSHIM_MEMORY=6g",
                       "SPARKSHIM_MEMORY_OVERHEAD=700",
                       "SPARKSHIM_OFFHEAP=1g",
                       "SPARKSHIM_PYSPARK_MEMORY=512",
                       "SPARKSHIM_BURST_RATIO=0.3",
                       "SPARKSHIM_CORES=9", /* the first one counts, as getenv */
                       "SPARKSHIM_MEMORYX=1",
                       NULL};
        struct util_error err = {0};
        struct policy_inputs in;
        int r;

        policy_inputs_init(&in);
        r = policy_inputs_from_env(&in, env, &err);
        cr_assert_eq(r, 0, "rc %d (%s)", r, err.text);
        cr_expect_eq(in.cores.value, 3, "cores %" PRIu64, in.cores.value);
        cr_expect_eq(in.cores.source, POLICY_SOURCE_ENV, "source %d", (int)in.cores.source);
        cr_expect_str_eq(in.cores.origin, "SPARKSHIM_CORES", "origin %s", in.cores.origin);
        cr_expect_eq(in.millicores.value, 750, "millicores %" PRIu64, in.millicores.value);
        cr_expect_eq(in.limit_millicores.value, 2500, "limit %" PRIu64, in.limit_millicores.value);
        cr_expect_eq(in.heap_bytes.value, 6 * GiB, "heap %" PRIu64, in.heap_bytes.value);
        cr_expect_eq(in.overhead_bytes.value, 700 * MiB, "overhead %" PRIu64,
                     in.overhead_bytes.value);
        cr_expect_eq(in.offheap_bytes.value, GiB, "offheap %" PRIu64, in.offheap_bytes.value);
        cr_expect(in.offheap_enabled.value && in.offheap_enabled.source == POLICY_SOURCE_ENV,
                  "SPARKSHIM_OFFHEAP turns off-heap on");
        cr_expect_eq(in.pyspark_bytes.value, 512 * MiB, "pyspark %" PRIu64, in.pyspark_bytes.value);
        cr_expect_eq(in.burst_ratio.value, 0.3, "ratio %g", in.burst_ratio.value);
        cr_expect_eq(in.overhead_factor.source, POLICY_SOURCE_NONE, "no factor variable");
}

Test(inputs, environment_edge_cases)
{
        char *empty[] = {"SPARKSHIM_MEMORY=", "SPARKSHIM_OFFHEAP=0", NULL};
        char *bad[] = {"SPARKSHIM_CORES=2", "SPARKSHIM_MEMORY=4x", NULL};
        char *bad_ratio[] = {"SPARKSHIM_BURST_RATIO=2", NULL};
        struct util_error err = {0};
        struct policy_inputs in, before;
        int r;

        policy_inputs_init(&in);
        r = policy_inputs_from_env(&in, NULL, &err);
        cr_expect_eq(r, 0, "NULL envp: rc %d", r);

        r = policy_inputs_from_env(&in, empty, &err);
        cr_expect_eq(r, 0, "rc %d (%s)", r, err.text);
        cr_expect_eq(in.heap_bytes.source, POLICY_SOURCE_NONE, "an empty variable is unset");
        cr_expect(!in.offheap_enabled.value && in.offheap_enabled.source == POLICY_SOURCE_ENV,
                  "SPARKSHIM_OFFHEAP=0 turns off-heap off");

        policy_inputs_init(&in);
        memcpy(&before, &in, sizeof(in)); /* bytes, padding included */
        r = policy_inputs_from_env(&in, bad, &err);
        cr_expect_eq(r, -EINVAL, "rc %d", r);
        cr_expect_str_eq(err.text,
                         "environment: SPARKSHIM_MEMORY=4x: not a size; allowed: digits with an "
                         "optional suffix b, k, m, g, t, p (MiB when none)",
                         "error \"%s\"", err.text);
        cr_expect(memcmp(&in, &before, sizeof(in)) == 0, "inputs changed on error");

        r = policy_inputs_from_env(&in, bad_ratio, &err);
        cr_expect_eq(r, -ERANGE, "rc %d", r);
        cr_expect(strstr(err.text, "SPARKSHIM_BURST_RATIO=2: out of range; allowed: a number >= 0 "
                                   "and <= 1") != NULL,
                  "error \"%s\"", err.text);
}

Test(inputs, setters_respect_sources)
{
        struct policy_u64_input u = {0};
        struct policy_double_input d = {0};
        struct policy_bool_input b = {0};
        char long_origin[100];

        policy_input_set_u64(&u, 1, POLICY_SOURCE_ENV, "SPARKSHIM_CORES");
        policy_input_set_u64(&u, 2, POLICY_SOURCE_COMMAND, "--cores");
        cr_expect_eq(u.value, 1, "a command value does not replace an env value: %" PRIu64,
                     u.value);
        policy_input_set_u64(&u, 3, POLICY_SOURCE_ENV, "SPARKSHIM_CORES");
        cr_expect_eq(u.value, 3, "the same source replaces: %" PRIu64, u.value);
        policy_input_set_u64(&u, 4, POLICY_SOURCE_FLAG, "--cores");
        cr_expect_eq(u.value, 4, "a flag replaces env: %" PRIu64, u.value);
        cr_expect_eq(u.source, POLICY_SOURCE_FLAG, "source %d", (int)u.source);
        cr_expect_str_eq(u.origin, "--cores", "origin %s", u.origin);

        policy_input_set_double(&d, 0.5, POLICY_SOURCE_FLAG, "--burst-ratio");
        policy_input_set_double(&d, 0.1, POLICY_SOURCE_POLICY, NULL);
        cr_expect_eq(d.value, 0.5, "a policy default never replaces a flag: %g", d.value);

        policy_input_set_bool(&b, true, POLICY_SOURCE_COMMAND, NULL);
        cr_expect(b.value && b.origin[0] == '\0', "NULL origin is empty");

        memset(long_origin, 'o', sizeof(long_origin) - 1);
        long_origin[sizeof(long_origin) - 1] = '\0';
        policy_input_set_u64(&u, 5, POLICY_SOURCE_FLAG, long_origin);
        cr_expect_eq(strlen(u.origin), sizeof(u.origin) - 1, "origin truncated to %zu: %zu",
                     sizeof(u.origin) - 1, strlen(u.origin));

        cr_expect_str_eq(policy_source_name(POLICY_SOURCE_POLICY), "default", "name");
        cr_expect_str_eq(policy_source_name(POLICY_SOURCE_COMMAND), "command", "name");
        cr_expect_str_eq(policy_source_name(POLICY_SOURCE_ENV), "env", "name");
        cr_expect_str_eq(policy_source_name(POLICY_SOURCE_FLAG), "flag", "name");
}

/* flag > env > command > policy, whatever order the sources are read in */
Test(inputs, precedence_between_sources)
{
        char *argv[] = {"java", "-Xmx1g", "-Dspark.executor.memoryBurst.ratio=0.2", "B", "--cores",
                        "2",    NULL};
        char *env[] = {"SPARKSHIM_BURST_RATIO=0.3", "SPARKSHIM_MEMORY=2g", NULL};
        struct util_error err = {0};

        for (int order = 0; order < 2; order++) {
                struct policy_inputs in;

                policy_inputs_init(&in);
                policy_input_set_double(&in.burst_ratio, 0.1, POLICY_SOURCE_POLICY, "policy");
                if (order == 0) {
                        cr_assert_eq(policy_inputs_from_command(&in, 6, argv, &err), 0, "%s",
                                     err.text);
                        cr_assert_eq(policy_inputs_from_env(&in, env, &err), 0, "%s", err.text);
                        policy_input_set_double(&in.burst_ratio, 0.4, POLICY_SOURCE_FLAG,
                                                "--burst-ratio");
                } else {
                        policy_input_set_double(&in.burst_ratio, 0.4, POLICY_SOURCE_FLAG,
                                                "--burst-ratio");
                        cr_assert_eq(policy_inputs_from_env(&in, env, &err), 0, "%s", err.text);
                        cr_assert_eq(policy_inputs_from_command(&in, 6, argv, &err), 0, "%s",
                                     err.text);
                }
                cr_expect_eq(in.burst_ratio.value, 0.4, "order %d: the flag wins: %g", order,
                             in.burst_ratio.value);
                cr_expect_eq(in.heap_bytes.value, 2 * GiB, "order %d: env beats -Xmx: %" PRIu64,
                             order, in.heap_bytes.value);
                cr_expect_str_eq(in.heap_bytes.origin, "SPARKSHIM_MEMORY", "order %d: origin %s",
                                 order, in.heap_bytes.origin);
                cr_expect_eq(in.cores.value, 2, "order %d: the command beats nothing: %" PRIu64,
                             order, in.cores.value);
        }
}

/* A Kubernetes executor pod's environment, as BasicExecutorFeatureStep sets it. */
Test(inputs, spark_pod_environment)
{
        char *envp[] = {
            "SPARK_DRIVER_URL=spark://CoarseGrainedScheduler@spark-pi-driver-svc.default.svc:7078",
            "SPARK_EXECUTOR_CORES=2",
            "SPARK_EXECUTOR_MEMORY=2048m",
            "SPARK_APPLICATION_ID=spark-5e0c2a6b9e2d4a8c9f6e1d2c3b4a5968",
            "SPARK_EXECUTOR_ID=4",
            "SPARK_JAVA_OPT_1=-Dspark.executor.memoryBurst.ratio=0.25",
            "SPARK_JAVA_OPT_0=-Dspark.executor.millicores=750",
            "SPARK_JAVA_OPT_2=-Dspark.driver.port=7078",
            NULL,
        };
        struct policy_inputs in;
        struct util_error err = {0};
        char *cmd[] = {"/opt/entrypoint.sh", "executor", NULL};

        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_from_spark_env(&in, envp, &err), 0, "error: %s", err.text);
        cr_assert_eq(policy_inputs_from_command(&in, 2, cmd, &err), 0, "error: %s", err.text);
        cr_assert_eq(in.heap_bytes.value, 2048ULL << 20, "heap %llu",
                     (unsigned long long)in.heap_bytes.value);
        cr_assert_eq(in.heap_bytes.source, POLICY_SOURCE_COMMAND);
        cr_assert_eq(in.cores.value, 2, "cores %llu", (unsigned long long)in.cores.value);
        cr_assert_eq(in.millicores.value, 750, "millicores %llu",
                     (unsigned long long)in.millicores.value);
        cr_assert_float_eq(in.burst_ratio.value, 0.25, 1e-9);
        cr_assert_str_eq(in.app_id, "spark-5e0c2a6b9e2d4a8c9f6e1d2c3b4a5968");
        cr_assert_str_eq(in.executor_id, "4");
}

Test(inputs, spark_pod_environment_loses_to_the_command)
{
        char *envp[] = {"SPARK_EXECUTOR_MEMORY=2048m", "SPARK_EXECUTOR_CORES=2", NULL};
        char *cmd[] = {"java", "-Xmx1g", "--cores", "3", NULL};
        struct policy_inputs in;
        struct util_error err = {0};

        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_from_spark_env(&in, envp, &err), 0, "error: %s", err.text);
        cr_assert_eq(policy_inputs_from_command(&in, 4, cmd, &err), 0, "error: %s", err.text);
        cr_assert_eq(in.heap_bytes.value, 1ULL << 30, "heap %llu",
                     (unsigned long long)in.heap_bytes.value);
        cr_assert_eq(in.cores.value, 3, "cores %llu", (unsigned long long)in.cores.value);
}

Test(inputs, spark_pod_environment_errors_name_it)
{
        char *envp[] = {"SPARK_EXECUTOR_MEMORY=2048x", NULL};
        char *none[] = {"PATH=/usr/bin", "SPARK_EXECUTOR_MEMORY=", NULL};
        struct policy_inputs in;
        struct util_error err = {0};

        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_from_spark_env(&in, envp, &err), -EINVAL);
        cr_assert(strstr(err.text, "Spark pod environment") && strstr(err.text, "2048x"),
                  "text: %s", err.text);
        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_from_spark_env(&in, none, &err), 0, "error: %s", err.text);
        cr_assert_eq(in.heap_bytes.source, POLICY_SOURCE_NONE, "an empty variable counts as unset");
}

/*
 * entrypoint.sh's `env | grep SPARK_JAVA_OPT_ | sort -t_ -k4 -n | sed 's/[^=]*=//'` on this
 * environment (bash 5.2, coreutils 9.1, LC_ALL=C) gave exactly this order.
 */
Test(inputs, spark_java_opts_in_entrypoint_order)
{
        char *envp[] = {
            "SPARK_JAVA_OPT_2=-Xmx2g",
            "SPARK_JAVA_OPT_10=-Xmx10g",
            "SPARK_JAVA_OPT_x=-Xmx7g",
            "SPARK_JAVA_OPT_1=-Xmx1g",
            "SPARK_JAVA_OPT_01=-Xmx3g",
            "FOO=a\nSPARK_JAVA_OPT_5=-Xmx5g",
            "BAR=x SPARK_JAVA_OPT_ y",
            "SPARK_JAVA_OPT_-3=-Xmx33g",
            "SPARK_JAVA_OPT_1.5=-Xmx15g",
            "SPARK_JAVA_OPT_007=-Xmx77g",
            "PATH=/usr/bin",
            NULL,
        };
        const char *want[] = {"-Xmx33g", "x SPARK_JAVA_OPT_ y",
                              "-Xmx7g",  "-Xmx3g",
                              "-Xmx1g",  "-Xmx15g",
                              "-Xmx2g",  "-Xmx5g",
                              "-Xmx77g", "-Xmx10g"};
        char **opts = NULL, *storage = NULL;
        ssize_t n = policy_spark_java_opts(envp, &opts, &storage);

        cr_assert_eq(n, (ssize_t)ELEMENTSOF(want), "%zd options", n);
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                cr_assert_str_eq(opts[i], want[i], "option %zu is '%s', entrypoint.sh has '%s'", i,
                                 opts[i], want[i]);
        free(opts);
        free(storage);
}

/* Defect 1 of issue 11: names that map to one index overflowed a fixed-size argv. */
Test(inputs, spark_java_opts_duplicate_indexes)
{
        enum { N = 300 };
        static char names[N][N + 32];
        char *envp[N + 2];
        struct policy_inputs in;
        struct util_error err = {0};

        for (int i = 0; i < N; i++) {
                /* SPARK_JAVA_OPT_0, _00, _000, ...: all index 0 */
                int len = snprintf(names[i], sizeof(names[i]), "SPARK_JAVA_OPT_");
                memset(names[i] + len, '0', (size_t)i + 1);
                snprintf(names[i] + len + i + 1, sizeof(names[i]) - (size_t)(len + i + 1),
                         "=-Xmx%dm", i + 1);
                envp[i] = names[i];
        }
        envp[N] = "SPARK_EXECUTOR_CORES=2";
        envp[N + 1] = NULL;
        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_from_spark_env(&in, envp, &err), 0, "error: %s", err.text);
        /* ties sort by the whole line: '0' < '=' puts the shortest name, -Xmx1m, last */
        cr_assert_eq(in.heap_bytes.value, 1 * MiB, "heap %" PRIu64, in.heap_bytes.value);
        cr_assert_eq(in.cores.value, 2);
}

/* Issue 11, defect 11: a flag or SPARKSHIM_MEMORY heap that is not the JVM's own -Xmx. */
Test(inputs, heap_conflicts_with_the_jvm)
{
        char *cmd[] = {"java", "-Xmx8g", "Main", NULL};
        char *envp[] = {"SPARKSHIM_MEMORY=2g", NULL};
        struct policy_inputs in;
        struct util_error err = {0};

        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_check(&in, &err), -EINVAL);
        cr_assert(strstr(err.text, "no executor memory"), "text: %s", err.text);

        policy_inputs_init(&in);
        policy_input_set_u64(&in.heap_bytes, 4 * GiB, POLICY_SOURCE_FLAG, "--memory");
        cr_assert_eq(policy_inputs_from_command(&in, 3, cmd, &err), 0, "error: %s", err.text);
        cr_assert_eq(in.heap_bytes.value, 4 * GiB, "the flag keeps its precedence");
        cr_assert_eq(policy_inputs_check(&in, &err), -EINVAL);
        cr_assert(
            strstr(err.text, "--memory: 4294967296 bytes of heap, but the JVM will use 8589934592"),
            "text: %s", err.text);

        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_from_command(&in, 3, cmd, &err), 0, "error: %s", err.text);
        cr_assert_eq(policy_inputs_from_env(&in, envp, &err), 0, "error: %s", err.text);
        cr_assert_eq(policy_inputs_check(&in, &err), -EINVAL);
        cr_assert(strstr(err.text, "SPARKSHIM_MEMORY"), "text: %s", err.text);

        policy_inputs_init(&in);
        policy_input_set_u64(&in.heap_bytes, 8 * GiB, POLICY_SOURCE_FLAG, "--memory");
        cr_assert_eq(policy_inputs_from_command(&in, 3, cmd, &err), 0, "error: %s", err.text);
        cr_assert_eq(policy_inputs_check(&in, &err), 0, "the same heap twice: %s", err.text);
}

/* the agent's threshold fraction that `sparkshim tune` recommends, as a -D of the command */
Test(inputs, spill_fraction_from_the_command)
{
        char *argv[] = {"java", "-Xmx1g", "-Dspark.executor.sparkshim.spillFraction=0.75", "B",
                        NULL};
        char *bad[] = {"java", "-Xmx1g", "-Dspark.executor.sparkshim.spillFraction=1.5", "B", NULL};
        struct util_error err = {0};
        struct policy_inputs in;

        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_from_command(&in, 4, argv, &err), 0, "%s", err.text);
        cr_expect_eq(in.spill_fraction.source, POLICY_SOURCE_COMMAND, "source %d",
                     (int)in.spill_fraction.source);
        cr_expect_eq(in.spill_fraction.value, 0.75, "value %g", in.spill_fraction.value);
        cr_expect_str_eq(in.spill_fraction.origin, "-Dspark.executor.sparkshim.spillFraction",
                         "origin %s", in.spill_fraction.origin);

        policy_inputs_init(&in);
        cr_expect_lt(policy_inputs_from_command(&in, 4, bad, &err), 0, "1.5 refused");
        cr_expect(strstr(err.text, "spillFraction=1.5") != NULL, "error \"%s\"", err.text);
}

Test(inputs, spill_fraction_from_the_environment)
{
        char *env[] = {"SPARKSHIM_SPILL_FRACTION=0.6", NULL};
        char *bad[] = {"SPARKSHIM_SPILL_FRACTION=2", NULL};
        struct util_error err = {0};
        struct policy_inputs in;

        policy_inputs_init(&in);
        cr_assert_eq(policy_inputs_from_env(&in, env, &err), 0, "%s", err.text);
        cr_expect_eq(in.spill_fraction.source, POLICY_SOURCE_ENV, "source %d",
                     (int)in.spill_fraction.source);
        cr_expect_eq(in.spill_fraction.value, 0.6, "value %g", in.spill_fraction.value);
        policy_inputs_init(&in);
        cr_expect_lt(policy_inputs_from_env(&in, bad, &err), 0, "2 refused");
        cr_expect(strstr(err.text, "SPARKSHIM_SPILL_FRACTION=2") != NULL, "error \"%s\"", err.text);
}
