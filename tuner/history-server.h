/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Spark History Server as a source of event logs (`sparkshim tune-service`,
 * tuner.service.history_servers): its REST API lists the completed applications
 * (/api/v1/applications?status=completed) and serves each attempt's event log files as a
 * zip (/api/v1/applications/<id>[/<attempt>]/logs), for logs kept on HDFS or an object
 * store that no local directory shows. libcurl for HTTP, libzip for the archive.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim-common.h"

#define TUNER_HS_LIST_MAX    ((size_t)64 << 20)   /* the application list's bytes */
#define TUNER_HS_ARCHIVE_MAX ((uint64_t)2 << 30)  /* one attempt's zip */
#define TUNER_HS_EXTRACT_MAX ((uint64_t)16 << 30) /* its files, extracted */
#define TUNER_HS_ENTRIES_MAX 10000

struct tuner_hs_attempt {
        const char *app_id;     /* the application's "id" */
        const char *attempt_id; /* "attemptId", NULL for none (local, standalone, Kubernetes) */
        const char *spark_user; /* "sparkUser" */
        int64_t end_ms, last_updated_ms;
};

/*
 * Each completed attempt of a /api/v1/applications answer (text, len bytes) to each();
 * the strings live until each() returns. A member of the wrong type, an id that is empty,
 * longer than 127 bytes or not of [A-Za-z0-9_.:-], an attempt id not of [A-Za-z0-9_.-]
 * (at most 32 bytes), skips that application or attempt; each()'s -errno ends the walk.
 * 0, or -EINVAL (not a JSON array of objects; err says why), -ENOMEM.
 */
int tuner_hs_parse_list(const char *text, size_t len,
                        int (*each)(void *, const struct tuner_hs_attempt *), void *userdata,
                        struct util_error *err);

/*
 * Whether an archive entry's name is one to extract: a file name of [A-Za-z0-9_.-] not
 * starting with '.', or eventlog_v2_<such>/<such> (a rolling log's directory and file).
 * *ret_dir is set to the length of the directory part (0 for none).
 */
bool tuner_hs_entry_name_ok(const char *name, size_t *ret_dir);

/* url without its user info ("user:password@") in buf (returned), for messages */
const char *tuner_hs_shown_url(const char *url, char *buf, size_t size);

/*
 * GET url into a new buffer (*ret, NUL-terminated, *ret_len), at most max bytes: no
 * redirect followed, http and https only, 30 s to connect, timeout_s in all. -errno with
 * err naming the URL (without any user info) and the failure.
 */
int tuner_hs_get(const char *url, size_t max, long timeout_s, char **ret, size_t *ret_len,
                 struct util_error *err);

/*
 * Download an attempt's logs (base: the server's URL) and extract the entries
 * tuner_hs_entry_name_ok() takes into the directory dirfd (empty, the caller's private
 * one), within the bounds above. The name of what to ingest (the single file, or the
 * eventlog_v2_ directory) in name (size bytes). 0, or -errno with err.
 */
int tuner_hs_fetch_logs(const char *base, const char *app_id, const char *attempt_id, int dirfd,
                        char *name, size_t size, struct util_error *err);
