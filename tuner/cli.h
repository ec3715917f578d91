/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commands of sparkshim-tuner, which `sparkshim ingest|tune|report --job` exec
 * (sparkshim-tune(1)). Each takes the command's own argv (argv[0] is the command name) and
 * returns the process's exit status: 0, TUNER_EXIT_PARTIAL when some input was refused and the
 * rest stored, or the shim's reserved codes (SHIM_EXIT_USAGE for a bad flag,
 * SHIM_EXIT_POLICY for the policy, TUNER_EXIT_STORE for the history store).
 */
#pragma once

#include <stdbool.h>

#include "shim-common.h"

enum {
        TUNER_EXIT_PARTIAL = 1,    /* ingest: at least one file refused, the valid ones stored */
        TUNER_EXIT_NO_HISTORY = 2, /* tune / report --job: no run of that job in the store */
        TUNER_EXIT_STORE = 3,      /* the history store cannot be opened, read or written */
        TUNER_EXIT_OWNERS = 4,     /* tune, report --job: the job has runs of several users */
};

/* The default store: a SQLite file. */
#define TUNER_DEFAULT_DB "/var/lib/sparkshim/history.db"

int tuner_cli_ingest(int argc, char **argv);
int tuner_cli_tune(int argc, char **argv);
int tuner_cli_report(int argc, char **argv);
int tuner_cli_service(int argc, char **argv); /* service.c */

/* Load the policy (the built-in defaults when the default path is missing and path was not
 * given); 0, or SHIM_EXIT_POLICY after logging why. */
struct policy;
int tuner_cli_load_policy(const char *path, bool explicit, struct policy *p);

/* As root, a SQLite history only in a directory no one else may write: SQLite creates its
 * -wal and -shm files there by name. 0, or TUNER_EXIT_STORE after logging why. */
int tuner_cli_check_db(const char *db);
/* s as it may go to a terminal or a log: control characters as '?', cut to size (buf is
 * returned). */
const char *tuner_cli_printable(const char *s, char *buf, size_t size);
