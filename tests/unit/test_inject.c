/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shim/inject.h: the JVM agent in `sparkshim run`: the method, the option string (checked
 * against the agent's own parser), -agentpath: in argv, JAVA_TOOL_OPTIONS appended, an agent
 * the command loads already, and the statistics file as the report's "agent" object.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"
#include "options.h" /* the agent's parser (jvmagent/options.h) */
#include "test_helpers.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

Test(inject, java_launcher_and_method)
{
        static const struct {
                const char *argv0;
                bool java;
        } cases[] = {
                { "java", true },
                { "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", true },
                { "./java", true },
                { "javac", false },
                { "/usr/bin/java8", false },
                { "/opt/entrypoint.sh", false },
                { "/usr/lib/jvm/java/bin/", false },
                { "", false },
        };
        enum shim_agent_method m;
        int r;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                cr_expect_eq(shim_agent_is_java_launcher(cases[i].argv0), cases[i].java,
                             "is_java_launcher(\"%s\") should be %d", cases[i].argv0, cases[i].java);
                r = shim_agent_choose_method(POLICY_AGENT_INJECT_AUTO, cases[i].argv0, &m);
                cr_expect_eq(r, 0, "auto for %s: rc %d", cases[i].argv0, r);
                cr_expect_eq(m,
                             cases[i].java ? SHIM_AGENT_METHOD_AGENTPATH
                                           : SHIM_AGENT_METHOD_JAVA_TOOL_OPTIONS,
                             "auto for %s gave %s", cases[i].argv0, shim_agent_method_name(m));
                r = shim_agent_choose_method(POLICY_AGENT_INJECT_AGENTPATH, cases[i].argv0, &m);
                cr_expect_eq(r, cases[i].java ? 0 : -EINVAL, "agentpath for %s: rc %d",
                             cases[i].argv0, r);
                r = shim_agent_choose_method(POLICY_AGENT_INJECT_JAVA_TOOL_OPTIONS, cases[i].argv0, &m);
                cr_expect(r == 0 && m == SHIM_AGENT_METHOD_JAVA_TOOL_OPTIONS,
                          "java_tool_options for %s: rc %d method %d", cases[i].argv0, r, (int)m);
        }
        r = shim_agent_choose_method(POLICY_AGENT_INJECT_AUTO, NULL, &m);
        cr_expect(r == 0 && m == SHIM_AGENT_METHOD_JAVA_TOOL_OPTIONS,
                  "no argv0 is not a java launcher: rc %d method %d", r, (int)m);
        cr_expect_str_eq(shim_agent_method_name(SHIM_AGENT_METHOD_AGENTPATH), "agentpath", "name");
        cr_expect_str_eq(shim_agent_method_name(SHIM_AGENT_METHOD_JAVA_TOOL_OPTIONS),
                         "java_tool_options", "name");
        cr_expect_null(shim_agent_method_name(SHIM_AGENT_METHOD_NONE), "no name for none");
}

/* Every mode on: the exact string, and the agent's own parser takes it as meant. */
Test(inject, options_every_mode_parsed_by_the_agent)
{
        struct policy p;
        struct jva_options parsed;
        struct jva_error jerr = { 0 };
        char buf[SHIM_AGENT_OPTIONS_MAX];
        int r;

        policy_init_defaults(&p);
        p.agent.force_bytes = 1 * GiB;
        p.agent.periodic_bytes = 512 * MiB;
        p.agent.allow_bytes = 256 * MiB;
        p.agent.allow_fraction = 0.25;
        p.agent.records = 1000000;
        p.agent.cooldown_ms = 1000;
        p.agent.min_spill_bytes = 64 * MiB;
        p.agent.max_spills = 100;
        p.agent.log = POLICY_AGENT_LOG_INFO;
        r = shim_agent_options(&(struct shim_agent_params){
                                       .agent = &p.agent,
                                       .threshold_bytes = 4509401088,
                                       .limit_bytes = 4723834880,
                                       .request_bytes = 4509401088,
                                       .cgroup_dir = "/sys/fs/cgroup/sparkshim/app-1",
                                       .stats_path = "/tmp/sparkshim-agent.abc/stats.jsonl",
                                       .stats_interval_seconds = 15,
                               },
                               buf, sizeof(buf));
        cr_assert_eq(r, 0, "rc %d", r);
        cr_expect_str_eq(buf,
                         "force-bytes=1073741824,periodic=536870912,allow-bytes=268435456,"
                         "allow-fraction=0.25,records=1000000,threshold=4509401088,"
                         "limit=4723834880,request=4509401088,cooldown-ms=1000,"
                         "min-spill=67108864,max-spills=100,cgroup=/sys/fs/cgroup/sparkshim/app-1,"
                         "stats=/tmp/sparkshim-agent.abc/stats.jsonl,stats-interval=15,log=info",
                         "options \"%s\"", buf);

        /* the agent refuses a cgroup= that does not exist: point it at one that does */
        r = shim_agent_options(&(struct shim_agent_params){
                                       .agent = &p.agent,
                                       .threshold_bytes = 4509401088,
                                       .limit_bytes = 4723834880,
                                       .request_bytes = 4509401088,
                                       .cgroup_dir = "/tmp",
                                       .stats_path = "/tmp/sparkshim-agent.abc/stats.jsonl",
                                       .stats_interval_seconds = 15,
                               },
                               buf, sizeof(buf));
        cr_assert_eq(r, 0, "rc %d", r);
        r = jva_options_parse(buf, &parsed, &jerr);
        cr_assert_eq(r, 0, "the agent refuses \"%s\": %s", buf, jerr.message);
        cr_expect_eq(parsed.force_bytes, 1 * GiB, "force %" PRIu64, parsed.force_bytes);
        cr_expect_eq(parsed.periodic_bytes, 512 * MiB, "periodic %" PRIu64, parsed.periodic_bytes);
        cr_expect_eq(parsed.allow_bytes, 256 * MiB, "allow %" PRIu64, parsed.allow_bytes);
        cr_expect(fabs(parsed.allow_fraction - 0.25) < 1e-12, "allow fraction %g",
                  parsed.allow_fraction);
        cr_expect_eq(parsed.records, 1000000, "records %" PRIu64, parsed.records);
        cr_expect_eq(parsed.threshold_bytes, 4509401088, "threshold %" PRIu64,
                     parsed.threshold_bytes);
        cr_expect_eq(parsed.limit_bytes, 4723834880, "limit %" PRIu64, parsed.limit_bytes);
        cr_expect_eq(parsed.request_bytes, 4509401088, "request %" PRIu64, parsed.request_bytes);
        cr_expect_eq(parsed.cooldown_ms, 1000, "cooldown %" PRIu64, parsed.cooldown_ms);
        cr_expect_eq(parsed.min_spill_bytes, 64 * MiB, "min spill %" PRIu64,
                     parsed.min_spill_bytes);
        cr_expect_eq(parsed.max_spills, 100, "max spills %" PRIu64, parsed.max_spills);
        cr_expect_str_eq(parsed.cgroup, "/tmp", "cgroup %s", parsed.cgroup);
        cr_expect_str_eq(parsed.stats, "/tmp/sparkshim-agent.abc/stats.jsonl", "stats %s",
                         parsed.stats);
        cr_expect_eq(parsed.stats_interval_s, 15, "interval %" PRIu64, parsed.stats_interval_s);
        cr_expect_eq(parsed.log_level, JVA_LOG_INFO, "log %d", (int)parsed.log_level);
}

/* The defaults with the agent on: no spill mode, the threshold, nothing the agent refuses. */
Test(inject, options_minimal)
{
        struct policy p;
        struct jva_options parsed;
        struct jva_error jerr = { 0 };
        char buf[512];
        int r;

        policy_init_defaults(&p);
        p.agent.enabled = true;
        r = shim_agent_options(&(struct shim_agent_params){ .agent = &p.agent }, buf, sizeof(buf));
        cr_assert_eq(r, 0, "rc %d", r);
        cr_expect_str_eq(buf, "cooldown-ms=500,max-spills=32,log=warn", "options \"%s\"", buf);
        cr_expect_eq(jva_options_parse(buf, &parsed, &jerr), 0, "agent: %s", jerr.message);

        /* a fraction always has its decimal point, which the agent requires */
        p.agent.allow_fraction = 1.0;
        r = shim_agent_options(&(struct shim_agent_params){ .agent = &p.agent, .threshold_bytes = 1 },
                               buf, sizeof(buf));
        cr_assert_eq(r, 0, "rc %d", r);
        cr_expect(strstr(buf, "allow-fraction=1.0,") != NULL, "1.0 written as \"%s\"", buf);
        cr_expect_eq(jva_options_parse(buf, &parsed, &jerr), 0, "agent: %s", jerr.message);
        p.agent.allow_fraction = 0.123456;
        r = shim_agent_options(&(struct shim_agent_params){ .agent = &p.agent, .threshold_bytes = 1 },
                               buf, sizeof(buf));
        cr_expect(r == 0 && strstr(buf, "allow-fraction=0.123456,") != NULL, "0.123456 as \"%s\"", buf);

        /* the plan's request never exceeds its limit; if it did, neither is passed */
        p.agent.allow_fraction = 0;
        r = shim_agent_options(&(struct shim_agent_params){ .agent = &p.agent, .limit_bytes = 10,
                                                            .request_bytes = 20 },
                               buf, sizeof(buf));
        cr_expect(r == 0 && !strstr(buf, "limit=") && !strstr(buf, "request="), "\"%s\"", buf);
}

Test(inject, options_refused)
{
        static const char *const bad_paths[] = { "relative/stats.jsonl", "/tmp/a,b", "/tmp/a b",
                                                 "/tmp/a\"b", "/tmp/a'b", "/tmp/a\\b", "" };
        struct policy p;
        char buf[64];
        int r;

        policy_init_defaults(&p);
        for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
                r = shim_agent_options(&(struct shim_agent_params){ .agent = &p.agent,
                                                                    .stats_path = bad_paths[i] },
                                       buf, sizeof(buf));
                cr_expect_eq(r, -EINVAL, "stats=%s: rc %d", bad_paths[i], r);
                r = shim_agent_options(&(struct shim_agent_params){ .agent = &p.agent,
                                                                    .cgroup_dir = bad_paths[i] },
                                       buf, sizeof(buf));
                cr_expect_eq(r, -EINVAL, "cgroup=%s: rc %d", bad_paths[i], r);
                cr_expect(!shim_agent_option_path_ok(bad_paths[i]), "%s accepted", bad_paths[i]);
        }
        r = shim_agent_options(&(struct shim_agent_params){
                                       .agent = &p.agent,
                                       .stats_path = "/a/very/long/path/that/does/not/fit/in/sixty-four/bytes.jsonl" },
                               buf, sizeof(buf));
        cr_expect_eq(r, -ENAMETOOLONG, "rc %d", r);
        cr_expect_str_eq(buf, "", "a cut string is not left behind: \"%s\"", buf);
}

Test(inject, agentpath_goes_right_after_java)
{
        char *argv[] = { "/usr/bin/java", "-Xmx1g", "-cp", "x.jar", "Main", "--cores", "4", NULL };
        const char *arg = "-agentpath:/usr/lib/sparkshim/libsparkshim-agent.so=log=warn";
        char **out = shim_agent_argv(argv, arg);
        const char *want[] = { "/usr/bin/java", arg, "-Xmx1g", "-cp", "x.jar", "Main", "--cores", "4" };

        cr_assert_not_null(out, "out of memory");
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                cr_expect_str_eq(out[i], want[i], "argv[%zu] \"%s\", expected \"%s\"", i, out[i], want[i]);
        cr_expect_null(out[8], "argv is not NULL-terminated");
        free(out);

        char *alone[] = { "java", NULL };
        out = shim_agent_argv(alone, arg);
        cr_assert_not_null(out, "out of memory");
        cr_expect(strcmp(out[0], "java") == 0 && out[1] == arg && out[2] == NULL,
                  "java alone: %s %s", out[0], out[1]);
        free(out);
}

Test(inject, java_tool_options_appended)
{
        static const struct {
                const char *existing, *want;
        } cases[] = {
                { NULL, "-agentpath:/a.so=x=1" },
                { "", "-agentpath:/a.so=x=1" },
                { "   ", "-agentpath:/a.so=x=1" },
                { "-Dfoo=bar", "-Dfoo=bar -agentpath:/a.so=x=1" },
                { "-Dfoo=bar ", "-Dfoo=bar -agentpath:/a.so=x=1" },
                { "-Xss1m -agentpath:/opt/jmx.so", "-Xss1m -agentpath:/opt/jmx.so -agentpath:/a.so=x=1" },
                { "-Dq=\"a b\"", "-Dq=\"a b\" -agentpath:/a.so=x=1" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *v = shim_agent_java_tool_options(cases[i].existing, "-agentpath:/a.so=x=1");
                cr_assert_not_null(v, "out of memory");
                cr_expect_str_eq(v, cases[i].want, "\"%s\" + agent gave \"%s\", expected \"%s\"",
                                 cases[i].existing ? cases[i].existing : "(unset)", v, cases[i].want);
                free(v);
        }
}

static int find(const char *agent_path, char *const argv[], char *const envp[], char *where,
                char *stats)
{
        return shim_agent_find_loaded(agent_path, argv, envp, where, 64, stats, 256);
}

/* A file of the given name in a new temporary directory: the agent the policy names. */
static void make_file(char *dir, const char *name, char *path, size_t size)
{
        FILE *f;

        cr_assert_not_null(mkdtemp(dir), "mkdtemp");
        snprintf(path, size, "%s/%s", dir, name);
        f = fopen(path, "we");
        cr_assert_not_null(f, "create %s", path);
        fclose(f);
}

Test(inject, an_agent_already_loaded_is_found)
{
        char dir[] = "/tmp/sparkshim-inject-XXXXXX", ours[128], arg[512], env[600];
        char where[64], stats[256];
        int r;

        make_file(dir, "libsparkshim-agent.so", ours, sizeof(ours));
        {
                char *argv[] = { "java", "-Xmx1g", arg, "Main", NULL };
                snprintf(arg, sizeof(arg), "-agentpath:%s=force-bytes=8m,stats=/tmp/s.jsonl,log=info", ours);
                r = find(ours, argv, NULL, where, stats);
                cr_expect_eq(r, 1, "argv: rc %d", r);
                cr_expect_str_eq(where, "argv[2]", "where %s", where);
                cr_expect_str_eq(stats, "/tmp/s.jsonl", "stats %s", stats);
        }
        {
                char *argv[] = { "java", "Main", NULL };
                char *envp[] = { "PATH=/bin", env, NULL };
                snprintf(env, sizeof(env), "JAVA_TOOL_OPTIONS=-Xss1m \"-agentpath:%s=stats=/x/y.jsonl\" -Dz=1", ours);
                r = find(ours, argv, envp, where, stats);
                cr_expect(r == 1 && strcmp(where, "JAVA_TOOL_OPTIONS") == 0 &&
                                  strcmp(stats, "/x/y.jsonl") == 0,
                          "JAVA_TOOL_OPTIONS, quoted: rc %d where %s stats %s", r, where, stats);
        }
        {
                char *argv[] = { "/opt/entrypoint.sh", "executor", NULL };
                char *envp[] = { "SPARK_JAVA_OPT_0=-Dspark.app.id=a", env, NULL };
                snprintf(env, sizeof(env), "SPARK_JAVA_OPT_1=-agentpath:%s=log=warn", ours);
                r = find(ours, argv, envp, where, stats);
                cr_expect(r == 1 && strcmp(where, "SPARK_JAVA_OPT_1") == 0,
                          "SPARK_JAVA_OPT_1: rc %d where %s", r, where);
        }
        {
                char *argv[] = { "java", "Main", NULL };
                char *envp[] = { env, NULL };
                snprintf(env, sizeof(env), "JDK_JAVA_OPTIONS=-agentpath:%s", ours);
                r = find(ours, argv, envp, where, stats);
                cr_expect(r == 1 && strcmp(where, "JDK_JAVA_OPTIONS") == 0,
                          "JDK_JAVA_OPTIONS: rc %d where %s", r, where);
        }
}

/*
 * Issue 11, defect 9: a library of the agent's name that is not the policy's file does not
 * count as the agent (it would have switched the policy's agent off), nor does -agentlib:,
 * which the JVM resolves on a library path the user chooses.
 */
Test(inject, only_the_policys_file_is_the_agent)
{
        char dir[] = "/tmp/sparkshim-inject-XXXXXX", other_dir[] = "/tmp/sparkshim-inject-XXXXXX";
        char ours[128], other[128], arg[300], where[64] = "", stats[256] = "";
        int r;

        make_file(dir, "libsparkshim-agent.so", ours, sizeof(ours));
        make_file(other_dir, "libsparkshim-agent.so", other, sizeof(other));
        {
                char *argv[] = { "java", arg, "Main", NULL };
                snprintf(arg, sizeof(arg), "-agentpath:%s=log=info", other);
                r = find(ours, argv, NULL, where, stats);
                cr_expect_eq(r, 0, "a look-alike at %s counted as the agent (%s)", other, where);
        }
        {
                char *argv[] = { "java", "-agentlib:sparkshim-agent", "Main", NULL };
                r = find(ours, argv, NULL, where, stats);
                cr_expect_eq(r, 0, "-agentlib:sparkshim-agent counted as the agent");
        }
        {
                char *argv[] = { "java", "-agentpath:/nonexistent/libsparkshim-agent.so", "Main", NULL };
                r = find(ours, argv, NULL, where, stats);
                cr_expect_eq(r, 0, "a missing file counted as the agent");
        }
}

Test(inject, other_agents_are_not_ours)
{
        const char *ours = "/usr/lib/sparkshim/libsparkshim-agent.so";
        char where[64] = "", stats[256] = "";
        char *argv[] = { "java", "-agentpath:/opt/jmx/libjmxagent.so=port=9000",
                         "-agentlib:jdwp=transport=dt_socket", "-javaagent:/opt/x.jar",
                         "-Dlibsparkshim-agent.so=1", "Main", NULL };
        char *envp[] = { "JAVA_TOOL_OPTIONS=-agentpath:/opt/async-profiler/libasyncProfiler.so=start",
                         "_JAVA_OPTIONS=-Xmx1g", "SPARK_JAVA_OPT_0=-Dx=libsparkshim-agent.so",
                         "NOT_JAVA_OPTIONS=-agentpath:/usr/lib/sparkshim/libsparkshim-agent.so", NULL };
        int r;

        r = find(ours, argv, envp, where, stats);
        cr_expect_eq(r, 0, "found an agent at %s", where);
}

Test(inject, the_same_file_under_another_name)
{
        char dir[] = "/tmp/sparkshim-inject-XXXXXX", lib[128], link[128], arg[300];
        char where[64], stats[256];
        FILE *f;
        int r;

        cr_assert_not_null(mkdtemp(dir), "mkdtemp");
        snprintf(lib, sizeof(lib), "%s/agent-v2.so", dir);
        snprintf(link, sizeof(link), "%s/current.so", dir);
        f = fopen(lib, "we");
        cr_assert_not_null(f, "create %s", lib);
        fclose(f);
        cr_assert_eq(symlink(lib, link), 0, "symlink");
        snprintf(arg, sizeof(arg), "-agentpath:%s=log=info", link);
        {
                char *argv[] = { "java", arg, "Main", NULL };
                r = find(lib, argv, NULL, where, stats);
                cr_expect(r == 1 && strcmp(where, "argv[1]") == 0, "symlink to the same file: rc %d", r);
        }
        unlink(link);
        unlink(lib);
        rmdir(dir);
}

/* ---------------------------------------------------------------- the statistics */

static json_t *report_for(const char *fixture, bool injected)
{
        struct shim_agent_run run = {
                .enabled = true,
                .injected = injected,
                .method = injected ? SHIM_AGENT_METHOD_AGENTPATH : SHIM_AGENT_METHOD_NONE,
                .path = "/usr/lib/sparkshim/libsparkshim-agent.so",
                .options = "force-bytes=8388608,log=warn",
                .threshold_bytes = 4509401088,
                .threshold_of = "request",
        };
        json_t *j;

        if (fixture)
                fixture_path(fixture, run.stats_path, sizeof(run.stats_path));
        j = shim_agent_report_json(&run);
        cr_assert_not_null(j, "no JSON for %s", fixture ? fixture : "(none)");
        return j;
}

static json_int_t int_at(json_t *j, const char *a, const char *b)
{
        json_t *v = json_object_get(j, a);

        if (b)
                v = json_object_get(v, b);
        cr_assert(json_is_integer(v), "%s.%s is not an integer", a, b ? b : "");
        return json_integer_value(v);
}

static const char *string_at(json_t *j, const char *a, const char *b)
{
        json_t *v = json_object_get(json_object_get(j, a), b);

        return json_is_string(v) ? json_string_value(v) : "(not a string)";
}

Test(inject, stats_merged)
{
        json_t *j = report_for("agent-stats/ok.jsonl", true), *ops, *op, *t;

        cr_expect(json_is_true(json_object_get(j, "injected")), "injected");
        cr_expect_str_eq(json_string_value(json_object_get(j, "method")), "agentpath", "method");
        cr_expect_str_eq(json_string_value(json_object_get(j, "options")),
                         "force-bytes=8388608,log=warn", "options");
        cr_expect_eq(int_at(j, "threshold_bytes", NULL), 4509401088, "threshold");
        cr_expect_str_eq(string_at(j, "stats", "status"), "ok", "status %s (error %s)",
                         string_at(j, "stats", "status"), string_at(j, "stats", "error"));
        cr_expect(json_is_null(json_object_get(json_object_get(j, "stats"), "error")), "error set");
        cr_expect(json_is_true(json_object_get(json_object_get(j, "stats"), "final")), "final");
        cr_expect_eq(int_at(j, "stats", "pid"), 4242, "pid");

        cr_expect_eq(json_array_size(json_object_get(j, "hooks")), 4, "4 hooks");
        op = json_array_get(json_object_get(j, "hooks"), 3);
        cr_expect_str_eq(json_string_value(json_object_get(op, "state")), "off", "hook state");
        cr_expect_str_eq(json_string_value(json_object_get(op, "reason")), "class never loaded",
                         "hook reason");
        cr_expect(json_is_null(json_object_get(json_array_get(json_object_get(j, "hooks"), 0), "reason")),
                  "an on hook has a reason");

        cr_expect_eq(int_at(j, "pressure", "crossings"), 2, "crossings");
        cr_expect_eq(int_at(j, "pressure", "execution_memory_bytes"), 2147483648, "execution memory");

        ops = json_object_get(j, "operators");
        cr_assert_eq(json_array_size(ops), 2, "%zu operators", json_array_size(ops));
        op = json_array_get(ops, 0);
        cr_expect_str_eq(json_string_value(json_object_get(op, "operator")), "UnsafeExternalSorter", "name");
        cr_expect_eq(int_at(op, "forced_spills", NULL), 12, "forced");
        cr_expect_eq(int_at(op, "forced_by", "force_bytes"), 9, "by force_bytes");
        cr_expect_eq(int_at(op, "forced_by", "periodic"), 1, "by periodic");
        cr_expect_eq(int_at(op, "forced_by", "pressure"), 2, "by pressure");
        cr_expect_eq(int_at(op, "released_bytes", NULL), 1610612736, "released");
        cr_expect_eq(int_at(op, "denials", NULL), 0, "denials");
        cr_expect_eq(int_at(op, "capped", NULL), 5, "capped");
        cr_expect(json_is_null(json_object_get(json_array_get(ops, 1), "capped")),
                  "capped of a record without it");
        cr_expect(fabs(json_real_value(json_object_get(op, "spill_seconds")) - 2.5) < 1e-9, "spill s");
        cr_expect(fabs(json_real_value(json_object_get(op, "spill_max_seconds")) - 0.4) < 1e-9, "spill max");
        cr_expect(fabs(json_real_value(json_object_get(op, "reaction_max_seconds")) - 0.045) < 1e-9,
                  "reaction max");

        t = json_object_get(j, "totals");
        cr_expect_eq(int_at(t, "operators", NULL), 2, "operators");
        cr_expect_eq(int_at(t, "forced_spills", NULL), 15, "total forced");
        cr_expect_eq(int_at(t, "failed_spills", NULL), 1, "total failed");
        cr_expect_eq(int_at(t, "empty_spills", NULL), 1, "total empty");
        cr_expect_eq(int_at(t, "released_bytes", NULL), 1610612736 + 100663296, "total released");
        cr_expect_eq(int_at(t, "reactions", NULL), 5, "total reactions");
        cr_expect_eq(int_at(t, "capped", NULL), 5, "total capped");
        cr_expect(fabs(json_real_value(json_object_get(t, "reaction_seconds")) - 0.09) < 1e-9, "reaction s");
        cr_expect(fabs(json_real_value(json_object_get(t, "reaction_max_seconds")) - 0.045) < 1e-9,
                  "reaction max");
        json_decref(j);
}

Test(inject, stats_of_an_older_agent_and_unknown_records)
{
        json_t *j = report_for("agent-stats/older-agent.jsonl", true), *op;

        cr_expect_str_eq(string_at(j, "stats", "status"), "ok", "status %s: %s",
                         string_at(j, "stats", "status"), string_at(j, "stats", "error"));
        cr_expect(json_is_false(json_object_get(json_object_get(j, "stats"), "final")),
                  "a snapshot from before exit says final false");
        op = json_array_get(json_object_get(j, "operators"), 0);
        cr_expect(json_is_null(json_object_get(op, "denials")), "denials of an agent without them");
        cr_expect(json_is_null(json_object_get(json_object_get(j, "pressure"), "execution_memory_bytes")),
                  "execution memory of an agent without it");
        cr_expect_eq(int_at(j, "totals", "forced_spills"), 0, "no spills");
        json_decref(j);
}

Test(inject, stats_partial_missing_empty)
{
        json_t *j;

        /* a cut last line: what came before is kept, the report says which line */
        j = report_for("agent-stats/partial.jsonl", true);
        cr_expect_str_eq(string_at(j, "stats", "status"), "partial", "status");
        cr_expect(strstr(string_at(j, "stats", "error"), "partial.jsonl:4: not JSON") != NULL,
                  "error \"%s\"", string_at(j, "stats", "error"));
        cr_expect_eq(int_at(j, "stats", "invalid_lines"), 1, "invalid lines");
        cr_expect_eq(int_at(j, "totals", "forced_spills"), 5, "the valid operator counts");
        json_decref(j);

        j = report_for("agent-stats/bad-fields.jsonl", true);
        cr_expect_str_eq(string_at(j, "stats", "status"), "partial", "status");
        cr_expect(strstr(string_at(j, "stats", "error"), "bad-fields.jsonl:2: a record with missing or malformed fields") != NULL,
                  "error \"%s\"", string_at(j, "stats", "error"));
        cr_expect_eq(int_at(j, "stats", "invalid_lines"), 2, "invalid lines");
        cr_expect_eq(json_array_size(json_object_get(j, "operators")), 0, "a malformed operator is dropped");
        json_decref(j);

        j = report_for("agent-stats/no-agent-record.jsonl", true);
        cr_expect_str_eq(string_at(j, "stats", "status"), "partial", "status");
        cr_expect(strstr(string_at(j, "stats", "error"), "no \"agent\" record") != NULL, "error \"%s\"",
                  string_at(j, "stats", "error"));
        json_decref(j);

        j = report_for("agent-stats/empty.jsonl", true);
        cr_expect_str_eq(string_at(j, "stats", "status"), "partial", "status");
        cr_expect(strstr(string_at(j, "stats", "error"), "empty.jsonl: empty") != NULL, "error \"%s\"",
                  string_at(j, "stats", "error"));
        json_decref(j);

        j = report_for("agent-stats/does-not-exist.jsonl", true);
        cr_expect_str_eq(string_at(j, "stats", "status"), "missing", "status");
        cr_expect(strstr(string_at(j, "stats", "error"), "No such file or directory") != NULL,
                  "error \"%s\"", string_at(j, "stats", "error"));
        cr_expect(json_is_null(json_object_get(j, "totals")), "totals without statistics");
        cr_expect(json_is_null(json_object_get(j, "pressure")), "pressure without statistics");
        cr_expect_eq(json_array_size(json_object_get(j, "hooks")), 0, "hooks without statistics");
        json_decref(j);

        /* a directory is not a statistics file */
        j = report_for("agent-stats", true);
        cr_expect_str_eq(string_at(j, "stats", "status"), "unreadable", "status");
        json_decref(j);
}

Test(inject, not_injected)
{
        struct shim_agent_run run = { .enabled = false, .reason = "disabled by --no-agent" };
        json_t *j = shim_agent_report_json(&run);

        cr_assert_not_null(j, "no JSON");
        cr_expect(json_is_false(json_object_get(j, "enabled")), "enabled");
        cr_expect(json_is_false(json_object_get(j, "injected")), "injected");
        cr_expect_str_eq(json_string_value(json_object_get(j, "reason")), "disabled by --no-agent", "reason");
        cr_expect(json_is_null(json_object_get(j, "method")) && json_is_null(json_object_get(j, "options")) &&
                          json_is_null(json_object_get(j, "threshold_bytes")),
                  "method, options and threshold of an agent not injected");
        cr_expect_str_eq(string_at(j, "stats", "status"), "none", "status");
        cr_expect(json_is_null(json_object_get(j, "totals")), "totals");
        json_decref(j);
}
