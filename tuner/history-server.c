/* SPDX-License-Identifier: Apache-2.0 */
/* A Spark History Server as a source of event logs (history-server.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <zip.h>

#include "history-server.h"
#include "util.h"

/* ---------------------------------------------------------------- the list */

static bool chars_ok(const char *s, size_t max, const char *extra)
{
        size_t n = 0;

        for (; s[n]; n++) {
                char c = s[n];

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.' || (extra && strchr(extra, c))))
                        return false;
        }
        /* no "." or ".." (a dot segment would name another application's path) */
        return n > 0 && n <= max && s[0] != '.';
}

static bool epoch_of(json_t *o, const char *key, int64_t *ret)
{
        json_t *v = json_object_get(o, key);

        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return false;
        *ret = json_integer_value(v);
        return true;
}

int tuner_hs_parse_list(const char *text, size_t len,
                        int (*each)(void *, const struct tuner_hs_attempt *), void *userdata,
                        struct util_error *err)
{
        json_error_t jerr;
        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr), *app;
        size_t i;
        int r = 0;

        if (!root)
                return util_error_set(err, EINVAL, "not JSON: line %d: %s", jerr.line, jerr.text);
        if (!json_is_array(root)) {
                json_decref(root);
                return util_error_set(err, EINVAL, "not a JSON array of applications");
        }
        json_array_foreach(root, i, app)
        {
                const char *id = json_string_value(json_object_get(app, "id"));
                json_t *attempts = json_object_get(app, "attempts"), *a;
                size_t k;

                if (!id || !chars_ok(id, 127, ":") || !json_is_array(attempts))
                        continue;
                json_array_foreach(attempts, k, a)
                {
                        struct tuner_hs_attempt at = {.app_id = id};
                        json_t *attempt = json_object_get(a, "attemptId");

                        if (!json_is_true(json_object_get(a, "completed")) ||
                            !epoch_of(a, "endTimeEpoch", &at.end_ms) ||
                            !epoch_of(a, "lastUpdatedEpoch", &at.last_updated_ms))
                                continue;
                        if (attempt) {
                                at.attempt_id = json_string_value(attempt);
                                if (!at.attempt_id || !chars_ok(at.attempt_id, 32, NULL))
                                        continue;
                        }
                        at.spark_user = json_string_value(json_object_get(a, "sparkUser"));
                        if ((r = each(userdata, &at)) < 0)
                                goto out;
                }
        }
out:
        json_decref(root);
        return r < 0 ? r : 0;
}

bool tuner_hs_entry_name_ok(const char *name, size_t *ret_dir)
{
        const char *slash = strchr(name, '/');
        char part[256];
        size_t n;

        *ret_dir = 0;
        if (!slash)
                return name[0] != '.' && chars_ok(name, 255, NULL);
        n = (size_t)(slash - name);
        if (n >= sizeof(part) || strncmp(name, "eventlog_v2_", 12) != 0)
                return false;
        memcpy(part, name, n);
        part[n] = '\0';
        if (!chars_ok(part, 255, NULL) || slash[1] == '.' || !chars_ok(slash + 1, 255, NULL))
                return false;
        *ret_dir = n;
        return true;
}

/* ---------------------------------------------------------------- HTTP */

const char *tuner_hs_shown_url(const char *url, char *buf, size_t size)
{
        const char *scheme = strstr(url, "://"), *at, *end;

        if (!scheme) {
                snprintf(buf, size, "%s", url);
                return buf;
        }
        end = strchr(scheme + 3, '/');
        at = memchr(scheme + 3, '@', end ? (size_t)(end - scheme - 3) : strlen(scheme + 3));
        if (at)
                snprintf(buf, size, "%.*s***@%s", (int)(scheme + 3 - url), url, at + 1);
        else
                snprintf(buf, size, "%s", url);
        return buf;
}

struct sink {
        char *buf; /* memory, or NULL: fd */
        int fd;
        size_t len, cap;
        uint64_t written, max;
        bool too_big;
};

static size_t on_data(char *data, size_t one, size_t n, void *userdata)
{
        struct sink *s = userdata;
        size_t bytes = one * n;

        if (s->written + bytes > s->max) {
                s->too_big = true;
                return 0;
        }
        if (s->buf || s->fd < 0) {
                if (s->len + bytes + 1 > s->cap) {
                        size_t cap = s->cap ? s->cap : 65536;
                        char *p;

                        while (cap < s->len + bytes + 1)
                                cap *= 2;
                        if (!(p = realloc(s->buf, cap)))
                                return 0;
                        s->buf = p;
                        s->cap = cap;
                }
                memcpy(s->buf + s->len, data, bytes);
                s->len += bytes;
                s->buf[s->len] = '\0';
        } else {
                for (size_t off = 0; off < bytes;) {
                        ssize_t w = write(s->fd, data + off, bytes - off);

                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return 0;
                        off += (size_t)w;
                }
        }
        s->written += bytes;
        return bytes;
}

static int get(const char *url, struct sink *sink, long timeout_s, struct util_error *err)
{
        CURL *c = curl_easy_init();
        char errbuf[CURL_ERROR_SIZE] = "", where[1200];
        long status = 0;
        CURLcode rc;

        if (!c)
                return util_error_set(err, ENOMEM, "out of memory");
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
        curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)sink->max);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "sparkshim-tune-service");
        rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        tuner_hs_shown_url(url, where, sizeof(where));
        if (sink->too_big || rc == CURLE_FILESIZE_EXCEEDED)
                return util_error_set(err, EFBIG, "%s: longer than %" PRIu64 " bytes", where,
                                      sink->max);
        if (rc != CURLE_OK)
                return util_error_set(err, EIO, "%s: %s", where,
                                      errbuf[0] ? errbuf : curl_easy_strerror(rc));
        if (status != 200)
                return util_error_set(err, EIO, "%s: HTTP status %ld", where, status);
        return 0;
}

int tuner_hs_get(const char *url, size_t max, long timeout_s, char **ret, size_t *ret_len,
                 struct util_error *err)
{
        struct sink s = {.fd = -1, .max = max};
        int r = get(url, &s, timeout_s, err);

        if (r < 0) {
                free(s.buf);
                return r;
        }
        if (!s.buf && !(s.buf = strdup("")))
                return util_error_set(err, ENOMEM, "out of memory");
        *ret = s.buf;
        *ret_len = s.len;
        return 0;
}

/* ---------------------------------------------------------------- the archive */

static int extract(zip_t *z, zip_int64_t i, int dirfd, const char *name, size_t dir_len,
                   uint64_t *total, struct util_error *err)
{
        _cleanup_close_ int fd = -1;
        zip_file_t *f;
        char buf[65536], dir[256];
        zip_int64_t n;
        int r = 0;

        if (dir_len) {
                snprintf(dir, sizeof(dir), "%.*s", (int)dir_len, name);
                if (mkdirat(dirfd, dir, 0700) < 0 && errno != EEXIST)
                        return util_error_set(err, errno, "%s: %s", dir, strerror(errno));
        }
        fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return util_error_set(err, errno, "entry %s: %s", name, strerror(errno));
        f = zip_fopen_index(z, (zip_uint64_t)i, 0);
        if (!f)
                return util_error_set(err, EINVAL, "entry %s: %s", name, zip_strerror(z));
        while ((n = zip_fread(f, buf, sizeof(buf))) > 0) {
                /* what is decompressed counts, not what the archive says it holds */
                *total += (uint64_t)n;
                if (*total > TUNER_HS_EXTRACT_MAX) {
                        r = util_error_set(
                            err, EFBIG, "the logs are longer than %" PRIu64 " bytes once extracted",
                            TUNER_HS_EXTRACT_MAX);
                        break;
                }
                for (zip_int64_t off = 0; off < n;) {
                        ssize_t w = write(fd, buf + off, (size_t)(n - off));

                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0) {
                                r = util_error_set(err, errno, "entry %s: %s", name,
                                                   strerror(errno));
                                goto out;
                        }
                        off += w;
                }
        }
        if (n < 0 && r == 0)
                r = util_error_set(err, EINVAL, "entry %s: %s", name, zip_file_strerror(f));
out:
        zip_fclose(f);
        return r;
}

int tuner_hs_fetch_logs(const char *base, const char *app_id, const char *attempt_id, int dirfd,
                        char *name, size_t size, struct util_error *err)
{
        _cleanup_close_ int fd = memfd_create("sparkshim-hs-logs", MFD_CLOEXEC);
        char url[2048], top[256] = "";
        struct sink s = {.max = TUNER_HS_ARCHIVE_MAX};
        zip_error_t zerr;
        zip_t *z;
        zip_int64_t n;
        uint64_t total = 0;
        int r, zep = 0;

        if (fd < 0)
                return util_error_set(err, errno, "memfd_create: %s", strerror(errno));
        s.fd = fd;
        snprintf(url, sizeof(url), "%s/api/v1/applications/%s%s%s/logs", base, app_id,
                 attempt_id ? "/" : "", attempt_id ? attempt_id : "");
        if ((r = get(url, &s, 600, err)) < 0)
                return r;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return util_error_set(err, errno, "lseek: %s", strerror(errno));
        z = zip_fdopen(fd, ZIP_RDONLY, &zep);
        if (!z) {
                zip_error_init_with_code(&zerr, zep);
                r = util_error_set(err, EINVAL, "%s: not a zip archive: %s", app_id,
                                   zip_error_strerror(&zerr));
                zip_error_fini(&zerr);
                return r;
        }
        fd = -1; /* zip_fdopen() took it */
        n = zip_get_num_entries(z, 0);
        if (n > TUNER_HS_ENTRIES_MAX) {
                zip_discard(z);
                return util_error_set(err, EFBIG, "%s: more than %d files", app_id,
                                      TUNER_HS_ENTRIES_MAX);
        }
        for (zip_int64_t i = 0; i < n && r == 0; i++) {
                const char *entry = zip_get_name(z, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
                size_t dir_len, len = entry ? strlen(entry) : 0;
                char this_top[256];

                /* a rolling log's directory entry ("eventlog_v2_<id>/", before its files, as
                 * Spark's RollingEventLogFilesFileReader zips it): made with its first file */
                if (len > 1 && len < sizeof(this_top) && entry[len - 1] == '/') {
                        snprintf(this_top, sizeof(this_top), "%.*s/x", (int)(len - 1), entry);
                        if (!tuner_hs_entry_name_ok(this_top, &dir_len)) {
                                r = util_error_set(err, EINVAL,
                                                   "%s: an archive entry whose name is not an "
                                                   "event log's",
                                                   app_id);
                                break;
                        }
                        continue;
                }
                if (!entry || !tuner_hs_entry_name_ok(entry, &dir_len)) {
                        r = util_error_set(err, EINVAL,
                                           "%s: an archive entry whose name is not an event "
                                           "log's",
                                           app_id);
                        break;
                }
                snprintf(this_top, sizeof(this_top), "%.*s",
                         (int)(dir_len ? dir_len : strlen(entry)), entry);
                /* one log per attempt: a file, or one rolling directory */
                if (top[0] && (strcmp(top, this_top) != 0 || !dir_len)) {
                        r = util_error_set(err, EINVAL,
                                           "%s: the archive holds more than one "
                                           "event log",
                                           app_id);
                        break;
                }
                snprintf(top, sizeof(top), "%s", this_top);
                r = extract(z, i, dirfd, entry, dir_len, &total, err);
        }
        zip_discard(z);
        if (r == 0 && !top[0])
                r = util_error_set(err, ENOENT, "%s: the archive holds no event log", app_id);
        if (r == 0)
                snprintf(name, size, "%s", top);
        return r;
}
