/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading one input into the history store, shared by `sparkshim ingest` (cli-ingest.c) and
 * `sparkshim tune-service` (service.c): each file in one transaction, refused whole on a bad
 * line (one error line naming file:line), and with the service's checkpoint of the file in
 * the same transaction, so that a crash never loses nor doubles what was read.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "eventlog.h"
#include "store.h"

#define TUNER_DEFAULT_JOB_KEY "spark.app.name"

struct tuner_ingest {
        struct tuner_store *store;
        uint32_t owner_uid;  /* of the file being read: the run is that user's (0: root's) */
        const char *job;     /* --job */
        const char *job_key; /* --job-key */
        size_t line_max;
        uint64_t input_max;
        /* the event logs' bounds over the whole run (eventlog.h): a glob of many small bombs
         * costs what a few do */
        struct tuner_eventlog_run eventlogs;
        /* the service's: read a report file from this offset, complete lines only, and store
         * the checkpoint (its offset set to what was read) with what was read; no output */
        int64_t from;
        bool complete_lines;
        struct tuner_store_file *checkpoint;
        /* the service's: a line that is not a valid report is skipped (one error line, counted
         * in skipped_lines), not the whole file; line_start is its byte offset */
        bool skip_bad_lines;
        unsigned long skipped_lines;
        int64_t line_start;
        bool quiet;
        /* an event log's run is this user's, whoever owns its files (a History Server's logs,
         * which the service extracted itself) */
        bool override_owner;
        uint32_t override_uid;
        /* each run a file touched, after it is stored (-ENOMEM ends the file) */
        int (*touched)(void *userdata, const char *app_id);
        void *userdata;
};

enum tuner_ingest_outcome { STORED = 0, REFUSED = 1, STORE_FAILED = -1 };

/* Executor reports from fd (path names it in messages), in one transaction. */
enum tuner_ingest_outcome tuner_ingest_reports(struct tuner_ingest *in, const char *path, int fd);
/* An event log file or rolling event log directory, in one transaction. */
enum tuner_ingest_outcome tuner_ingest_eventlog(struct tuner_ingest *in, const char *path);
