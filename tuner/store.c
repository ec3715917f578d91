/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history store's interface (store.h): the schema and every statement. The backends
 * (store-sqlite.c, store-pg.c) only run what this file writes; assemble.c makes a struct
 * tuner_run of the rows it reads. Tables follow the structs of tuner.h column for column (the
 * tables below drive the schema, the upserts and the reads alike), so that a field is stored
 * and read back the same way by both backends.
 *
 * Unknown values are NULL in the database: NAN doubles and TUNER_UNKNOWN counts.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <nettle/sha2.h>

#include "store-internal.h"
#include "utf8.h"
#include "util.h"

/* ---------------------------------------------------------------- columns */

enum col_type { C_TEXT, C_I64, C_U64, C_U32, C_I32, C_BOOL, C_DOUBLE };

struct column {
        const char *name;
        enum col_type type;
        size_t offset, size;
};

#define COL(st, f, t)                                                                              \
        {                                                                                          \
#f, t, offsetof(struct st, f), sizeof(((struct st *)0)->f)                         \
        }

static const struct column executor_columns[] = {
    COL(tuner_executor, app_id, C_TEXT),
    COL(tuner_executor, executor_id, C_TEXT),
    COL(tuner_executor, host, C_TEXT),
    COL(tuner_executor, start_ms, C_I64),
    COL(tuner_executor, end_ms, C_I64),
    COL(tuner_executor, wall_seconds, C_DOUBLE),
    COL(tuner_executor, cores, C_U32),
    COL(tuner_executor, request_millicores, C_U64),
    COL(tuner_executor, limit_millicores, C_U64),
    COL(tuner_executor, heap_bytes, C_U64),
    COL(tuner_executor, offheap_bytes, C_U64),
    COL(tuner_executor, pyspark_bytes, C_U64),
    COL(tuner_executor, overhead_bytes, C_U64),
    COL(tuner_executor, burst_ratio, C_DOUBLE),
    COL(tuner_executor, request_bytes, C_U64),
    COL(tuner_executor, limit_bytes, C_U64),
    COL(tuner_executor, enforced, C_BOOL),
    COL(tuner_executor, cpu_seconds, C_DOUBLE),
    COL(tuner_executor, throttled_seconds, C_DOUBLE),
    COL(tuner_executor, runq_wait_seconds, C_DOUBLE),
    COL(tuner_executor, memory_peak_bytes, C_U64),
    COL(tuner_executor, memory_average_bytes, C_U64),
    COL(tuner_executor, memory_p95_bytes, C_U64),
    COL(tuner_executor, anon_peak_bytes, C_U64),
    COL(tuner_executor, oom_kills, C_U64),
    COL(tuner_executor, high_events, C_U64),
    COL(tuner_executor, exit_status, C_I32),
    COL(tuner_executor, exit_signal, C_I32),
    COL(tuner_executor, oom_killed, C_BOOL),
    COL(tuner_executor, cpu_peak_util, C_DOUBLE),
    COL(tuner_executor, forced_spills, C_I64),
    COL(tuner_executor, spill_threshold_fraction, C_DOUBLE),
    COL(tuner_executor, owner_uid, C_U32),
    COL(tuner_executor, heap_after_gc_peak_bytes, C_U64), /* schema version 2 */
};

/* after a leading app_id column */
static const struct column app_executor_columns[] = {
    COL(tuner_app_executor, executor_id, C_TEXT),
    COL(tuner_app_executor, cores, C_U32),
    COL(tuner_app_executor, added_ms, C_I64),
    COL(tuner_app_executor, removed_ms, C_I64),
    COL(tuner_app_executor, removed_reason, C_TEXT),
    COL(tuner_app_executor, lost, C_BOOL),
    COL(tuner_app_executor, jvm_heap_peak, C_U64),
    COL(tuner_app_executor, jvm_offheap_peak, C_U64),
    COL(tuner_app_executor, rss_peak, C_U64),
};

static const struct column stage_columns[] = {
    COL(tuner_stage, stage_id, C_I32),
    COL(tuner_stage, attempt, C_I32),
    COL(tuner_stage, tasks, C_U32),
    COL(tuner_stage, failed_tasks, C_U32),
    COL(tuner_stage, input_bytes, C_U64),
    COL(tuner_stage, shuffle_read_bytes, C_U64),
    COL(tuner_stage, shuffle_write_bytes, C_U64),
    COL(tuner_stage, memory_spill_bytes, C_U64),
    COL(tuner_stage, disk_spill_bytes, C_U64),
    COL(tuner_stage, run_seconds, C_DOUBLE),
    COL(tuner_stage, cpu_seconds, C_DOUBLE),
    COL(tuner_stage, gc_seconds, C_DOUBLE),
    COL(tuner_stage, task_max_seconds, C_DOUBLE),
    COL(tuner_stage, task_median_seconds, C_DOUBLE),
    COL(tuner_stage, submit_ms, C_I64),
    COL(tuner_stage, complete_ms, C_I64),
    COL(tuner_stage, failed, C_BOOL),
};

/* the run's columns from its event log, after app_id, job, job_from_flag, has_eventlog, conf */
static const struct column app_columns[] = {
    COL(tuner_app, app_name, C_TEXT),
    COL(tuner_app, spark_version, C_TEXT),
    COL(tuner_app, start_ms, C_I64),
    COL(tuner_app, end_ms, C_I64),
    COL(tuner_app, ended, C_BOOL),
    COL(tuner_app, jobs, C_U32),
    COL(tuner_app, failed_jobs, C_U32),
    COL(tuner_app, tasks, C_U32),
    COL(tuner_app, failed_tasks, C_U32),
    COL(tuner_app, killed_tasks, C_U32),
    COL(tuner_app, oom_task_failures, C_U32),
    COL(tuner_app, lost_task_failures, C_U32),
    COL(tuner_app, gc_seconds, C_DOUBLE),
    COL(tuner_app, owner_uid, C_U32),
};

static const char *sql_type(enum col_type t)
{
        switch (t) {
        case C_TEXT:
                return "TEXT";
        case C_BOOL:
        case C_I32:
                return "INTEGER";
        case C_DOUBLE:
                return "DOUBLE PRECISION";
        default:
                return "BIGINT";
        }
}

/* ---------------------------------------------------------------- statements */

enum stmt_id {
        S_PUT_APP,
        S_PUT_RUN, /* a run row for an executor's report */
        S_SET_JOB,
        S_PUT_EXECUTOR,
        S_PUT_APP_EXECUTOR,
        S_PUT_STAGE,
        S_RUN_LIST,
        S_RUN_GET,
        S_EXECUTORS_OF,
        S_APP_EXECUTORS_OF,
        S_STAGES_OF,
        S_JOBS,
        S_VERSION,
        S_RUN_OWNER,
        S_JOB_OWNERS,
        S_FILES_ALL,
        S_FILE_PUT,
        S_RUN_KEY,
        S_STATE_GET,
        S_STATE_PUT,
        S_STATE_NEW,
        S_FILE_FORGET,
        S_COUNT,
};

struct tuner_store {
        const struct store_ops *ops;
        void *conn;
        bool in_transaction;
        char *sql[S_COUNT];
        struct store_stmt *stmts[S_COUNT];
};

/* a growing string; on ENOMEM it is freed and stays NULL */
struct text {
        char *s;
        size_t len, cap;
        bool failed;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (t->failed)
                return;
        for (;;) {
                va_start(ap, fmt);
                n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
                va_end(ap);
                if (n < 0)
                        goto fail;
                if (t->s && t->len + (size_t)n < t->cap) {
                        t->len += (size_t)n;
                        return;
                }
                size_t cap = (t->cap ? t->cap : 256);
                while (cap <= t->len + (size_t)n)
                        cap *= 2;
                char *p = realloc(t->s, cap);
                if (!p)
                        goto fail;
                t->s = p;
                t->cap = cap;
        }
fail:
        free(t->s);
        t->s = NULL;
        t->failed = true;
}

static void add_names(struct text *t, const struct column *c, size_t n, const char *prefix)
{
        for (size_t i = 0; i < n; i++)
                add(t, ", %s%s", prefix, c[i].name);
}

static void add_params(struct text *t, int first, size_t n)
{
        for (size_t i = 0; i < n; i++)
                add(t, ", $%d", first + (int)i);
}

static void add_updates(struct text *t, const struct column *c, size_t n, size_t skip)
{
        for (size_t i = skip; i < n; i++)
                add(t, "%s%s = excluded.%s", i == skip ? "" : ", ", c[i].name, c[i].name);
}

#define N(a) ELEMENTSOF(a)

/* a run that holds more than its job (tuner_store_set_job() alone makes such a row) */
#define HAS_DATA                                                                                   \
        "(r.has_eventlog = 1 OR EXISTS (SELECT 1 FROM executors e WHERE e.app_id = r.app_id))"

/* the user a run belongs to, 0 for none: its event log's, else its reports' (check_owner()
 * keeps one user per application id), as tuner_store_assemble() finds it */
#define RUN_OWNER_OF_R                                                                             \
        "COALESCE(NULLIF(r.owner_uid, 0), "                                                        \
        "(SELECT MAX(e.owner_uid) FROM executors e WHERE e.app_id = r.app_id), 0)"

/* the statements that write a run */
static void build_write(struct text *t, enum stmt_id id)
{
        switch (id) {
        case S_PUT_APP:
                add(t, "INSERT INTO runs (app_id, job, has_eventlog, conf_json");
                add_names(t, app_columns, N(app_columns), "");
                add(t, ") VALUES ($1, $2, 1, $3");
                add_params(t, 4, N(app_columns));
                add(t, ") ON CONFLICT (app_id) DO UPDATE SET job = CASE WHEN runs.job_from_flag "
                       "= 1 THEN runs.job ELSE COALESCE(excluded.job, runs.job) END, "
                       "has_eventlog = 1, conf_json = excluded.conf_json, ");
                add_updates(t, app_columns, N(app_columns), 0);
                break;
        case S_PUT_RUN:
                add(t, "INSERT INTO runs (app_id) VALUES ($1) ON CONFLICT (app_id) DO NOTHING");
                break;
        case S_SET_JOB:
                add(t, "INSERT INTO runs (app_id, job, job_from_flag) VALUES ($1, $2, 1) "
                       "ON CONFLICT (app_id) DO UPDATE SET job = excluded.job, job_from_flag = 1");
                break;
        case S_PUT_EXECUTOR:
                add(t, "INSERT INTO executors (app_id");
                add_names(t, executor_columns + 1, N(executor_columns) - 1, "");
                add(t, ") VALUES ($1");
                add_params(t, 2, N(executor_columns) - 1);
                add(t, ") ON CONFLICT (app_id, executor_id) DO UPDATE SET ");
                add_updates(t, executor_columns, N(executor_columns), 2);
                break;
        case S_PUT_APP_EXECUTOR:
                add(t, "INSERT INTO app_executors (app_id");
                add_names(t, app_executor_columns, N(app_executor_columns), "");
                add(t, ") VALUES ($1");
                add_params(t, 2, N(app_executor_columns));
                add(t, ") ON CONFLICT (app_id, executor_id) DO UPDATE SET ");
                add_updates(t, app_executor_columns, N(app_executor_columns), 1);
                break;
        case S_PUT_STAGE:
                add(t, "INSERT INTO stages (app_id");
                add_names(t, stage_columns, N(stage_columns), "");
                add(t, ") VALUES ($1");
                add_params(t, 2, N(stage_columns));
                add(t, ") ON CONFLICT (app_id, stage_id, attempt) DO UPDATE SET ");
                add_updates(t, stage_columns, N(stage_columns), 2);
                break;
        default:
                break;
        }
}

/* the statements that read runs, jobs and their owners */
static void build_read(struct text *t, enum stmt_id id)
{
        switch (id) {
        case S_RUN_LIST:
                /* a run without an event log starts when its first executor started */
                add(t,
                    "SELECT r.app_id FROM runs r WHERE r.job = $1 AND " HAS_DATA " "
                    "AND (CAST($2 AS BIGINT) < 0 OR " RUN_OWNER_OF_R " IN (0, CAST($2 AS BIGINT))) "
                    "ORDER BY COALESCE(r.start_ms, "
                    "(SELECT MIN(e.start_ms) FROM executors e WHERE e.app_id = r.app_id)) "
                    "DESC NULLS LAST, r.app_id DESC LIMIT $3");
                break;
        case S_RUN_GET:
                add(t, "SELECT job, has_eventlog, conf_json");
                add_names(t, app_columns, N(app_columns), "");
                add(t, " FROM runs WHERE app_id = $1");
                break;
        case S_EXECUTORS_OF:
                add(t, "SELECT app_id");
                add_names(t, executor_columns + 1, N(executor_columns) - 1, "");
                add(t, " FROM executors WHERE app_id = $1 "
                       "ORDER BY LENGTH(executor_id), executor_id");
                break;
        case S_APP_EXECUTORS_OF:
                add(t, "SELECT app_id");
                add_names(t, app_executor_columns, N(app_executor_columns), "");
                add(t, " FROM app_executors WHERE app_id = $1 "
                       "ORDER BY LENGTH(executor_id), executor_id");
                break;
        case S_STAGES_OF:
                add(t, "SELECT app_id");
                add_names(t, stage_columns, N(stage_columns), "");
                add(t, " FROM stages WHERE app_id = $1 ORDER BY stage_id, attempt");
                break;
        case S_JOBS:
                add(t, "SELECT r.job, COUNT(*), MAX(COALESCE(r.start_ms, (SELECT MIN(e.start_ms) "
                       "FROM executors e WHERE e.app_id = r.app_id))) FROM runs r "
                       "WHERE r.job IS NOT NULL AND " HAS_DATA " GROUP BY r.job ORDER BY r.job");
                break;
        case S_RUN_OWNER:
                /* the user a run is already known from: its event log's, or its reports' */
                add(t, "SELECT owner_uid FROM runs WHERE app_id = $1 AND owner_uid <> 0 "
                       "UNION ALL SELECT owner_uid FROM executors WHERE app_id = $1 "
                       "AND owner_uid <> 0");
                break;
        case S_JOB_OWNERS:
                add(t, "SELECT DISTINCT " RUN_OWNER_OF_R
                       " AS o FROM runs r WHERE r.job = $1 AND " HAS_DATA " AND " RUN_OWNER_OF_R
                       " <> 0 ORDER BY o");
                break;
        case S_RUN_KEY:
                add(t, "SELECT r.job, " RUN_OWNER_OF_R " FROM runs r WHERE r.app_id = $1");
                break;
        default:
                break;
        }
}

/* the schema's version and tune-service's files and state */
static void build_state(struct text *t, enum stmt_id id)
{
        switch (id) {
        case S_VERSION:
                add(t, "SELECT MAX(version) FROM schema_version");
                break;
        case S_FILES_ALL:
                add(t, "SELECT dev, ino, size, mtime_ns, done_offset FROM ingested_files");
                break;
        case S_FILE_PUT:
                add(t, "INSERT INTO ingested_files (dev, ino, size, mtime_ns, done_offset) "
                       "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (dev, ino) DO UPDATE SET "
                       "size = excluded.size, mtime_ns = excluded.mtime_ns, "
                       "done_offset = excluded.done_offset");
                break;
        case S_STATE_GET:
                add(t, "SELECT value FROM service_state WHERE name = $1");
                break;
        case S_STATE_PUT:
                add(t, "INSERT INTO service_state (name, value) VALUES ($1, $2) "
                       "ON CONFLICT (name) DO UPDATE SET value = excluded.value");
                break;
        case S_FILE_FORGET:
                add(t, "DELETE FROM ingested_files WHERE dev = $1 AND ino = $2");
                break;
        case S_STATE_NEW:
                add(t, "INSERT INTO service_state (name, value) VALUES ($1, $2) "
                       "ON CONFLICT (name) DO NOTHING");
                break;
        default:
                break;
        }
}

/* the text of a statement; NULL for no memory */
static char *build(enum stmt_id id)
{
        struct text t = {0};

        switch (id) {
        case S_PUT_APP:
        case S_PUT_RUN:
        case S_SET_JOB:
        case S_PUT_EXECUTOR:
        case S_PUT_APP_EXECUTOR:
        case S_PUT_STAGE:
                build_write(&t, id);
                break;
        case S_RUN_LIST:
        case S_RUN_GET:
        case S_EXECUTORS_OF:
        case S_APP_EXECUTORS_OF:
        case S_STAGES_OF:
        case S_JOBS:
        case S_RUN_OWNER:
        case S_JOB_OWNERS:
        case S_RUN_KEY:
                build_read(&t, id);
                break;
        case S_VERSION:
        case S_FILES_ALL:
        case S_FILE_PUT:
        case S_STATE_GET:
        case S_STATE_PUT:
        case S_FILE_FORGET:
        case S_STATE_NEW:
                build_state(&t, id);
                break;
        case S_COUNT:
                break;
        }
        return t.s;
}

/*
 * Text as both backends take it: PostgreSQL refuses bytes that are not UTF-8 (a reason cut
 * in the middle of a character by a bounded copy, an argv byte), so every string is bound
 * with such bytes as '?', on SQLite too, so that both keep the same rows.
 */
static int bind_text(struct tuner_store *s, struct store_stmt *st, int i, const char *v)
{
        char *copy;
        int r;

        if (!v || util_utf8_valid(v))
                return s->ops->bind_text(st, i, v);
        copy = strdup(v);
        if (!copy)
                return -ENOMEM;
        util_utf8_sanitize(copy);
        r = s->ops->bind_text(st, i, copy);
        free(copy);
        return r;
}

static int stmt(struct tuner_store *s, enum stmt_id id, struct store_stmt **ret,
                struct util_error *err)
{
        if (!s->stmts[id]) {
                if (!s->sql[id] && !(s->sql[id] = build(id)))
                        return util_error_set(err, ENOMEM, "out of memory");
                int r = s->ops->prepare(s->conn, id, s->sql[id], &s->stmts[id], err);
                if (r < 0)
                        return r;
        }
        *ret = s->stmts[id];
        return 0;
}

/* bind the columns of one struct from parameter first on */
static int bind_columns(struct tuner_store *s, struct store_stmt *st, int first,
                        const struct column *c, size_t n, const void *base)
{
        const struct store_ops *o = s->ops;
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++) {
                const char *p = (const char *)base + c[i].offset;
                int idx = first + (int)i;

                switch (c[i].type) {
                case C_TEXT: {
                        char buf[TUNER_REASON_MAX];

                        snprintf(buf, sizeof(buf), "%.*s", (int)strnlen(p, c[i].size), p);
                        r = bind_text(s, st, idx, buf);
                        break;
                }
                case C_I64: {
                        int64_t v;
                        memcpy(&v, p, sizeof(v));
                        r = o->bind_int64(st, idx, v);
                        break;
                }
                case C_U64: {
                        uint64_t v;
                        memcpy(&v, p, sizeof(v));
                        r = v == TUNER_UNKNOWN
                                ? o->bind_null(st, idx)
                                : o->bind_int64(st, idx, v > INT64_MAX ? INT64_MAX : (int64_t)v);
                        break;
                }
                case C_U32: {
                        uint32_t v;
                        memcpy(&v, p, sizeof(v));
                        r = o->bind_int64(st, idx, v);
                        break;
                }
                case C_I32: {
                        int32_t v;
                        memcpy(&v, p, sizeof(v));
                        r = o->bind_int64(st, idx, v);
                        break;
                }
                case C_BOOL: {
                        bool v;
                        memcpy(&v, p, sizeof(v));
                        r = o->bind_int64(st, idx, v ? 1 : 0);
                        break;
                }
                case C_DOUBLE: {
                        double v;
                        memcpy(&v, p, sizeof(v));
                        r = o->bind_double(st, idx, v);
                        break;
                }
                }
        }
        return r;
}

/* read the columns of one struct from column first on */
static void read_columns(struct tuner_store *s, struct store_stmt *st, int first,
                         const struct column *c, size_t n, void *base)
{
        const struct store_ops *o = s->ops;

        for (size_t i = 0; i < n; i++) {
                char *p = (char *)base + c[i].offset;
                int col = first + (int)i;
                bool null = o->column_null(st, col);
                int64_t iv = null ? 0 : o->column_int64(st, col);

                switch (c[i].type) {
                case C_TEXT: {
                        const char *v = o->column_text(st, col);
                        snprintf(p, c[i].size, "%s", v ? v : "");
                        break;
                }
                case C_I64:
                        memcpy(p, &iv, sizeof(iv));
                        break;
                case C_U64: {
                        uint64_t v = null || iv < 0 ? TUNER_UNKNOWN : (uint64_t)iv;
                        memcpy(p, &v, sizeof(v));
                        break;
                }
                case C_U32: {
                        uint32_t v = iv < 0 ? 0 : iv > UINT32_MAX ? UINT32_MAX : (uint32_t)iv;
                        memcpy(p, &v, sizeof(v));
                        break;
                }
                case C_I32: {
                        int32_t v = iv < INT32_MIN   ? INT32_MIN
                                    : iv > INT32_MAX ? INT32_MAX
                                                     : (int32_t)iv;
                        memcpy(p, &v, sizeof(v));
                        break;
                }
                case C_BOOL: {
                        bool v = iv != 0;
                        memcpy(p, &v, sizeof(v));
                        break;
                }
                case C_DOUBLE: {
                        double v = null ? NAN : o->column_double(st, col);
                        memcpy(p, &v, sizeof(v));
                        break;
                }
                }
        }
}

/* run a statement that returns no rows, then make it ready again */
static int run_done(struct tuner_store *s, struct store_stmt *st, int bound, struct util_error *err)
{
        int r = bound < 0 ? util_error_set(err, -bound, "binding a parameter: %s", strerror(-bound))
                          : s->ops->step(st, err);

        s->ops->reset(st);
        return r < 0 ? r : 0;
}

/* ---------------------------------------------------------------- schema */

static int add_table(struct text *t, const char *table, bool app_id_first, const struct column *c,
                     size_t n, const char *key)
{
        add(t, "CREATE TABLE IF NOT EXISTS %s (", table);
        if (app_id_first)
                add(t, "app_id TEXT NOT NULL, ");
        for (size_t i = 0; i < n; i++)
                add(t, "%s %s%s, ", c[i].name, sql_type(c[i].type),
                    strstr(key, c[i].name) ? " NOT NULL" : "");
        add(t, "PRIMARY KEY (%s))", key);
        return t->failed ? -ENOMEM : 0;
}

static int exec_text(struct tuner_store *s, struct text *t, struct util_error *err)
{
        int r;

        if (t->failed)
                return util_error_set(err, ENOMEM, "out of memory");
        r = s->ops->exec(s->conn, t->s, err);
        free(t->s);
        *t = (struct text){0};
        return r;
}

/*
 * Columns added since the first schema: a store made before one of them gains it when opened,
 * whatever its version (a column already there is left as it is), and an older sparkshim,
 * which names the columns it reads and writes, keeps working on it (its rows hold NULL there).
 */
static const struct {
        const char *table, *column, *type;
} added_columns[] = {
    {"executors", "heap_after_gc_peak_bytes", "BIGINT"},
};

/* add added_columns[i] to its table unless it is there; in the schema's transaction */
static int add_column(struct tuner_store *s, size_t i, struct util_error *err)
{
        struct text t = {0};
        int r;

        if ((r = s->ops->exec(s->conn, "SAVEPOINT sparkshim_column", err)) < 0)
                return r;
        add(&t, "SELECT %s FROM %s LIMIT 0", added_columns[i].column, added_columns[i].table);
        if (exec_text(s, &t, NULL) < 0) {
                /* PostgreSQL aborts the transaction on the error until this */
                if ((r = s->ops->exec(s->conn, "ROLLBACK TO SAVEPOINT sparkshim_column", err)) < 0)
                        return r;
                add(&t, "ALTER TABLE %s ADD COLUMN %s %s", added_columns[i].table,
                    added_columns[i].column, added_columns[i].type);
                if ((r = exec_text(s, &t, err)) < 0)
                        return r;
        }
        return s->ops->exec(s->conn, "RELEASE SAVEPOINT sparkshim_column", err);
}

static int create_schema(struct tuner_store *s, struct util_error *err)
{
        struct text t = {0};
        struct store_stmt *st = NULL;
        int64_t version;
        int r;

        if ((r = s->ops->exec(s->conn, s->ops->begin_sql, err)) < 0)
                return r;
        if (s->ops->schema_lock_sql &&
            (r = s->ops->exec(s->conn, s->ops->schema_lock_sql, err)) < 0)
                goto fail;
        add(&t, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
        if ((r = exec_text(s, &t, err)) < 0)
                goto fail;
        add(&t,
            "CREATE TABLE IF NOT EXISTS runs (app_id TEXT NOT NULL PRIMARY KEY, job TEXT, "
            "job_from_flag INTEGER NOT NULL DEFAULT 0, has_eventlog INTEGER NOT NULL DEFAULT 0, "
            "conf_json TEXT");
        for (size_t i = 0; i < N(app_columns); i++)
                add(&t, ", %s %s", app_columns[i].name, sql_type(app_columns[i].type));
        add(&t, ")");
        if ((r = exec_text(s, &t, err)) < 0)
                goto fail;
        add(&t, "CREATE INDEX IF NOT EXISTS runs_job ON runs (job)");
        if ((r = exec_text(s, &t, err)) < 0)
                goto fail;
        add_table(&t, "executors", false, executor_columns, N(executor_columns),
                  "app_id, executor_id");
        if ((r = exec_text(s, &t, err)) < 0)
                goto fail;
        add_table(&t, "app_executors", true, app_executor_columns, N(app_executor_columns),
                  "app_id, executor_id");
        if ((r = exec_text(s, &t, err)) < 0)
                goto fail;
        add_table(&t, "stages", true, stage_columns, N(stage_columns), "app_id, stage_id, attempt");
        if ((r = exec_text(s, &t, err)) < 0)
                goto fail;
        /* `sparkshim tune-service`: a checkpoint per file read (tuner_store_put_file()) and
         * the service's own state; tables a store of sparkshim 1's schema gains as they are */
        add(&t, "CREATE TABLE IF NOT EXISTS ingested_files (dev BIGINT NOT NULL, ino BIGINT NOT "
                "NULL, size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL, done_offset BIGINT NOT "
                "NULL, PRIMARY KEY (dev, ino))");
        if ((r = exec_text(s, &t, err)) < 0)
                goto fail;
        add(&t, "CREATE TABLE IF NOT EXISTS service_state (name TEXT NOT NULL PRIMARY KEY, "
                "value BIGINT NOT NULL)");
        if ((r = exec_text(s, &t, err)) < 0)
                goto fail;
        for (size_t i = 0; i < N(added_columns); i++)
                if ((r = add_column(s, i, err)) < 0)
                        goto fail;
        add(&t,
            "INSERT INTO schema_version (version) SELECT %d WHERE NOT EXISTS "
            "(SELECT 1 FROM schema_version)",
            TUNER_STORE_SCHEMA_VERSION);
        if ((r = exec_text(s, &t, err)) < 0)
                goto fail;
        if ((r = stmt(s, S_VERSION, &st, err)) < 0)
                goto fail;
        r = s->ops->step(st, err);
        version = r > 0 && !s->ops->column_null(st, 0) ? s->ops->column_int64(st, 0) : 0;
        s->ops->reset(st);
        if (r < 0)
                goto fail;
        if (version > TUNER_STORE_SCHEMA_VERSION) {
                r = util_error_set(err, EPROTO,
                                   "the history store's schema version %" PRId64
                                   " is newer than this sparkshim's (%d); upgrade sparkshim",
                                   version, TUNER_STORE_SCHEMA_VERSION);
                goto fail;
        }
        return s->ops->exec(s->conn, "COMMIT", err);
fail:
        s->ops->exec(s->conn, "ROLLBACK", NULL);
        return r;
}

/* ---------------------------------------------------------------- open, transactions */

const char *tuner_store_backend(const struct tuner_store *s)
{
        assert(s);

        return s->ops->name;
}

bool tuner_store_is_postgresql(const char *db)
{
        const char *eq, *slash;

        assert(db);
        eq = strchr(db, '=');
        slash = strchr(db, '/');
        /* libpq takes any string with an '=' for key=value pairs; a SQLite path may hold one
         * after a '/' ("/var/lib/a=b/h.db", "./a=b.db") */
        return strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0 ||
               (eq && (!slash || eq < slash));
}

const char *tuner_store_describe(const char *db, char *buf, size_t size)
{
        size_t n = 0;

        if (size == 0)
                return buf;
        if (tuner_store_is_postgresql(db)) {
                store_pg_describe(db, buf, size);
                return buf;
        }
        for (; *db && n + 1 < size; db++, n++)
                buf[n] = (unsigned char)*db < ' ' || *db == 0x7f ? '?' : *db;
        buf[n] = '\0';
        return buf;
}

int tuner_store_open(const char *db, struct tuner_store **ret, struct util_error *err)
{
        struct tuner_store *s;
        int r;

        assert(ret);
        if (!db)
                return util_error_set(err, EINVAL, "no history store given");
        s = calloc(1, sizeof(*s));
        if (!s)
                return util_error_set(err, ENOMEM, "out of memory");
        s->ops = tuner_store_is_postgresql(db) ? &store_pg_ops : &store_sqlite_ops;
        r = s->ops->open(db, &s->conn, err);
        if (r < 0) {
                free(s);
                return r;
        }
        r = create_schema(s, err);
        if (r < 0) {
                tuner_store_close(s);
                return r;
        }
        *ret = s;
        return 0;
}

void tuner_store_close(struct tuner_store *s)
{
        if (!s)
                return;
        if (s->in_transaction)
                s->ops->exec(s->conn, "ROLLBACK", NULL);
        for (size_t i = 0; i < S_COUNT; i++) {
                if (s->stmts[i])
                        s->ops->finalize(s->stmts[i]);
                free(s->sql[i]);
        }
        s->ops->close(s->conn);
        free(s);
}

int tuner_store_begin(struct tuner_store *s, struct util_error *err)
{
        int r;

        assert(s);
        if (s->in_transaction)
                return util_error_set(err, EBUSY, "a transaction is open already");
        r = s->ops->exec(s->conn, s->ops->begin_sql, err);
        if (r >= 0)
                s->in_transaction = true;
        return r;
}

int tuner_store_commit(struct tuner_store *s, struct util_error *err)
{
        int r;

        assert(s);
        if (!s->in_transaction)
                return util_error_set(err, EINVAL, "no transaction to commit");
        r = s->ops->exec(s->conn, "COMMIT", err);
        if (r < 0)
                s->ops->exec(s->conn, "ROLLBACK", NULL);
        s->in_transaction = false;
        return r;
}

int tuner_store_rollback(struct tuner_store *s, struct util_error *err)
{
        assert(s);

        if (!s->in_transaction)
                return 0;
        s->in_transaction = false;
        return s->ops->exec(s->conn, "ROLLBACK", err);
}

/* ---------------------------------------------------------------- writes */

static int put_run_row(struct tuner_store *s, const char *app_id, struct util_error *err)
{
        struct store_stmt *st = NULL;
        int r = stmt(s, S_PUT_RUN, &st, err);

        if (r < 0)
                return r;
        return run_done(s, st, bind_text(s, st, 1, app_id), err);
}

static int check_app_id(const char *app_id, size_t size, struct util_error *err)
{
        if (strnlen(app_id, size) == size || !*app_id)
                return util_error_set(err, EINVAL, "an application id is empty or too long");
        return 0;
}

/*
 * A user's file may add to a run, never change another user's: the first file of a user to
 * name an application id makes the run that user's (a root-written file, sparkshim's own
 * reports, belongs to no one and may add to any). The application ids are the job's to
 * choose, so without this one user's event log could replace another's run.
 */
/* 1 when a user other than uid already has run app_id, 0 when not (or uid is 0: root's
 * files, sparkshim's own reports of no known user, may add to any run) */
static int owned_by_another(struct tuner_store *s, const char *app_id, uint32_t uid,
                            struct util_error *err)
{
        struct store_stmt *st = NULL;
        bool other = false;
        int r;

        if (uid == 0)
                return 0;
        if ((r = stmt(s, S_RUN_OWNER, &st, err)) < 0)
                return r;
        r = bind_text(s, st, 1, app_id);
        if (r < 0) {
                s->ops->reset(st);
                return util_error_set(err, -r, "binding a parameter: %s", strerror(-r));
        }
        while ((r = s->ops->step(st, err)) > 0)
                other = other || s->ops->column_int64(st, 0) != (int64_t)uid;
        s->ops->reset(st);
        return r < 0 ? r : other;
}

/* the store's secret for run_key(), made once (two random 64-bit halves in service_state) */
static int key_secret(struct tuner_store *s, int64_t secret[2], struct util_error *err)
{
        static const char *const names[2] = {"run_key_secret_0", "run_key_secret_1"};
        struct store_stmt *st = NULL;
        int r;

        for (int i = 0; i < 2; i++) {
                if ((r = tuner_store_state(s, names[i], &secret[i], err)) < 0)
                        return r;
                if (r > 0)
                        continue;
                if (getrandom(&secret[i], sizeof(secret[i]), 0) != sizeof(secret[i]))
                        return util_error_set(err, EIO, "getrandom: %s", strerror(errno));
                /* two ingests at once: the first one's stays */
                if ((r = stmt(s, S_STATE_NEW, &st, err)) < 0)
                        return r;
                if ((r = bind_text(s, st, 1, names[i])) >= 0)
                        r = s->ops->bind_int64(st, 2, secret[i]);
                if ((r = run_done(s, st, r, err)) < 0 ||
                    (r = tuner_store_state(s, names[i], &secret[i], err)) < 0)
                        return r;
        }
        return 0;
}

int tuner_store_run_id(struct tuner_store *s, const char *app_id, uint32_t uid,
                       char out[TUNER_APP_ID_MAX], struct util_error *err)
{
        struct sha256_ctx ctx;
        uint8_t digest[SHA256_DIGEST_SIZE];
        int64_t secret[2];
        char head[48], hex[13];
        int r, n;

        assert(s);
        assert(app_id);
        assert(out);
        r = owned_by_another(s, app_id, uid, err);
        if (r <= 0) {
                if (r == 0)
                        snprintf(out, TUNER_APP_ID_MAX, "%s", app_id);
                return r;
        }
        if ((r = key_secret(s, secret, err)) < 0)
                return r;
        sha256_init(&ctx);
        n = snprintf(head, sizeof(head), "%016" PRIx64 "%016" PRIx64 "%" PRIu32 "%c",
                     (uint64_t)secret[0], (uint64_t)secret[1], uid, 0);
        sha256_update(&ctx, (size_t)n, (const uint8_t *)head);
        sha256_update(&ctx, strlen(app_id), (const uint8_t *)app_id);
        sha256_digest(&ctx, sizeof(digest), digest);
        snprintf(out, TUNER_APP_ID_MAX, "%.*s~%s", TUNER_APP_ID_MAX - 14, app_id,
                 util_hex(digest, 6, hex));
        /* a second clash (a key taken by a third user) cannot be made without the secret */
        r = owned_by_another(s, out, uid, err);
        if (r > 0)
                return util_error_set(err, EPERM,
                                      "application %s is in the history as another user's, and "
                                      "so is its key for uid %" PRIu32 " (%s)",
                                      app_id, uid, out);
        return r < 0 ? r : 1;
}

int tuner_store_put_app(struct tuner_store *s, const char *job, const struct tuner_app *app,
                        struct util_error *err)
{
        struct store_stmt *st = NULL;
        int r;
        struct tuner_app keyed;

        assert(s);
        assert(app);
        if ((r = check_app_id(app->app_id, sizeof(app->app_id), err)) < 0)
                return r;
        /* another user's run under the id: this one is kept apart (tuner_store_run_id()) */
        keyed = *app;
        if ((r = tuner_store_run_id(s, app->app_id, app->owner_uid, keyed.app_id, err)) < 0)
                return r;
        app = &keyed;
        if ((r = stmt(s, S_PUT_APP, &st, err)) < 0)
                return r;
        r = bind_text(s, st, 1, app->app_id);
        if (r >= 0)
                r = bind_text(s, st, 2, job);
        if (r >= 0)
                r = bind_text(s, st, 3, app->conf_json);
        if (r >= 0)
                r = bind_columns(s, st, 4, app_columns, N(app_columns), app);
        if ((r = run_done(s, st, r, err)) < 0)
                return r;

        for (size_t i = 0; i < app->n_stages; i++) {
                if ((r = stmt(s, S_PUT_STAGE, &st, err)) < 0)
                        return r;
                r = bind_text(s, st, 1, app->app_id);
                if (r >= 0)
                        r = bind_columns(s, st, 2, stage_columns, N(stage_columns),
                                         &app->stages[i]);
                if ((r = run_done(s, st, r, err)) < 0)
                        return r;
        }
        for (size_t i = 0; i < app->n_executors; i++) {
                if ((r = stmt(s, S_PUT_APP_EXECUTOR, &st, err)) < 0)
                        return r;
                r = bind_text(s, st, 1, app->app_id);
                if (r >= 0)
                        r = bind_columns(s, st, 2, app_executor_columns, N(app_executor_columns),
                                         &app->executors[i]);
                if ((r = run_done(s, st, r, err)) < 0)
                        return r;
        }
        return 0;
}

int tuner_store_put_executor(struct tuner_store *s, const struct tuner_executor *e,
                             struct util_error *err)
{
        struct store_stmt *st = NULL;
        int r;
        struct tuner_executor keyed;

        assert(s);
        assert(e);
        if ((r = check_app_id(e->app_id, sizeof(e->app_id), err)) < 0)
                return r;
        keyed = *e;
        if ((r = tuner_store_run_id(s, e->app_id, e->owner_uid, keyed.app_id, err)) < 0)
                return r;
        e = &keyed;
        if ((r = put_run_row(s, e->app_id, err)) < 0)
                return r;
        if ((r = stmt(s, S_PUT_EXECUTOR, &st, err)) < 0)
                return r;
        r = bind_columns(s, st, 1, executor_columns, N(executor_columns), e);
        return run_done(s, st, r, err);
}

int tuner_store_set_job(struct tuner_store *s, const char *app_id, uint32_t owner, const char *job,
                        struct util_error *err)
{
        struct store_stmt *st = NULL;
        char key[TUNER_APP_ID_MAX];
        int r;

        assert(s);
        assert(app_id);
        if ((r = check_app_id(app_id, TUNER_APP_ID_MAX, err)) < 0)
                return r;
        if ((r = tuner_store_run_id(s, app_id, owner, key, err)) < 0)
                return r;
        app_id = key;
        if (!job || !*job || strlen(job) >= TUNER_JOB_MAX)
                return util_error_set(err, EINVAL, "a job key is empty or longer than %d bytes",
                                      TUNER_JOB_MAX - 1);
        if ((r = stmt(s, S_SET_JOB, &st, err)) < 0)
                return r;
        r = bind_text(s, st, 1, app_id);
        if (r >= 0)
                r = bind_text(s, st, 2, job);
        return run_done(s, st, r, err);
}

/* ---------------------------------------------------------------- reads */

/* every row of an app's table into a new array of n elements of size each */
static int read_rows(struct tuner_store *s, enum stmt_id id, const char *app_id, int first,
                     const struct column *c, size_t nc, size_t size, void **ret, size_t *ret_n,
                     struct util_error *err)
{
        struct store_stmt *st = NULL;
        _cleanup_free_ char *rows = NULL;
        size_t n = 0, cap = 0;
        int r;

        if ((r = stmt(s, id, &st, err)) < 0)
                return r;
        r = bind_text(s, st, 1, app_id);
        if (r < 0) {
                s->ops->reset(st);
                return util_error_set(err, -r, "binding a parameter: %s", strerror(-r));
        }
        while ((r = s->ops->step(st, err)) > 0) {
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 8;
                        char *p = realloc(rows, ncap * size);
                        if (!p) {
                                r = util_error_set(err, ENOMEM, "out of memory");
                                break;
                        }
                        rows = p;
                        cap = ncap;
                }
                memset(rows + n * size, 0, size);
                read_columns(s, st, first, c, nc, rows + n * size);
                n++;
        }
        s->ops->reset(st);
        if (r < 0)
                return r;
        *ret = rows; /* TAKE_PTR is a statement expression, which -Wpedantic rejects */
        rows = NULL;
        *ret_n = n;
        return 0;
}

static int read_run(struct tuner_store *s, const char *app_id, struct tuner_run *run,
                    struct util_error *err)
{
        struct tuner_app app = {0};
        _cleanup_free_ struct tuner_executor *ex = NULL;
        size_t n = 0;
        struct store_stmt *st = NULL;
        bool has_eventlog = false;
        void *rows = NULL;
        int r;

        snprintf(app.app_id, sizeof(app.app_id), "%s", app_id);
        if ((r = stmt(s, S_RUN_GET, &st, err)) < 0)
                return r;
        if ((r = bind_text(s, st, 1, app_id)) < 0) {
                s->ops->reset(st);
                return util_error_set(err, -r, "binding a parameter: %s", strerror(-r));
        }
        r = s->ops->step(st, err);
        if (r > 0) {
                const char *job = s->ops->column_text(st, 0);
                const char *conf = s->ops->column_text(st, 2);

                snprintf(run->job, sizeof(run->job), "%s", job ? job : "");
                has_eventlog = s->ops->column_int64(st, 1) != 0;
                if (conf && !(app.conf_json = strdup(conf)))
                        r = util_error_set(err, ENOMEM, "out of memory");
                read_columns(s, st, 3, app_columns, N(app_columns), &app);
        }
        s->ops->reset(st);
        if (r < 0)
                goto out;
        r = read_rows(s, S_EXECUTORS_OF, app_id, 0, executor_columns, N(executor_columns),
                      sizeof(*ex), &rows, &n, err);
        if (r < 0)
                goto out;
        ex = rows;
        if (has_eventlog) {
                r = read_rows(s, S_APP_EXECUTORS_OF, app_id, 1, app_executor_columns,
                              N(app_executor_columns), sizeof(*app.executors), &rows,
                              &app.n_executors, err);
                if (r < 0)
                        goto out;
                app.executors = rows;
                r = read_rows(s, S_STAGES_OF, app_id, 1, stage_columns, N(stage_columns),
                              sizeof(*app.stages), &rows, &app.n_stages, err);
                if (r < 0)
                        goto out;
                app.stages = rows;
        }
        tuner_store_assemble(&app, has_eventlog, ex, n, run);
        r = 0;
out:
        tuner_app_free(&app);
        return r;
}

int tuner_store_runs(struct tuner_store *s, const char *job, int64_t owner, unsigned max,
                     struct tuner_run **ret, size_t *ret_n, struct util_error *err)
{
        _cleanup_free_ char *ids = NULL; /* n x TUNER_APP_ID_MAX */
        _cleanup_free_ struct tuner_run *runs = NULL;
        size_t n = 0, cap = 0;
        struct store_stmt *st = NULL;
        int r;

        assert(s);
        assert(job);
        assert(ret);
        assert(ret_n);
        if ((r = stmt(s, S_RUN_LIST, &st, err)) < 0)
                return r;
        r = bind_text(s, st, 1, job);
        if (r >= 0)
                r = s->ops->bind_int64(st, 2, owner < 0 ? TUNER_ANY_OWNER : owner);
        if (r >= 0)
                r = s->ops->bind_int64(st, 3, max ? (int64_t)max : INT64_MAX);
        if (r < 0) {
                s->ops->reset(st);
                return util_error_set(err, -r, "binding a parameter: %s", strerror(-r));
        }
        while ((r = s->ops->step(st, err)) > 0) {
                const char *id = s->ops->column_text(st, 0);

                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 16;
                        char *p = realloc(ids, ncap * TUNER_APP_ID_MAX);
                        if (!p) {
                                r = util_error_set(err, ENOMEM, "out of memory");
                                break;
                        }
                        ids = p;
                        cap = ncap;
                }
                snprintf(ids + n * TUNER_APP_ID_MAX, TUNER_APP_ID_MAX, "%s", id ? id : "");
                n++;
        }
        s->ops->reset(st);
        if (r < 0)
                return r;
        runs = calloc(n ? n : 1, sizeof(*runs));
        if (!runs)
                return util_error_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
                if ((r = read_run(s, ids + i * TUNER_APP_ID_MAX, &runs[i], err)) < 0)
                        return r;
        *ret = runs; /* TAKE_PTR is a statement expression, which -Wpedantic rejects */
        runs = NULL;
        *ret_n = n;
        return 0;
}

int tuner_store_job_owners(struct tuner_store *s, const char *job, uint32_t *owners, size_t max,
                           size_t *ret_n, struct util_error *err)
{
        struct store_stmt *st = NULL;
        size_t n = 0;
        int r;

        assert(s);
        assert(job);
        assert(ret_n);
        assert(max == 0 || owners);
        if ((r = stmt(s, S_JOB_OWNERS, &st, err)) < 0)
                return r;
        r = bind_text(s, st, 1, job);
        if (r < 0) {
                s->ops->reset(st);
                return util_error_set(err, -r, "binding a parameter: %s", strerror(-r));
        }
        while ((r = s->ops->step(st, err)) > 0) {
                if (n < max)
                        owners[n] = (uint32_t)s->ops->column_int64(st, 0);
                n++;
        }
        s->ops->reset(st);
        if (r < 0)
                return r;
        *ret_n = n;
        return 0;
}

int tuner_store_jobs(struct tuner_store *s, struct tuner_store_job **ret, size_t *ret_n,
                     struct util_error *err)
{
        _cleanup_free_ struct tuner_store_job *jobs = NULL;
        size_t n = 0, cap = 0;
        struct store_stmt *st = NULL;
        int r;

        assert(s);
        assert(ret);
        assert(ret_n);
        if ((r = stmt(s, S_JOBS, &st, err)) < 0)
                return r;
        while ((r = s->ops->step(st, err)) > 0) {
                const char *job = s->ops->column_text(st, 0);

                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 16;
                        struct tuner_store_job *p = realloc(jobs, ncap * sizeof(*p));
                        if (!p) {
                                r = util_error_set(err, ENOMEM, "out of memory");
                                break;
                        }
                        jobs = p;
                        cap = ncap;
                }
                jobs[n] = (struct tuner_store_job){
                    .runs = (unsigned)s->ops->column_int64(st, 1),
                    .last_start_ms = s->ops->column_int64(st, 2),
                };
                snprintf(jobs[n].job, sizeof(jobs[n].job), "%s", job ? job : "");
                n++;
        }
        s->ops->reset(st);
        if (r < 0)
                return r;
        *ret = jobs; /* TAKE_PTR is a statement expression, which -Wpedantic rejects */
        jobs = NULL;
        *ret_n = n;
        return 0;
}

/* ---------------------------------------------------------------- tune-service */

int tuner_store_files(struct tuner_store *s, int (*each)(void *, const struct tuner_store_file *),
                      void *userdata, struct util_error *err)
{
        struct store_stmt *st = NULL;
        int r;

        assert(s);
        assert(each);
        if ((r = stmt(s, S_FILES_ALL, &st, err)) < 0)
                return r;
        while ((r = s->ops->step(st, err)) > 0) {
                struct tuner_store_file f = {
                    .dev = (uint64_t)s->ops->column_int64(st, 0),
                    .ino = (uint64_t)s->ops->column_int64(st, 1),
                    .size = s->ops->column_int64(st, 2),
                    .mtime_ns = s->ops->column_int64(st, 3),
                    .offset = s->ops->column_int64(st, 4),
                };

                if ((r = each(userdata, &f)) < 0) {
                        r = util_error_set(err, -r, "%s", strerror(-r));
                        break;
                }
        }
        s->ops->reset(st);
        return r < 0 ? r : 0;
}

int tuner_store_put_file(struct tuner_store *s, const struct tuner_store_file *f,
                         struct util_error *err)
{
        struct store_stmt *st = NULL;
        int r;

        assert(s);
        assert(f);
        if ((r = stmt(s, S_FILE_PUT, &st, err)) < 0)
                return r;
        /* dev and ino as the bits of a signed 64-bit integer (both backends' BIGINT) */
        if ((r = s->ops->bind_int64(st, 1, (int64_t)f->dev)) >= 0 &&
            (r = s->ops->bind_int64(st, 2, (int64_t)f->ino)) >= 0 &&
            (r = s->ops->bind_int64(st, 3, f->size)) >= 0 &&
            (r = s->ops->bind_int64(st, 4, f->mtime_ns)) >= 0)
                r = s->ops->bind_int64(st, 5, f->offset);
        return run_done(s, st, r, err);
}

int tuner_store_forget_file(struct tuner_store *s, uint64_t dev, uint64_t ino,
                            struct util_error *err)
{
        struct store_stmt *st = NULL;
        int r;

        assert(s);
        if ((r = stmt(s, S_FILE_FORGET, &st, err)) < 0)
                return r;
        if ((r = s->ops->bind_int64(st, 1, (int64_t)dev)) >= 0)
                r = s->ops->bind_int64(st, 2, (int64_t)ino);
        return run_done(s, st, r, err);
}

int tuner_store_run_key(struct tuner_store *s, const char *app_id, char job[TUNER_JOB_MAX],
                        uint32_t *owner, struct util_error *err)
{
        struct store_stmt *st = NULL;
        int r;

        assert(s);
        assert(app_id);
        assert(job);
        assert(owner);
        if ((r = stmt(s, S_RUN_KEY, &st, err)) < 0)
                return r;
        if ((r = bind_text(s, st, 1, app_id)) < 0) {
                s->ops->reset(st);
                return util_error_set(err, -r, "binding a parameter: %s", strerror(-r));
        }
        r = s->ops->step(st, err);
        if (r > 0) {
                const char *j = s->ops->column_text(st, 0);

                snprintf(job, TUNER_JOB_MAX, "%s", j ? j : "");
                *owner = (uint32_t)s->ops->column_int64(st, 1);
                r = j && *j ? 1 : 0;
        }
        s->ops->reset(st);
        return r;
}

int tuner_store_state(struct tuner_store *s, const char *name, int64_t *value,
                      struct util_error *err)
{
        struct store_stmt *st = NULL;
        int r;

        assert(s);
        assert(name);
        assert(value);
        if ((r = stmt(s, S_STATE_GET, &st, err)) < 0)
                return r;
        if ((r = bind_text(s, st, 1, name)) < 0) {
                s->ops->reset(st);
                return util_error_set(err, -r, "binding a parameter: %s", strerror(-r));
        }
        r = s->ops->step(st, err);
        if (r > 0)
                *value = s->ops->column_int64(st, 0);
        s->ops->reset(st);
        return r;
}

int tuner_store_set_state(struct tuner_store *s, const char *name, int64_t value,
                          struct util_error *err)
{
        struct store_stmt *st = NULL;
        int r;

        assert(s);
        assert(name);
        if ((r = stmt(s, S_STATE_PUT, &st, err)) < 0)
                return r;
        if ((r = bind_text(s, st, 1, name)) >= 0)
                r = s->ops->bind_int64(st, 2, value);
        return run_done(s, st, r, err);
}
