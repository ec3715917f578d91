/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tuner's history store (docs/tuner.md): the runs of recurring Spark jobs, kept in a
 * SQLite file (the default) or a PostgreSQL database, behind one interface. What is stored
 * is what `sparkshim ingest` read: executor reports (sparkshim-report(5)) and Spark event
 * logs, keyed by their natural keys (the Spark application id; the executor id; the stage id
 * and attempt), so that ingesting the same input twice leaves the same history.
 *
 * A db starting with "postgresql://" or "postgres://" is a libpq connection URI, one with an
 * '=' before any '/' a libpq key=value connection string ("host=db dbname=history");
 * anything else is the path of a SQLite file, created (mode 0600, WAL journal) with its
 * schema on first use. Parameters are always bound, never formatted into SQL. No message of
 * the store holds a connection string's password.
 *
 * Errors: -errno with err "<what>: <why>" (-EIO for a database error, with the database's
 * message; -ENOMEM; -EINVAL for an unusable db argument). The store never logs.
 * One store per thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim-common.h"
#include "tuner.h"

/* changed only by what an older sparkshim cannot read or write; a column added since (which
   an older one, naming its columns, leaves NULL) is added to a store that lacks it when opened */
#define TUNER_STORE_SCHEMA_VERSION 1
/*
 * An executor that ended by SIGTERM or SIGKILL (exit 143 / 137 without an OOM kill) no earlier
 * than this before its application's end was stopped by that end, not lost.
 */
#define TUNER_STORE_END_GRACE_MS 30000
/* a stage counts for max_stage_skew only when its longest task took at least this long */
#define TUNER_STORE_SKEW_MIN_SECONDS 5.0

struct tuner_store;

/* Open (and create) the store named by db. *ret is set only on success. */
int tuner_store_open(const char *db, struct tuner_store **ret, struct util_error *err);
void tuner_store_close(struct tuner_store *s); /* NULL-safe; rolls back an open transaction */
/* "sqlite" or "postgresql" */
const char *tuner_store_backend(const struct tuner_store *s);

/* Whether db names a PostgreSQL database (a URI or key=value pairs, above), not a SQLite file. */
bool tuner_store_is_postgresql(const char *db);
/*
 * db as a message may show it, in buf (size bytes, cut to fit; returned): a SQLite path with
 * control characters as '?'; a PostgreSQL connection string as libpq's PQconninfoParse()
 * reads it, with only its host, hostaddr, port, dbname and user, and "***" for a password
 * given anywhere in it (the URI's user info, a password parameter): a URI as
 * "postgresql://user:***@host:port/dbname", key=value pairs as "host=h port=p dbname=d
 * user=u password=***". One libpq cannot parse shows nothing of itself. Never fails.
 */
const char *tuner_store_describe(const char *db, char *buf, size_t size);

/* One transaction; `sparkshim ingest` makes one per input file. */
int tuner_store_begin(struct tuner_store *s, struct util_error *err);
int tuner_store_commit(struct tuner_store *s, struct util_error *err);
int tuner_store_rollback(struct tuner_store *s, struct util_error *err);

/*
 * Store an event log's application (its run, stages and executors; upserts). job (may be
 * NULL) becomes the run's job unless tuner_store_set_job() set one, which is kept.
 */
int tuner_store_put_app(struct tuner_store *s, const char *job, const struct tuner_app *app,
                        struct util_error *err);
/* Store one executor's report (upsert on app_id, executor_id); creates the run if needed. */
int tuner_store_put_executor(struct tuner_store *s, const struct tuner_executor *e,
                             struct util_error *err);
/* The run app_id of owner belongs to job (`ingest --job`); it overrides the event log's
 * job. */
int tuner_store_set_job(struct tuner_store *s, const char *app_id, uint32_t owner, const char *job,
                        struct util_error *err);
/*
 * The key run app_id of user uid is stored under (in out): app_id itself, or when another
 * user's run has that id already (application ids are the jobs' to choose: a log claiming
 * another user's future id must not block that user's real one), app_id cut to 114 bytes,
 * "~" and 12 hex digits of SHA-256 over a random secret of the store's, uid and app_id:
 * both runs are kept, each with its owner, and no user can take the second key beforehand.
 * The puts use it; 0 for app_id itself, 1 for the second key, -errno with err.
 */
int tuner_store_run_id(struct tuner_store *s, const char *app_id, uint32_t uid,
                       char out[TUNER_APP_ID_MAX], struct util_error *err);

/*
 * The job's runs of one owner, newest first (by start time), at most max (0: all), assembled
 * as tuner.h documents struct tuner_run (failure: everything but TUNER_FAIL_RUNTIME, which
 * the caller decides). owner: a uid, whose runs and the runs of no owner are taken; or
 * TUNER_ANY_OWNER. The owner is chosen before the window is taken, so another user's newer
 * runs under the same job name never push this owner's out of it. *ret (free() it) and
 * *ret_n are set only on success; no run is 0 with n 0.
 */
#define TUNER_ANY_OWNER INT64_C(-1)
int tuner_store_runs(struct tuner_store *s, const char *job, int64_t owner, unsigned max,
                     struct tuner_run **ret, size_t *ret_n, struct util_error *err);

/* The users (uids other than 0) that runs of the job belong to, in order, the first
 * max in owners[]; their number (which may exceed max) in *ret_n. */
int tuner_store_job_owners(struct tuner_store *s, const char *job, uint32_t *owners, size_t max,
                           size_t *ret_n, struct util_error *err);

struct tuner_store_job {
        char job[TUNER_JOB_MAX];
        unsigned runs;
        int64_t last_start_ms; /* 0 when unknown */
};
/* Every job with its run count, by name. *ret (free() it), *ret_n set only on success. */
int tuner_store_jobs(struct tuner_store *s, struct tuner_store_job **ret, size_t *ret_n,
                     struct util_error *err);

/* ---- `sparkshim tune-service` (service.c) ---- */

/* What a pass has read of one file: the file as it was (device, inode, size, mtime) and how
 * far its complete lines were stored. Stored in the transaction of what was read, so that a
 * crash never loses or doubles a file. */
struct tuner_store_file {
        uint64_t dev, ino;
        int64_t size, mtime_ns, offset;
        bool seen; /* the service's: found by this pass (not stored) */
};
/* Every checkpoint, each given to each() (whose -errno ends the walk). */
int tuner_store_files(struct tuner_store *s, int (*each)(void *, const struct tuner_store_file *),
                      void *userdata, struct util_error *err);
int tuner_store_put_file(struct tuner_store *s, const struct tuner_store_file *f,
                         struct util_error *err);
/* Forget a file's checkpoint (a file no pass finds any more). */
int tuner_store_forget_file(struct tuner_store *s, uint64_t dev, uint64_t ino,
                            struct util_error *err);
/* The job and owner (0: none) of run app_id: 1, or 0 when it has no job or is unknown. */
int tuner_store_run_key(struct tuner_store *s, const char *app_id, char job[TUNER_JOB_MAX],
                        uint32_t *owner, struct util_error *err);
/* A named integer of the service's (the last pass's time): 1 and *value, 0 when unset. */
int tuner_store_state(struct tuner_store *s, const char *name, int64_t *value,
                      struct util_error *err);
int tuner_store_set_state(struct tuner_store *s, const char *name, int64_t value,
                          struct util_error *err);

/* ---- report lines (report-ingest.c) ---- */

/* The same bounds as `sparkshim report` (measure/report-read.h) */
#define TUNER_REPORT_LINE_MAX  ((size_t)16 * 1024 * 1024)
#define TUNER_REPORT_INPUT_MAX ((uint64_t)16 * 1024 * 1024 * 1024)

/*
 * One line of a sparkshim.report/v1 file (without its newline; need not be NUL-terminated):
 * 1 with *ret filled for a final report of an executor of a Spark application, 0 for a line
 * that holds none (blank, a sample, a final report without an app_id: not a Spark executor),
 * -EINVAL for a line that is not a valid report (err says why, without file and line),
 * -ENOMEM. *ret is written only when 1 is returned.
 */
int tuner_report_line(const char *line, size_t len, struct tuner_executor *ret,
                      struct util_error *err);
