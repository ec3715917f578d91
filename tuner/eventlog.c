/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark event logs into a struct tuner_app (eventlog.h). The events and fields read are those
 * of Spark's JsonProtocol (core/src/main/scala/org/apache/spark/util/JsonProtocol.scala),
 * the same in 3.5 and 4.0 for everything here:
 *   SparkListenerLogStart           "Spark Version"
 *   SparkListenerApplicationStart   "App Name", "App ID", "Timestamp"
 *   SparkListenerApplicationEnd     "Timestamp"
 *   SparkListenerEnvironmentUpdate  "Spark Properties" (an object of strings)
 *   SparkListenerJobStart           (counted)
 *   SparkListenerJobEnd             "Job Result"."Result" ("JobSucceeded" or "JobFailed")
 *   SparkListenerStageSubmitted,
 *   SparkListenerStageCompleted     "Stage Info": "Stage ID", "Stage Attempt ID",
 *                                   "Number of Tasks", "Submission Time", "Completion Time",
 *                                   "Failure Reason"
 *   SparkListenerTaskEnd            "Stage ID", "Stage Attempt ID", "Task End Reason"."Reason"
 *                                   (+ "Class Name" of an ExceptionFailure), "Task Info"
 *                                   ("Launch Time", "Finish Time", "Executor ID"), "Task
 *                                   Metrics" (run/CPU/GC time, spill, "Shuffle Read Metrics",
 *                                   "Shuffle Write Metrics", "Input Metrics"), "Task Executor
 *                                   Metrics" (peaks)
 *   SparkListenerExecutorAdded      "Timestamp", "Executor ID", "Executor Info"."Total Cores"
 *   SparkListenerExecutorRemoved    "Timestamp", "Executor ID", "Removed Reason"
 *   SparkListenerStageExecutorMetrics "Executor ID", "Executor Metrics" (peaks)
 * Everything else is ignored.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "decompress.h"
#include "eventlog.h"
#include "jscan.h"
#include "util.h"

#define STAGES_MAX          100000 /* stage attempts kept; later ones count in the app's totals */
#define EXECUTORS_MAX       100000
#define DURATIONS_PER_STAGE 65536 /* task durations kept per stage for its median (a sample) */
#define DURATIONS_TOTAL     (UINT64_C(16) << 20)
#define ROLLING_FILES_MAX   100000
#define DETECT_LINE_MAX     (UINT64_C(1) << 20)
/* an event the reader builds a tree of (the others are only scanned): Spark's largest, an
 * environment update with a long class path, is well under a megabyte */
#define KNOWN_EVENT_MAX (8 << 20)

struct stage_state {
        struct tuner_stage stage;
        uint32_t *durations_ms; /* successful tasks' durations, up to DURATIONS_PER_STAGE */
        uint32_t n_durations, cap_durations;
        uint64_t seen_durations; /* for the sample's replacement beyond the cap */
};

struct tuner_eventlog {
        struct tuner_app app; /* the scalars; stages and executors are below until finish */
        struct stage_state *stages;
        size_t n_stages, cap_stages;
        struct tuner_app_executor *executors;
        size_t cap_executors;
        uint32_t *stage_index; /* open addressing: index + 1, 0 = empty; a power of two */
        size_t stage_index_cap;
        uint32_t *executor_index;
        size_t executor_index_cap;
        uint64_t durations_kept;
        uint64_t sample_state;
        uint64_t hash_seed;
        bool started;
};

/* ---- saturating arithmetic ---- */

static void add_u64(uint64_t *a, uint64_t b)
{
        *a = b > UINT64_MAX - *a ? UINT64_MAX : *a + b;
}

static void inc_u32(uint32_t *a)
{
        if (*a < UINT32_MAX)
                (*a)++;
}

static void max_u64(uint64_t *a, uint64_t b)
{
        if (*a == TUNER_UNKNOWN || b > *a)
                *a = b;
}

/* ---- JSON fields: 0 present, 1 absent (or null), -EINVAL of the wrong type ---- */

struct ctx {
        const char *event;
        struct util_error *err;
};

static int wrong_type(const struct ctx *c, const char *key, const json_t *v, const char *want)
{
        static const char *const names[] = {
            [JSON_OBJECT] = "an object",   [JSON_ARRAY] = "an array",
            [JSON_STRING] = "a string",    [JSON_INTEGER] = "an integer",
            [JSON_REAL] = "a real number", [JSON_TRUE] = "true",
            [JSON_FALSE] = "false",        [JSON_NULL] = "null",
        };
        return util_error_set(c->err, EINVAL, "%s: \"%s\" is %s; want %s", c->event, key,
                              names[json_typeof(v)], want);
}

static int missing(const struct ctx *c, const char *key, const char *want)
{
        return util_error_set(c->err, EINVAL, "%s: no \"%s\" (%s)", c->event, key, want);
}

static const json_t *get(const json_t *obj, const char *key)
{
        const json_t *v = obj ? json_object_get(obj, key) : NULL;

        return v && !json_is_null(v) ? v : NULL;
}

static int field_int(const struct ctx *c, const json_t *obj, const char *key, int64_t *ret)
{
        const json_t *v = get(obj, key);

        if (!v)
                return 1;
        if (!json_is_integer(v))
                return wrong_type(c, key, v, "an integer");
        *ret = json_integer_value(v);
        return 0;
}

/* A count or a size: absent or negative (Spark's -1 for "not measured") adds nothing. */
static int field_add(const struct ctx *c, const json_t *obj, const char *key, uint64_t *sum)
{
        int64_t v = 0;
        int r = field_int(c, obj, key, &v);

        if (r == 0 && v > 0)
                add_u64(sum, (uint64_t)v);
        return r < 0 ? r : 0;
}

static int field_str(const struct ctx *c, const json_t *obj, const char *key, const char **ret)
{
        const json_t *v = get(obj, key);

        if (!v)
                return 1;
        if (!json_is_string(v))
                return wrong_type(c, key, v, "a string");
        *ret = json_string_value(v);
        return 0;
}

static int field_obj(const struct ctx *c, const json_t *obj, const char *key, const json_t **ret)
{
        const json_t *v = get(obj, key);

        if (!v)
                return 1;
        if (!json_is_object(v))
                return wrong_type(c, key, v, "an object");
        *ret = v;
        return 0;
}

static int require_int(const struct ctx *c, const json_t *obj, const char *key, int64_t *ret)
{
        int r = field_int(c, obj, key, ret);

        return r > 0 ? missing(c, key, "an integer") : r;
}

static int require_str(const struct ctx *c, const json_t *obj, const char *key, const char **ret)
{
        int r = field_str(c, obj, key, ret);

        return r > 0 ? missing(c, key, "a string") : r;
}

static int require_obj(const struct ctx *c, const json_t *obj, const char *key, const json_t **ret)
{
        int r = field_obj(c, obj, key, ret);

        return r > 0 ? missing(c, key, "an object") : r;
}

static int id32(const struct ctx *c, const char *key, int64_t v, int32_t *ret)
{
        if (v < 0 || v > INT32_MAX)
                return util_error_set(c->err, EINVAL, "%s: \"%s\" %" PRId64 "; allowed: 0..%d",
                                      c->event, key, v, INT32_MAX);
        *ret = (int32_t)v;
        return 0;
}

static int copy_id(const struct ctx *c, const char *key, const char *value, char *buf, size_t size)
{
        size_t n = strlen(value);

        if (n == 0 || n >= size)
                return util_error_set(c->err, EINVAL, "%s: \"%s\" of %zu bytes; allowed: 1..%zu",
                                      c->event, key, n, size - 1);
        memcpy(buf, value, n + 1);
        return 0;
}

/* ---- the indexes ---- */

/* FNV-1a from a per-reader random start, so that a log cannot be made of colliding ids */
static uint64_t hash_bytes(uint64_t seed, const void *data, size_t len)
{
        const uint8_t *p = data;
        uint64_t h = UINT64_C(14695981039346656037) ^ seed;

        for (size_t i = 0; i < len; i++)
                h = (h ^ p[i]) * UINT64_C(1099511628211);
        return h;
}

static uint64_t stage_hash(const struct tuner_eventlog *el, int32_t id, int32_t attempt)
{
        int32_t key[2] = {id, attempt};

        return hash_bytes(el->hash_seed, key, sizeof(key));
}

static uint64_t executor_hash(const struct tuner_eventlog *el, const char *id)
{
        return hash_bytes(el->hash_seed, id, strlen(id));
}

/* Insert index i (hash h) into table (cap a power of two, with room). */
static void index_put(uint32_t *table, size_t cap, uint64_t h, size_t i)
{
        size_t slot = h & (cap - 1);

        while (table[slot])
                slot = (slot + 1) & (cap - 1);
        table[slot] = (uint32_t)i + 1;
}

static int index_grow(struct tuner_eventlog *el, bool stages)
{
        size_t n = stages ? el->n_stages : el->app.n_executors;
        size_t *cap = stages ? &el->stage_index_cap : &el->executor_index_cap;
        uint32_t **table = stages ? &el->stage_index : &el->executor_index;
        size_t new_cap = *cap ? *cap : 64;
        uint32_t *t;

        if ((n + 1) * 2 <= *cap)
                return 0;
        while ((n + 1) * 2 > new_cap)
                new_cap *= 2;
        t = calloc(new_cap, sizeof(*t));
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                index_put(t, new_cap,
                          stages ? stage_hash(el, el->stages[i].stage.stage_id,
                                              el->stages[i].stage.attempt)
                                 : executor_hash(el, el->executors[i].executor_id),
                          i);
        free(*table);
        *table = t;
        *cap = new_cap;
        return 0;
}

/* The stage attempt's state, made on first sight; NULL past STAGES_MAX (or -ENOMEM in *r). */
static struct stage_state *stage_get(struct tuner_eventlog *el, int32_t id, int32_t attempt, int *r)
{
        struct stage_state *s;

        *r = 0;
        if (el->stage_index_cap) {
                size_t mask = el->stage_index_cap - 1;

                for (size_t slot = stage_hash(el, id, attempt) & mask; el->stage_index[slot];
                     slot = (slot + 1) & mask) {
                        s = &el->stages[el->stage_index[slot] - 1];
                        if (s->stage.stage_id == id && s->stage.attempt == attempt)
                                return s;
                }
        }
        if (el->n_stages >= STAGES_MAX)
                return NULL;
        if (el->n_stages == el->cap_stages) {
                size_t cap = el->cap_stages ? el->cap_stages * 2 : 16;

                s = realloc(el->stages, cap * sizeof(*s));
                if (!s)
                        goto oom;
                el->stages = s;
                el->cap_stages = cap;
        }
        if (index_grow(el, true) < 0)
                goto oom;
        s = &el->stages[el->n_stages];
        *s = (struct stage_state){
            .stage =
                {
                    .stage_id = id,
                    .attempt = attempt,
                    .task_max_seconds = NAN,
                    .task_median_seconds = NAN,
                },
        };
        index_put(el->stage_index, el->stage_index_cap, stage_hash(el, id, attempt), el->n_stages);
        el->n_stages++;
        return s;
oom:
        *r = -ENOMEM;
        return NULL;
}

static struct tuner_app_executor *executor_find(struct tuner_eventlog *el, const char *id)
{
        size_t mask = el->executor_index_cap - 1;

        if (!el->executor_index_cap)
                return NULL;
        for (size_t slot = executor_hash(el, id) & mask; el->executor_index[slot];
             slot = (slot + 1) & mask) {
                struct tuner_app_executor *e = &el->executors[el->executor_index[slot] - 1];

                if (strcmp(e->executor_id, id) == 0)
                        return e;
        }
        return NULL;
}

/* The executor, made on first sight; NULL past EXECUTORS_MAX (or -ENOMEM in *r). */
static struct tuner_app_executor *executor_get(struct tuner_eventlog *el, const char *id, int *r)
{
        struct tuner_app_executor *e;

        *r = 0;
        e = executor_find(el, id);
        if (e)
                return e;
        if (el->app.n_executors >= EXECUTORS_MAX)
                return NULL;
        if (el->app.n_executors == el->cap_executors) {
                size_t cap = el->cap_executors ? el->cap_executors * 2 : 8;

                e = realloc(el->executors, cap * sizeof(*e));
                if (!e)
                        goto oom;
                el->executors = e;
                el->cap_executors = cap;
        }
        if (index_grow(el, false) < 0)
                goto oom;
        e = &el->executors[el->app.n_executors];
        *e = (struct tuner_app_executor){
            .jvm_heap_peak = TUNER_UNKNOWN,
            .jvm_offheap_peak = TUNER_UNKNOWN,
            .rss_peak = TUNER_UNKNOWN,
        };
        snprintf(e->executor_id, sizeof(e->executor_id), "%s", id);
        index_put(el->executor_index, el->executor_index_cap, executor_hash(el, id),
                  el->app.n_executors);
        el->app.n_executors++;
        return e;
oom:
        *r = -ENOMEM;
        return NULL;
}

static int oom(const struct ctx *c)
{
        return util_error_set(c->err, ENOMEM, "%s: out of memory", c->event);
}

/* ---- events ---- */

static int on_log_start(struct tuner_eventlog *el, const struct ctx *c, const json_t *ev)
{
        const char *v = NULL;
        int r = field_str(c, ev, "Spark Version", &v);

        if (r == 0)
                snprintf(el->app.spark_version, sizeof(el->app.spark_version), "%s", v);
        return r < 0 ? r : 0;
}

static int on_app_start(struct tuner_eventlog *el, const struct ctx *c, const json_t *ev)
{
        const char *name = NULL, *id = NULL;
        int64_t ts = 0;
        int r;

        if ((r = field_str(c, ev, "App Name", &name)) < 0 ||
            (r = field_str(c, ev, "App ID", &id)) < 0 ||
            (r = field_int(c, ev, "Timestamp", &ts)) < 0)
                return r;
        if (id && (r = copy_id(c, "App ID", id, el->app.app_id, sizeof(el->app.app_id))) < 0)
                return r;
        if (name) /* a display name: cut to fit */
                snprintf(el->app.app_name, sizeof(el->app.app_name), "%s", name);
        el->app.start_ms = ts;
        el->started = true;
        return 0;
}

static int on_app_end(struct tuner_eventlog *el, const struct ctx *c, const json_t *ev)
{
        int64_t ts = 0;
        int r = field_int(c, ev, "Timestamp", &ts);

        if (r < 0)
                return r;
        el->app.ended = true;
        el->app.end_ms = ts;
        return 0;
}

static int on_environment(struct tuner_eventlog *el, const struct ctx *c, const json_t *ev)
{
        const json_t *props = get(ev, "Spark Properties");
        _cleanup_(json_decrefp) json_t *obj = NULL;
        char *text;

        if (!props)
                return 0;
        if (json_is_object(props)) {
                const char *k;
                const json_t *v = NULL;

                json_object_foreach(
                    (json_t *)props, k,
                    v) if (!json_is_string(v)) return util_error_set(c->err, EINVAL,
                                                                     "%s: \"Spark "
                                                                     "Properties\".\"%s\" is not a "
                                                                     "string",
                                                                     c->event, k);
                obj = json_incref((json_t *)props);
        } else if (json_is_array(props)) { /* [[key, value], ...] */
                size_t i;
                const json_t *pair;

                obj = json_object();
                if (!obj)
                        return oom(c);
                json_array_foreach(props, i, pair)
                {
                        const json_t *k = json_array_get(pair, 0), *v = json_array_get(pair, 1);

                        if (!json_is_array(pair) || json_array_size(pair) != 2 ||
                            !json_is_string(k) || !json_is_string(v))
                                return util_error_set(c->err, EINVAL,
                                                      "%s: \"Spark Properties\"[%zu] is not a "
                                                      "[key, value] pair of strings",
                                                      c->event, i);
                        if (json_object_set(obj, json_string_value(k), (json_t *)v) < 0)
                                return oom(c);
                }
        } else {
                return wrong_type(c, "Spark Properties", props, "an object");
        }
        text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
                return oom(c);
        free(el->app.conf_json);
        el->app.conf_json = text;
        return 0;
}

static int on_job_end(struct tuner_eventlog *el, const struct ctx *c, const json_t *ev)
{
        const json_t *result = NULL;
        const char *s = NULL;
        int r = field_obj(c, ev, "Job Result", &result);

        if (r < 0)
                return r;
        if (r == 0 && (r = field_str(c, result, "Result", &s)) < 0)
                return r;
        if (s && strcmp(s, "JobSucceeded") != 0)
                inc_u32(&el->app.failed_jobs);
        return 0;
}

static int on_stage(struct tuner_eventlog *el, const struct ctx *c, const json_t *ev,
                    bool completed)
{
        const json_t *info = NULL;
        int64_t id = 0, attempt = 0, tasks = 0, ts = 0;
        int32_t id32v = 0, attempt32 = 0;
        struct stage_state *s;
        int r;

        if ((r = require_obj(c, ev, "Stage Info", &info)) < 0 ||
            (r = require_int(c, info, "Stage ID", &id)) < 0 ||
            (r = field_int(c, info, "Stage Attempt ID", &attempt)) < 0 ||
            (r = id32(c, "Stage ID", id, &id32v)) < 0 ||
            (r = id32(c, "Stage Attempt ID", attempt, &attempt32)) < 0)
                return r;
        s = stage_get(el, id32v, attempt32, &r);
        if (r < 0)
                return oom(c);
        if (!s)
                return 0;
        r = field_int(c, info, "Number of Tasks", &tasks);
        if (r < 0)
                return r;
        if (r == 0)
                s->stage.tasks = tasks < 0 ? 0 : tasks > UINT32_MAX ? UINT32_MAX : (uint32_t)tasks;
        r = field_int(c, info, "Submission Time", &ts);
        if (r < 0)
                return r;
        if (r == 0)
                s->stage.submit_ms = ts;
        if (!completed)
                return 0;
        r = field_int(c, info, "Completion Time", &ts);
        if (r < 0)
                return r;
        if (r == 0)
                s->stage.complete_ms = ts;
        {
                const char *reason = NULL;

                r = field_str(c, info, "Failure Reason", &reason);
                if (r < 0)
                        return r;
                s->stage.failed = r == 0;
        }
        return 0;
}

/* Peaks from an ExecutorMetrics object ("Task Executor Metrics", "Executor Metrics"). */
static int executor_peaks(struct tuner_eventlog *el, const struct ctx *c, const char *id,
                          const json_t *m)
{
        uint64_t heap = 0, offheap = 0, rss = 0;
        struct tuner_app_executor *e;
        int r;

        if ((r = field_add(c, m, "JVMHeapMemory", &heap)) < 0 ||
            (r = field_add(c, m, "JVMOffHeapMemory", &offheap)) < 0 ||
            (r = field_add(c, m, "ProcessTreeJVMRSSMemory", &rss)) < 0 ||
            (r = field_add(c, m, "ProcessTreePythonRSSMemory", &rss)) < 0 ||
            (r = field_add(c, m, "ProcessTreeOtherRSSMemory", &rss)) < 0)
                return r;
        if (heap == 0 && offheap == 0 && rss == 0) /* nothing measured (yet) */
                return 0;
        /* only executors that were added: the driver of a cluster-mode application reports
         * its metrics too ("driver"), but it is no executor (in local mode it is, and added) */
        e = executor_find(el, id);
        if (!e)
                return 0;
        /* a 0 is "not polled": no JVM runs without heap, no process without RSS */
        if (heap)
                max_u64(&e->jvm_heap_peak, heap);
        if (offheap)
                max_u64(&e->jvm_offheap_peak, offheap);
        if (rss)
                max_u64(&e->rss_peak, rss);
        return 0;
}

static bool oom_class(const char *name)
{
        size_t n = strlen(name), k = strlen("OutOfMemoryError");

        /* java.lang.OutOfMemoryError, and Spark's own SparkOutOfMemoryError */
        return n >= k && strcmp(name + n - k, "OutOfMemoryError") == 0;
}

static void keep_duration(struct tuner_eventlog *el, struct stage_state *s, uint64_t ms)
{
        uint32_t v = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;

        s->seen_durations++;
        if (s->n_durations < DURATIONS_PER_STAGE && el->durations_kept < DURATIONS_TOTAL) {
                if (s->n_durations == s->cap_durations) {
                        uint32_t cap = s->cap_durations ? s->cap_durations * 2 : 16;
                        uint32_t *p = realloc(s->durations_ms, cap * sizeof(*p));

                        if (!p)
                                return; /* the median is a sample: it does without */
                        s->durations_ms = p;
                        s->cap_durations = cap;
                }
                s->durations_ms[s->n_durations++] = v;
                el->durations_kept++;
                return;
        }
        if (s->n_durations == 0)
                return;
        /* reservoir sampling with a fixed stream: the same log, the same median */
        el->sample_state =
            el->sample_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        {
                uint64_t j = (el->sample_state >> 11) % s->seen_durations;

                if (j < s->n_durations)
                        s->durations_ms[j] = v;
        }
}

enum task_outcome { TASK_OK, TASK_FAILED, TASK_KILLED, TASK_IGNORED };

/* Spark's task end reason as an outcome; TASK_IGNORED: Resubmitted, counted when it ended. */
static enum task_outcome outcome_of(const char *reason)
{
        if (strcmp(reason, "Success") == 0)
                return TASK_OK;
        if (strcmp(reason, "Resubmitted") == 0)
                /* a successful map task whose output was lost: already counted when it ended */
                return TASK_IGNORED;
        if (strcmp(reason, "TaskKilled") == 0 || strcmp(reason, "TaskCommitDenied") == 0)
                return TASK_KILLED; /* Spark counts neither toward the task's failures */
        /* ExceptionFailure, ExecutorLostFailure, FetchFailed, TaskResultLost, UnknownReason,
         * and whatever a later Spark adds */
        return TASK_FAILED;
}

static int count_outcome(struct tuner_eventlog *el, const struct ctx *c, struct tuner_stage *st,
                         enum task_outcome outcome, const char *reason, const json_t *reason_obj)
{
        const char *cls;
        int r;

        inc_u32(&el->app.tasks);
        if (outcome == TASK_KILLED)
                inc_u32(&el->app.killed_tasks);
        if (outcome != TASK_FAILED)
                return 0;
        inc_u32(&el->app.failed_tasks);
        inc_u32(&st->failed_tasks);
        if (strcmp(reason, "ExceptionFailure") == 0) {
                r = field_str(c, reason_obj, "Class Name", &cls);
                if (r < 0)
                        return r;
                if (r == 0 && oom_class(cls))
                        inc_u32(&el->app.oom_task_failures);
        } else if (strcmp(reason, "ExecutorLostFailure") == 0) {
                inc_u32(&el->app.lost_task_failures);
        }
        return 0;
}

/* The task's Task Metrics into its stage: times, spills, shuffle and input bytes. */
static int add_task_metrics(struct tuner_eventlog *el, const struct ctx *c, struct tuner_stage *st,
                            const json_t *metrics)
{
        uint64_t run = 0, cpu = 0, gc = 0;
        const json_t *sub;
        int r;

        if ((r = field_add(c, metrics, "Executor Run Time", &run)) < 0 ||
            (r = field_add(c, metrics, "Executor CPU Time", &cpu)) < 0 ||
            (r = field_add(c, metrics, "JVM GC Time", &gc)) < 0 ||
            (r = field_add(c, metrics, "Memory Bytes Spilled", &st->memory_spill_bytes)) < 0 ||
            (r = field_add(c, metrics, "Disk Bytes Spilled", &st->disk_spill_bytes)) < 0)
                return r;
        st->run_seconds += (double)run / 1e3;
        st->cpu_seconds += (double)cpu / 1e9;
        st->gc_seconds += (double)gc / 1e3;
        el->app.gc_seconds += (double)gc / 1e3;
        r = field_obj(c, metrics, "Shuffle Read Metrics", &sub);
        if (r < 0 ||
            (r == 0 && ((r = field_add(c, sub, "Remote Bytes Read", &st->shuffle_read_bytes)) < 0 ||
                        (r = field_add(c, sub, "Local Bytes Read", &st->shuffle_read_bytes)) < 0)))
                return r;
        r = field_obj(c, metrics, "Shuffle Write Metrics", &sub);
        if (r < 0 || (r == 0 && (r = field_add(c, sub, "Shuffle Bytes Written",
                                               &st->shuffle_write_bytes)) < 0))
                return r;
        r = field_obj(c, metrics, "Input Metrics", &sub);
        if (r < 0 || (r == 0 && (r = field_add(c, sub, "Bytes Read", &st->input_bytes)) < 0))
                return r;
        return 0;
}

static int on_task_end(struct tuner_eventlog *el, const struct ctx *c, const json_t *ev)
{
        const json_t *reason_obj = NULL, *info = NULL, *metrics = NULL, *peaks = NULL;
        const char *reason = NULL, *executor = NULL;
        int64_t id = 0, attempt = 0, launch = 0, finish = 0;
        int32_t id32v = 0, attempt32 = 0;
        enum task_outcome outcome;
        struct stage_state *s;
        struct tuner_stage scratch = {0}, *st;
        int r;

        if ((r = require_int(c, ev, "Stage ID", &id)) < 0 ||
            (r = field_int(c, ev, "Stage Attempt ID", &attempt)) < 0 ||
            (r = id32(c, "Stage ID", id, &id32v)) < 0 ||
            (r = id32(c, "Stage Attempt ID", attempt, &attempt32)) < 0 ||
            (r = require_obj(c, ev, "Task End Reason", &reason_obj)) < 0 ||
            (r = require_str(c, reason_obj, "Reason", &reason)) < 0 ||
            (r = field_obj(c, ev, "Task Info", &info)) < 0 ||
            (r = field_obj(c, ev, "Task Metrics", &metrics)) < 0 ||
            (r = field_obj(c, ev, "Task Executor Metrics", &peaks)) < 0)
                return r;
        if (info && ((r = field_int(c, info, "Launch Time", &launch)) < 0 ||
                     (r = field_int(c, info, "Finish Time", &finish)) < 0 ||
                     (r = field_str(c, info, "Executor ID", &executor)) < 0))
                return r;
        outcome = outcome_of(reason);
        if (outcome == TASK_IGNORED)
                return 0;

        s = stage_get(el, id32v, attempt32, &r);
        if (r < 0)
                return oom(c);
        st = s ? &s->stage : &scratch;
        if ((r = count_outcome(el, c, st, outcome, reason, reason_obj)) < 0)
                return r;
        if (metrics && (r = add_task_metrics(el, c, st, metrics)) < 0)
                return r;
        if (s && outcome == TASK_OK && launch > 0 && finish >= launch) {
                double seconds = (double)(finish - launch) / 1e3;

                if (isnan(st->task_max_seconds) || seconds > st->task_max_seconds)
                        st->task_max_seconds = seconds;
                keep_duration(el, s, (uint64_t)(finish - launch));
        }
        if (peaks && executor) {
                char id_buf[TUNER_EXEC_ID_MAX];

                if ((r = copy_id(c, "Executor ID", executor, id_buf, sizeof(id_buf))) < 0)
                        return r;
                return executor_peaks(el, c, id_buf, peaks);
        }
        return 0;
}

static int on_executor_added(struct tuner_eventlog *el, const struct ctx *c, const json_t *ev)
{
        const char *id = NULL;
        const json_t *info = NULL;
        char id_buf[TUNER_EXEC_ID_MAX];
        int64_t ts = 0, cores = 0;
        struct tuner_app_executor *e;
        int r;

        if ((r = require_str(c, ev, "Executor ID", &id)) < 0 ||
            (r = copy_id(c, "Executor ID", id, id_buf, sizeof(id_buf))) < 0 ||
            (r = field_int(c, ev, "Timestamp", &ts)) < 0 ||
            (r = field_obj(c, ev, "Executor Info", &info)) < 0 ||
            (info && (r = field_int(c, info, "Total Cores", &cores)) < 0))
                return r;
        e = executor_get(el, id_buf, &r);
        if (r < 0)
                return oom(c);
        if (!e)
                return 0;
        e->added_ms = ts;
        e->cores = cores < 0 ? 0 : cores > UINT32_MAX ? UINT32_MAX : (uint32_t)cores;
        return 0;
}

/*
 * Removals that are not a loss: dynamic allocation's release of an idle executor (the
 * driver's kill request: ExecutorKilled, "Executor killed by driver.") and a graceful
 * decommission ("Executor decommission." / "Executor decommission: ...").
 */
static bool removal_is_release(const char *reason)
{
        return strstr(reason, "killed by driver") ||
               strncmp(reason, "Executor decommission", 21) == 0;
}

static int on_executor_removed(struct tuner_eventlog *el, const struct ctx *c, const json_t *ev)
{
        const char *id = NULL, *reason = "";
        char id_buf[TUNER_EXEC_ID_MAX];
        int64_t ts = 0;
        struct tuner_app_executor *e;
        int r;

        if ((r = require_str(c, ev, "Executor ID", &id)) < 0 ||
            (r = copy_id(c, "Executor ID", id, id_buf, sizeof(id_buf))) < 0 ||
            (r = field_int(c, ev, "Timestamp", &ts)) < 0 ||
            (r = field_str(c, ev, "Removed Reason", &reason)) < 0)
                return r;
        e = executor_get(el, id_buf, &r);
        if (r < 0)
                return oom(c);
        if (!e)
                return 0;
        snprintf(e->removed_reason, sizeof(e->removed_reason), "%s", reason);
        if (el->app.ended) /* ended by the application's end: not a removal before it */
                return 0;
        e->removed_ms = ts;
        e->lost = !removal_is_release(reason);
        return 0;
}

static int on_stage_executor_metrics(struct tuner_eventlog *el, const struct ctx *c,
                                     const json_t *ev)
{
        const char *id = NULL;
        const json_t *m = NULL;
        char id_buf[TUNER_EXEC_ID_MAX];
        int r;

        if ((r = require_str(c, ev, "Executor ID", &id)) < 0 ||
            (r = copy_id(c, "Executor ID", id, id_buf, sizeof(id_buf))) < 0 ||
            (r = require_obj(c, ev, "Executor Metrics", &m)) < 0)
                return r;
        return executor_peaks(el, c, id_buf, m);
}

/* the "Event" member of a line, found by the scanner without building anything */
struct event_name {
        char name[64];
        bool seen, other; /* other: not a short string */
};

static int on_event_name(void *userdata, const char *path, size_t path_len,
                         const struct util_jscan_value *v)
{
        struct event_name *e = userdata;

        if (path_len != 5 || memcmp(path, "Event", 5) != 0)
                return 0;
        e->seen = true;
        e->other = v->type != UTIL_JSCAN_STRING;
        /* a longer name (a package-qualified SQL event, say) is no event of ours */
        if (!e->other && util_jscan_string(v, e->name, sizeof(e->name)) < 0)
                e->name[0] = '\0';
        return 0;
}

/* ---- the members read: jansson builds a tree of these alone ----
 *
 * A tree costs jansson about 80 bytes per byte of JSON ({} is an object with its hash table),
 * so an event of 8 MiB whose "Accumulables" were {},{},... took 650 MB. The line (validated
 * by the scanner) is first copied without every member no handler reads: what is left is
 * the members of the table below, each a scalar as it was, or an object of its own members
 * read; a container where a scalar is read (or an array where an object is) becomes an empty
 * one of its kind, so the handlers' type errors stay the same. Duplicate members stay, in
 * order (jansson keeps the last, as before). The copy is never longer than the line; the
 * tree of it holds a bounded number of values beyond "Spark Properties", whose entries are
 * bounded by PROPERTIES_MAX. Every member an on_*() reads must be in this table. */

enum keep_kind { KEEP_SCALAR, KEEP_OBJECT, KEEP_PROPERTIES };

struct keep {
        const char *name;
        enum keep_kind kind;
        const struct keep *members; /* KEEP_OBJECT: the members read, up to a NULL name */
};

/* "Spark Properties" of an environment update: Spark's has a few hundred */
#define PROPERTIES_MAX 16384

static const struct keep keep_peaks[] = {
    {"JVMHeapMemory", KEEP_SCALAR, NULL},
    {"JVMOffHeapMemory", KEEP_SCALAR, NULL},
    {"ProcessTreeJVMRSSMemory", KEEP_SCALAR, NULL},
    {"ProcessTreePythonRSSMemory", KEEP_SCALAR, NULL},
    {"ProcessTreeOtherRSSMemory", KEEP_SCALAR, NULL},
    {NULL, KEEP_SCALAR, NULL},
};
static const struct keep keep_job_result[] = {
    {"Result", KEEP_SCALAR, NULL},
    {NULL, KEEP_SCALAR, NULL},
};
static const struct keep keep_stage_info[] = {
    {"Stage ID", KEEP_SCALAR, NULL},
    {"Stage Attempt ID", KEEP_SCALAR, NULL},
    {"Number of Tasks", KEEP_SCALAR, NULL},
    {"Submission Time", KEEP_SCALAR, NULL},
    {"Completion Time", KEEP_SCALAR, NULL},
    {"Failure Reason", KEEP_SCALAR, NULL},
    {NULL, KEEP_SCALAR, NULL},
};
static const struct keep keep_task_end_reason[] = {
    {"Reason", KEEP_SCALAR, NULL},
    {"Class Name", KEEP_SCALAR, NULL},
    {NULL, KEEP_SCALAR, NULL},
};
static const struct keep keep_task_info[] = {
    {"Launch Time", KEEP_SCALAR, NULL},
    {"Finish Time", KEEP_SCALAR, NULL},
    {"Executor ID", KEEP_SCALAR, NULL},
    {NULL, KEEP_SCALAR, NULL},
};
static const struct keep keep_shuffle_read[] = {
    {"Remote Bytes Read", KEEP_SCALAR, NULL},
    {"Local Bytes Read", KEEP_SCALAR, NULL},
    {NULL, KEEP_SCALAR, NULL},
};
static const struct keep keep_shuffle_write[] = {
    {"Shuffle Bytes Written", KEEP_SCALAR, NULL},
    {NULL, KEEP_SCALAR, NULL},
};
static const struct keep keep_input[] = {
    {"Bytes Read", KEEP_SCALAR, NULL},
    {NULL, KEEP_SCALAR, NULL},
};
static const struct keep keep_task_metrics[] = {
    {"Executor Run Time", KEEP_SCALAR, NULL},
    {"Executor CPU Time", KEEP_SCALAR, NULL},
    {"JVM GC Time", KEEP_SCALAR, NULL},
    {"Memory Bytes Spilled", KEEP_SCALAR, NULL},
    {"Disk Bytes Spilled", KEEP_SCALAR, NULL},
    {"Shuffle Read Metrics", KEEP_OBJECT, keep_shuffle_read},
    {"Shuffle Write Metrics", KEEP_OBJECT, keep_shuffle_write},
    {"Input Metrics", KEEP_OBJECT, keep_input},
    {NULL, KEEP_SCALAR, NULL},
};
static const struct keep keep_executor_info[] = {
    {"Total Cores", KEEP_SCALAR, NULL},
    {NULL, KEEP_SCALAR, NULL},
};
/* the members of every event read (a handler looks only at its own) */
static const struct keep keep_event[] = {
    {"Event", KEEP_SCALAR, NULL},
    {"Spark Version", KEEP_SCALAR, NULL},
    {"App Name", KEEP_SCALAR, NULL},
    {"App ID", KEEP_SCALAR, NULL},
    {"Timestamp", KEEP_SCALAR, NULL},
    {"Spark Properties", KEEP_PROPERTIES, NULL},
    {"Job Result", KEEP_OBJECT, keep_job_result},
    {"Stage Info", KEEP_OBJECT, keep_stage_info},
    {"Stage ID", KEEP_SCALAR, NULL},
    {"Stage Attempt ID", KEEP_SCALAR, NULL},
    {"Task End Reason", KEEP_OBJECT, keep_task_end_reason},
    {"Task Info", KEEP_OBJECT, keep_task_info},
    {"Task Metrics", KEEP_OBJECT, keep_task_metrics},
    {"Task Executor Metrics", KEEP_OBJECT, keep_peaks},
    {"Executor ID", KEEP_SCALAR, NULL},
    {"Executor Info", KEEP_OBJECT, keep_executor_info},
    {"Removed Reason", KEEP_SCALAR, NULL},
    {"Executor Metrics", KEEP_OBJECT, keep_peaks},
    {NULL, KEEP_SCALAR, NULL},
};

/* The copy of a line the scanner validated; every step still checks the ends (-EINVAL). */
struct pruner {
        const char *p, *end;
        char *out;
        size_t n, cap;
        size_t properties; /* entries of "Spark Properties" copied */
};

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_space(struct pruner *pr)
{
        while (pr->p < pr->end && is_space(*pr->p))
                pr->p++;
}

static int emit(struct pruner *pr, const char *s, size_t len)
{
        if (len > pr->cap - pr->n)
                return -EINVAL;
        memcpy(pr->out + pr->n, s, len);
        pr->n += len;
        return 0;
}

/* past the string token at p (its quote) */
static const char *string_end(const char *p, const char *end)
{
        for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                        p++;
        return p < end ? p + 1 : end;
}

/* past the number or literal at p */
static const char *token_end(const char *p, const char *end)
{
        while (p < end && !is_space(*p) && *p != ',' && *p != '}' && *p != ']' && *p != ':')
                p++;
        return p;
}

/* past one value, nested to any depth (no recursion) */
static int skip_value(struct pruner *pr)
{
        size_t depth = 0;

        skip_space(pr);
        do {
                if (pr->p >= pr->end)
                        return -EINVAL;
                switch (*pr->p) {
                case '"':
                        pr->p = string_end(pr->p, pr->end);
                        break;
                case '{':
                case '[':
                        depth++;
                        pr->p++;
                        break;
                case '}':
                case ']':
                        if (depth == 0)
                                return -EINVAL;
                        depth--;
                        pr->p++;
                        break;
                case ',':
                case ':':
                case ' ':
                case '\t':
                case '\n':
                case '\r':
                        pr->p++;
                        break;
                default:
                        pr->p = token_end(pr->p, pr->end);
                        break;
                }
        } while (depth > 0);
        return 0;
}

/* a value whose contents are not read: a scalar as it is, a container as an empty one */
static int copy_shallow(struct pruner *pr)
{
        const char *start;
        int r;

        skip_space(pr);
        if (pr->p >= pr->end)
                return -EINVAL;
        start = pr->p;
        r = skip_value(pr);
        if (r < 0)
                return r;
        if (*start == '{' || *start == '[')
                return emit(pr, *start == '{' ? "{}" : "[]", 2);
        return emit(pr, start, (size_t)(pr->p - start));
}

/* the member of k named by the raw key (escapes undone, as jansson reads it), or NULL */
static const struct keep *keep_find(const struct keep *k, const char *raw, size_t len)
{
        char name[64];

        if (memchr(raw, '\\', len)) {
                const struct util_jscan_value v = {UTIL_JSCAN_STRING, raw, len};

                if (util_jscan_string(&v, name, sizeof(name)) < 0)
                        return NULL;
        } else {
                if (len >= sizeof(name))
                        return NULL;
                memcpy(name, raw, len);
                name[len] = '\0';
        }
        for (; k->name; k++)
                if (strcmp(k->name, name) == 0)
                        return k;
        return NULL;
}

/* at a '{' or '[': the next element (1, with pr->p at it), or its end (0, past it) */
static int next_element(struct pruner *pr, char close)
{
        for (;;) {
                skip_space(pr);
                if (pr->p >= pr->end)
                        return -EINVAL;
                if (*pr->p == close) {
                        pr->p++;
                        return 0;
                }
                if (*pr->p != ',')
                        return 1;
                pr->p++;
        }
}

/* "Spark Properties": an object of strings or an array of [key, value] pairs, each value
 * shallow (a third element of a pair only says it is no pair) */
static int copy_properties(struct pruner *pr)
{
        bool object = *pr->p == '{';
        char close = object ? '}' : ']';
        size_t i = 0;
        int r;

        pr->p++;
        if ((r = emit(pr, object ? "{" : "[", 1)) < 0)
                return r;
        while ((r = next_element(pr, close)) > 0) {
                if (++pr->properties > PROPERTIES_MAX)
                        return -EFBIG;
                if (i++ && (r = emit(pr, ",", 1)) < 0)
                        return r;
                if (object) {
                        const char *key = pr->p;

                        if (*key != '"')
                                return -EINVAL;
                        pr->p = string_end(pr->p, pr->end);
                        skip_space(pr);
                        if (pr->p >= pr->end || *pr->p != ':')
                                return -EINVAL;
                        pr->p++;
                        if ((r = emit(pr, key, (size_t)(pr->p - key - 1))) < 0 ||
                            (r = emit(pr, ":", 1)) < 0 || (r = copy_shallow(pr)) < 0)
                                return r;
                } else if (*pr->p == '[') {
                        size_t elements = 0;

                        pr->p++;
                        if ((r = emit(pr, "[", 1)) < 0)
                                return r;
                        while ((r = next_element(pr, ']')) > 0) {
                                if (elements++ >= 3)
                                        r = skip_value(pr);
                                else if (elements > 1 && (r = emit(pr, ",", 1)) < 0)
                                        return r;
                                else
                                        r = copy_shallow(pr);
                                if (r < 0)
                                        return r;
                        }
                        if (r < 0 || (r = emit(pr, "]", 1)) < 0)
                                return r;
                } else if ((r = copy_shallow(pr)) < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return emit(pr, object ? "}" : "]", 1);
}

/* at a '{': the object with only the members of k, nested as k is (at most 3 deep) */
static int copy_object(struct pruner *pr, const struct keep *k)
{
        size_t kept = 0;
        int r;

        pr->p++;
        if ((r = emit(pr, "{", 1)) < 0)
                return r;
        while ((r = next_element(pr, '}')) > 0) {
                const char *key = pr->p, *key_end;
                const struct keep *m;

                if (*key != '"')
                        return -EINVAL;
                key_end = string_end(pr->p, pr->end);
                pr->p = key_end;
                skip_space(pr);
                if (pr->p >= pr->end || *pr->p != ':' || key_end - key < 2)
                        return -EINVAL;
                pr->p++;
                m = keep_find(k, key + 1, (size_t)(key_end - key - 2));
                if (!m) {
                        if ((r = skip_value(pr)) < 0)
                                return r;
                        continue;
                }
                if ((kept++ && (r = emit(pr, ",", 1)) < 0) ||
                    (r = emit(pr, key, (size_t)(key_end - key))) < 0 || (r = emit(pr, ":", 1)) < 0)
                        return r;
                skip_space(pr);
                if (pr->p >= pr->end)
                        return -EINVAL;
                if (m->kind == KEEP_OBJECT && *pr->p == '{')
                        r = copy_object(pr, m->members);
                else if (m->kind == KEEP_PROPERTIES && (*pr->p == '{' || *pr->p == '['))
                        r = copy_properties(pr);
                else
                        r = copy_shallow(pr);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return emit(pr, "}", 1);
}

/* The members read of an event (line[0] is its '{'), malloc'd in *ret (never longer than
 * the line): 0, -EFBIG past PROPERTIES_MAX, -ENOMEM, or -EINVAL (not JSON after all). */
static int prune(const char *line, size_t len, char **ret, size_t *ret_len)
{
        struct pruner pr = {.p = line, .end = line + len, .cap = len};
        int r;

        pr.out = malloc(len);
        if (!pr.out)
                return -ENOMEM;
        r = copy_object(&pr, keep_event);
        if (r < 0) {
                free(pr.out);
                return r;
        }
        *ret = pr.out;
        *ret_len = pr.n;
        return 0;
}

static bool known_event(const char *name)
{
        static const char *const known[] = {
            "SparkListenerTaskEnd",
            "SparkListenerLogStart",
            "SparkListenerApplicationStart",
            "SparkListenerApplicationEnd",
            "SparkListenerEnvironmentUpdate",
            "SparkListenerJobStart",
            "SparkListenerJobEnd",
            "SparkListenerStageSubmitted",
            "SparkListenerStageCompleted",
            "SparkListenerExecutorAdded",
            "SparkListenerExecutorRemoved",
            "SparkListenerStageExecutorMetrics",
        };

        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                if (strcmp(name, known[i]) == 0)
                        return true;
        return false;
}

int tuner_eventlog_line(struct tuner_eventlog *el, const char *line, size_t len,
                        struct util_error *err)
{
        _cleanup_(json_decrefp) json_t *ev = NULL;
        _cleanup_free_ char *read = NULL;
        size_t read_len = 0;
        json_error_t jerr;
        struct ctx c = {.event = "event", .err = err};
        const json_t *name;
        struct event_name en = {0};
        const struct util_jscan_visitor visitor = {on_event_name, NULL, &en};
        const char *what = NULL;
        size_t offset = 0;
        int r;

        /* the scanner first: every line is checked, but a tree (about 80 bytes a byte in
         * jansson) is built only for the events read, only for events of a bounded size, and
         * only of the members read (prune()); the others (SQL plans of megabytes among them)
         * cost nothing more */
        r = util_jscan(line, len, &visitor, &offset, &what);
        if (r == -EINVAL)
                return util_error_set(err, EINVAL, "not JSON: %s (column %zu)", what ? what : "",
                                      offset + 1);
        if (r < 0)
                return util_error_set(err, -r, "%s", strerror(-r));
        if (len == 0 || line[0] != '{')
                return util_error_set(err, EINVAL, "not a JSON object");
        if (!en.seen || en.other)
                return util_error_set(err, EINVAL, "no \"Event\" string");
        if (!known_event(en.name))
                return 0; /* unknown events: Spark adds them across versions */
        if (len > KNOWN_EVENT_MAX)
                return util_error_set(err, EFBIG,
                                      "a %s event of %zu bytes; allowed: up to %d bytes", en.name,
                                      len, KNOWN_EVENT_MAX);

        r = prune(line, len, &read, &read_len);
        if (r == -EFBIG)
                return util_error_set(err, EFBIG,
                                      "%s: \"Spark Properties\" of more than %d entries; allowed: "
                                      "up to %d",
                                      en.name, PROPERTIES_MAX, PROPERTIES_MAX);
        if (r < 0)
                return util_error_set(err, -r, "%s", r == -ENOMEM ? "out of memory" : "not JSON");
        /* what jansson refuses of what the scanner took: a number past its range, a \u0000 */
        ev = json_loadb(read, read_len, 0, &jerr);
        if (!ev)
                return util_error_set(err, EINVAL, "not JSON: %s (in a member read)", jerr.text);
        free(read); /* the tree holds its own copies: no line-sized buffer while it lives */
        read = NULL;
        if (!json_is_object(ev))
                return util_error_set(err, EINVAL, "not a JSON object");
        name = json_object_get(ev, "Event");
        if (!json_is_string(name))
                return util_error_set(err, EINVAL, "no \"Event\" string");
        c.event = json_string_value(name);

        if (strcmp(c.event, "SparkListenerTaskEnd") == 0)
                return on_task_end(el, &c, ev);
        if (strcmp(c.event, "SparkListenerLogStart") == 0)
                return on_log_start(el, &c, ev);
        if (strcmp(c.event, "SparkListenerApplicationStart") == 0)
                return on_app_start(el, &c, ev);
        if (strcmp(c.event, "SparkListenerApplicationEnd") == 0)
                return on_app_end(el, &c, ev);
        if (strcmp(c.event, "SparkListenerEnvironmentUpdate") == 0)
                return on_environment(el, &c, ev);
        if (strcmp(c.event, "SparkListenerJobStart") == 0) {
                inc_u32(&el->app.jobs);
                return 0;
        }
        if (strcmp(c.event, "SparkListenerJobEnd") == 0)
                return on_job_end(el, &c, ev);
        if (strcmp(c.event, "SparkListenerStageSubmitted") == 0)
                return on_stage(el, &c, ev, false);
        if (strcmp(c.event, "SparkListenerStageCompleted") == 0)
                return on_stage(el, &c, ev, true);
        if (strcmp(c.event, "SparkListenerExecutorAdded") == 0)
                return on_executor_added(el, &c, ev);
        if (strcmp(c.event, "SparkListenerExecutorRemoved") == 0)
                return on_executor_removed(el, &c, ev);
        if (strcmp(c.event, "SparkListenerStageExecutorMetrics") == 0)
                return on_stage_executor_metrics(el, &c, ev);
        return 0; /* unknown events: Spark adds them across versions */
}

static uint64_t random_seed(const void *salt)
{
        uint64_t seed;

        if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
                seed = (uint64_t)(uintptr_t)salt * UINT64_C(0x9e3779b97f4a7c15);
        return seed;
}

struct tuner_eventlog *tuner_eventlog_new(void)
{
        struct tuner_eventlog *el = calloc(1, sizeof(*el));

        if (el)
                el->hash_seed = random_seed(el);
        return el;
}

static void eventlog_clear(struct tuner_eventlog *el)
{
        for (size_t i = 0; i < el->n_stages; i++)
                free(el->stages[i].durations_ms);
        free(el->stages);
        free(el->executors);
        free(el->stage_index);
        free(el->executor_index);
        free(el->app.conf_json);
        *el = (struct tuner_eventlog){.hash_seed = el->hash_seed};
}

void tuner_eventlog_free(struct tuner_eventlog *el)
{
        if (!el)
                return;
        eventlog_clear(el);
        free(el);
}

static int cmp_u32(const void *a, const void *b)
{
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return (x > y) - (x < y);
}

static int cmp_stage(const void *a, const void *b)
{
        const struct tuner_stage *x = a, *y = b;

        if (x->stage_id != y->stage_id)
                return x->stage_id < y->stage_id ? -1 : 1;
        return (x->attempt > y->attempt) - (x->attempt < y->attempt);
}

/* spark.app.id of the conf, for a log whose ApplicationStart has no "App ID" */
static void app_id_from_conf(struct tuner_app *app)
{
        _cleanup_(json_decrefp) json_t *conf = NULL;
        const char *id = NULL;

        if (!app->conf_json)
                return;
        conf = json_loads(app->conf_json, 0, NULL);
        id = json_string_value(json_object_get(conf, "spark.app.id"));
        if (id && strlen(id) < sizeof(app->app_id))
                snprintf(app->app_id, sizeof(app->app_id), "%s", id);
}

int tuner_eventlog_finish(struct tuner_eventlog *el, struct tuner_app *ret, struct util_error *err)
{
        struct tuner_stage *stages = NULL;
        struct tuner_app_executor *executors = NULL;

        if (!el->started)
                return util_error_set(err, EINVAL,
                                      "no SparkListenerApplicationStart: not a Spark event log");
        if (el->n_stages) {
                stages = calloc(el->n_stages, sizeof(*stages));
                if (!stages)
                        return util_error_set(err, ENOMEM, "out of memory");
        }
        if (el->app.n_executors) {
                executors = calloc(el->app.n_executors, sizeof(*executors));
                if (!executors) {
                        free(stages);
                        return util_error_set(err, ENOMEM, "out of memory");
                }
                memcpy(executors, el->executors, el->app.n_executors * sizeof(*executors));
        }
        for (size_t i = 0; i < el->n_stages; i++) {
                struct stage_state *s = &el->stages[i];
                uint32_t n = s->n_durations;

                if (n > 0) {
                        qsort(s->durations_ms, n, sizeof(uint32_t), cmp_u32);
                        s->stage.task_median_seconds =
                            n % 2 ? s->durations_ms[n / 2] / 1e3
                                  : ((double)s->durations_ms[n / 2 - 1] + s->durations_ms[n / 2]) /
                                        2e3;
                }
                stages[i] = s->stage;
        }
        if (stages)
                qsort(stages, el->n_stages, sizeof(*stages), cmp_stage);
        if (!el->app.app_id[0])
                app_id_from_conf(&el->app);

        *ret = el->app;
        ret->stages = stages;
        ret->n_stages = el->n_stages;
        ret->executors = executors;
        el->app.conf_json = NULL; /* moved */
        eventlog_clear(el);
        return 0;
}

/* ---- files ---- */

/* The bounds of one input (a file or a rolling directory) and what its files spent. */
struct input_budget {
        const char *input;         /* the directory (refusals name it), NULL for a single file */
        uint64_t slack;            /* TUNER_STREAM_EXPANSION_SLACK, or what the run has left */
        uint64_t total_max;        /* TUNER_STREAM_TOTAL_MAX, or what the run has left */
        bool run_slack, run_total; /* the run's figure is the smaller */
        uint64_t run_slack_max, run_total_max;
        uint64_t compressed, expanded; /* of its compressed files */
        uint64_t total;                /* decompressed bytes of all its files */
        bool owner_known;              /* owner: of every file read so far (one user's) */
        uint32_t owner;
        bool compact;           /* the file being read is a History Server's .compact */
        uint32_t compact_owner; /* of the .compact file read */
};

/* Feed the lines of one file; an in-progress log's last line may be cut. */
static int read_file(struct tuner_eventlog *el, int dirfd, const char *name, const char *path,
                     bool in_progress, struct input_budget *b, struct util_error *err)
{
        struct tuner_stream *s = NULL;
        struct util_error line_err;
        uint64_t compressed, total;
        uint32_t owner;
        int r;

        r = tuner_stream_open_at(dirfd, name, path, in_progress, &s, err);
        if (r < 0)
                return r;
        /* the run is the user's who wrote the files read, each file's owner from the
         * descriptor that is read: a rolling log is credited to no directory's owner, and
         * files of two users in one log (Spark makes the directory 0770 for a group) are
         * refused rather than credited to either */
        r = tuner_stream_owner(s, &owner);
        if (r < 0) {
                tuner_stream_free(s);
                return util_error_set(err, -r, "%s: %s", path, strerror(-r));
        }
        /* a .compact file may be root's (a History Server running as root wrote it from the
         * job's earlier files): the files beside it then say whose the log is, and a log of
         * a compact file alone is root's. A compact file of another user is refused like
         * any file of a second user: in a directory its group may write, it would replace
         * the events before it with that user's */
        if (b->compact && owner == 0) {
                b->compact_owner = owner;
        } else if (b->owner_known && owner != b->owner) {
                tuner_stream_free(s);
                return util_error_set(err, EPERM,
                                      "%s: files of uid %" PRIu32 " and of uid %" PRIu32
                                      " in one event log (%s is uid %" PRIu32
                                      "'s); refused: a log is one user's",
                                      b->input ? b->input : path, b->owner, owner, path, owner);
        }
        if (!b->compact || owner != 0) {
                b->owner_known = true;
                b->owner = owner;
        }
        /* a compressed input may not expand past a ratio no event log comes near (the stream
         * checks it as it decompresses, decompress.h): a few KB of zstd holding gigabytes of
         * blank lines would otherwise keep ingest busy for minutes. One bound and one slack
         * for all the files of an input: a rolling directory of many small bombs gets no
         * slack per file. */
        tuner_stream_set_limits(s, TUNER_STREAM_LINE_MAX, b->total_max - b->total);
        tuner_stream_set_expansion(s, TUNER_STREAM_EXPANSION_MAX, b->slack);
        tuner_stream_set_expansion_base(s, b->input, b->compressed, b->expanded);
        for (;;) {
                const char *line;
                size_t len;
                bool terminated;

                r = tuner_stream_line(s, &line, &len, &terminated, err);
                if (r <= 0)
                        break;
                if (len == 0)
                        continue;
                r = tuner_eventlog_line(el, line, len, &line_err);
                if (r == -EINVAL && !terminated && in_progress) {
                        r = 0; /* the writer's unfinished last line */
                        continue;
                }
                if (r < 0) {
                        util_error_set(err, r, "%s:%" PRIu64 ": %s", path, tuner_stream_lineno(s),
                                       line_err.text);
                        break;
                }
        }
        if (r == -EFBIG && tuner_stream_over_total(s) && b->run_total)
                util_error_set(err, EFBIG,
                               "%s: more than the %" PRIu64 " bytes this ingest run has left "
                               "of its %" PRIu64 " decompressed bytes; ingest it in another run",
                               b->input ? b->input : path, b->total_max, b->run_total_max);
        else if (r == -EFBIG && tuner_stream_over_total(s))
                util_error_set(err, EFBIG, "%s: more than %" PRIu64 " bytes once decompressed",
                               b->input ? b->input : path, b->total_max);
        else if (r == -EFBIG && b->run_slack && strstr(err->text, "(a compression bomb?)")) {
                size_t n = strlen(err->text);

                snprintf(err->text + n, sizeof(err->text) - n,
                         "; the slack is what this ingest run's other inputs left of its %" PRIu64
                         " MiB: ingest it in another run",
                         b->run_slack_max >> 20);
        }
        tuner_stream_spent(s, &compressed, &total);
        add_u64(&b->total, total);
        if (tuner_codec_of(path) != TUNER_CODEC_PLAIN) {
                add_u64(&b->compressed, compressed);
                add_u64(&b->expanded, total);
        }
        tuner_stream_free(s);
        return r < 0 ? r : 0;
}

struct rolling_file {
        uint64_t index;
        char *name; /* dir/base, for messages */
        const char *base;
        bool compact;
};

static int cmp_rolling(const void *a, const void *b)
{
        const struct rolling_file *x = a, *y = b;

        if (x->index != y->index)
                return x->index < y->index ? -1 : 1;
        return (int)x->compact - (int)y->compact;
}

/* "events_<n>_<app id>[.<codec>][.compact]": n, or -EINVAL */
static int rolling_index(const char *name, uint64_t *ret)
{
        const char *p = name + strlen("events_"), *end;
        char digits[21];

        if (strncmp(name, "events_", 7) != 0)
                return -EINVAL;
        end = strchr(p, '_');
        if (!end || end == p || (size_t)(end - p) >= sizeof(digits))
                return -EINVAL;
        memcpy(digits, p, end - p);
        digits[end - p] = '\0';
        return util_parse_u64(digits, ret);
}

static void free_rolling(struct rolling_file *files, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(files[i].name);
        free(files);
}

static int read_rolling(struct tuner_eventlog *el, const char *dir, struct input_budget *b,
                        struct util_error *err)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct rolling_file *files = NULL;
        size_t n = 0, cap = 0, first = 0;
        bool in_progress = false;
        struct dirent *de;
        int r = 0;

        {
                int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                d = fd < 0 ? NULL : fdopendir(fd);
                if (!d) {
                        int e = errno;

                        if (fd >= 0)
                                close(fd);
                        return util_error_set(err, e, "%s: %s", dir, strerror(e));
                }
        }
        while ((errno = 0, de = readdir(d))) {
                uint64_t index;

                if (strncmp(de->d_name, "appstatus_", 10) == 0) {
                        in_progress |= tuner_name_in_progress(de->d_name);
                        continue;
                }
                if (rolling_index(de->d_name, &index) < 0)
                        continue;
                if (n == ROLLING_FILES_MAX) {
                        r = util_error_set(err, EFBIG, "%s: more than %d event log files", dir,
                                           ROLLING_FILES_MAX);
                        goto out;
                }
                if (n == cap) {
                        struct rolling_file *f;

                        cap = cap ? cap * 2 : 8;
                        f = realloc(files, cap * sizeof(*f));
                        if (!f) {
                                r = util_error_set(err, ENOMEM, "%s: out of memory", dir);
                                goto out;
                        }
                        files = f;
                }
                files[n].index = index;
                files[n].compact = strlen(de->d_name) > 8 &&
                                   strcmp(de->d_name + strlen(de->d_name) - 8, ".compact") == 0;
                if (asprintf(&files[n].name, "%s/%s", dir, de->d_name) < 0) {
                        r = util_error_set(err, ENOMEM, "%s: out of memory", dir);
                        goto out;
                }
                files[n].base = files[n].name + strlen(dir) + 1;
                n++;
        }
        if (errno) {
                r = util_error_set(err, errno, "%s: %s", dir, strerror(errno));
                goto out;
        }
        if (n == 0) {
                r = util_error_set(err, EINVAL,
                                   "%s: no events_<n>_<app id> file: not a rolling event log", dir);
                goto out;
        }
        qsort(files, n, sizeof(*files), cmp_rolling);
        /* a compacted log: its latest compact file replaces every file before it */
        for (size_t i = 0; i < n; i++)
                if (files[i].compact)
                        first = i;
        for (size_t i = first; i < n && r >= 0; i++) {
                if (i > first && files[i].index == files[i - 1].index)
                        continue; /* "events_3_x" next to its "events_3_x.compact" */
                b->compact = files[i].compact;
                r = read_file(el, dirfd(d), files[i].base, files[i].name, in_progress && i == n - 1,
                              b, err);
                b->compact = false;
        }
out:
        free_rolling(files, n);
        return r;
}

int tuner_eventlog_read_run(const char *path, struct tuner_eventlog_run *run, struct tuner_app *ret,
                            struct util_error *err)
{
        uint64_t slack_max = run->slack_max ? run->slack_max : TUNER_EVENTLOG_RUN_SLACK_MAX;
        uint64_t total_max = run->total_max ? run->total_max : TUNER_EVENTLOG_RUN_TOTAL_MAX;
        uint64_t slack_left = run->slack < slack_max ? slack_max - run->slack : 0;
        uint64_t total_left = run->total < total_max ? total_max - run->total : 0;
        struct input_budget b = {
            .slack = TUNER_STREAM_EXPANSION_SLACK,
            .total_max = TUNER_STREAM_TOTAL_MAX,
            .run_slack_max = slack_max,
            .run_total_max = total_max,
        };
        struct tuner_eventlog *el;
        struct util_error finish_err;
        struct stat st;
        uint64_t bound;
        int r;

        if (slack_left < b.slack) {
                b.slack = slack_left;
                b.run_slack = true;
        }
        if (total_left < b.total_max) {
                b.total_max = total_left;
                b.run_total = true;
        }
        /* lstat: a symlink is refused below (the job's users own these directories) */
        if (lstat(path, &st) < 0)
                return util_error_set(err, errno, "%s: %s", path, strerror(errno));
        el = tuner_eventlog_new();
        if (!el)
                return util_error_set(err, ENOMEM, "%s: out of memory", path);
        if (S_ISDIR(st.st_mode)) {
                b.input = path;
                r = read_rolling(el, path, &b, err);
        } else {
                r = read_file(el, AT_FDCWD, path, path, tuner_name_in_progress(path), &b, err);
        }
        if (r >= 0) {
                r = tuner_eventlog_finish(el, ret, &finish_err);
                if (r < 0)
                        util_error_set(err, r, "%s: %s", path, finish_err.text);
                else /* of the files read (read_file()) */
                        ret->owner_uid = b.owner_known ? b.owner : b.compact_owner;
        }
        tuner_eventlog_free(el);
        /* what was decompressed was spent, whether the input was stored or not */
        add_u64(&run->total, b.total);
        bound = b.compressed > UINT64_MAX / TUNER_STREAM_EXPANSION_MAX
                    ? UINT64_MAX
                    : b.compressed * TUNER_STREAM_EXPANSION_MAX;
        if (b.expanded > bound)
                add_u64(&run->slack, b.expanded - bound < b.slack ? b.expanded - bound : b.slack);
        return r;
}

int tuner_eventlog_read(const char *path, struct tuner_app *ret, struct util_error *err)
{
        struct tuner_eventlog_run run = {0};

        return tuner_eventlog_read_run(path, &run, ret, err);
}

bool tuner_eventlog_detect(const char *path)
{
        struct tuner_stream *s = NULL;
        struct event_name en = {0};
        const struct util_jscan_visitor visitor = {on_event_name, NULL, &en};
        const char *base = strrchr(path, '/'), *line;
        struct stat st;
        size_t len;
        bool terminated, ok = false;

        base = base ? base + 1 : path;
        if (lstat(path, &st) < 0)
                return false;
        if (S_ISDIR(st.st_mode))
                return strncmp(base, "eventlog_v2_", 12) == 0;
        if (tuner_stream_open(path, true, &s, NULL) < 0)
                return false;
        tuner_stream_set_limits(s, DETECT_LINE_MAX, DETECT_LINE_MAX);
        /* the scanner, not a tree: a first line of 1 MiB of {} would cost jansson 80 MB */
        if (tuner_stream_line(s, &line, &len, &terminated, NULL) > 0 && len > 0 && line[0] == '{' &&
            util_jscan(line, len, &visitor, NULL, NULL) == 0)
                ok = en.seen && !en.other && strcmp(en.name, "SparkListenerLogStart") == 0;
        tuner_stream_free(s);
        return ok;
}
