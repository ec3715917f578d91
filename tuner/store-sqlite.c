/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history store in a SQLite file: created 0600 by us before SQLite opens it (its -wal
 * and -shm files take the database's mode), WAL journal so that readers never wait for an
 * ingest, a busy timeout for two ingests at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store-internal.h"
#include "util.h"

#define BUSY_TIMEOUT_MS 30000

struct store_stmt {
        sqlite3 *db;
        sqlite3_stmt *stmt;
};

static int sqlite_error(sqlite3 *db, int rc, const char *what, struct util_error *err)
{
        if (rc == SQLITE_NOMEM)
                return util_error_set(err, ENOMEM, "%s: out of memory", what);
        return util_error_set(err, EIO, "%s: %s", what,
                              db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

static int sqlite_open(const char *path, void **ret_conn, struct util_error *err)
{
        sqlite3 *db = NULL;
        struct stat st;
        int fd, rc;

        if (!*path)
                return util_error_set(err, EINVAL, "the history store's path is empty");
        /* create it ourselves: 0600, no symlink followed, never a FIFO or a device */
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
        if (fd < 0)
                return util_error_set(err, errno, "%s: cannot open: %s", path, strerror(errno));
        if (fstat(fd, &st) < 0) {
                int e = errno;

                close(fd);
                return util_error_set(err, e, "%s: cannot stat: %s", path, strerror(e));
        }
        if (!S_ISREG(st.st_mode)) {
                close(fd);
                return util_error_set(err, EINVAL, "%s: not a regular file", path);
        }
        close(fd);
        rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL);
        if (rc != SQLITE_OK) {
                int ret = sqlite_error(db, rc, path, err);

                sqlite3_close(db);
                return ret;
        }
        sqlite3_extended_result_codes(db, 1);
        sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
        rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL,
                          NULL);
        if (rc != SQLITE_OK) {
                int ret = sqlite_error(db, rc, path, err);

                sqlite3_close(db);
                return ret;
        }
        *ret_conn = db;
        return 0;
}

static void sqlite_close(void *conn)
{
        sqlite3_close_v2(conn);
}

static int sqlite_exec(void *conn, const char *sql, struct util_error *err)
{
        int rc = sqlite3_exec(conn, sql, NULL, NULL, NULL);

        return rc == SQLITE_OK ? 0 : sqlite_error(conn, rc, sql, err);
}

static int sqlite_prepare(void *conn, unsigned id, const char *sql, struct store_stmt **ret,
                          struct util_error *err)
{
        _cleanup_free_ char *text = strdup(sql);
        struct store_stmt *st;
        int rc;

        (void)id;
        if (!text)
                return util_error_set(err, ENOMEM, "out of memory");
        /* $N -> ?N: numbered parameters in SQLite's spelling */
        for (char *p = text; *p; p++)
                if (*p == '$' && p[1] >= '0' && p[1] <= '9')
                        *p = '?';
        st = calloc(1, sizeof(*st));
        if (!st)
                return util_error_set(err, ENOMEM, "out of memory");
        st->db = conn;
        rc = sqlite3_prepare_v3(conn, text, -1, SQLITE_PREPARE_PERSISTENT, &st->stmt, NULL);
        if (rc != SQLITE_OK) {
                int r = sqlite_error(conn, rc, "prepare", err);

                free(st);
                return r;
        }
        *ret = st;
        return 0;
}

static void sqlite_finalize(struct store_stmt *st)
{
        if (!st)
                return;
        sqlite3_finalize(st->stmt);
        free(st);
}

static int bind_rc(int rc)
{
        return rc == SQLITE_OK ? 0 : rc == SQLITE_NOMEM ? -ENOMEM : -EINVAL;
}

static int sqlite_bind_null(struct store_stmt *st, int i)
{
        return bind_rc(sqlite3_bind_null(st->stmt, i));
}

static int sqlite_bind_int64(struct store_stmt *st, int i, int64_t v)
{
        return bind_rc(sqlite3_bind_int64(st->stmt, i, v));
}

static int sqlite_bind_double(struct store_stmt *st, int i, double v)
{
        return bind_rc(isfinite(v) ? sqlite3_bind_double(st->stmt, i, v)
                                   : sqlite3_bind_null(st->stmt, i));
}

static int sqlite_bind_text(struct store_stmt *st, int i, const char *v)
{
        return bind_rc(v ? sqlite3_bind_text(st->stmt, i, v, -1, SQLITE_TRANSIENT)
                         : sqlite3_bind_null(st->stmt, i));
}

static int sqlite_step(struct store_stmt *st, struct util_error *err)
{
        int rc = sqlite3_step(st->stmt);

        if (rc == SQLITE_ROW)
                return 1;
        if (rc == SQLITE_DONE)
                return 0;
        return sqlite_error(st->db, rc, "statement", err);
}

static bool sqlite_column_null(struct store_stmt *st, int c)
{
        return sqlite3_column_type(st->stmt, c) == SQLITE_NULL;
}

static int64_t sqlite_column_int64(struct store_stmt *st, int c)
{
        return sqlite3_column_int64(st->stmt, c);
}

static double sqlite_column_double(struct store_stmt *st, int c)
{
        return sqlite3_column_type(st->stmt, c) == SQLITE_NULL ? NAN
                                                               : sqlite3_column_double(st->stmt, c);
}

static const char *sqlite_column_text(struct store_stmt *st, int c)
{
        return (const char *)sqlite3_column_text(st->stmt, c);
}

static void sqlite_reset(struct store_stmt *st)
{
        sqlite3_reset(st->stmt);
        sqlite3_clear_bindings(st->stmt);
}

const struct store_ops store_sqlite_ops = {
    .name = "sqlite",
    .open = sqlite_open,
    .close = sqlite_close,
    .exec = sqlite_exec,
    .begin_sql = "BEGIN IMMEDIATE",
    .schema_lock_sql = NULL,
    .prepare = sqlite_prepare,
    .finalize = sqlite_finalize,
    .bind_null = sqlite_bind_null,
    .bind_int64 = sqlite_bind_int64,
    .bind_double = sqlite_bind_double,
    .bind_text = sqlite_bind_text,
    .step = sqlite_step,
    .column_null = sqlite_column_null,
    .column_int64 = sqlite_column_int64,
    .column_double = sqlite_column_double,
    .column_text = sqlite_column_text,
    .reset = sqlite_reset,
};
