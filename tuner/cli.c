/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sparkshim-tuner: the tuner's executable (sparkshim-tune(1)). `sparkshim ingest ARGS`,
 * `sparkshim tune ARGS` and `sparkshim report --job ...` exec it with argv
 * { "sparkshim-tuner", COMMAND, ARGS... }; it may also be run as itself.
 */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "shim-common.h"

static int usage(FILE *f, int status)
{
        fputs("usage: sparkshim ingest [--db DB] [--policy FILE] [--job KEY] FILE...\n"
              "       sparkshim tune --job KEY [--db DB] [--policy FILE] [--format "
              "conf|properties|json]\n"
              "       sparkshim report --job KEY [--db DB] [--json]\n"
              "       sparkshim tune-service [--once [--force]] [--policy FILE] [--db DB]\n"
              "DB is a SQLite file (default " TUNER_DEFAULT_DB ") or a PostgreSQL\n"
              "postgresql:// URI or key=value connection string (its password in ~/.pgpass).\n"
              "See sparkshim-tune(1).\n",
              f);
        return status;
}

int main(int argc, char **argv)
{
        util_log_set_level(UTIL_LOG_WARN);
        /* one recommendation is a few ms on one thread; OpenBLAS's threads only add start-up
         * and scheduling noise (and the seed's result is the same either way) */
        openblas_set_num_threads(1);
        if (argc < 2)
                return usage(stderr, SHIM_EXIT_USAGE);
        const char *command = argv[1];
        if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0)
                return usage(stdout, 0);
        if (strcmp(command, "ingest") == 0)
                return tuner_cli_ingest(argc - 1, argv + 1);
        if (strcmp(command, "tune") == 0)
                return tuner_cli_tune(argc - 1, argv + 1);
        if (strcmp(command, "report") == 0)
                return tuner_cli_report(argc - 1, argv + 1);
        if (strcmp(command, "tune-service") == 0)
                return tuner_cli_service(argc - 1, argv + 1);
        log_error("%s: unknown command; allowed: ingest, tune, report, tune-service", command);
        return SHIM_EXIT_USAGE;
}
