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
#include <sys/stat.h>
#include <unistd.h>

#include "inject.h"
#include "options.h" /* the agent's parser (jvmagent/options.h) */
#include "test_helpers.h"
#include "util.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

Test(inject, java_launcher_and_method)
{
        static const struct {
                const char *argv0;
                bool java;
        } cases[] = {
            {"java", true},
            {"/usr/lib/jvm/java-17-openjdk-amd64/bin/java", true},
            {"./java", true},
            {"javac", false},
            {"/usr/bin/java8", false},
            {"/opt/entrypoint.sh", false},
            {"/usr/lib/jvm/java/bin/", false},
            {"", false},
        };
        enum shim_agent_method m;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                cr_expect_eq(shim_agent_is_java_launcher(cases[i].argv0), cases[i].java,
                             "is_java_launcher(\"%s\") should be %d", cases[i].argv0,
                             cases[i].java);
                r = shim_agent_choose_method(POLICY_AGENT_INJECT_AUTO, cases[i].argv0, &m);
                cr_expect_eq(r, 0, "auto for %s: rc %d", cases[i].argv0, r);
                cr_expect_eq(m,
                             cases[i].java ? SHIM_AGENT_METHOD_AGENTPATH
                                           : SHIM_AGENT_METHOD_JAVA_TOOL_OPTIONS,
                             "auto for %s gave %s", cases[i].argv0, shim_agent_method_name(m));
                r = shim_agent_choose_method(POLICY_AGENT_INJECT_AGENTPATH, cases[i].argv0, &m);
                cr_expect_eq(r, cases[i].java ? 0 : -EINVAL, "agentpath for %s: rc %d",
                             cases[i].argv0, r);
                r = shim_agent_choose_method(POLICY_AGENT_INJECT_JAVA_TOOL_OPTIONS, cases[i].argv0,
                                             &m);
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
        struct util_error jerr = {0};
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
        r = shim_agent_options(
            &(struct shim_agent_params){
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
        r = shim_agent_options(
            &(struct shim_agent_params){
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
        cr_assert_eq(r, 0, "the agent refuses \"%s\": %s", buf, jerr.text);
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
        struct util_error jerr = {0};
        char buf[512];
        int r;

        policy_init_defaults(&p);
        p.agent.enabled = true;
        r = shim_agent_options(&(struct shim_agent_params){.agent = &p.agent}, buf, sizeof(buf));
        cr_assert_eq(r, 0, "rc %d", r);
        cr_expect_str_eq(buf, "cooldown-ms=500,max-spills=32,log=warn", "options \"%s\"", buf);
        cr_expect_eq(jva_options_parse(buf, &parsed, &jerr), 0, "agent: %s", jerr.text);

        /* a fraction always has its decimal point, which the agent requires */
        p.agent.allow_fraction = 1.0;
        r = shim_agent_options(&(struct shim_agent_params){.agent = &p.agent, .threshold_bytes = 1},
                               buf, sizeof(buf));
        cr_assert_eq(r, 0, "rc %d", r);
        cr_expect(strstr(buf, "allow-fraction=1.0,") != NULL, "1.0 written as \"%s\"", buf);
        cr_expect_eq(jva_options_parse(buf, &parsed, &jerr), 0, "agent: %s", jerr.text);
        p.agent.allow_fraction = 0.123456;
        r = shim_agent_options(&(struct shim_agent_params){.agent = &p.agent, .threshold_bytes = 1},
                               buf, sizeof(buf));
        cr_expect(r == 0 && strstr(buf, "allow-fraction=0.123456,") != NULL, "0.123456 as \"%s\"",
                  buf);

        /* the plan's request never exceeds its limit; if it did, neither is passed */
        p.agent.allow_fraction = 0;
        r = shim_agent_options(
            &(struct shim_agent_params){.agent = &p.agent, .limit_bytes = 10, .request_bytes = 20},
            buf, sizeof(buf));
        cr_expect(r == 0 && !strstr(buf, "limit=") && !strstr(buf, "request="), "\"%s\"", buf);
}

Test(inject, options_refused)
{
        static const char *const bad_paths[] = {"relative/stats.jsonl",
                                                "/tmp/a,b",
                                                "/tmp/a b",
                                                "/tmp/a\"b",
                                                "/tmp/a'b",
                                                "/tmp/a\\b",
                                                ""};
        struct policy p;
        char buf[64];
        int r;

        policy_init_defaults(&p);
        for (size_t i = 0; i < ELEMENTSOF(bad_paths); i++) {
                r = shim_agent_options(
                    &(struct shim_agent_params){.agent = &p.agent, .stats_path = bad_paths[i]}, buf,
                    sizeof(buf));
                cr_expect_eq(r, -EINVAL, "stats=%s: rc %d", bad_paths[i], r);
                r = shim_agent_options(
                    &(struct shim_agent_params){.agent = &p.agent, .cgroup_dir = bad_paths[i]}, buf,
                    sizeof(buf));
                cr_expect_eq(r, -EINVAL, "cgroup=%s: rc %d", bad_paths[i], r);
                cr_expect(!shim_agent_option_path_ok(bad_paths[i]), "%s accepted", bad_paths[i]);
        }
        r = shim_agent_options(
            &(struct shim_agent_params){
                .agent = &p.agent,
                .stats_path = "/a/very/long/path/that/does/not/fit/in/sixty-four/bytes.jsonl"},
            buf, sizeof(buf));
        cr_expect_eq(r, -ENAMETOOLONG, "rc %d", r);
        cr_expect_str_eq(buf, "", "a cut string is not left behind: \"%s\"", buf);
}

Test(inject, agentpath_goes_right_after_java)
{
        char *argv[] = {"/usr/bin/java", "-Xmx1g", "-cp", "x.jar", "Main", "--cores", "4", NULL};
        const char *arg = "-agentpath:/usr/lib/sparkshim/libsparkshim-agent.so=log=warn";
        char **out = shim_agent_argv(argv, arg);
        const char *want[] = {"/usr/bin/java", arg,    "-Xmx1g",  "-cp",
                              "x.jar",         "Main", "--cores", "4"};

        cr_assert_not_null(out, "out of memory");
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                cr_expect_str_eq(out[i], want[i], "argv[%zu] \"%s\", expected \"%s\"", i, out[i],
                                 want[i]);
        cr_expect_null(out[8], "argv is not NULL-terminated");
        free(out);

        char *alone[] = {"java", NULL};
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
            {NULL, "-agentpath:/a.so=x=1"},
            {"", "-agentpath:/a.so=x=1"},
            {"   ", "-agentpath:/a.so=x=1"},
            {"-Dfoo=bar", "-Dfoo=bar -agentpath:/a.so=x=1"},
            {"-Dfoo=bar ", "-Dfoo=bar -agentpath:/a.so=x=1"},
            {"-Xss1m -agentpath:/opt/jmx.so", "-Xss1m -agentpath:/opt/jmx.so -agentpath:/a.so=x=1"},
            {"-Dq=\"a b\"", "-Dq=\"a b\" -agentpath:/a.so=x=1"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *v = shim_agent_java_tool_options(cases[i].existing, "-agentpath:/a.so=x=1");
                cr_assert_not_null(v, "out of memory");
                cr_expect_str_eq(v, cases[i].want, "\"%s\" + agent gave \"%s\", expected \"%s\"",
                                 cases[i].existing ? cases[i].existing : "(unset)", v,
                                 cases[i].want);
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
                char *argv[] = {"java", "-Xmx1g", arg, "Main", NULL};
                snprintf(arg, sizeof(arg),
                         "-agentpath:%s=force-bytes=8m,stats=/tmp/s.jsonl,log=info", ours);
                r = find(ours, argv, NULL, where, stats);
                cr_expect_eq(r, 1, "argv: rc %d", r);
                cr_expect_str_eq(where, "argv[2]", "where %s", where);
                cr_expect_str_eq(stats, "/tmp/s.jsonl", "stats %s", stats);
        }
        {
                char *argv[] = {"java", "Main", NULL};
                char *envp[] = {"PATH=/bin", env, NULL};
                snprintf(env, sizeof(env),
                         "JAVA_TOOL_OPTIONS=-Xss1m \"-agentpath:%s=stats=/x/y.jsonl\" -Dz=1", ours);
                r = find(ours, argv, envp, where, stats);
                cr_expect(r == 1 && strcmp(where, "JAVA_TOOL_OPTIONS") == 0 &&
                              strcmp(stats, "/x/y.jsonl") == 0,
                          "JAVA_TOOL_OPTIONS, quoted: rc %d where %s stats %s", r, where, stats);
        }
        {
                char *argv[] = {"/opt/entrypoint.sh", "executor", NULL};
                char *envp[] = {"SPARK_JAVA_OPT_0=-Dspark.app.id=a", env, NULL};
                snprintf(env, sizeof(env), "SPARK_JAVA_OPT_1=-agentpath:%s=log=warn", ours);
                r = find(ours, argv, envp, where, stats);
                cr_expect(r == 1 && strcmp(where, "SPARK_JAVA_OPT_1") == 0,
                          "SPARK_JAVA_OPT_1: rc %d where %s", r, where);
        }
        {
                char *argv[] = {"java", "Main", NULL};
                char *envp[] = {env, NULL};
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
                char *argv[] = {"java", arg, "Main", NULL};
                snprintf(arg, sizeof(arg), "-agentpath:%s=log=info", other);
                r = find(ours, argv, NULL, where, stats);
                cr_expect_eq(r, 0, "a look-alike at %s counted as the agent (%s)", other, where);
        }
        {
                char *argv[] = {"java", "-agentlib:sparkshim-agent", "Main", NULL};
                r = find(ours, argv, NULL, where, stats);
                cr_expect_eq(r, 0, "-agentlib:sparkshim-agent counted as the agent");
        }
        {
                char *argv[] = {"java", "-agentpath:/nonexistent/libsparkshim-agent.so", "Main",
                                NULL};
                r = find(ours, argv, NULL, where, stats);
                cr_expect_eq(r, 0, "a missing file counted as the agent");
        }
}

Test(inject, other_agents_are_not_ours)
{
        const char *ours = "/usr/lib/sparkshim/libsparkshim-agent.so";
        char where[64] = "", stats[256] = "";
        char *argv[] = {"java",
                        "-agentpath:/opt/jmx/libjmxagent.so=port=9000",
                        "-agentlib:jdwp=transport=dt_socket",
                        "-javaagent:/opt/x.jar",
                        "-Dlibsparkshim-agent.so=1",
                        "Main",
                        NULL};
        char *envp[] = {
            "JAVA_TOOL_OPTIONS=-agentpath:/opt/async-profiler/libasyncProfiler.so=start",
            "_JAVA_OPTIONS=-Xmx1g", "SPARK_JAVA_OPT_0=-Dx=libsparkshim-agent.so",
            "NOT_JAVA_OPTIONS=-agentpath:/usr/lib/sparkshim/libsparkshim-agent.so", NULL};
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
                char *argv[] = {"java", arg, "Main", NULL};
                r = find(lib, argv, NULL, where, stats);
                cr_expect(r == 1 && strcmp(where, "argv[1]") == 0,
                          "symlink to the same file: rc %d", r);
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
        cr_expect(
            json_is_null(json_object_get(json_array_get(json_object_get(j, "hooks"), 0), "reason")),
            "an on hook has a reason");

        cr_expect_eq(int_at(j, "pressure", "crossings"), 2, "crossings");
        cr_expect_eq(int_at(j, "pressure", "execution_memory_bytes"), 2147483648,
                     "execution memory");

        ops = json_object_get(j, "operators");
        cr_assert_eq(json_array_size(ops), 2, "%zu operators", json_array_size(ops));
        op = json_array_get(ops, 0);
        cr_expect_str_eq(json_string_value(json_object_get(op, "operator")), "UnsafeExternalSorter",
                         "name");
        cr_expect_eq(int_at(op, "forced_spills", NULL), 12, "forced");
        cr_expect_eq(int_at(op, "forced_by", "force_bytes"), 9, "by force_bytes");
        cr_expect_eq(int_at(op, "forced_by", "periodic"), 1, "by periodic");
        cr_expect_eq(int_at(op, "forced_by", "pressure"), 2, "by pressure");
        cr_expect_eq(int_at(op, "released_bytes", NULL), 1610612736, "released");
        cr_expect_eq(int_at(op, "denials", NULL), 0, "denials");
        cr_expect_eq(int_at(op, "capped", NULL), 5, "capped");
        cr_expect(json_is_null(json_object_get(json_array_get(ops, 1), "capped")),
                  "capped of a record without it");
        cr_expect(fabs(json_real_value(json_object_get(op, "spill_seconds")) - 2.5) < 1e-9,
                  "spill s");
        cr_expect(fabs(json_real_value(json_object_get(op, "spill_max_seconds")) - 0.4) < 1e-9,
                  "spill max");
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
        cr_expect(fabs(json_real_value(json_object_get(t, "reaction_seconds")) - 0.09) < 1e-9,
                  "reaction s");
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
        cr_expect(
            json_is_null(json_object_get(json_object_get(j, "pressure"), "execution_memory_bytes")),
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
        cr_expect(strstr(string_at(j, "stats", "error"),
                         "bad-fields.jsonl:2: a record with missing or malformed fields") != NULL,
                  "error \"%s\"", string_at(j, "stats", "error"));
        cr_expect_eq(int_at(j, "stats", "invalid_lines"), 2, "invalid lines");
        cr_expect_eq(json_array_size(json_object_get(j, "operators")), 0,
                     "a malformed operator is dropped");
        json_decref(j);

        j = report_for("agent-stats/no-agent-record.jsonl", true);
        cr_expect_str_eq(string_at(j, "stats", "status"), "partial", "status");
        cr_expect(strstr(string_at(j, "stats", "error"), "no \"agent\" record") != NULL,
                  "error \"%s\"", string_at(j, "stats", "error"));
        json_decref(j);

        j = report_for("agent-stats/empty.jsonl", true);
        cr_expect_str_eq(string_at(j, "stats", "status"), "partial", "status");
        cr_expect(strstr(string_at(j, "stats", "error"), "empty.jsonl: empty") != NULL,
                  "error \"%s\"", string_at(j, "stats", "error"));
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
        struct shim_agent_run run = {.enabled = false, .reason = "disabled by --no-agent"};
        json_t *j = shim_agent_report_json(&run);

        cr_assert_not_null(j, "no JSON");
        cr_expect(json_is_false(json_object_get(j, "enabled")), "enabled");
        cr_expect(json_is_false(json_object_get(j, "injected")), "injected");
        cr_expect_str_eq(json_string_value(json_object_get(j, "reason")), "disabled by --no-agent",
                         "reason");
        cr_expect(json_is_null(json_object_get(j, "method")) &&
                      json_is_null(json_object_get(j, "options")) &&
                      json_is_null(json_object_get(j, "threshold_bytes")),
                  "method, options and threshold of an agent not injected");
        cr_expect_str_eq(string_at(j, "stats", "status"), "none", "status");
        cr_expect(json_is_null(json_object_get(j, "totals")), "totals");
        json_decref(j);
}

/* ---------------------------------------------------------------- untrusted statistics (defect 9)
 */

/* The statistics file is written by the job's code and read by root: it is hostile input. */

static char stats_dir[] = "/tmp/sparkshim-stats-XXXXXX";

static void stats_dir_make(void)
{
        strcpy(stats_dir, "/tmp/sparkshim-stats-XXXXXX");
        cr_assert_not_null(mkdtemp(stats_dir), "mkdtemp: %s", strerror(errno));
}

static void stats_dir_remove(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", stats_dir);
        cr_expect_eq(system(cmd), 0, "%s", cmd);
}

static void write_stats(const char *name, const char *text)
{
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", stats_dir, name);
        f = fopen(path, "we");
        cr_assert_not_null(f, "create %s", path);
        fputs(text, f);
        fclose(f);
}

/* The report's agent object for the statistics file stats_dir/name. */
static json_t *report_of(const char *name)
{
        struct shim_agent_run run = {
            .enabled = true, .injected = true, .method = SHIM_AGENT_METHOD_AGENTPATH};
        json_t *j;

        snprintf(run.stats_path, sizeof(run.stats_path), "%s/%s", stats_dir, name);
        j = shim_agent_report_json(&run);
        cr_assert_not_null(j, "no JSON for %s", name);
        return j;
}

#define AGENT_LINE "{\"record\":\"agent\",\"version\":\"0.1.0\",\"pid\":7,\"final\":true}\n"
#define OPERATOR_LINE(name, forced)                                                                \
        "{\"record\":\"operator\",\"operator\":\"" name "\",\"calls\":1,\"requested_bytes\":1,"    \
        "\"forced_spills\":" forced ",\"forced_by\":{\"force-bytes\":1},\"empty_spills\":0,"       \
        "\"failed_spills\":0,\"released_bytes\":1,\"spill_ns_total\":1,\"spill_ns_max\":1,"        \
        "\"reactions\":0,\"reaction_ns_total\":0,\"reaction_ns_max\":0}\n"

Test(inject, stats_totals_never_overflow)
{
        json_t *j;

        stats_dir_make();
        /* UBSan: signed overflow; the report said forced_spills -2 */
        write_stats("stats.jsonl", AGENT_LINE OPERATOR_LINE("A", "9223372036854775807")
                                       OPERATOR_LINE("B", "9223372036854775807"));
        j = report_of("stats.jsonl");
        cr_expect(int_at(j, "totals", "forced_spills") >= 0, "total forced_spills %lld",
                  (long long)int_at(j, "totals", "forced_spills"));
        cr_expect_eq(int_at(j, "totals", "forced_spills"), INT64_MAX, "the first operator counts");
        cr_expect_eq(int_at(j, "totals", "operators"), 1, "the operator that overflows is refused");
        cr_expect_str_eq(string_at(j, "stats", "status"), "partial", "status");
        cr_expect(strstr(string_at(j, "stats", "error"),
                         "stats.jsonl:3: a record with missing or malformed fields"),
                  "error \"%s\"", string_at(j, "stats", "error"));
        json_decref(j);
        stats_dir_remove();
}

Test(inject, stats_symlinks_not_followed)
{
        char target[256], link_dir[256], path[256];
        json_t *j;

        stats_dir_make();
        fixture_path("agent-stats/ok.jsonl", target, sizeof(target));
        snprintf(path, sizeof(path), "%s/stats.jsonl", stats_dir);
        cr_assert_eq(symlink(target, path), 0, "symlink");
        j = report_of("stats.jsonl");
        cr_expect_str_eq(string_at(j, "stats", "status"), "unreadable", "a symlinked file is read");
        cr_expect(strstr(string_at(j, "stats", "error"), "symbolic link"), "error \"%s\"",
                  string_at(j, "stats", "error"));
        cr_expect_eq(json_array_size(json_object_get(j, "operators")), 0, "operators of a symlink");
        json_decref(j);

        /* the directory replaced by a link to one the user controls */
        fixture_path("agent-stats", target, sizeof(target));
        snprintf(link_dir, sizeof(link_dir), "%s/dir", stats_dir);
        cr_assert_eq(symlink(target, link_dir), 0, "symlink");
        j = report_of("dir/ok.jsonl");
        cr_expect_str_eq(string_at(j, "stats", "status"), "unreadable",
                         "read through a symlinked directory");
        json_decref(j);
        stats_dir_remove();
}

Test(inject, stats_fifo_device_and_directory_refused, .timeout = 20)
{
        char path[256];
        struct shim_agent_run run = {.enabled = true, .stats_path = "/dev/null"};
        json_t *j;

        stats_dir_make();
        snprintf(path, sizeof(path), "%s/stats.jsonl", stats_dir);
        cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo");
        /* a FIFO without a writer: the open must not block */
        j = report_of("stats.jsonl");
        cr_expect_str_eq(string_at(j, "stats", "status"), "unreadable", "a FIFO");
        cr_expect(strstr(string_at(j, "stats", "error"), "not a regular file"), "error \"%s\"",
                  string_at(j, "stats", "error"));
        json_decref(j);

        j = shim_agent_report_json(&run);
        cr_assert_not_null(j);
        cr_expect_str_eq(string_at(j, "stats", "status"), "unreadable", "a device");
        json_decref(j);
        stats_dir_remove();
}

Test(inject, stats_size_limit)
{
        char path[256];
        json_t *j;

        stats_dir_make();
        write_stats("stats.jsonl", AGENT_LINE);
        snprintf(path, sizeof(path), "%s/stats.jsonl", stats_dir);
        cr_assert_eq(truncate(path, SHIM_AGENT_STATS_MAX + 1), 0, "truncate");
        j = report_of("stats.jsonl");
        cr_expect_str_eq(string_at(j, "stats", "status"), "unreadable", "a file above the limit");
        cr_expect(strstr(string_at(j, "stats", "error"), "larger than 1 MiB"), "error \"%s\"",
                  string_at(j, "stats", "error"));
        json_decref(j);
        /* at the limit it is read */
        cr_assert_eq(truncate(path, SHIM_AGENT_STATS_MAX), 0, "truncate");
        j = report_of("stats.jsonl");
        cr_expect_str_eq(string_at(j, "stats", "status"), "partial", "a file at the limit: %s",
                         string_at(j, "stats", "error"));
        json_decref(j);
        stats_dir_remove();
}

/* Each line must be refused on its own: bounds and types of every member. */
Test(inject, stats_fields_bounded_and_typed)
{
        static const char *const bad[] = {
            "{\"record\":\"agent\",\"pid\":-1}",
            "{\"record\":\"agent\",\"pid\":\"7\"}",
            "{\"record\":\"agent\",\"pid\":7,\"final\":1}",
            "{\"record\":\"agent\",\"pid\":7,\"version\":\"a\\nb\"}",
            "{\"record\":\"hook\",\"hook\":\"h\",\"state\":\"on\",\"reason\":7}",
            "{\"record\":\"hook\",\"hook\":\"\",\"state\":\"on\"}",
            "{\"record\":\"hook\",\"hook\":\"h\\u001b[2J\",\"state\":\"on\"}",
            "{\"record\":\"pressure\",\"source\":\"cgroup\",\"path\":\"/x\",\"anon_bytes\":1,"
            "\"peak_anon_bytes\":1,\"threshold_bytes\":1,\"crossings\":-1,\"under_pressure\":false,"
            "\"read_errors\":0}",
            "{\"record\":\"pressure\",\"source\":\"cgroup\",\"path\":\"/x\",\"anon_bytes\":1,"
            "\"peak_anon_bytes\":1,\"threshold_bytes\":1,\"crossings\":1,\"under_pressure\":false,"
            "\"read_errors\":0,\"execution_memory_bytes\":-5}",
            "{\"record\":\"pressure\",\"source\":\"cgroup\",\"path\":\"/x\",\"anon_bytes\":1,"
            "\"peak_anon_bytes\":1,\"threshold_bytes\":1,\"crossings\":1,\"under_pressure\":false,"
            "\"read_errors\":0,\"psi\":{\"path\":\"/p\",\"trigger\":\"yes\",\"stall_us\":1,"
            "\"window_us\":1,\"events\":0,\"over\":false}}",
            "{\"record\":\"pressure\",\"source\":\"cgroup\",\"path\":\"/x\",\"anon_bytes\":1,"
            "\"peak_anon_bytes\":1,\"threshold_bytes\":1,\"crossings\":1,\"under_pressure\":false,"
            "\"read_errors\":0,\"heap\":{\"after_gc_bytes\":-1,\"peak_after_gc_bytes\":1,"
            "\"max_bytes\":1,\"threshold_bytes\":1,\"crossings\":0,\"over\":false}}",
            "{\"record\":\"pressure\",\"source\":\"cgroup\",\"path\":\"/x\",\"anon_bytes\":1,"
            "\"peak_anon_bytes\":1,\"threshold_bytes\":1,\"crossings\":1,\"under_pressure\":false,"
            "\"read_errors\":0,\"anon_over\":1}",
            OPERATOR_LINE("A", "-1"),
            OPERATOR_LINE("A", "1.5"),
            OPERATOR_LINE("A", "\"3\""),
            OPERATOR_LINE("", "1"),
            "{\"record\":\"operator\",\"operator\":\"A\",\"calls\":1,\"requested_bytes\":1,"
            "\"forced_spills\":1,\"forced_by\":{\"force-bytes\":\"1\"},\"empty_spills\":0,"
            "\"failed_spills\":0,\"released_bytes\":1,\"spill_ns_total\":1,\"spill_ns_max\":1,"
            "\"reactions\":0,\"reaction_ns_total\":0,\"reaction_ns_max\":0}",
            "{\"record\":\"operator\",\"operator\":\"A\",\"calls\":99999999999999999999}",
        };
        char line[1024];

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *j;

                snprintf(line, sizeof(line), AGENT_LINE "%s\n", bad[i]);
                j = shim_agent_stats_parse(line, strlen(line), "s.jsonl");
                cr_assert_not_null(j);
                cr_expect_eq(int_at(j, "stats", "invalid_lines"), 1, "case %zu accepted: %s", i,
                             bad[i]);
                cr_expect(strstr(string_at(j, "stats", "error"), "s.jsonl:2: "),
                          "case %zu: error \"%s\"", i, string_at(j, "stats", "error"));
                cr_expect_eq(json_array_size(json_object_get(j, "operators")), 0, "case %zu", i);
                json_decref(j);
        }
        {
                /* an operator name past SHIM_AGENT_NAME_MAX */
                size_t n = SHIM_AGENT_NAME_MAX + 1;
                char *text = malloc(n + 600);
                json_t *j;

                cr_assert_not_null(text);
                memset(text, 'x', n);
                text[n] = '\0';
                snprintf(line, sizeof(line), "%s", OPERATOR_LINE("NAME", "1"));
                snprintf(text + n, 600, "%s", strstr(line, "\",\"calls\""));
                {
                        char *full = NULL;
                        cr_assert(asprintf(&full, "{\"record\":\"operator\",\"operator\":\"%s",
                                           text) > 0);
                        j = shim_agent_stats_parse(full, strlen(full), "s.jsonl");
                        free(full);
                }
                cr_expect_eq(int_at(j, "stats", "invalid_lines"), 1, "a %zu-byte name accepted", n);
                json_decref(j);
                free(text);
        }
}

Test(inject, stats_parse_from_buffer)
{
        char path[256];
        size_t len;
        char *text;
        json_t *j, *from_file;

        fixture_path("agent-stats/ok.jsonl", path, sizeof(path));
        text = read_text(path, &len);
        cr_assert_not_null(text);
        j = shim_agent_stats_parse(text, len, path);
        cr_assert_not_null(j);
        from_file = report_for("agent-stats/ok.jsonl", true);
        cr_expect(
            json_equal(json_object_get(j, "operators"), json_object_get(from_file, "operators")),
            "operators differ between buffer and file");
        cr_expect(json_equal(json_object_get(j, "totals"), json_object_get(from_file, "totals")),
                  "totals differ");
        cr_expect_str_eq(string_at(j, "stats", "status"), "ok", "status");
        json_decref(from_file);
        json_decref(j);

        /* a NUL byte inside a line makes the line invalid, not a shorter line */
        {
                static const char nul[] = "{\"record\":\"agent\",\"pid\":7}\n{\"record\":\"hook\","
                                          "\"hook\":\"h\",\"state\":\"on\"}\0garbage\n";
                j = shim_agent_stats_parse(nul, sizeof(nul) - 1, NULL);
                cr_assert_not_null(j);
                cr_expect_eq(int_at(j, "stats", "invalid_lines"), 1, "a NUL byte");
                json_decref(j);
        }
        j = shim_agent_stats_parse(NULL, 0, NULL);
        cr_assert_not_null(j);
        cr_expect_str_eq(string_at(j, "stats", "status"), "partial", "empty buffer");
        json_decref(j);
        free(text);
}

/* The agent's other pressure sources pass, checked, into the report (sparkshim-report(5)). */
Test(inject, stats_pressure_sources)
{
        static const char text[] = AGENT_LINE
            "{\"record\":\"pressure\",\"source\":\"cgroup\",\"path\":\"/x\",\"anon_bytes\":1,"
            "\"peak_anon_bytes\":2,\"threshold_bytes\":3,\"crossings\":4,\"under_pressure\":true,"
            "\"read_errors\":0,\"execution_memory_bytes\":5,\"anon_over\":true,\"episodes\":2,"
            "\"psi\":{\"path\":\"/p\",\"trigger\":true,\"stall_us\":150000,\"window_us\":1000000,"
            "\"events\":4,\"over\":false,\"extra\":\"dropped\"},\"heap\":null}\n";
        json_t *j = shim_agent_stats_parse(text, strlen(text), "s.jsonl"), *p;

        cr_assert_not_null(j);
        cr_expect_str_eq(string_at(j, "stats", "status"), "ok", "%s",
                         string_at(j, "stats", "error"));
        p = json_object_get(j, "pressure");
        cr_expect(json_is_true(json_object_get(p, "anon_over")), "anon_over");
        cr_expect_eq(int_at(p, "episodes", NULL), 2, "episodes");
        cr_expect_eq(int_at(p, "psi", "events"), 4, "psi events");
        cr_expect_null(json_object_get(json_object_get(p, "psi"), "extra"),
                       "an unknown member copied");
        cr_expect(json_is_null(json_object_get(p, "heap")), "heap");
        json_decref(j);
}
