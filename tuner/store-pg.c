/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history store in PostgreSQL, through libpq: a postgresql:// URL (libpq's own syntax,
 * with its environment and ~/.pgpass for what the URL leaves out). Statements are prepared
 * on the server once per connection (PQprepare) and run with their parameters bound as text
 * (PQexecPrepared); nothing of a value ever becomes SQL. The server's notices ("relation
 * already exists, skipping") are dropped: a library does not write to stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "store-internal.h"
#include "util.h"

#define PARAMS_MAX 64

struct store_stmt {
        PGconn *conn;
        char name[32];
        char *values[PARAMS_MAX];
        int n_params; /* highest index bound */
        PGresult *result;
        int row, rows;
};

/* libpq's messages end with a newline and may span lines: keep the first line */
static int pg_error(PGconn *conn, const char *what, struct shim_error *err)
{
        char line[SHIM_ERROR_TEXT_MAX];
        const char *msg = conn ? PQerrorMessage(conn) : "out of memory";

        snprintf(line, sizeof(line), "%s", msg && *msg ? msg : "unknown error");
        line[strcspn(line, "\n")] = '\0';
        return shim_error_set(err, EIO, "%s: %s", what, line);
}

static void no_notices(void *arg, const char *message)
{
        (void)arg;
        (void)message;
}

static int pg_open(const char *url, void **ret_conn, struct shim_error *err)
{
        /* a default connect_timeout the URL may override (later values win) */
        static const char *const keywords[] = {"connect_timeout", "fallback_application_name",
                                               "dbname", NULL};
        const char *const values[] = {"10", "sparkshim", url, NULL};
        PGconn *conn = PQconnectdbParams(keywords, values, 1);

        if (!conn)
                return shim_error_set(err, ENOMEM, "out of memory");
        if (PQstatus(conn) != CONNECTION_OK) {
                /* the message may name the host; never the password */
                int ret = pg_error(conn, "PostgreSQL", err);

                PQfinish(conn);
                return ret;
        }
        PQsetNoticeProcessor(conn, no_notices, NULL);
        *ret_conn = conn;
        return 0;
}

static void pg_close(void *conn)
{
        PQfinish(conn);
}

static int pg_exec(void *conn, const char *sql, struct shim_error *err)
{
        PGresult *r = PQexec(conn, sql);
        ExecStatusType status = PQresultStatus(r);
        int ret = 0;

        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
                ret = pg_error(conn, sql, err);
        PQclear(r);
        return ret;
}

static int pg_prepare(void *conn, unsigned id, const char *sql, struct store_stmt **ret,
                      struct shim_error *err)
{
        struct store_stmt *st = calloc(1, sizeof(*st));
        PGresult *r;
        int rc = 0;

        if (!st)
                return shim_error_set(err, ENOMEM, "out of memory");
        st->conn = conn;
        snprintf(st->name, sizeof(st->name), "tuner_s%u", id);
        r = PQprepare(conn, st->name, sql, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
                rc = pg_error(conn, "prepare", err);
        PQclear(r);
        if (rc < 0) {
                free(st);
                return rc;
        }
        *ret = st;
        return 0;
}

static void clear_bindings(struct store_stmt *st)
{
        for (int i = 0; i < st->n_params; i++) {
                free(st->values[i]);
                st->values[i] = NULL;
        }
        st->n_params = 0;
}

static void pg_reset(struct store_stmt *st)
{
        PQclear(st->result);
        st->result = NULL;
        st->row = st->rows = 0;
        clear_bindings(st);
}

static void pg_finalize(struct store_stmt *st)
{
        if (!st)
                return;
        pg_reset(st);
        /* the server drops it with the connection */
        free(st);
}

static int bind_value(struct store_stmt *st, int i, char *v)
{
        if (i < 1 || i > PARAMS_MAX) {
                free(v);
                return -EINVAL;
        }
        free(st->values[i - 1]);
        st->values[i - 1] = v;
        if (i > st->n_params)
                st->n_params = i;
        return 0;
}

static int pg_bind_null(struct store_stmt *st, int i)
{
        return bind_value(st, i, NULL);
}

static int pg_bind_int64(struct store_stmt *st, int i, int64_t v)
{
        char *text;

        if (asprintf(&text, "%" PRId64, v) < 0)
                return -ENOMEM;
        return bind_value(st, i, text);
}

static int pg_bind_double(struct store_stmt *st, int i, double v)
{
        char *text;

        if (!isfinite(v))
                return bind_value(st, i, NULL);
        if (asprintf(&text, "%.17g", v) < 0)
                return -ENOMEM;
        return bind_value(st, i, text);
}

static int pg_bind_text(struct store_stmt *st, int i, const char *v)
{
        char *text = NULL;

        if (v && !(text = strdup(v)))
                return -ENOMEM;
        return bind_value(st, i, text);
}

static int pg_step(struct store_stmt *st, struct shim_error *err)
{
        if (!st->result) {
                ExecStatusType status;

                st->result = PQexecPrepared(st->conn, st->name, st->n_params,
                                            (const char *const *)st->values, NULL, NULL, 0);
                status = PQresultStatus(st->result);
                if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
                        int ret = pg_error(st->conn, "statement", err);

                        PQclear(st->result);
                        st->result = NULL;
                        return ret;
                }
                st->rows = PQntuples(st->result);
                st->row = -1;
        }
        if (st->row + 1 >= st->rows)
                return 0;
        st->row++;
        return 1;
}

static bool pg_column_null(struct store_stmt *st, int c)
{
        return PQgetisnull(st->result, st->row, c);
}

static int64_t pg_column_int64(struct store_stmt *st, int c)
{
        return pg_column_null(st, c) ? 0 : strtoll(PQgetvalue(st->result, st->row, c), NULL, 10);
}

static double pg_column_double(struct store_stmt *st, int c)
{
        return pg_column_null(st, c) ? NAN : strtod(PQgetvalue(st->result, st->row, c), NULL);
}

static const char *pg_column_text(struct store_stmt *st, int c)
{
        return pg_column_null(st, c) ? NULL : PQgetvalue(st->result, st->row, c);
}

const struct store_ops store_pg_ops = {
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .exec = pg_exec,
    .begin_sql = "BEGIN",
    /* two first ingests at once must not race to create the tables */
    .schema_lock_sql = "SELECT pg_advisory_xact_lock(7318413)",
    .prepare = pg_prepare,
    .finalize = pg_finalize,
    .bind_null = pg_bind_null,
    .bind_int64 = pg_bind_int64,
    .bind_double = pg_bind_double,
    .bind_text = pg_bind_text,
    .step = pg_step,
    .column_null = pg_column_null,
    .column_int64 = pg_column_int64,
    .column_double = pg_column_double,
    .column_text = pg_column_text,
    .reset = pg_reset,
};
