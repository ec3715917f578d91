/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark event logs (docs/tuner.md): the JSON lines that Spark's EventLoggingListener writes
 * (spark.eventLog.enabled), read into a struct tuner_app. They are the job's user's files:
 * every line is bounded, every count saturates, nothing in them names a file to open.
 *
 * Forms: a single file, plain or compressed as Spark writes it (the codec from the file
 * name's suffix: .zstd, .lz4, .snappy, .lzf), possibly ".inprogress"; or a rolling event log
 * directory "eventlog_v2_<app id>" whose "events_<n>_<app id>[.<codec>]" files are read in
 * index order. Unknown events and fields are ignored (Spark adds them across versions); a line
 * that is not a JSON object, or a known event with a field of the wrong type, is an error
 * naming the file and the line. The last line of an in-progress log may be cut short by the
 * writer and is then ignored.
 *
 * Not thread-safe; one reader per thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "shim-common.h"
#include "tuner.h"

/* true when path looks like an event log: a rolling directory, or a file whose first line is
 * SparkListenerLogStart (after decompression by its suffix). Never fails; false on errors. */
bool tuner_eventlog_detect(const char *path);

/*
 * Read the event log at path into *ret (zeroed first; free it with tuner_app_free()), with
 * ret->owner_uid the owner of the files read, each taken from the descriptor that was read.
 * 0 on success; -EINVAL for malformed content with err "<file>:<line>: <reason>", -EFBIG
 * past the size bounds, -EPERM for a rolling log whose files are of more than one user,
 * -errno for I/O ("<file>: <strerror>"). On error *ret is unchanged.
 */
int tuner_eventlog_read(const char *path, struct tuner_app *ret, struct util_error *err);

/*
 * The bounds of one `sparkshim ingest` run over all its inputs (docs/tuner-eventlog.md). Each
 * input (a file or a rolling directory) may decompress to TUNER_STREAM_EXPANSION_MAX x the
 * compressed bytes of its files + one slack of TUNER_STREAM_EXPANSION_SLACK, and to at most
 * TUNER_STREAM_TOTAL_MAX bytes; over the run, the inputs share slack_max bytes of slack and
 * total_max decompressed bytes, so that a glob of many small bombs costs no more than a few.
 * Past either an input is refused ("... ingest it in another run"); a backlog larger than
 * total_max takes several runs.
 */
#define TUNER_EVENTLOG_RUN_TOTAL_MAX (UINT64_C(64) << 30)
#define TUNER_EVENTLOG_RUN_SLACK_MAX (UINT64_C(256) << 20)

struct tuner_eventlog_run {
        uint64_t total_max, slack_max; /* 0: the defaults above */
        uint64_t total;                /* decompressed bytes of the inputs read so far */
        uint64_t slack;                /* of their slack, used */
};

/* tuner_eventlog_read() as one input of run (zero it before the first; run is updated also
 * when the input is refused: the bytes were decompressed). */
int tuner_eventlog_read_run(const char *path, struct tuner_eventlog_run *run, struct tuner_app *ret,
                            struct util_error *err);

/* The same, line by line (the fuzz harness and tests use it). */
struct tuner_eventlog;
struct tuner_eventlog *tuner_eventlog_new(void); /* NULL only for ENOMEM */
void tuner_eventlog_free(struct tuner_eventlog *el);
/* One line without its newline (need not be NUL-terminated); 0 or -EINVAL/-ENOMEM, or -EFBIG
 * for an event the reader uses that is longer than 8 MiB or has more than 16384 "Spark
 * Properties" (only those events are parsed into a tree, of the members read alone; every
 * line is validated); err says why (the caller adds file and line). */
int tuner_eventlog_line(struct tuner_eventlog *el, const char *line, size_t len,
                        struct util_error *err);
/* Move what was read into *ret (zeroed first); el is left empty. */
int tuner_eventlog_finish(struct tuner_eventlog *el, struct tuner_app *ret, struct util_error *err);
