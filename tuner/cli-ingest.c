/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sparkshim ingest` (sparkshim-tune(1)): report files, event logs and rolling event log
 * directories into the history store, each file in one transaction: a file with one bad line
 * is refused whole (one error line naming file:line) and the others are still stored. What
 * was stored goes to standard output, one line per run of each file.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "lines.h"
#include "config.h"
#include "eventlog.h"
#include "ingest.h"
#include "policy.h"
#include "store.h"
#include "util.h"

/* an event log's application may start this far after the ingest (clocks differ) */
#define FUTURE_MS_MAX (INT64_C(24) * 3600 * 1000)

/* the runs of one report file and how many executors each had: a hash set (seeded: the ids
 * are the job's) of at most APPS_LISTED runs; reports of further runs are only counted */
#define APPS_LISTED  10000
#define APPS_BUCKETS 16384

struct app_count {
        char app_id[TUNER_APP_ID_MAX];
        unsigned executors;
        uint32_t next; /* 1-based index of the next in its bucket; 0 = none */
};

struct app_set {
        struct app_count *v;
        size_t n;
        uint32_t *buckets; /* 1-based indexes; 0 = empty */
        uint64_t seed;
        unsigned long unlisted; /* reports of runs past APPS_LISTED */
};

static void app_set_free(struct app_set *set)
{
        free(set->v);
        free(set->buckets);
}

static uint32_t app_hash(const struct app_set *set, const char *s)
{
        uint64_t h = set->seed ^ UINT64_C(14695981039346656037);

        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
        h ^= h >> 29;
        return (uint32_t)(h % APPS_BUCKETS);
}

static int count_app(struct app_set *set, const char *app_id)
{
        uint32_t b;

        if (!set->buckets) {
                set->buckets = calloc(APPS_BUCKETS, sizeof(*set->buckets));
                if (!set->buckets)
                        return -ENOMEM;
                if (getrandom(&set->seed, sizeof(set->seed), GRND_NONBLOCK) != sizeof(set->seed))
                        set->seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
        }
        b = app_hash(set, app_id);
        for (uint32_t i = set->buckets[b]; i; i = set->v[i - 1].next)
                if (strcmp(set->v[i - 1].app_id, app_id) == 0) {
                        set->v[i - 1].executors++;
                        return 0;
                }
        if (set->n == APPS_LISTED) {
                set->unlisted++;
                return 0;
        }
        if (set->n % 256 == 0) {
                struct app_count *v = realloc(set->v, (set->n + 256) * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                set->v = v;
        }
        set->v[set->n] = (struct app_count){.executors = 1, .next = set->buckets[b]};
        snprintf(set->v[set->n].app_id, sizeof(set->v[set->n].app_id), "%s", app_id);
        set->buckets[b] = (uint32_t)++set->n;
        return 0;
}

static int help(FILE *f, int status)
{
        fputs("usage: sparkshim ingest [--db DB] [--policy FILE] [--job KEY] [--job-key PROPERTY] "
              "FILE...\n"
              "Store executor reports (sparkshim-report(5)), Spark event logs and rolling event\n"
              "log directories in the tuner's history; - reads a report file from standard input.\n"
              "  --db DB             a SQLite file, or a PostgreSQL postgresql:// URI or\n"
              "                      key=value connection string (default: the policy's\n"
              "                      tuner.db, " TUNER_DEFAULT_DB "); keep its password in\n"
              "                      ~/.pgpass\n"
              "  --policy FILE       the policy (default " SPARKSHIM_DEFAULT_POLICY ")\n"
              "  --job KEY           the runs belong to job KEY (instead of the event log's\n"
              "                      PROPERTY)\n"
              "  --job-key PROPERTY  the Spark property that names a run's job (default: the\n"
              "                      policy's tuner.job_key, " TUNER_DEFAULT_JOB_KEY ")\n"
              "Each file is stored whole or not at all. An event log may decompress to 1000 x its\n"
              "compressed bytes + 64 MiB (a rolling directory: over all its files); one run, to\n"
              "64 GiB with 256 MiB of such slack (past them: ingest the rest in another run).\n"
              "Exit status: 0, 1 when a file was refused (the others are stored), 3 when the\n"
              "history store failed, 120 for a bad flag.\n",
              f);
        return status;
}

/* s as it may go to a terminal */
static enum tuner_ingest_outcome store_failed(struct tuner_ingest *in, const char *path,
                                              const struct util_error *err)
{
        char p[512];

        log_error("%s: history store: %s", tuner_cli_printable(path, p, sizeof(p)), err->text);
        tuner_store_rollback(in->store, NULL);
        return STORE_FAILED;
}

static enum tuner_ingest_outcome refuse(struct tuner_ingest *in, const char *path, unsigned line,
                                        const char *why)
{
        char p[512];

        if (line)
                log_error("%s:%u: %s; file not stored", tuner_cli_printable(path, p, sizeof(p)),
                          line, why);
        else
                log_error("%s: %s; file not stored", tuner_cli_printable(path, p, sizeof(p)), why);
        tuner_store_rollback(in->store, NULL);
        return REFUSED;
}

/* one line of a report file: 0, or the outcome that ends the file */
static int report_line(struct tuner_ingest *in, const char *path, unsigned lineno, const char *line,
                       size_t len, struct app_set *apps)
{
        struct util_error err = {0};
        struct tuner_executor e;
        int r = tuner_report_line(line, len, &e, &err);

        if (r == -ENOMEM)
                return refuse(in, path, lineno, "out of memory");
        if (r < 0 && in->skip_bad_lines) {
                /* the service reads files that grow: one bad line (a job's, or a line cut by a
                 * crash) must not keep every later line of the file out */
                char p[512];

                log_error("%s: the line at byte %" PRId64 ": %s; line skipped",
                          tuner_cli_printable(path, p, sizeof(p)), in->line_start, err.text);
                in->skipped_lines++;
                return 0;
        }
        if (r < 0)
                return refuse(in, path, lineno, err.text);
        if (r == 0)
                return 0;
        /* A file of a user's is that user's, whatever its lines say. A file of root's
         * (sparkshim's own report) carries identities the job chose (its application and
         * executor ids): its figures are the user's the executor ran as, and join only a run
         * of that user (check_owner()), never another's */
        e.owner_uid =
            in->owner_uid ? in->owner_uid : (e.run_as_uid > 0 ? (uint32_t)e.run_as_uid : 0);
        if (tuner_store_put_executor(in->store, &e, &err) < 0 ||
            (in->job && tuner_store_set_job(in->store, e.app_id, e.owner_uid, in->job, &err) < 0))
                return err.error == EPERM ? refuse(in, path, lineno, err.text)
                                          : store_failed(in, path, &err);
        if (count_app(apps, e.app_id) < 0)
                return refuse(in, path, lineno, "out of memory");
        if (in->touched) {
                char key[TUNER_APP_ID_MAX];

                if (tuner_store_run_id(in->store, e.app_id, e.owner_uid, key, &err) < 0)
                        return store_failed(in, path, &err);
                if (in->touched(in->userdata, key) < 0)
                        return refuse(in, path, lineno, "out of memory");
        }
        return 0;
}

struct reading {
        struct tuner_ingest *in;
        const char *path;
        struct util_lines lines;
        struct app_set apps;
        int outcome; /* what ended the file, when a line did */
};

static int take_report_line(void *userdata, const char *line, size_t len)
{
        struct reading *rd = userdata;

        rd->in->line_start = (int64_t)rd->lines.line_start;
        rd->outcome =
            report_line(rd->in, rd->path, (unsigned)rd->lines.lineno, line, len, &rd->apps);
        return rd->outcome != 0;
}

static void reading_free(struct reading *rd)
{
        util_lines_free(&rd->lines);
        app_set_free(&rd->apps);
}

enum tuner_ingest_outcome tuner_ingest_reports(struct tuner_ingest *in, const char *path, int fd)
{
        static const struct util_lines_ops ops = {.line = take_report_line};
        _cleanup_(reading_free) struct reading rd = {
            .in = in,
            .path = path,
            .lines = {.line_max = in->line_max,
                      .input_max = in->input_max,
                      .offset = (uint64_t)in->from,
                      .done = (uint64_t)in->from},
        };
        struct util_error err = {0};
        char what[128], p[512], id[TUNER_APP_ID_MAX], job[TUNER_JOB_MAX];
        const char *line;
        size_t len;
        int64_t done;
        int r;

        if (tuner_store_begin(in->store, &err) < 0)
                return store_failed(in, path, &err);
        if (in->from > 0 && lseek(fd, in->from, SEEK_SET) < 0) {
                snprintf(what, sizeof(what), "cannot seek to %" PRId64 ": %s", in->from,
                         strerror(errno));
                return refuse(in, path, 0, what);
        }
        r = util_lines_read_fd(&rd.lines, fd, &ops, &rd);
        if (r > 0)
                return rd.outcome;
        if (r == -EFBIG)
                snprintf(what, sizeof(what), "longer than %" PRIu64 " bytes", in->input_max);
        else if (r == -EMSGSIZE)
                snprintf(what, sizeof(what), "line longer than %zu bytes", in->line_max);
        else if (r == -ENOMEM)
                snprintf(what, sizeof(what), "out of memory");
        else if (r < 0)
                snprintf(what, sizeof(what), "read error: %s", strerror(-r));
        if (r < 0)
                return refuse(in, path, (unsigned)util_lines_at(&rd.lines), what);
        /* a last line without its newline: the whole of it, unless the file may still grow
         * (the service reads it again from done) */
        if (!in->complete_lines && util_lines_rest(&rd.lines, &line, &len) > 0) {
                in->line_start = (int64_t)rd.lines.line_start;
                r = report_line(in, path, (unsigned)rd.lines.lineno, line, len, &rd.apps);
                if (r != 0)
                        return r;
        }
        done = (int64_t)rd.lines.done;
        if (in->checkpoint) {
                in->checkpoint->offset = done;
                if (tuner_store_put_file(in->store, in->checkpoint, &err) < 0)
                        return store_failed(in, path, &err);
        }
        if (tuner_store_commit(in->store, &err) < 0)
                return store_failed(in, path, &err);
        if (in->quiet)
                return STORED;
        if (rd.apps.n == 0)
                printf("%s: no final executor report of a Spark application\n",
                       tuner_cli_printable(path, p, sizeof(p)));
        for (size_t i = 0; i < rd.apps.n; i++)
                printf("%s: run %s: %u executor report%s, job %s\n",
                       tuner_cli_printable(path, p, sizeof(p)),
                       tuner_cli_printable(rd.apps.v[i].app_id, id, sizeof(id)),
                       rd.apps.v[i].executors, rd.apps.v[i].executors == 1 ? "" : "s",
                       in->job ? tuner_cli_printable(in->job, job, sizeof(job))
                               : "(from its event log)");
        if (rd.apps.unlisted)
                printf("%s: %lu more executor reports of runs past the first %d, not listed\n",
                       tuner_cli_printable(path, p, sizeof(p)), rd.apps.unlisted, APPS_LISTED);
        fflush(stdout);
        return STORED;
}

/* the run's job: --job, else the job the submit named it by (spark.sparkshim.job, which the
 * java personality adds when it applies published settings), else the event log's property
 * job_key */
static char *job_of(struct tuner_ingest *in, const struct tuner_app *app)
{
        json_t *conf;
        const char *v;
        char *job = NULL;

        if (in->job)
                return strdup(in->job);
        if (!app->conf_json)
                return NULL;
        conf = json_loads(app->conf_json, 0, NULL);
        v = json_string_value(json_object_get(conf, POLICY_JOB_PROPERTY));
        if (!v || !*v)
                v = json_string_value(json_object_get(conf, in->job_key));
        if (v && *v && strlen(v) < TUNER_JOB_MAX)
                job = strdup(v);
        json_decref(conf);
        return job;
}

enum tuner_ingest_outcome tuner_ingest_eventlog(struct tuner_ingest *in, const char *path)
{
        struct tuner_app app = {0};
        struct util_error err = {0};
        _cleanup_free_ char *job = NULL;
        char p[512], id[TUNER_APP_ID_MAX], j[TUNER_JOB_MAX];
        enum tuner_ingest_outcome o;
        int r;

        r = tuner_eventlog_read_run(path, &in->eventlogs, &app, &err);
        if (r < 0) {
                /* err names the file (and the line) already */
                log_error("%s; file not stored", err.text);
                return REFUSED;
        }
        /* the run is the user's who wrote the files read: app.owner_uid, from their
         * descriptors (tuner_eventlog_read_run()) */
        if (in->override_owner)
                app.owner_uid = in->override_uid;
        /* a run from the future would stay the job's newest and steer its tuning */
        if (app.start_ms > (int64_t)time(NULL) * 1000 + FUTURE_MS_MAX) {
                o = refuse(in, path, 0, "the application starts more than a day from now");
                tuner_app_free(&app);
                return o;
        }
        job = job_of(in, &app);
        if (!job)
                log_warn("%s: the event log has no property %s (or it is longer than %d bytes); "
                         "run %s has no job: give --job",
                         tuner_cli_printable(path, p, sizeof(p)), in->job_key, TUNER_JOB_MAX - 1,
                         tuner_cli_printable(app.app_id, id, sizeof(id)));
        if (tuner_store_begin(in->store, &err) < 0 ||
            tuner_store_put_app(in->store, job, &app, &err) < 0 ||
            (in->job &&
             tuner_store_set_job(in->store, app.app_id, app.owner_uid, in->job, &err) < 0) ||
            (in->checkpoint && tuner_store_put_file(in->store, in->checkpoint, &err) < 0) ||
            tuner_store_commit(in->store, &err) < 0) {
                o = err.error == EINVAL || err.error == EPERM ? refuse(in, path, 0, err.text)
                                                              : store_failed(in, path, &err);
                tuner_app_free(&app);
                return o;
        }
        if (in->touched) {
                char key[TUNER_APP_ID_MAX];

                if (tuner_store_run_id(in->store, app.app_id, app.owner_uid, key, &err) < 0 ||
                    in->touched(in->userdata, key) < 0) {
                        tuner_app_free(&app);
                        log_error("%s: %s", tuner_cli_printable(path, p, sizeof(p)),
                                  err.text[0] ? err.text : "out of memory");
                        return STORE_FAILED;
                }
        }
        if (in->quiet) {
                tuner_app_free(&app);
                return STORED;
        }
        printf("%s: run %s: event log, %zu stage attempts, %zu executors, %s, job %s\n",
               tuner_cli_printable(path, p, sizeof(p)),
               tuner_cli_printable(app.app_id, id, sizeof(id)), app.n_stages, app.n_executors,
               app.ended ? "ended" : "not ended",
               job ? tuner_cli_printable(job, j, sizeof(j)) : "(none)");
        fflush(stdout);
        tuner_app_free(&app);
        return STORED;
}

static enum tuner_ingest_outcome ingest_path(struct tuner_ingest *in, const char *path)
{
        _cleanup_close_ int fd = -1;
        struct stat st;
        char why[256];

        if (strcmp(path, "-") == 0) {
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
                if (fd < 0) {
                        snprintf(why, sizeof(why), "cannot read: %s", strerror(errno));
                        return refuse(in, "standard input", 0, why);
                }
                in->owner_uid = (uint32_t)geteuid(); /* whoever runs ingest gave it */
                return tuner_ingest_reports(in, "standard input", fd);
        }
        if (tuner_eventlog_detect(path))
                return tuner_ingest_eventlog(in, path);
        /* O_NONBLOCK: a FIFO without a writer must not block the open; it is refused below.
         * O_NOFOLLOW: the files are the job's users', root reads no file a symlink names */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0) {
                snprintf(why, sizeof(why), "cannot open: %s",
                         errno == ELOOP ? "a symbolic link (refused)" : strerror(errno));
                return refuse(in, path, 0, why);
        }
        if (fstat(fd, &st) < 0) {
                snprintf(why, sizeof(why), "cannot stat: %s", strerror(errno));
                return refuse(in, path, 0, why);
        }
        if (S_ISDIR(st.st_mode))
                return refuse(in, path, 0,
                              "is a directory but not a rolling event log (eventlog_v2_<app id>)");
        if (!S_ISREG(st.st_mode))
                return refuse(in, path, 0,
                              "not a regular file; give a file, or - for standard input");
        in->owner_uid = (uint32_t)st.st_uid;
        return tuner_ingest_reports(in, path, fd);
}

int tuner_cli_ingest(int argc, char **argv)
{
        static const struct option options[] = {
            {"db", required_argument, NULL, 'd'},      {"job", required_argument, NULL, 'j'},
            {"job-key", required_argument, NULL, 'k'}, {"policy", required_argument, NULL, 'p'},
            {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
        };
        struct tuner_ingest in = {
            .job_key = TUNER_DEFAULT_JOB_KEY,
            .line_max = TUNER_REPORT_LINE_MAX,
            .input_max = TUNER_REPORT_INPUT_MAX,
        };
        const char *db = NULL, *job_key = NULL, *policy_path = SPARKSHIM_DEFAULT_POLICY;
        bool policy_explicit = false;
        struct policy policy;
        struct util_error err = {0};
        bool refused = false;
        int c, status = 0;

        optind = 1;
        while ((c = getopt_long(argc, argv, "+d:j:k:p:h", options, NULL)) != -1) {
                switch (c) {
                case 'd':
                        db = optarg;
                        break;
                case 'p':
                        policy_path = optarg;
                        policy_explicit = true;
                        break;
                case 'j':
                        in.job = optarg;
                        if (!*in.job || strlen(in.job) >= TUNER_JOB_MAX) {
                                log_error("--job: %s: empty or longer than %d bytes", in.job,
                                          TUNER_JOB_MAX - 1);
                                return SHIM_EXIT_USAGE;
                        }
                        break;
                case 'k':
                        job_key = optarg;
                        if (!*job_key) {
                                log_error("--job-key: empty; give a Spark property name");
                                return SHIM_EXIT_USAGE;
                        }
                        break;
                case 'h':
                        return help(stdout, 0);
                default:
                        return help(stderr, SHIM_EXIT_USAGE);
                }
        }
        if (optind >= argc) {
                log_error("ingest: no FILE given");
                return help(stderr, SHIM_EXIT_USAGE);
        }
        status = tuner_cli_load_policy(policy_path, policy_explicit, &policy);
        if (status)
                return status;
        if (!db)
                db = policy.tuner.db;
        in.job_key = job_key ? job_key : policy.tuner.job_key;
        status = tuner_cli_check_db(db);
        if (status)
                return status;
        if (tuner_store_open(db, &in.store, &err) < 0) {
                char shown[512]; /* never a PostgreSQL password */

                log_error("history store %s: %s", tuner_store_describe(db, shown, sizeof(shown)),
                          err.text);
                return TUNER_EXIT_STORE;
        }
        for (int i = optind; i < argc; i++) {
                enum tuner_ingest_outcome o = ingest_path(&in, argv[i]);

                if (o == STORE_FAILED) {
                        status = TUNER_EXIT_STORE;
                        break;
                }
                refused |= o == REFUSED;
        }
        tuner_store_close(in.store);
        return status ? status : refused ? TUNER_EXIT_PARTIAL : 0;
}
