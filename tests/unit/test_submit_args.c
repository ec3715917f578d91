/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spark-submit's command line as Spark 3.3 to 4.x reads it (policy/submit-args.c): the
 * options and their two forms, where the options end, what is not a submission, what Spark
 * refuses, the properties files (java.util.Properties), and the values the java personality
 * takes from them (the job's name, the opt-out, the mark of settings already applied).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "policy.h"
#include "util.h"

#define N(a) ((int)(ELEMENTSOF(a)))

static struct policy_submit s;
static struct util_error err;

static void setup(void)
{
        policy_submit_init(&s);
        err = (struct util_error){0};
}

static void teardown(void)
{
        policy_submit_free(&s);
}

TestSuite(submit, .init = setup, .fini = teardown);

/* parse argv (what follows the SparkSubmit class), which must succeed */
static void parse(int argc, char **argv)
{
        int r = policy_submit_parse(argc, argv, &s, &err);

        cr_assert_eq(r, 0, "parse: %d (%s)", r, err.text);
}

static void expect_value(const char *key, const char *want)
{
        const char *got = policy_submit_get(&s, key);

        if (!want)
                cr_expect_null(got, "%s: '%s', expected unset", key, got);
        else
                cr_expect(got && strcmp(got, want) == 0, "%s: '%s', expected '%s'", key,
                          got ? got : "(unset)", want);
}

/* a temporary file holding text; its path in path */
static void temp_file(const char *text, char *path, size_t size)
{
        int fd;

        snprintf(path, size, "/tmp/test-submit-args.XXXXXX");
        fd = mkstemp(path);
        cr_assert_geq(fd, 0, "mkstemp");
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
}

Test(submit, conf_in_both_forms_and_its_alias)
{
        char *argv[] = {"--conf", "spark.a=1", "--conf=spark.b=2=3", "-c", "spark.c=", "--conf",
                        "=v",     "app.jar"};

        parse(N(argv), argv);
        cr_expect(s.submission);
        cr_expect_eq(s.resource, 7, "resource at %d", s.resource);
        expect_value("spark.a", "1");
        expect_value("spark.b", "2=3");
        expect_value("spark.c", "");
        expect_value("", "v");
}

Test(submit, options_set_their_keys)
{
        char *argv[] = {"--executor-memory",
                        "4g",
                        "--executor-cores=3",
                        "--driver-memory",
                        "2g",
                        "--driver-cores",
                        "2",
                        "--num-executors",
                        "5",
                        "--total-executor-cores",
                        "12",
                        "--name",
                        "etl",
                        "--queue",
                        "q",
                        "--supervise",
                        "--master",
                        "yarn",
                        "--deploy-mode",
                        "cluster",
                        "--class",
                        "org.example.Etl",
                        "etl.jar"};

        parse(N(argv), argv);
        expect_value("spark.executor.memory", "4g");
        expect_value("spark.executor.cores", "3");
        expect_value("spark.driver.memory", "2g");
        expect_value("spark.driver.cores", "2");
        expect_value("spark.executor.instances", "5");
        expect_value("spark.cores.max", "12");
        expect_value("spark.app.name", "etl");
        expect_value("spark.yarn.queue", "q");
        expect_value("spark.driver.supervise", "true");
        expect_value("spark.master", "yarn");
        expect_value("spark.submit.deployMode", "cluster");
        expect_value("spark.executor.memoryOverhead", NULL);
}

Test(submit, an_option_wins_over_conf_and_the_last_conf_wins)
{
        char *argv[] = {"--executor-memory",
                        "4g",
                        "--conf",
                        "spark.executor.memory=1g",
                        "--conf",
                        "spark.x=1",
                        "--conf",
                        "spark.x=2",
                        "a.jar"};

        parse(N(argv), argv);
        expect_value("spark.executor.memory", "4g");
        expect_value("spark.x", "2");
}

Test(submit, the_primary_resource_ends_the_options)
{
        /* an application argument that looks like an option is the application's */
        char *argv[] = {"--conf", "spark.a=1", "app.jar", "--conf", "spark.executor.memory=9g",
                        "--name", "x",         "--bogus"};

        parse(N(argv), argv);
        cr_expect(s.submission);
        cr_expect_eq(s.resource, 2, "resource at %d", s.resource);
        expect_value("spark.executor.memory", NULL);
        expect_value("spark.app.name", NULL);
}

Test(submit, shells_and_python)
{
        char *shell[] = {"--class", "org.apache.spark.repl.Main", "--name", "Spark shell",
                         "spark-shell"};
        char *python[] = {"--master", "local[*]", "--name", "PySparkShell", "pyspark-shell"};

        parse(N(shell), shell);
        cr_expect_eq(s.resource, 4);
        expect_value("spark.app.name", "Spark shell");
        policy_submit_free(&s);
        parse(N(python), python);
        cr_expect_eq(s.resource, 4);
        expect_value("spark.app.name", "PySparkShell");
}

Test(submit, not_submissions)
{
        char *commands[][4] = {
            {"--kill", "driver-1", "--master", "spark://m:7077"},
            {"--master", "spark://m:7077", "--status", "driver-1"},
            {"--help", "--bogus", "x", "y"},
            {"-h", "a.jar", "x", "y"},
            {"--version", "--bogus", "x", "y"},
            {"--usage-error", "x", "y", "z"},
            {"--help=yes", "x", "y", "z"},
        };

        for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
                policy_submit_free(&s);
                parse(4, commands[i]);
                cr_expect(!s.submission, "%s %s: read as a submission", commands[i][0],
                          commands[i][1]);
        }
        /* nothing to submit: Spark says so itself */
        policy_submit_free(&s);
        parse(2, (char *[]){"--name", "x"});
        cr_expect(!s.submission, "no primary resource: read as a submission");
}

Test(submit, what_spark_refuses)
{
        char *unknown[] = {"--conf", "spark.a=1", "--bogus", "a.jar"};
        char *unknown_eq[] = {"--bogus=1", "a.jar"};
        char *missing[] = {"--name"};
        char *no_eq[] = {"--conf", "spark.a", "a.jar"};
        char *alias_eq[] = {"-c=spark.a=1", "a.jar"};
        char *empty_eq[] = {"--conf=", "a.jar"};
        char *dash[] = {"-", "a.jar"};
        /* Java's '.' takes no line terminator: not the "=" form, so an unknown option */
        char *newline[] = {"--name=a\nb", "a.jar"};
        char *u2028[] = {"--name=a\xe2\x80\xa8", "a.jar"};
        struct {
                int argc;
                char **argv;
                const char *says;
        } cases[] = {
            {N(unknown), unknown, "unknown option '--bogus'"},
            {N(unknown_eq), unknown_eq, "unknown option '--bogus'"},
            {N(missing), missing, "--name without its value"},
            {N(no_eq), no_eq, "no '='"},
            {N(alias_eq), alias_eq, "unknown option '-c=spark.a=1'"},
            {N(empty_eq), empty_eq, "unknown option '--conf='"},
            {N(dash), dash, "unknown option '-'"},
            {N(newline), newline, "unknown option"},
            {N(u2028), u2028, "unknown option"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int r;

                policy_submit_free(&s);
                err = (struct util_error){0};
                r = policy_submit_parse(cases[i].argc, cases[i].argv, &s, &err);
                cr_expect_eq(r, -EINVAL, "case %zu (%s): %d", i, cases[i].argv[0], r);
                cr_expect(strstr(err.text, cases[i].says), "case %zu: '%s' lacks '%s'", i, err.text,
                          cases[i].says);
        }
}

Test(submit, switches_in_the_equals_form)
{
        /* SparkSubmitOptionParser splits "--opt=value" before it looks the name up */
        char *argv[] = {"--verbose=no", "--supervise=false", "--name=a=b", "a.jar"};

        parse(N(argv), argv);
        cr_expect(s.submission);
        expect_value("spark.driver.supervise", "true");
        expect_value("spark.app.name", "a=b");
}

Test(submit, properties_file)
{
        char path[64], file_arg[96];
        char *argv[] = {"--properties-file", path, "--conf", "spark.b=from-conf", "a.jar"};

        temp_file("# a comment\n"
                  "! another\n"
                  "   spark.a = one  \n"
                  "spark.b:two\n"
                  "spark.c three\n"
                  "spark.d\t=\tfour \\\n"
                  "       continued\n"
                  "spark\\=e = \\u00e9\\t\\x\n"
                  "spark.f\r\n"
                  "spark.g=a\\\\\n"
                  "spark.h = \\\n"
                  "\n"
                  "spark.app.name=from-file\n"
                  "spark.i=\\uD83D\\uDE00\n"
                  "spark.j=last\n"
                  "spark.j=\\\n",
                  path, sizeof(path));
        snprintf(file_arg, sizeof(file_arg), "%s", path);
        parse(N(argv), argv);
        cr_assert_str_eq(s.properties_file, path);
        cr_assert_eq(policy_submit_read_properties(&s, &err), 0, "%s", err.text);
        expect_value("spark.a", "one");
        expect_value("spark.b", "from-conf");
        expect_value("spark.c", "three");
        expect_value("spark.d", "four continued");
        expect_value("spark=e", "\xc3\xa9\tx");
        expect_value("spark.f", "");
        expect_value("spark.g", "a\\");
        expect_value("spark.h", "");
        expect_value("spark.app.name", "from-file");
        expect_value("spark.i", "\xf0\x9f\x98\x80");
        expect_value("spark.j", "");
        unlink(path);
}

Test(submit, only_the_last_properties_file_is_read)
{
        char first[64], second[64];
        char *argv[] = {"--properties-file", first, "--properties-file", second, "a.jar"};

        temp_file("spark.a=1\n", first, sizeof(first));
        temp_file("spark.b=2\n", second, sizeof(second));
        parse(N(argv), argv);
        cr_assert_eq(policy_submit_read_properties(&s, &err), 0, "%s", err.text);
        expect_value("spark.a", NULL);
        expect_value("spark.b", "2");
        unlink(first);
        unlink(second);
}

Test(submit, extra_properties_files_override_the_properties_file)
{
        char base[64], extra[64], extra_arg[96];
        char *argv[] = {"--properties-file", base, extra_arg, "a.jar"};

        temp_file("spark.a=base\nspark.b=base\n", base, sizeof(base));
        temp_file("spark.a=extra\n", extra, sizeof(extra));
        snprintf(extra_arg, sizeof(extra_arg), "--extra-properties-file=%s", extra);
        parse(N(argv), argv);
        cr_assert_eq(policy_submit_read_properties(&s, &err), 0, "%s", err.text);
        expect_value("spark.a", "extra");
        expect_value("spark.b", "base");
        unlink(base);
        unlink(extra);
}

Test(submit, properties_files_that_cannot_be_read)
{
        char *missing[] = {"--properties-file", "/nonexistent/spark.conf", "a.jar"};
        char *directory[] = {"--properties-file", "/tmp", "a.jar"};
        char path[64];

        parse(N(missing), missing);
        cr_expect_eq(policy_submit_read_properties(&s, &err), -ENOENT);
        cr_expect(strstr(err.text, "/nonexistent/spark.conf"), "'%s'", err.text);
        policy_submit_free(&s);
        parse(N(directory), directory);
        cr_expect_eq(policy_submit_read_properties(&s, &err), -EINVAL);
        cr_expect(strstr(err.text, "not a regular file"), "'%s'", err.text);
        /* a malformed escape: Properties.load throws, and so does Spark */
        temp_file("spark.a=\\u12g4\n", path, sizeof(path));
        policy_submit_free(&s);
        parse(3, (char *[]){"--properties-file", path, "a.jar"});
        cr_expect_eq(policy_submit_read_properties(&s, &err), -EINVAL);
        cr_expect(strstr(err.text, "\\uxxxx"), "'%s'", err.text);
        unlink(path);
}

Test(submit, properties_text_edge_cases)
{
        static const struct {
                const char *text, *key, *value;
        } cases[] = {
            {"k=v", "k", "v"},   /* no final newline */
            {"k=v\\", "k", "v"}, /* a backslash at the end goes */
            {"k", "k", ""},      /* a key alone */
            {"  # not = a comment\nk=v", "k", "v"},
            {"k = = v", "k", "= v"},     /* one separator, the next '=' is the value's */
            {"k\\ x=v", "k x", "v"},     /* an escaped blank is the key's */
            {"k=\\\n  # v", "k", "# v"}, /* a continued line is no comment */
            {"k=a\\\r\n  b", "k", "ab"},
            {"k:\\u0041", "k", "A"},
            {"k=\\uDC00", "k", "?"},   /* a lone surrogate, as Java encodes it */
            {"k=v\x01\x02", "k", "v"}, /* trimmed as Spark trims */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *got;

                policy_submit_free(&s);
                cr_assert_eq(policy_submit_add_properties(&s, cases[i].text, strlen(cases[i].text),
                                                          POLICY_SUBMIT_PROPERTIES, "t", &err),
                             0, "case %zu: %s", i, err.text);
                got = policy_submit_get(&s, cases[i].key);
                cr_expect(got && strcmp(got, cases[i].value) == 0,
                          "case %zu: %s is '%s', expected '%s'", i, cases[i].key,
                          got ? got : "(unset)", cases[i].value);
        }
        policy_submit_free(&s);
        cr_expect_eq(
            policy_submit_add_properties(&s, "k=\\u0000", 8, POLICY_SUBMIT_PROPERTIES, "t", &err),
            -EINVAL, "a NUL in a value was taken");
}

Test(submit, the_job)
{
        char *named[] = {"--name", "etl", "--conf", "spark.app.name=other", "a.jar"};
        char *marked[] = {"--name", "etl", "--conf", "spark.sparkshim.job=nightly", "a.jar"};
        char *empty_mark[] = {"--conf", "spark.sparkshim.job=", "--name", "etl", "a.jar"};
        char *conf_only[] = {"--conf", "spark.app.name=from-conf", "a.jar"};
        char *queue[] = {"--queue", "q1", "--conf", "spark.yarn.queue=q2", "a.jar"};
        char *none[] = {"--class", "org.example.Etl", "a.jar"};
        char *empty[] = {"--name", "", "a.jar"};
        char *python[] = {"--master", "yarn", "/home/u/jobs/etl.py", "--day", "1"};
        const char *job;

        parse(N(named), named);
        job = policy_submit_job(&s, "spark.app.name");
        cr_expect(job && strcmp(job, "etl") == 0, "--name: '%s'", job);
        policy_submit_free(&s);
        parse(N(marked), marked);
        job = policy_submit_job(&s, "spark.app.name");
        cr_expect(job && strcmp(job, "nightly") == 0, "spark.sparkshim.job: '%s'", job);
        policy_submit_free(&s);
        parse(N(empty_mark), empty_mark);
        job = policy_submit_job(&s, "spark.app.name");
        cr_expect(job && strcmp(job, "etl") == 0, "an empty spark.sparkshim.job: '%s'", job);
        policy_submit_free(&s);
        parse(N(conf_only), conf_only);
        job = policy_submit_job(&s, "spark.app.name");
        cr_expect(job && strcmp(job, "from-conf") == 0, "--conf spark.app.name: '%s'", job);
        policy_submit_free(&s);
        parse(N(queue), queue);
        job = policy_submit_job(&s, "spark.yarn.queue");
        cr_expect(job && strcmp(job, "q1") == 0, "tuner.job_key spark.yarn.queue: '%s'", job);
        policy_submit_free(&s);
        /* no name: the one Spark gives the application, its class, else its file's name */
        parse(N(none), none);
        job = policy_submit_job(&s, "spark.app.name");
        cr_expect(job && strcmp(job, "org.example.Etl") == 0, "a job without a name: '%s'", job);
        policy_submit_free(&s);
        parse(N(empty), empty);
        job = policy_submit_job(&s, "spark.app.name");
        cr_expect(job && strcmp(job, "a.jar") == 0, "an empty --name: '%s'", job);
        policy_submit_free(&s);
        parse(N(python), python);
        job = policy_submit_job(&s, "spark.app.name");
        cr_expect(job && strcmp(job, "etl.py") == 0, "a Python file: '%s'", job);
        policy_submit_free(&s);
        /* another job_key has no such fallback */
        parse(N(none), none);
        cr_expect_null(policy_submit_job(&s, "spark.yarn.queue"), "no queue");
}

Test(submit, opting_out)
{
        static const struct {
                const char *conf;
                bool out;
        } cases[] = {
            {"spark.sparkshim.tune=off", true},   {"spark.sparkshim.tune=OFF", true},
            {"spark.sparkshim.tune=Off", true},   {"spark.sparkshim.tune=on", false},
            {"spark.sparkshim.tune=offx", false}, {"spark.sparkshim.tuned=off", false},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *argv[] = {"--conf", (char *)cases[i].conf, "a.jar"};

                policy_submit_free(&s);
                parse(N(argv), argv);
                cr_expect_eq(policy_submit_opted_out(&s), cases[i].out, "%s", cases[i].conf);
        }
        /* after the resource it is the application's argument */
        policy_submit_free(&s);
        parse(3, (char *[]){"a.jar", "--conf", "spark.sparkshim.tune=off"});
        cr_expect(!policy_submit_opted_out(&s), "an application argument opted out");
}

Test(submit, already_applied)
{
        char path[64];
        char *argv[] = {"--deploy-mode", "client",          "--properties-file", path,
                        "--class",       "org.example.Etl", "spark-internal"};

        /* Kubernetes cluster mode: the driver pod's spark-submit gets the first one's conf */
        temp_file("spark.app.name=etl\nspark.sparkshim.config=next-0123456789abcdef\n", path,
                  sizeof(path));
        parse(N(argv), argv);
        cr_assert_eq(policy_submit_read_properties(&s, &err), 0, "%s", err.text);
        expect_value(POLICY_CONFIG_PROPERTY, "next-0123456789abcdef");
        unlink(path);
}
