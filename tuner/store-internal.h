/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history store's backends (store-sqlite.c, store-pg.c) behind one table of operations,
 * as crun puts its cgroup managers behind one: store.c holds every SQL statement, a backend
 * only runs statements, and assemble.c makes a run of the rows store.c reads (no SQL). SQL is
 * written once, in the dialect both accept; parameters are $1, $2, ... (store-sqlite.c turns
 * them into ?1, ?2, ...).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

struct store_stmt; /* a backend's prepared statement */

struct store_ops {
        const char *name;
        int (*open)(const char *db, void **ret_conn, struct util_error *err);
        void (*close)(void *conn);
        /* statements without parameters or rows: the schema, BEGIN, COMMIT, ROLLBACK */
        int (*exec)(void *conn, const char *sql, struct util_error *err);
        const char *begin_sql;       /* SQLite: BEGIN IMMEDIATE (take the write lock now) */
        const char *schema_lock_sql; /* run in the schema's transaction first, or NULL */
        /* prepare sql once; id is unique per distinct sql */
        int (*prepare)(void *conn, unsigned id, const char *sql, struct store_stmt **ret,
                       struct util_error *err);
        void (*finalize)(struct store_stmt *st);
        /* index from 1; text is copied */
        int (*bind_null)(struct store_stmt *st, int i);
        int (*bind_int64)(struct store_stmt *st, int i, int64_t v);
        int (*bind_double)(struct store_stmt *st, int i, double v);
        int (*bind_text)(struct store_stmt *st, int i, const char *v);
        /* 1: a row, 0: done */
        int (*step)(struct store_stmt *st, struct util_error *err);
        /* columns from 0 */
        bool (*column_null)(struct store_stmt *st, int c);
        int64_t (*column_int64)(struct store_stmt *st, int c);
        double (*column_double)(struct store_stmt *st, int c);
        const char *(*column_text)(struct store_stmt *st, int c); /* NULL for NULL */
        /* ready to bind and step again; bindings cleared */
        void (*reset)(struct store_stmt *st);
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;
/* tuner_store_describe() of a PostgreSQL connection string (store-pg.c) */
void store_pg_describe(const char *db, char *buf, size_t size);

/* A run from its event log (if has_eventlog) and its n executor reports (assemble.c). */
void tuner_store_assemble(const struct tuner_app *app, bool has_eventlog,
                          const struct tuner_executor *ex, size_t n, struct tuner_run *run);
