/* SPDX-License-Identifier: Apache-2.0 */
/* `sparkshim tune` and `sparkshim report --job` (sparkshim-tune(1)). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "policy.h"
#include "store.h"
#include "properties.h"
#include "publish.h"
#include "tuner.h"
#include "util.h"

enum format { FORMAT_CONF, FORMAT_PROPERTIES, FORMAT_JSON };

struct tune_options {
        const char *job, *db, *policy_path;
        bool policy_explicit;
        enum format format;
        bool json; /* report --job --json */
        bool seed_set;
        enum tuner_stage_used stage; /* --stage; NONE = auto */
        bool owner_set;
        uint32_t owner; /* --owner UID */
        uint64_t seed;
};

int tuner_cli_load_policy(const char *path, bool explicit, struct policy *p)
{
        struct util_error err = {0};
        int r;

        policy_init_defaults(p);
        r = policy_load_file(path, geteuid() == 0, p, &err);
        if (r == -ENOENT && !explicit) {
                log_info("no policy at %s; using the built-in defaults", path);
                policy_init_defaults(p);
                return 0;
        }
        if (r < 0) {
                log_error("%s", err.text);
                return SHIM_EXIT_POLICY;
        }
        return 0;
}

const char *tuner_cli_printable(const char *s, char *buf, size_t size)
{
        size_t n = 0;

        for (; s && *s && n + 1 < size; s++, n++)
                buf[n] = (unsigned char)*s < ' ' || *s == 0x7f ? '?' : *s;
        buf[n] = '\0';
        return buf;
}

int tuner_cli_check_db(const char *db)
{
        char dir[4096];
        const char *slash;
        struct stat st;

        if (tuner_store_is_postgresql(db) || geteuid() != 0)
                return 0;
        slash = strrchr(db, '/');
        if (!slash)
                snprintf(dir, sizeof(dir), ".");
        else if (slash == db)
                snprintf(dir, sizeof(dir), "/");
        else
                snprintf(dir, sizeof(dir), "%.*s", (int)(slash - db), db);
        if (stat(dir, &st) < 0)
                return 0; /* the store says what is missing */
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_uid != 0 && st.st_uid != geteuid())) {
                char shown[512], dir_shown[512];

                log_error(
                    "history %s: directory %s is writable by others or not root's (mode %04o, "
                    "owner %u); allowed: a directory only root writes, such as /var/lib/sparkshim "
                    "(SQLite makes its -wal and -shm files there)",
                    tuner_store_describe(db, shown, sizeof(shown)),
                    tuner_store_describe(dir, dir_shown, sizeof(dir_shown)),
                    (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
                return TUNER_EXIT_STORE;
        }
        return 0;
}

static int set_job(const char *command, const char *arg, struct tune_options *o)
{
        if (!arg[0] || strlen(arg) >= TUNER_JOB_MAX) {
                log_error("%s: --job: '%s' is not a job key; allowed: 1 to %d bytes", command, arg,
                          TUNER_JOB_MAX - 1);
                return SHIM_EXIT_USAGE;
        }
        o->job = arg;
        return 0;
}

static int set_format(const char *arg, bool report, struct tune_options *o)
{
        if (report) {
                log_error("report: --format: not a flag of report --job; allowed: --json");
                return SHIM_EXIT_USAGE;
        }
        if (strcmp(arg, "conf") == 0)
                o->format = FORMAT_CONF;
        else if (strcmp(arg, "properties") == 0)
                o->format = FORMAT_PROPERTIES;
        else if (strcmp(arg, "json") == 0)
                o->format = FORMAT_JSON;
        else {
                log_error("tune: --format: '%s' is not a format; allowed: conf, properties, json",
                          arg);
                return SHIM_EXIT_USAGE;
        }
        return 0;
}

static int set_owner(const char *command, const char *arg, struct tune_options *o)
{
        uint64_t v;

        if (util_parse_u64(arg, &v) < 0 || v > UINT32_MAX) {
                log_error("%s: --owner: '%s' is not a user id; allowed: 0 to 4294967295", command,
                          arg);
                return SHIM_EXIT_USAGE;
        }
        o->owner = (uint32_t)v;
        o->owner_set = true;
        return 0;
}

static int set_stage(const char *command, const char *arg, bool report, struct tune_options *o)
{
        if (report ||
            (strcmp(arg, "auto") != 0 && strcmp(arg, "rules") != 0 && strcmp(arg, "bo") != 0)) {
                log_error("%s: --stage: '%s' is not a stage; allowed: auto, rules, bo (tune only)",
                          command, arg);
                return SHIM_EXIT_USAGE;
        }
        o->stage = strcmp(arg, "rules") == 0 ? TUNER_STAGE_RULES
                   : strcmp(arg, "bo") == 0  ? TUNER_STAGE_BO
                                             : TUNER_STAGE_NONE;
        return 0;
}

static int set_seed(const char *command, const char *arg, struct tune_options *o)
{
        unsigned long long v;
        char *end;

        errno = 0;
        v = strtoull(arg, &end, 10);
        if (errno || end == arg || *end || arg[0] == '-') {
                log_error("%s: --seed: '%s' is not a seed; allowed: an integer 0 to 2^64-1",
                          command, arg);
                return SHIM_EXIT_USAGE;
        }
        o->seed = v;
        o->seed_set = true;
        return 0;
}

static int usage(bool report)
{
        printf(report ? "usage: sparkshim report --job KEY [--db DB] [--policy FILE] [--owner UID] "
                        "[--json]\n"
                      : "usage: sparkshim tune --job KEY [--db DB] [--policy FILE] "
                        "[--format conf|properties|json] [--seed N] [--stage auto|rules|bo] "
                        "[--owner UID]\n");
        printf("See sparkshim-tune(1).\n");
        return -1;
}

/* What is left after the options: nothing, and --job was given. */
static int check_rest(const char *command, int argc, char **argv, const struct tune_options *o)
{
        if (optind < argc) {
                log_error("%s: unexpected argument '%s'; see sparkshim-tune(1)", command,
                          argv[optind]);
                return SHIM_EXIT_USAGE;
        }
        if (!o->job) {
                log_error("%s: --job KEY is required: the recurring job's key (the policy's "
                          "tuner.job_key property)",
                          command);
                return SHIM_EXIT_USAGE;
        }
        return 0;
}

/* Returns 0, -1 after --help, or SHIM_EXIT_USAGE after a line saying what is wrong. */
static int parse(int argc, char **argv, bool report, struct tune_options *o)
{
        enum {
                OPT_JOB = 256,
                OPT_DB,
                OPT_POLICY,
                OPT_FORMAT,
                OPT_JSON,
                OPT_SEED,
                OPT_STAGE,
                OPT_OWNER,
                OPT_HELP
        };
        static const struct option options[] = {
            {"job", required_argument, NULL, OPT_JOB},
            {"db", required_argument, NULL, OPT_DB},
            {"policy", required_argument, NULL, OPT_POLICY},
            {"format", required_argument, NULL, OPT_FORMAT},
            {"json", no_argument, NULL, OPT_JSON},
            {"seed", required_argument, NULL, OPT_SEED},
            {"stage", required_argument, NULL, OPT_STAGE},
            {"owner", required_argument, NULL, OPT_OWNER},
            {"help", no_argument, NULL, OPT_HELP},
            {NULL, 0, NULL, 0},
        };
        const char *command = report ? "report" : "tune";
        int c, r = 0;

        *o = (struct tune_options){.policy_path = SPARKSHIM_DEFAULT_POLICY};
        opterr = 0;
        optind = 1;
        while (r == 0 && (c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                switch (c) {
                case OPT_JOB:
                        r = set_job(command, optarg, o);
                        break;
                case OPT_DB:
                        o->db = optarg;
                        break;
                case OPT_POLICY:
                        o->policy_path = optarg;
                        o->policy_explicit = true;
                        break;
                case OPT_FORMAT:
                        r = set_format(optarg, report, o);
                        break;
                case OPT_JSON:
                        o->json = true;
                        break;
                case OPT_OWNER:
                        r = set_owner(command, optarg, o);
                        break;
                case OPT_STAGE:
                        r = set_stage(command, optarg, report, o);
                        break;
                case OPT_SEED:
                        r = set_seed(command, optarg, o);
                        break;
                case OPT_HELP:
                case 'h':
                        r = usage(report);
                        break;
                case ':':
                        log_error("%s: %s: needs a value; see sparkshim-tune(1)", command,
                                  argv[optind - 1]);
                        r = SHIM_EXIT_USAGE;
                        break;
                default:
                        log_error("%s: %s: unknown option; see sparkshim-tune(1)", command,
                                  argv[optind - 1]);
                        r = SHIM_EXIT_USAGE;
                        break;
                }
        }
        return r != 0 ? r : check_rest(command, argc, argv, o);
}

/* The job's runs, newest first, from the store the flags or the policy name. */
static int load_runs(const struct tune_options *o, const struct policy *p, struct tuner_bounds *b,
                     struct tuner_run **ret, size_t *ret_n)
{
        struct util_error err = {0};
        struct tuner_store *store = NULL;
        const char *db = o->db ? o->db : p->tuner.db;
        char shown[512]; /* db in messages: never a PostgreSQL password */
        int r;

        tuner_store_describe(db, shown, sizeof(shown));
        tuner_bounds_from_policy(p, b);
        if (o->seed_set)
                b->seed = o->seed;
        r = tuner_cli_check_db(db);
        if (r)
                return r;
        /* reading must not create an empty SQLite file where the history was expected */
        if (!tuner_store_is_postgresql(db) && access(db, F_OK) < 0 && errno == ENOENT) {
                log_error("job '%s': no history at %s (sparkshim ingest makes it)", o->job, shown);
                return TUNER_EXIT_NO_HISTORY;
        }
        r = tuner_store_open(db, &store, &err);
        if (r < 0) {
                log_error("history store %s: %s", shown, err.text);
                return TUNER_EXIT_STORE;
        }
        /* a job's history is one user's: job names are the users' to choose, and the runs of
         * another user under the same name would steer this one's tuning. The owner is chosen
         * first, over the whole history, and only then the newest runs: another user's newer
         * runs under the name never push this one's out of the window */
        {
                uint32_t owners[2];
                size_t n_owners = 0;

                r = tuner_store_job_owners(store, o->job, owners, 2, &n_owners, &err);
                if (r >= 0 && !o->owner_set && n_owners > 1) {
                        tuner_store_close(store);
                        log_error("job '%s': runs of uid %" PRIu32 " and of uid %" PRIu32
                                  " in the history (a job's name is its users' to choose); give "
                                  "--owner UID",
                                  o->job, owners[0], owners[1]);
                        return TUNER_EXIT_OWNERS;
                }
                if (r >= 0)
                        r = tuner_store_runs(store, o->job,
                                             o->owner_set    ? (int64_t)o->owner
                                             : n_owners == 1 ? (int64_t)owners[0]
                                                             : 0,
                                             b->history_runs, ret, ret_n, &err);
        }
        tuner_store_close(store);
        if (r < 0) {
                log_error("history store %s: %s", shown, err.text);
                return TUNER_EXIT_STORE;
        }
        if (*ret_n == 0) {
                free(*ret);
                *ret = NULL;
                if (o->owner_set)
                        log_error("job '%s': no run of uid %" PRIu32 " in the history at %s",
                                  o->job, o->owner, shown);
                else
                        log_error("job '%s': no run in the history at %s; ingest its event logs "
                                  "and reports first (sparkshim ingest)",
                                  o->job, shown);
                return TUNER_EXIT_NO_HISTORY;
        }
        tuner_mark_runtime(*ret, *ret_n, b->runtime_allowance);
        return 0;
}

static const char *stage_name(enum tuner_stage_used s)
{
        return s == TUNER_STAGE_RULES ? "rules" : s == TUNER_STAGE_BO ? "bo" : "none";
}

static json_t *number_or_null(double d)
{
        return isfinite(d) ? json_real(d) : json_null();
}

static int print_json(const struct tune_options *o, const struct tuner_run *runs, size_t n,
                      const struct tuner_recommendation *rec, const struct tuner_bounds *b,
                      unsigned overrides)
{
        struct tuner_property props[TUNER_PROPERTIES_MAX];
        size_t np = tuner_properties(&rec->params, b, overrides, props);
        json_t *doc = json_object(), *jp = json_object(), *jr = json_object(),
               *last = json_object();
        int r = 0;

        if (!doc || !jp || !jr || !last) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < np; i++)
                json_object_set_new(jp, props[i].key, json_string(props[i].value));
        for (size_t i = 0; i < TUNER_P_COUNT; i++)
                json_object_set_new(jr, tuner_param_name((enum tuner_param_index)i),
                                    json_pack("{s:s, s:s}", "source", rec->reasons[i].source,
                                              "text", rec->reasons[i].text));
        json_object_set_new(last, "app_id", json_string(runs[0].app_id));
        json_object_set_new(last, "cpu_util", number_or_null(runs[0].cpu_util));
        json_object_set_new(last, "mem_util", number_or_null(runs[0].mem_util));
        json_object_set_new(last, "objective", number_or_null(runs[0].objective));
        {
                double core_s, gib_s;

                tuner_reserved(&runs[0], &core_s, &gib_s);
                json_object_set_new(last, "reserved_core_seconds", number_or_null(core_s));
                json_object_set_new(last, "reserved_gib_seconds", number_or_null(gib_s));
                json_object_set_new(last, "duration_seconds",
                                    number_or_null(runs[0].duration_seconds));
        }
        json_object_set_new(last, "failure", json_string(tuner_failure_name(runs[0].failure)));
        json_object_set_new(doc, "job", json_string(o->job));
        json_object_set_new(doc, "stage", json_string(stage_name(rec->stage)));
        json_object_set_new(doc, "converged", json_boolean(rec->converged));
        json_object_set_new(doc, "runs_used", json_integer(rec->runs_used));
        json_object_set_new(doc, "predicted_objective", number_or_null(rec->predicted_objective));
        json_object_set_new(doc, "failure_probability", number_or_null(rec->failure_probability));
        json_object_set_new(doc, "properties", jp);
        json_object_set_new(doc, "reasons", jr);
        json_object_set_new(doc, "last_run", last);
        jp = jr = last = NULL;
        if (json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) < 0 ||
            putchar('\n') == EOF)
                r = -EIO;
out:
        json_decref(doc);
        json_decref(jp);
        json_decref(jr);
        json_decref(last);
        return r;
}

/* The flags, the policy and the job's runs, as tune and report --job both start: 0, -1 after
 * --help (exit 0), or the exit status. */
static int job_runs(int argc, char **argv, bool report, struct tune_options *o, struct policy *p,
                    struct tuner_bounds *b, struct tuner_run **runs, size_t *n)
{
        int r = parse(argc, argv, report, o);

        if (r)
                return r;
        r = tuner_cli_load_policy(o->policy_path, o->policy_explicit, p);
        if (r)
                return r;
        return load_runs(o, p, b, runs, n);
}

int tuner_cli_tune(int argc, char **argv)
{
        struct tune_options o;
        struct policy p;
        struct tuner_bounds b;
        struct tuner_run *runs = NULL;
        struct tuner_recommendation rec;
        struct util_error err = {0};
        struct tuner_property props[TUNER_PROPERTIES_MAX];
        size_t n = 0, np;
        int r;

        r = job_runs(argc, argv, false, &o, &p, &b, &runs, &n);
        if (r)
                return r < 0 ? 0 : r;
        r = tuner_recommend_stage(runs, n, &b, o.stage, &rec, &err);
        if (r < 0) {
                log_error("tune: job '%s': %s", o.job, err.text);
                free(runs);
                return r == -ENOMEM ? SHIM_EXIT_INTERNAL : TUNER_EXIT_NO_HISTORY;
        }
        if (o.format == FORMAT_JSON)
                r = print_json(&o, runs, n, &rec, &b, p.overrides);
        else {
                np = tuner_properties(&rec.params, &b, p.overrides, props);
                if (o.format == FORMAT_PROPERTIES)
                        printf("# sparkshim tune --job %s: stage %s over %u runs\n", o.job,
                               stage_name(rec.stage), rec.runs_used);
                for (size_t i = 0; i < np; i++)
                        printf(o.format == FORMAT_CONF ? "--conf %s=%s\n" : "%s=%s\n", props[i].key,
                               props[i].value);
                r = ferror(stdout) ? -EIO : 0;
        }
        free(runs);
        if (r < 0 || fflush(stdout) != 0) {
                log_error("tune: cannot write the recommendation: %s",
                          strerror(r == -ENOMEM ? ENOMEM : EIO));
                return SHIM_EXIT_INTERNAL;
        }
        return 0;
}

static void print_time(int64_t ms, char *buf, size_t size)
{
        time_t t = (time_t)(ms / 1000);
        struct tm tm;

        if (ms <= 0 || !gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
                snprintf(buf, size, "-");
}

/* a figure with `decimals` decimals, "-" when unknown */
static void cell(char *buf, size_t size, int decimals, double v)
{
        if (isfinite(v))
                snprintf(buf, size, "%.*f", decimals, v);
        else
                snprintf(buf, size, "-");
}

int tuner_cli_report(int argc, char **argv)
{
        struct tune_options o;
        struct policy p;
        struct tuner_bounds b;
        struct tuner_run *runs = NULL;
        size_t n = 0, failed = 0;
        int r;

        r = job_runs(argc, argv, true, &o, &p, &b, &runs, &n);
        if (r)
                return r < 0 ? 0 : r;
        if (!o.json)
                printf("%-36s %-20s %9s %4s %6s %6s %9s  %s\n", "APP", "START", "SECONDS", "EXEC",
                       "CPU", "MEM", "OBJECTIVE", "RESULT");
        /* oldest first, as a history reads */
        for (size_t i = n; i-- > 0;) {
                const struct tuner_run *run = &runs[i];
                char start[32], secs[16], cpu[16], mem[16], obj[16];
                char app[TUNER_APP_ID_MAX], detail[TUNER_REASON_MAX];

                failed += run->failure != TUNER_OK;
                print_time(run->start_ms, start, sizeof(start));
                if (o.json) {
                        json_t *j = tuner_run_to_json(run);

                        if (!j ||
                            json_dumpf(j, stdout, JSON_COMPACT | JSON_REAL_PRECISION(10)) < 0) {
                                json_decref(j);
                                free(runs);
                                log_error("report: out of memory");
                                return SHIM_EXIT_INTERNAL;
                        }
                        json_decref(j);
                        putchar('\n');
                        continue;
                }
                cell(secs, sizeof(secs), 1, run->duration_seconds);
                cell(cpu, sizeof(cpu), 2, run->cpu_util);
                cell(mem, sizeof(mem), 2, run->mem_util);
                cell(obj, sizeof(obj), 2, run->objective);
                /* the ids and reasons come from the job's event log: no control character
                 * reaches the terminal */
                printf("%-36.36s %-20s %9s %4" PRIu32 " %6s %6s %9s  %s%s%s\n",
                       tuner_cli_printable(run->app_id, app, sizeof(app)), start, secs,
                       run->executors, cpu, mem, obj, tuner_failure_name(run->failure),
                       run->failure_detail[0] ? ": " : "",
                       tuner_cli_printable(run->failure_detail, detail, sizeof(detail)));
        }
        if (!o.json) {
                static const char *const modes[] = {"off", "show", "safe", "explore"};
                struct tuner_published pub;
                struct util_error err = {0};

                printf("job %s: %zu runs, %zu failed\n", o.job, n, failed);
                /* what tune-service publishes for the job now (sparkshim-tune(1)) */
                if (tuner_publish_decide(runs, n, &b, p.overrides, runs[0].owner_uid, o.job, &pub,
                                         &err) == 0)
                        printf("job %s: published state %s (%s); tuner.apply is %s\n", o.job,
                               pub.state, pub.reason, modes[p.tuner.apply]);
        }
        free(runs);
        return fflush(stdout) == 0 ? 0 : SHIM_EXIT_INTERNAL;
}
