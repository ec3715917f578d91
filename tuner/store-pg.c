/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history store in PostgreSQL, through libpq: a postgresql:// URI or key=value pairs
 * (libpq's own syntax, with its environment and ~/.pgpass for what they leave out). No message
 * holds the string's password: the string is shown as PQconninfoParse() reads it, without it
 * (store_pg_describe()), and libpq's own messages lose what they quote of a string it cannot
 * parse and any copy of the password (pg_open()). Statements are prepared
 * on the server once per connection (PQprepare) and run with their parameters bound as text
 * (PQexecPrepared); nothing of a value ever becomes SQL. The server's notices ("relation
 * already exists, skipping") are dropped: a library does not write to stderr.
 */
#include <ctype.h>
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
static int pg_error(PGconn *conn, const char *what, struct util_error *err)
{
        char line[UTIL_ERROR_TEXT_MAX];
        const char *msg = conn ? PQerrorMessage(conn) : "out of memory";

        snprintf(line, sizeof(line), "%s", msg && *msg ? msg : "unknown error");
        line[strcspn(line, "\n")] = '\0';
        return util_error_set(err, EIO, "%s: %s", what, line);
}

static void no_notices(void *arg, const char *message)
{
        (void)arg;
        (void)message;
}

/* ---- connection strings in messages ---- */

/* the keywords a message shows, in this order; a password only as "***" */
enum { K_HOST, K_HOSTADDR, K_PORT, K_DBNAME, K_USER, K_PASSWORD, K_COUNT };
static const char *const shown_keywords[K_COUNT] = {"host",   "hostaddr", "port",
                                                    "dbname", "user",     "password"};

static bool is_uri(const char *db)
{
        return strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0;
}

/* PQconninfoParse(db) with the values of shown_keywords in v (NULL when not given): the
 * options to free with PQconninfoFree(), or NULL when libpq cannot parse db (*ret_msg then
 * its message, to free with PQfreemem(); it may quote db) */
static PQconninfoOption *parse(const char *db, const char *v[K_COUNT], char **ret_msg)
{
        PQconninfoOption *opts = PQconninfoParse(db, ret_msg);

        for (size_t i = 0; i < K_COUNT; i++)
                v[i] = NULL;
        for (PQconninfoOption *o = opts; o && o->keyword; o++)
                for (size_t i = 0; i < K_COUNT; i++)
                        if (o->val && o->val[0] && strcmp(o->keyword, shown_keywords[i]) == 0)
                                v[i] = o->val;
        return opts;
}

/* append s to buf (cut to fit), control characters as '?'; quoted: in '' with \ and ' escaped
 * (libpq's key=value syntax) when s is empty or holds a space, a quote or a backslash */
static void append(char *buf, size_t size, size_t *n, const char *s, bool quoted)
{
        bool quote = quoted && (!*s || strpbrk(s, " \t\n'\\"));

        if (quote && *n + 1 < size)
                buf[(*n)++] = '\'';
        for (; *s && *n + 1 < size; s++) {
                if (quote && (*s == '\'' || *s == '\\') && *n + 2 < size)
                        buf[(*n)++] = '\\';
                buf[(*n)++] = (unsigned char)*s < ' ' || *s == 0x7f ? '?' : *s;
        }
        if (quote && *n + 1 < size)
                buf[(*n)++] = '\'';
        buf[*n] = '\0';
}

void store_pg_describe(const char *db, char *buf, size_t size)
{
        const char *v[K_COUNT];
        char *msg = NULL;
        PQconninfoOption *opts = parse(db, v, &msg);
        size_t n = 0;

        buf[0] = '\0';
        if (!opts) {
                PQfreemem(msg);
                append(buf, size, &n,
                       is_uri(db) ? "postgresql://(a URI libpq cannot parse)"
                                  : "(key=value pairs libpq cannot parse)",
                       false);
                return;
        }
        /* a dbname may itself be a connection string, password and all */
        if (v[K_DBNAME] && (strchr(v[K_DBNAME], '=') || is_uri(v[K_DBNAME])))
                v[K_DBNAME] = "***";
        if (is_uri(db)) {
                /* a unix socket's directory goes in the query, as a URI has it */
                bool socket = v[K_HOST] && v[K_HOST][0] == '/';
                const char *host = v[K_HOST] && !socket ? v[K_HOST] : v[K_HOSTADDR];

                append(buf, size, &n, "postgresql://", false);
                if (v[K_USER])
                        append(buf, size, &n, v[K_USER], false);
                if (v[K_PASSWORD])
                        append(buf, size, &n, ":***", false);
                if (v[K_USER] || v[K_PASSWORD])
                        append(buf, size, &n, "@", false);
                if (host && strchr(host, ':') && !strchr(host, ',')) { /* IPv6 */
                        append(buf, size, &n, "[", false);
                        append(buf, size, &n, host, false);
                        append(buf, size, &n, "]", false);
                } else if (host)
                        append(buf, size, &n, host, false);
                if (v[K_PORT] && !socket) {
                        append(buf, size, &n, ":", false);
                        append(buf, size, &n, v[K_PORT], false);
                }
                append(buf, size, &n, "/", false);
                if (v[K_DBNAME])
                        append(buf, size, &n, v[K_DBNAME], false);
                if (socket) {
                        append(buf, size, &n, "?host=", false);
                        append(buf, size, &n, v[K_HOST], false);
                        if (v[K_PORT]) {
                                append(buf, size, &n, "&port=", false);
                                append(buf, size, &n, v[K_PORT], false);
                        }
                }
        } else {
                for (size_t i = 0; i < K_COUNT; i++) {
                        if (!v[i])
                                continue;
                        if (n)
                                append(buf, size, &n, " ", false);
                        append(buf, size, &n, shown_keywords[i], false);
                        append(buf, size, &n, "=", false);
                        append(buf, size, &n, i == K_PASSWORD ? "***" : v[i], i != K_PASSWORD);
                }
                if (!n)
                        append(buf, size, &n, "(libpq's defaults)", false);
        }
        PQconninfoFree(opts);
}

/* libpq's message about a string it cannot parse, first line, without what it quotes: the
 * whole URI, or the token it stopped at (the password's, say); a quoted syntax character
 * ("=", ":", "]") stays */
static void unquote(const char *msg, char *out, size_t size)
{
        size_t n = 0;

        for (const char *p = msg ? msg : ""; *p && *p != '\n' && n + 1 < size; p++) {
                const char *close;

                if (*p != '"') {
                        out[n++] = (unsigned char)*p < ' ' ? '?' : *p;
                        continue;
                }
                close = strchr(p + 1, '"');
                if (close == p + 2 && ispunct((unsigned char)p[1])) {
                        if (n + 4 < size) {
                                memcpy(out + n, p, 3);
                                n += 3;
                        }
                        p = close;
                        continue;
                }
                if (n + 6 < size) {
                        memcpy(out + n, "\"...\"", 5);
                        n += 5;
                }
                if (!close)
                        break;
                p = close;
        }
        out[n] = '\0';
}

/* every copy of secret in text (a message of size bytes) as "***" */
static void scrub(char *text, size_t size, const char *secret)
{
        char out[UTIL_ERROR_TEXT_MAX];
        size_t n = 0, len = secret ? strlen(secret) : 0;
        const char *p = text, *hit;

        if (!len || size > sizeof(out))
                return;
        while ((hit = strstr(p, secret))) {
                n += (size_t)snprintf(out + n, sizeof(out) - n, "%.*s***", (int)(hit - p), p);
                if (n >= sizeof(out))
                        break;
                p = hit + len;
        }
        if (n < sizeof(out))
                snprintf(out + n, sizeof(out) - n, "%s", p);
        snprintf(text, size, "%s", out);
}

static int pg_open(const char *url, void **ret_conn, struct util_error *err)
{
        /* a default connect_timeout the URL may override (later values win) */
        static const char *const keywords[] = {"connect_timeout", "fallback_application_name",
                                               "dbname", NULL};
        const char *const values[] = {"10", "sparkshim", url, NULL};
        const char *v[K_COUNT];
        char *msg = NULL, *password = NULL, why[UTIL_ERROR_TEXT_MAX];
        PQconninfoOption *opts = parse(url, v, &msg);
        PGconn *conn;

        /* libpq's message would quote the string it cannot parse */
        if (!opts) {
                unquote(msg ? msg : "out of memory", why, sizeof(why));
                PQfreemem(msg);
                return util_error_set(err, EINVAL,
                                      "PostgreSQL: not a connection string libpq can parse; "
                                      "allowed: a postgresql:// URI or keyword=value pairs "
                                      "(libpq: %s)",
                                      why);
        }
        if (v[K_PASSWORD])
                password = strdup(v[K_PASSWORD]);
        PQconninfoFree(opts);
        if (v[K_PASSWORD] && !password)
                return util_error_set(err, ENOMEM, "out of memory");
        conn = PQconnectdbParams(keywords, values, 1);
        if (!conn) {
                free(password);
                return util_error_set(err, ENOMEM, "out of memory");
        }
        if (PQstatus(conn) != CONNECTION_OK) {
                /* the message may name the host; it should never hold the password, and
                 * does not even if a libpq to come quoted a value */
                int ret = pg_error(conn, "PostgreSQL", err);

                if (err)
                        scrub(err->text, sizeof(err->text), password);
                free(password);
                PQfinish(conn);
                return ret;
        }
        free(password);
        PQsetNoticeProcessor(conn, no_notices, NULL);
        *ret_conn = conn;
        return 0;
}

static void pg_close(void *conn)
{
        PQfinish(conn);
}

static int pg_exec(void *conn, const char *sql, struct util_error *err)
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
                      struct util_error *err)
{
        struct store_stmt *st = calloc(1, sizeof(*st));
        PGresult *r;
        int rc = 0;

        if (!st)
                return util_error_set(err, ENOMEM, "out of memory");
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

static int pg_step(struct store_stmt *st, struct util_error *err)
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
    /* two first ingests at once must not race to create the tables or add a column; read
       committed whatever the server's default, so that the second one, once it holds the
       lock, sees what the first one made (a snapshot taken by the lock's own SELECT would
       not) */
    .schema_lock_sql = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; "
                       "SELECT pg_advisory_xact_lock(7318413)",
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
