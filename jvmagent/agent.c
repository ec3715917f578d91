/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JVMTI side of sparkshim-agent.
 *
 * Every forced spill runs in the operator's own task thread, at a point where unmodified
 * Spark already spills: a breakpoint at the entry of TaskMemoryManager.acquireExecutionMemory
 * (called per page or pointer array, not per row). There the requesting operator is made to
 * spill in one of two ways, both of which are what Spark does when the pool runs dry:
 *  - a sorter (UnsafeExternalSorter, ShuffleExternalSorter) spills itself under the
 *    TaskMemoryManager's lock, as Spark's own trySpillAndAcquire does (trigger == itself);
 *  - a Spillable collection (ExternalSorter, ExternalAppendOnlyMap: asking from maybeSpill)
 *    and the hash-aggregation map (a BytesToBytesMap asking for a data page from
 *    UnsafeFixedWidthAggregationMap.getAggregationBufferFromUnsafeRow) are answered
 *    "0 bytes granted" (ForceEarlyReturnLong(0) on the call), so that Spark takes its own
 *    spill path: maybeSpill spills the collection, the aggregation falls back to sorting
 *    (destructAndCreateExternalSorter). Their spill() cannot be used: a Spillable ignores
 *    a self-triggered spill and BytesToBytesMap.spill frees nothing while it is written to.
 * Pool sizes are never touched; no spill is ever started from another thread.
 *
 * The agent thread (RunAgentThread, woken by a raw monitor every 100 ms) only reads the
 * pressure source and rewrites the statistics file; callbacks only read its results.
 * At run time nothing here aborts the JVM: a failing JVMTI/JNI call turns its hook off with
 * a log line.
 */
#include <errno.h>
#include <inttypes.h>
#include <jni.h>
#include <jvmti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent-internal.h"
#include "psi.h"

#define CLASS_TMM             "Lorg/apache/spark/memory/TaskMemoryManager;"
#define CLASS_CONSUMER        "Lorg/apache/spark/memory/MemoryConsumer;"
#define CLASS_UNSAFE_SORTER   "Lorg/apache/spark/util/collection/unsafe/sort/UnsafeExternalSorter;"
#define CLASS_SHUFFLE_SORTER  "Lorg/apache/spark/shuffle/sort/ShuffleExternalSorter;"
#define ACQUIRE_SIGNATURE     "(JLorg/apache/spark/memory/MemoryConsumer;)J"
#define SPILL_SIGNATURE       "(JLorg/apache/spark/memory/MemoryConsumer;)J"
#define CLASS_SPILLABLE       "Lorg/apache/spark/util/collection/Spillable;"
#define CLASS_BYTES_MAP       "Lorg/apache/spark/unsafe/map/BytesToBytesMap;"
#define CLASS_AGG_MAP         "Lorg/apache/spark/sql/execution/UnsafeFixedWidthAggregationMap;"
#define CLASS_UNSAFE_ROW      "Lorg/apache/spark/sql/catalyst/expressions/UnsafeRow;"
#define MAYBE_SPILL_SIGNATURE "(Ljava/lang/Object;J)Z"
#define NEW_PAGE_SIGNATURE    "(J)Z"
#define AGG_BUFFER_SIGNATURE  "(" CLASS_UNSAFE_ROW "I)" CLASS_UNSAFE_ROW
/* UnsafeExternalSorter.insertRecord(Object, long, int, long prefix, boolean prefixIsNull) and
 * ShuffleExternalSorter.insertRecord(Object, long, int, int partitionId) */
#define INSERT_SIGNATURE_UNSAFE  "(Ljava/lang/Object;JIJZ)V"
#define INSERT_SIGNATURE_SHUFFLE "(Ljava/lang/Object;JII)V"
#define RECORDS_PROPERTY      "spark.shuffle.spill.numElementsForceSpillThreshold"
/* Why a hook is off when the options ask for no spill: the agent then takes no breakpoint
 * or local variable capability at all (they cost compiled code a little). */
#define NO_SPILL_MODE "no spill mode in the options"

/* The name the statistics give a BytesToBytesMap that serves hash aggregation. */
#define AGG_MAP_NAME "UnsafeFixedWidthAggregationMap"

/* Local slots of acquireExecutionMemory(long required, MemoryConsumer consumer): an instance
 * method, so `this` is slot 0, the long takes slots 1-2 and the consumer slot 3. */
#define SLOT_THIS     0
#define SLOT_REQUIRED 1
#define SLOT_CONSUMER 3

/* Spillable.maybeSpill(C collection, long currentMemory) asks through
 * MemoryConsumer.acquireMemory: two frames below acquireExecutionMemory. currentMemory (the
 * collection's estimated size, what Spark spills and counts) is in slots 2-3. */
#define DEPTH_MAYBE_SPILL   2
#define SLOT_CURRENT_MEMORY 2

/* acquireExecutionMemory <- TaskMemoryManager.allocatePage <- MemoryConsumer.allocatePage
 * <- BytesToBytesMap.acquireNewPage [<- access$NNNN on Java 8 bytecode] <- Location.append
 * <- getAggregationBufferFromUnsafeRow: frames looked at for the aggregation map. */
#define AGG_STACK_DEPTH 10

#define POLL_MS            100
#define HYSTERESIS_DIVISOR 20 /* leave pressure 5% below the threshold */

enum hook_id {
        HOOK_ACQUIRE,        /* breakpoint at TaskMemoryManager.acquireExecutionMemory */
        HOOK_CONSUMER,       /* MemoryConsumer.getUsed()J and spill(JMemoryConsumer)J */
        HOOK_UNSAFE_SORTER,  /* self-spill of UnsafeExternalSorter */
        HOOK_SHUFFLE_SORTER, /* self-spill of ShuffleExternalSorter */
        HOOK_SPILLABLE,      /* 0 granted to Spillable.maybeSpill */
        HOOK_BYTES_MAP,      /* 0 granted to BytesToBytesMap.acquireNewPage ... */
        HOOK_AGG_MAP,        /* ... under UnsafeFixedWidthAggregationMap */
        HOOK_INSERT,         /* one-shot breakpoints at the sorters' insertRecord, under pressure */
        HOOK_COUNT,
};

static struct {
        jvmtiEnv *jvmti;
        struct jva_options options;
        struct jva_stats stats;
        jrawMonitorID wakeup; /* the agent thread waits on it */

        /* hooks[] and pressure: read by the stats writer, written by callbacks */
        pthread_mutex_t state_lock;
        struct jva_hook hooks[HOOK_COUNT];
        struct jva_pressure pressure;
        pthread_mutex_t write_lock; /* one stats writer at a time */

        /* set once at class preparation, read by task threads (atomics) */
        jmethodID acquire;
        jmethodID page_size_bytes; /* TaskMemoryManager.pageSizeBytes()J, may be NULL */
        uint64_t page_size;        /* its value, read at the first hook (0 = unknown) */
        jmethodID get_used, spill;
        jclass sorters[2]; /* global refs: UnsafeExternalSorter, ShuffleExternalSorter */
        jclass spillable;  /* global ref */
        jmethodID maybe_spill;
        jclass bytes_map; /* global ref */
        jmethodID acquire_new_page, agg_buffer, num_data_pages;
        uint64_t execution_memory[2]; /* allow-fraction's base, per MemoryMode; 0 = not read */

        /* atomics */
        bool capabilities;         /* breakpoints and locals were granted */
        bool early_return;         /* ForceEarlyReturn was granted too */
        bool deny_off;             /* ForceEarlyReturnLong failed at run time: sorters only */
        bool execution_memory_off; /* it could not be read: allow-fraction inactive */
        bool acquire_off;          /* the breakpoint failed at run time: ignore it */
        bool spill_disabled;       /* a forced spill failed: count only from now on */
        bool stopping;
        bool under_pressure;
        uint64_t pressure_since_ns; /* when the current episode was seen to start */
        uint64_t episode;           /* pressure episodes so far */
        uint64_t reacted_episode;   /* last episode whose first spill recorded a reaction */
        uint64_t last_pressure_spill_ns;

        /* pressure sources beside anon, owned by the agent thread */
        struct jva_psi psi;
        uint64_t psi_over_until_ns;
        jobjectArray gc_beans;        /* global ref: com.sun.management.GarbageCollectorMXBean[] */
        jobjectArray heap_pool_names; /* global ref: String[], the heap pools' names */
        jmethodID gc_count, gc_last_info, gc_info_end, gc_info_after, map_get, usage_used;
        jlong gc_seen; /* collections counted at the last look */

        /* insertRecord of UnsafeExternalSorter [0] and ShuffleExternalSorter [1] */
        jmethodID inserts[2];
        jlocation insert_at[2];
        bool insert_armed;     /* the breakpoints are (being) set */
        int64_t insert_shots;  /* rows left to look at before they are cleared */
        jfieldID consumer_tmm; /* MemoryConsumer.taskMemoryManager, found at the first use */
        bool heap_tried;
} agent = {
    .hooks =
        {
            [HOOK_ACQUIRE] = {.name = "TaskMemoryManager.acquireExecutionMemory"},
            [HOOK_CONSUMER] = {.name = "MemoryConsumer.spill"},
            [HOOK_UNSAFE_SORTER] = {.name = "UnsafeExternalSorter.spill"},
            [HOOK_SHUFFLE_SORTER] = {.name = "ShuffleExternalSorter.spill"},
            [HOOK_SPILLABLE] = {.name = "Spillable.maybeSpill"},
            [HOOK_BYTES_MAP] = {.name = "BytesToBytesMap.acquireNewPage"},
            [HOOK_AGG_MAP] =
                {.name = "UnsafeFixedWidthAggregationMap.getAggregationBufferFromUnsafeRow"},
            [HOOK_INSERT] = {.name = "UnsafeExternalSorter/ShuffleExternalSorter.insertRecord"},
        },
};

/* Set while this thread runs a hook: Spark re-enters acquireExecutionMemory from spill()
 * (reset() allocates a fresh pointer array), and that nested call must pass untouched. */
static __thread bool in_hook;

static const char *jvmti_error_name(jvmtiError error)
{
        char *name = NULL;
        static __thread char buf[64];

        if (agent.jvmti && (*agent.jvmti)->GetErrorName(agent.jvmti, error, &name) == 0 && name) {
                snprintf(buf, sizeof(buf), "%s", name);
                (*agent.jvmti)->Deallocate(agent.jvmti, (unsigned char *)name);
        } else {
                snprintf(buf, sizeof(buf), "JVMTI error %d", (int)error);
        }
        return buf;
}

static void hook_set(enum hook_id id, enum jva_hook_state state, const char *reason)
{
        struct jva_hook *hook = &agent.hooks[id];
        bool changed;

        pthread_mutex_lock(&agent.state_lock);
        changed = hook->state != state;
        hook->state = state;
        snprintf(hook->reason, sizeof(hook->reason), "%s", reason ? reason : "");
        pthread_mutex_unlock(&agent.state_lock);
        if (!changed)
                return;
        if (state == JVA_HOOK_ON)
                log_info("hook %s: on", hook->name);
        else if (id == HOOK_ACQUIRE || id == HOOK_CONSUMER)
                log_warn("hook %s: off: %s", hook->name, reason);
        else
                log_info("hook %s: off: %s", hook->name, reason);
}

/* ---- statistics ---- */

static void write_stats(bool final)
{
        struct jva_hook hooks[HOOK_COUNT];
        struct jva_pressure pressure;
        int r;

        if (!agent.options.stats[0])
                return;
        pthread_mutex_lock(&agent.state_lock);
        memcpy(hooks, agent.hooks, sizeof(hooks));
        pressure = agent.pressure;
        pthread_mutex_unlock(&agent.state_lock);

        pthread_mutex_lock(&agent.write_lock);
        r = jva_stats_write(&agent.stats, agent.options.stats, final, hooks, HOOK_COUNT, &pressure);
        pthread_mutex_unlock(&agent.write_lock);
        if (r < 0)
                log_warn("stats=%s: cannot write: %s", agent.options.stats, strerror(-r));
}

/* ---- pressure (agent thread) ---- */

static void insert_arm(bool on);

/*
 * heap-threshold: the Java heap in use right after the last garbage collection, from
 * com.sun.management.GarbageCollectorMXBean.getLastGcInfo().getMemoryUsageAfterGc(), summed
 * over the heap pools (MemoryType.HEAP), read when the collectors' count has grown. The pools'
 * own getCollectionUsage() is not used: on JDK 17 G1 updates the old generation's only at
 * mixed and full collections, so Spark's pages living there go unseen for a whole job.
 * Agent thread only, inside a local frame. false, with one log line, when the JVM does not
 * offer these beans (another vendor's JVM).
 */
static bool heap_init(JNIEnv *env)
{
        jclass factory, list_class, pool_class, type_class, gc_class, info_class, map_class,
            usage_class, runtime_class;
        jmethodID get_pools, get_gcs, to_array, get_type, get_name, get_runtime, max_memory;
        jfieldID heap_field;
        jobject pools_list, gcs_list, heap_type, runtime;
        jobjectArray pools, gcs, names;
        jint n, k = 0;
        jlong max;

        factory = (*env)->FindClass(env, "java/lang/management/ManagementFactory");
        list_class = (*env)->FindClass(env, "java/util/List");
        pool_class = (*env)->FindClass(env, "java/lang/management/MemoryPoolMXBean");
        type_class = (*env)->FindClass(env, "java/lang/management/MemoryType");
        gc_class = (*env)->FindClass(env, "com/sun/management/GarbageCollectorMXBean");
        info_class = (*env)->FindClass(env, "com/sun/management/GcInfo");
        map_class = (*env)->FindClass(env, "java/util/Map");
        usage_class = (*env)->FindClass(env, "java/lang/management/MemoryUsage");
        runtime_class = (*env)->FindClass(env, "java/lang/Runtime");
        if (!factory || !list_class || !pool_class || !type_class || !gc_class || !info_class ||
            !map_class || !usage_class || !runtime_class)
                goto fail;
        get_pools = (*env)->GetStaticMethodID(env, factory, "getMemoryPoolMXBeans",
                                              "()Ljava/util/List;");
        get_gcs = (*env)->GetStaticMethodID(env, factory, "getGarbageCollectorMXBeans",
                                            "()Ljava/util/List;");
        to_array = (*env)->GetMethodID(env, list_class, "toArray", "()[Ljava/lang/Object;");
        get_type = (*env)->GetMethodID(env, pool_class, "getType",
                                       "()Ljava/lang/management/MemoryType;");
        get_name = (*env)->GetMethodID(env, pool_class, "getName", "()Ljava/lang/String;");
        heap_field = (*env)->GetStaticFieldID(env, type_class, "HEAP",
                                              "Ljava/lang/management/MemoryType;");
        get_runtime = (*env)->GetStaticMethodID(env, runtime_class, "getRuntime",
                                                "()Ljava/lang/Runtime;");
        max_memory = (*env)->GetMethodID(env, runtime_class, "maxMemory", "()J");
        agent.gc_count = (*env)->GetMethodID(env, gc_class, "getCollectionCount", "()J");
        agent.gc_last_info = (*env)->GetMethodID(env, gc_class, "getLastGcInfo",
                                                 "()Lcom/sun/management/GcInfo;");
        agent.gc_info_end = (*env)->GetMethodID(env, info_class, "getEndTime", "()J");
        agent.gc_info_after = (*env)->GetMethodID(env, info_class, "getMemoryUsageAfterGc",
                                                  "()Ljava/util/Map;");
        agent.map_get = (*env)->GetMethodID(env, map_class, "get",
                                            "(Ljava/lang/Object;)Ljava/lang/Object;");
        agent.usage_used = (*env)->GetMethodID(env, usage_class, "getUsed", "()J");
        if (!get_pools || !get_gcs || !to_array || !get_type || !get_name || !heap_field ||
            !get_runtime || !max_memory || !agent.gc_count || !agent.gc_last_info ||
            !agent.gc_info_end || !agent.gc_info_after || !agent.map_get || !agent.usage_used)
                goto fail;

        runtime = (*env)->CallStaticObjectMethod(env, runtime_class, get_runtime);
        max = runtime ? (*env)->CallLongMethod(env, runtime, max_memory) : 0;
        heap_type = (*env)->GetStaticObjectField(env, type_class, heap_field);
        pools_list = (*env)->CallStaticObjectMethod(env, factory, get_pools);
        pools = pools_list ? (*env)->CallObjectMethod(env, pools_list, to_array) : NULL;
        gcs_list = (*env)->CallStaticObjectMethod(env, factory, get_gcs);
        gcs = gcs_list ? (*env)->CallObjectMethod(env, gcs_list, to_array) : NULL;
        if ((*env)->ExceptionCheck(env) || !pools || !gcs || !heap_type || max <= 0)
                goto fail;
        n = (*env)->GetArrayLength(env, gcs);
        for (jint i = 0; i < n; i++) {
                jobject gc = (*env)->GetObjectArrayElement(env, gcs, i);
                if (!gc || !(*env)->IsInstanceOf(env, gc, gc_class)) {
                        log_warn("heap-threshold: a garbage collector bean is not a "
                                 "com.sun.management.GarbageCollectorMXBean: off");
                        return false;
                }
        }
        n = (*env)->GetArrayLength(env, pools);
        names = (*env)->NewObjectArray(env, n, (*env)->FindClass(env, "java/lang/String"), NULL);
        if (!names)
                goto fail;
        for (jint i = 0; i < n; i++) {
                jobject pool = (*env)->GetObjectArrayElement(env, pools, i);
                jobject type = pool ? (*env)->CallObjectMethod(env, pool, get_type) : NULL;
                jobject name = type && (*env)->IsSameObject(env, type, heap_type)
                                   ? (*env)->CallObjectMethod(env, pool, get_name)
                                   : NULL;

                if ((*env)->ExceptionCheck(env))
                        goto fail;
                if (name)
                        (*env)->SetObjectArrayElement(env, names, k++, name);
        }
        if (k == 0 || (*env)->GetArrayLength(env, gcs) == 0) {
                log_warn("heap-threshold: no heap memory pool or no garbage collector bean: off");
                return false;
        }
        agent.heap_pool_names = (*env)->NewGlobalRef(env, names);
        agent.gc_beans = (*env)->NewGlobalRef(env, gcs);
        if (!agent.heap_pool_names || !agent.gc_beans)
                goto fail;
        pthread_mutex_lock(&agent.state_lock);
        agent.pressure.heap_max_bytes = (uint64_t)max;
        agent.pressure.heap_threshold_bytes = (uint64_t)((double)max * agent.options.heap_threshold);
        pthread_mutex_unlock(&agent.state_lock);
        log_info("heap-threshold=%.3f: %" PRIu64 " bytes of a %" PRId64 " byte heap in use after "
                 "a collection (%d heap pools, %d collectors)",
                 agent.options.heap_threshold, agent.pressure.heap_threshold_bytes, (int64_t)max,
                 (int)k, (int)(*env)->GetArrayLength(env, gcs));
        return true;
fail:
        (*env)->ExceptionClear(env);
        log_warn("heap-threshold: java.lang.management / com.sun.management are not usable "
                 "here: off");
        return false;
}

/*
 * The heap in use after the latest collection, when one happened since the last call:
 * true with *ret_bytes; false when there was none (or on an exception, cleared).
 */
static bool heap_after_gc(JNIEnv *env, uint64_t *ret_bytes)
{
        jint n = (*env)->GetArrayLength(env, agent.gc_beans);
        jint n_pools = (*env)->GetArrayLength(env, agent.heap_pool_names);
        jobject latest = NULL;
        jlong count = 0, latest_end = -1;
        uint64_t sum = 0;

        for (jint i = 0; i < n; i++) {
                jobject gc = (*env)->GetObjectArrayElement(env, agent.gc_beans, i);
                jlong c = gc ? (*env)->CallLongMethod(env, gc, agent.gc_count) : 0;
                count += c > 0 ? c : 0;
        }
        if ((*env)->ExceptionCheck(env) || count == agent.gc_seen)
                goto none;
        agent.gc_seen = count;
        for (jint i = 0; i < n; i++) {
                jobject gc = (*env)->GetObjectArrayElement(env, agent.gc_beans, i);
                jobject info = gc ? (*env)->CallObjectMethod(env, gc, agent.gc_last_info) : NULL;
                jlong end = info ? (*env)->CallLongMethod(env, info, agent.gc_info_end) : -1;

                if ((*env)->ExceptionCheck(env))
                        goto none;
                if (info && end > latest_end) {
                        latest = info;
                        latest_end = end;
                }
        }
        if (!latest)
                goto none;
        {
                jobject after = (*env)->CallObjectMethod(env, latest, agent.gc_info_after);

                for (jint i = 0; after && i < n_pools; i++) {
                        jobject name = (*env)->GetObjectArrayElement(env, agent.heap_pool_names, i);
                        jobject usage =
                            name ? (*env)->CallObjectMethod(env, after, agent.map_get, name) : NULL;
                        jlong used =
                            usage ? (*env)->CallLongMethod(env, usage, agent.usage_used) : 0;

                        if ((*env)->ExceptionCheck(env))
                                goto none;
                        sum += used > 0 ? (uint64_t)used : 0;
                }
                if (!after)
                        goto none;
        }
        *ret_bytes = sum;
        return true;
none:
        (*env)->ExceptionClear(env);
        return false;
}

/*
 * One look at every pressure source: anon against threshold= (leaving it 5% below), memory
 * PSI (over for a window after each event), the heap after GC against heap-threshold= (leaving
 * it 5% below; read only with env, from the agent thread). Under pressure while any source is
 * over; an episode starts when the first one gets there.
 */
static void sample_pressure(JNIEnv *env)
{
        uint64_t anon = 0, threshold = agent.options.threshold_bytes, heap = 0;
        uint64_t now = jva_now_ns(), heap_threshold;
        int r = jva_read_anon(agent.pressure.source[0] == 'c' ? agent.options.cgroup : NULL, &anon);
        bool entered = false, left = false, fired = false, heap_known = false, over;
        int psi_r = 0;

        if (agent.psi.fd >= 0) {
                psi_r = jva_psi_poll(&agent.psi, &fired);
                if (fired)
                        agent.psi_over_until_ns = now + agent.options.psi_window_ms * 1000000u;
        }
        if (env && agent.options.heap_threshold > 0 && !agent.heap_tried) {
                agent.heap_tried = true;
                if ((*env)->PushLocalFrame(env, 64) == JNI_OK) {
                        bool ok = heap_init(env);
                        (*env)->PopLocalFrame(env, NULL);
                        pthread_mutex_lock(&agent.state_lock);
                        agent.pressure.heap_on = ok;
                        pthread_mutex_unlock(&agent.state_lock);
                }
        }
        if (env && agent.gc_beans && (*env)->PushLocalFrame(env, 64) == JNI_OK) {
                heap_known = heap_after_gc(env, &heap);
                (*env)->PopLocalFrame(env, NULL);
        }

        pthread_mutex_lock(&agent.state_lock);
        if (r < 0) {
                if (agent.pressure.read_errors++ == 0)
                        log_warn("pressure: cannot read %s: %s", agent.pressure.path, strerror(-r));
        } else {
                agent.pressure.anon_bytes = anon;
                if (anon > agent.pressure.peak_anon_bytes)
                        agent.pressure.peak_anon_bytes = anon;
                if (threshold && !agent.pressure.anon_over && anon >= threshold) {
                        agent.pressure.anon_over = true;
                        agent.pressure.crossings++;
                } else if (threshold && agent.pressure.anon_over &&
                           anon < threshold - threshold / HYSTERESIS_DIVISOR) {
                        agent.pressure.anon_over = false;
                }
        }
        if (agent.pressure.psi_on) {
                if (psi_r < 0 && psi_r != -EINTR) {
                        log_warn("psi: %s: %s: off", agent.psi.path, strerror(-psi_r));
                        jva_psi_close(&agent.psi);
                        agent.pressure.psi_on = false;
                }
                agent.pressure.psi_events = agent.psi.events;
                agent.pressure.psi_over = now < agent.psi_over_until_ns;
        }
        heap_threshold = agent.pressure.heap_threshold_bytes;
        if (heap_known) {
                agent.pressure.heap_after_gc_bytes = heap;
                if (heap > agent.pressure.peak_heap_after_gc_bytes)
                        agent.pressure.peak_heap_after_gc_bytes = heap;
                if (!agent.pressure.heap_over && heap >= heap_threshold) {
                        agent.pressure.heap_over = true;
                        agent.pressure.heap_crossings++;
                } else if (agent.pressure.heap_over &&
                           heap < heap_threshold - heap_threshold / HYSTERESIS_DIVISOR) {
                        agent.pressure.heap_over = false;
                }
        }
        over = agent.pressure.anon_over || agent.pressure.psi_over || agent.pressure.heap_over;
        if (over && !agent.pressure.under_pressure) {
                entered = true;
                agent.pressure.episodes++;
        } else if (!over && agent.pressure.under_pressure) {
                left = true;
        }
        agent.pressure.under_pressure = over;
        pthread_mutex_unlock(&agent.state_lock);

        if (entered) {
                __atomic_store_n(&agent.pressure_since_ns, now, __ATOMIC_RELAXED);
                __atomic_add_fetch(&agent.episode, 1, __ATOMIC_RELAXED);
                __atomic_store_n(&agent.under_pressure, true, __ATOMIC_RELEASE);
                if (env && !__atomic_load_n(&agent.spill_disabled, __ATOMIC_ACQUIRE))
                        insert_arm(true);
                log_debug("pressure: on (anon %" PRIu64 "/%" PRIu64 ", psi %s, heap after GC %" PRIu64
                          "/%" PRIu64 ")",
                          anon, threshold, fired ? "event" : "-", heap, heap_threshold);
        } else if (left) {
                __atomic_store_n(&agent.under_pressure, false, __ATOMIC_RELEASE);
                if (env)
                        insert_arm(false);
                log_debug("pressure: off (anon %" PRIu64 ", heap after GC %" PRIu64 ")", anon,
                          heap);
        }
}

static void JNICALL agent_thread(jvmtiEnv *jvmti, JNIEnv *env, void *arg)
{
        uint64_t interval_ns = agent.options.stats_interval_s * 1000000000u;
        uint64_t next_write = jva_now_ns() + interval_ns;

        if ((*jvmti)->RawMonitorEnter(jvmti, agent.wakeup) != JVMTI_ERROR_NONE)
                return;
        while (!__atomic_load_n(&agent.stopping, __ATOMIC_ACQUIRE)) {
                jvmtiError err = (*jvmti)->RawMonitorWait(jvmti, agent.wakeup, POLL_MS);
                if (err != JVMTI_ERROR_NONE && err != JVMTI_ERROR_INTERRUPT)
                        break; /* the VM is going away */
                if (__atomic_load_n(&agent.stopping, __ATOMIC_ACQUIRE))
                        break;
                sample_pressure(env);
                if (interval_ns && jva_now_ns() >= next_write) {
                        write_stats(false);
                        next_write = jva_now_ns() + interval_ns;
                }
        }
        (*jvmti)->RawMonitorExit(jvmti, agent.wakeup);
}

/* ---- resolving hooks at class preparation ---- */

/* The jmethodID of name+signature declared by klass, without initialising the class (which
 * GetMethodID would do, from inside ClassPrepare). NULL when absent. */
static jmethodID find_method(jvmtiEnv *jvmti, jclass klass, const char *name, const char *signature)
{
        jmethodID *methods = NULL, found = NULL;
        jint n = 0;

        if ((*jvmti)->GetClassMethods(jvmti, klass, &n, &methods) != JVMTI_ERROR_NONE)
                return NULL;
        for (jint i = 0; i < n && !found; i++) {
                char *m_name = NULL, *m_sig = NULL;
                if ((*jvmti)->GetMethodName(jvmti, methods[i], &m_name, &m_sig, NULL) != 0)
                        continue;
                if (strcmp(m_name, name) == 0 && strcmp(m_sig, signature) == 0)
                        found = methods[i];
                (*jvmti)->Deallocate(jvmti, (unsigned char *)m_name);
                (*jvmti)->Deallocate(jvmti, (unsigned char *)m_sig);
        }
        (*jvmti)->Deallocate(jvmti, (unsigned char *)methods);
        return found;
}

static void resolve_acquire(jvmtiEnv *jvmti, jclass klass)
{
        jmethodID method;
        jlocation start, end;
        jint modifiers, max_locals;
        jvmtiError err;
        char reason[160];

        if (__atomic_load_n(&agent.acquire, __ATOMIC_ACQUIRE)) {
                log_debug("TaskMemoryManager prepared again by another class loader: ignored");
                return;
        }
        if (!__atomic_load_n(&agent.capabilities, __ATOMIC_ACQUIRE)) {
                hook_set(HOOK_ACQUIRE, JVA_HOOK_OFF,
                         jva_options_spill_enabled(&agent.options) ? "no breakpoint capability"
                                                                   : NO_SPILL_MODE);
                return;
        }
        method = find_method(jvmti, klass, "acquireExecutionMemory", ACQUIRE_SIGNATURE);
        if (!method) {
                hook_set(HOOK_ACQUIRE, JVA_HOOK_OFF,
                         "method not found (acquireExecutionMemory" ACQUIRE_SIGNATURE ")");
                return;
        }
        /* the slots we read assume an instance method with these two arguments */
        if ((*jvmti)->GetMethodModifiers(jvmti, method, &modifiers) != JVMTI_ERROR_NONE ||
            (modifiers & 0x0008 /* ACC_STATIC */) ||
            (*jvmti)->GetMaxLocals(jvmti, method, &max_locals) != JVMTI_ERROR_NONE ||
            max_locals <= SLOT_CONSUMER) {
                hook_set(HOOK_ACQUIRE, JVA_HOOK_OFF, "method is static or has too few locals");
                return;
        }
        err = (*jvmti)->GetMethodLocation(jvmti, method, &start, &end);
        if (err == JVMTI_ERROR_NONE)
                err = (*jvmti)->SetBreakpoint(jvmti, method, start);
        if (err != JVMTI_ERROR_NONE) {
                snprintf(reason, sizeof(reason), "cannot set a breakpoint: %s",
                         jvmti_error_name(err));
                hook_set(HOOK_ACQUIRE, JVA_HOOK_OFF, reason);
                return;
        }
        __atomic_store_n(&agent.page_size_bytes, find_method(jvmti, klass, "pageSizeBytes", "()J"),
                         __ATOMIC_RELEASE);
        __atomic_store_n(&agent.acquire, method, __ATOMIC_RELEASE);
        hook_set(HOOK_ACQUIRE, JVA_HOOK_ON, NULL);
}

static void resolve_consumer(jvmtiEnv *jvmti, jclass klass)
{
        jmethodID get_used, spill;

        if (__atomic_load_n(&agent.spill, __ATOMIC_ACQUIRE))
                return;
        get_used = find_method(jvmti, klass, "getUsed", "()J");
        spill = find_method(jvmti, klass, "spill", SPILL_SIGNATURE);
        if (!get_used || !spill) {
                hook_set(HOOK_CONSUMER, JVA_HOOK_OFF,
                         !get_used ? "method not found (getUsed()J)"
                                   : "method not found (spill" SPILL_SIGNATURE ")");
                return;
        }
        __atomic_store_n(&agent.get_used, get_used, __ATOMIC_RELEASE);
        __atomic_store_n(&agent.spill, spill, __ATOMIC_RELEASE);
        hook_set(HOOK_CONSUMER, JVA_HOOK_ON, NULL);
}

/*
 * The sorter's insertRecord, where unmodified Spark spills by record count
 * (numElementsForceSpillThreshold is checked first thing): under pressure the agent sets a
 * one-shot breakpoint there, so that an operator that is not asking for memory is made to
 * spill at its next row rather than its next page (allow-bytes only: the execution memory
 * of allow-fraction is known in acquireExecutionMemory's frame).
 */
static void resolve_insert(jvmtiEnv *jvmti, jclass klass, unsigned i)
{
        static const char *const signatures[2] = {INSERT_SIGNATURE_UNSAFE, INSERT_SIGNATURE_SHUFFLE};
        jmethodID method;
        jlocation start, end;
        char reason[256];

        if (!agent.options.allow_bytes) {
                hook_set(HOOK_INSERT, JVA_HOOK_OFF, "no allow-bytes in the options");
                return;
        }
        if (!__atomic_load_n(&agent.capabilities, __ATOMIC_ACQUIRE)) {
                hook_set(HOOK_INSERT, JVA_HOOK_OFF, "no breakpoint capability");
                return;
        }
        method = find_method(jvmti, klass, "insertRecord", signatures[i]);
        if (!method || (*jvmti)->GetMethodLocation(jvmti, method, &start, &end) != JVMTI_ERROR_NONE) {
                snprintf(reason, sizeof(reason), "method not found (insertRecord%s)", signatures[i]);
                hook_set(HOOK_INSERT, JVA_HOOK_OFF, reason);
                return;
        }
        agent.insert_at[i] = start;
        __atomic_store_n(&agent.inserts[i], method, __ATOMIC_RELEASE);
        hook_set(HOOK_INSERT, JVA_HOOK_ON, NULL);
}

/* Rows the insertRecord breakpoints look at per pressure episode before they are cleared
 * unused (each costs the task thread some microseconds): enough to meet every sorter of the
 * executor's running tasks. */
#define INSERT_SHOTS 256

/* Set (on) or clear the insertRecord breakpoints. From the agent thread when pressure starts
 * and ends, from a task thread after a spill or the last shot. */
static void insert_arm(bool on)
{
        if (on)
                __atomic_store_n(&agent.insert_shots, INSERT_SHOTS, __ATOMIC_RELEASE);
        if (__atomic_exchange_n(&agent.insert_armed, on, __ATOMIC_ACQ_REL) == on)
                return;
        for (unsigned i = 0; i < 2; i++) {
                jmethodID method = __atomic_load_n(&agent.inserts[i], __ATOMIC_ACQUIRE);
                jvmtiError err;

                if (!method)
                        continue;
                err = on ? (*agent.jvmti)->SetBreakpoint(agent.jvmti, method, agent.insert_at[i])
                         : (*agent.jvmti)->ClearBreakpoint(agent.jvmti, method, agent.insert_at[i]);
                if (on && err != JVMTI_ERROR_NONE && err != JVMTI_ERROR_DUPLICATE) {
                        char reason[256];

                        snprintf(reason, sizeof(reason), "cannot set a breakpoint: %s",
                                 jvmti_error_name(err));
                        __atomic_store_n(&agent.inserts[i], NULL, __ATOMIC_RELEASE);
                        hook_set(HOOK_INSERT, JVA_HOOK_OFF, reason);
                }
        }
}

static void resolve_sorter(JNIEnv *env, jclass klass, enum hook_id id)
{
        unsigned i = id == HOOK_UNSAFE_SORTER ? 0 : 1;
        jclass ref;

        if (__atomic_load_n(&agent.sorters[i], __ATOMIC_ACQUIRE))
                return;
        ref = (*env)->NewGlobalRef(env, klass);
        if (!ref) {
                (*env)->ExceptionClear(env);
                hook_set(id, JVA_HOOK_OFF, "NewGlobalRef failed");
                return;
        }
        __atomic_store_n(&agent.sorters[i], ref, __ATOMIC_RELEASE);
        hook_set(id, jva_options_spill_enabled(&agent.options) ? JVA_HOOK_ON : JVA_HOOK_OFF,
                 NO_SPILL_MODE);
        resolve_insert(agent.jvmti, klass, i);
}

/* A hook that answers "0 bytes granted": the method it recognises callers by and, when the
 * requesting consumer must be told apart by class, a global ref to that class.
 * min_locals > 0: the method must be an instance method with at least that many locals,
 * because the agent reads one of them. */
static void resolve_deny(jvmtiEnv *jvmti, JNIEnv *env, jclass klass, enum hook_id id,
                         const char *method_name, const char *signature, jmethodID *ret_method,
                         jclass *ret_class, jint min_locals)
{
        char reason[256];
        jmethodID method;
        jint modifiers, max_locals;
        jclass ref;

        if (__atomic_load_n(ret_method, __ATOMIC_ACQUIRE))
                return;
        if (!__atomic_load_n(&agent.early_return, __ATOMIC_ACQUIRE)) {
                hook_set(id, JVA_HOOK_OFF,
                         jva_options_spill_enabled(&agent.options)
                             ? "no ForceEarlyReturn capability"
                             : NO_SPILL_MODE);
                return;
        }
        method = find_method(jvmti, klass, method_name, signature);
        if (!method) {
                snprintf(reason, sizeof(reason), "method not found (%s%s)", method_name, signature);
                hook_set(id, JVA_HOOK_OFF, reason);
                return;
        }
        if (min_locals > 0 &&
            ((*jvmti)->GetMethodModifiers(jvmti, method, &modifiers) != JVMTI_ERROR_NONE ||
             (modifiers & 0x0008 /* ACC_STATIC */) ||
             (*jvmti)->GetMaxLocals(jvmti, method, &max_locals) != JVMTI_ERROR_NONE ||
             max_locals < min_locals)) {
                hook_set(id, JVA_HOOK_OFF, "method is static or has too few locals");
                return;
        }
        if (ret_class) {
                ref = (*env)->NewGlobalRef(env, klass);
                if (!ref) {
                        (*env)->ExceptionClear(env);
                        hook_set(id, JVA_HOOK_OFF, "NewGlobalRef failed");
                        return;
                }
                __atomic_store_n(ret_class, ref, __ATOMIC_RELEASE);
        }
        __atomic_store_n(ret_method, method, __ATOMIC_RELEASE);
        hook_set(id, jva_options_spill_enabled(&agent.options) ? JVA_HOOK_ON : JVA_HOOK_OFF,
                 NO_SPILL_MODE);
}

/* The aggregation map is never refused its first data page (getNumDataPages() == 0): Spark
 * fails the task when that one cannot be had, e.g. right after the fallback. */
static void resolve_bytes_map(jvmtiEnv *jvmti, JNIEnv *env, jclass klass)
{
        jmethodID pages;

        if (__atomic_load_n(&agent.acquire_new_page, __ATOMIC_ACQUIRE))
                return;
        pages = find_method(jvmti, klass, "getNumDataPages", "()I");
        if (!pages) {
                hook_set(HOOK_BYTES_MAP, JVA_HOOK_OFF, "method not found (getNumDataPages()I)");
                return;
        }
        __atomic_store_n(&agent.num_data_pages, pages, __ATOMIC_RELEASE);
        resolve_deny(jvmti, env, klass, HOOK_BYTES_MAP, "acquireNewPage", NEW_PAGE_SIGNATURE,
                     &agent.acquire_new_page, &agent.bytes_map, 0);
}

static void resolve_class(jvmtiEnv *jvmti, JNIEnv *env, jclass klass)
{
        char *signature = NULL;

        if ((*jvmti)->GetClassSignature(jvmti, klass, &signature, NULL) != JVMTI_ERROR_NONE)
                return;
        if (strncmp(signature, "Lorg/apache/spark/", 18) == 0) {
                if (strcmp(signature, CLASS_TMM) == 0)
                        resolve_acquire(jvmti, klass);
                else if (strcmp(signature, CLASS_CONSUMER) == 0)
                        resolve_consumer(jvmti, klass);
                else if (strcmp(signature, CLASS_UNSAFE_SORTER) == 0)
                        resolve_sorter(env, klass, HOOK_UNSAFE_SORTER);
                else if (strcmp(signature, CLASS_SHUFFLE_SORTER) == 0)
                        resolve_sorter(env, klass, HOOK_SHUFFLE_SORTER);
                else if (strcmp(signature, CLASS_SPILLABLE) == 0)
                        resolve_deny(jvmti, env, klass, HOOK_SPILLABLE, "maybeSpill",
                                     MAYBE_SPILL_SIGNATURE, &agent.maybe_spill, &agent.spillable,
                                     SLOT_CURRENT_MEMORY + 2);
                else if (strcmp(signature, CLASS_BYTES_MAP) == 0)
                        resolve_bytes_map(jvmti, env, klass);
                else if (strcmp(signature, CLASS_AGG_MAP) == 0)
                        resolve_deny(jvmti, env, klass, HOOK_AGG_MAP,
                                     "getAggregationBufferFromUnsafeRow", AGG_BUFFER_SIGNATURE,
                                     &agent.agg_buffer, NULL, 0);
        }
        (*jvmti)->Deallocate(jvmti, (unsigned char *)signature);
}

static void JNICALL on_class_prepare(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jclass klass)
{
        resolve_class(jvmti, env, klass);
}

/* ---- the breakpoint: the task thread asks for memory ---- */

/* The simple name of obj's class ("UnsafeExternalSorter"); "?" when unknown. */
static void class_simple_name(jvmtiEnv *jvmti, JNIEnv *env, jobject obj, char *buf, size_t size)
{
        jclass klass = (*env)->GetObjectClass(env, obj);
        char *signature = NULL;
        const char *begin;
        size_t len;

        snprintf(buf, size, "?");
        if (!klass ||
            (*jvmti)->GetClassSignature(jvmti, klass, &signature, NULL) != JVMTI_ERROR_NONE)
                return;
        begin = strrchr(signature, '/');
        begin = begin ? begin + 1 : signature + (signature[0] == 'L');
        len = strlen(begin);
        if (len > 0 && begin[len - 1] == ';')
                len--;
        snprintf(buf, size, "%.*s", (int)len, begin);
        (*jvmti)->Deallocate(jvmti, (unsigned char *)signature);
}

/* The pending exception, cleared, as one line for the log. */
static void take_exception(JNIEnv *env, jthrowable *ret_throwable, char *buf, size_t size)
{
        jthrowable throwable = (*env)->ExceptionOccurred(env);
        jclass klass;
        jmethodID to_string;
        jstring text;
        const char *chars;

        snprintf(buf, size, "unknown exception");
        *ret_throwable = throwable;
        if (!throwable)
                return;
        (*env)->ExceptionClear(env);
        klass = (*env)->FindClass(env, "java/lang/Throwable");
        to_string =
            klass ? (*env)->GetMethodID(env, klass, "toString", "()Ljava/lang/String;") : NULL;
        text = to_string ? (*env)->CallObjectMethod(env, throwable, to_string) : NULL;
        if ((*env)->ExceptionCheck(env)) {
                (*env)->ExceptionClear(env);
                return;
        }
        chars = text ? (*env)->GetStringUTFChars(env, text, NULL) : NULL;
        if (chars) {
                snprintf(buf, size, "%s", chars);
                (*env)->ReleaseStringUTFChars(env, text, chars);
        } else {
                (*env)->ExceptionClear(env);
        }
}

/* Fail the task, not the JVM: leave a RuntimeException (never an Error) with the spill's
 * exception as its cause pending in the task thread. */
static void throw_runtime_exception(JNIEnv *env, const char *message, jthrowable cause)
{
        jclass klass = (*env)->FindClass(env, "java/lang/RuntimeException");
        jmethodID init;
        jstring text;
        jobject exception;

        if (!klass)
                return; /* FindClass left its own exception pending */
        init =
            (*env)->GetMethodID(env, klass, "<init>", "(Ljava/lang/String;Ljava/lang/Throwable;)V");
        text = init ? (*env)->NewStringUTF(env, message) : NULL;
        exception = text ? (*env)->NewObject(env, klass, init, text, cause) : NULL;
        if (exception)
                (*env)->Throw(env, (jthrowable)exception);
}

static const char *reason_name(enum jva_reason reason)
{
        return reason == JVA_REASON_FORCE      ? "force-bytes"
               : reason == JVA_REASON_PERIODIC ? "periodic"
                                               : "pressure";
}

enum decision {
        SPILL_NONE = -1,
};

/* Which mode, if any, makes an operator holding `used` bytes spill now. fraction_floor:
 * allow-fraction of the execution memory in bytes (0: not in force). */
static int decide(uint64_t used, uint64_t fraction_floor, uint64_t *ret_reaction_start)
{
        const struct jva_options *o = &agent.options;
        uint64_t now, last;

        *ret_reaction_start = 0;
        if (used == 0 || used < o->min_spill_bytes)
                return SPILL_NONE;
        if (o->force_bytes && used >= o->force_bytes)
                return JVA_REASON_FORCE;
        if (o->periodic_bytes && used >= o->periodic_bytes)
                return JVA_REASON_PERIODIC;
        if (!((o->allow_bytes && used >= o->allow_bytes) ||
              (fraction_floor && used >= fraction_floor)) ||
            !__atomic_load_n(&agent.under_pressure, __ATOMIC_ACQUIRE))
                return SPILL_NONE;
        /* one pressure spill per cool-down across all task threads */
        now = jva_now_ns();
        last = __atomic_load_n(&agent.last_pressure_spill_ns, __ATOMIC_RELAXED);
        if (last && now - last < o->cooldown_ms * 1000000u)
                return SPILL_NONE;
        if (!__atomic_compare_exchange_n(&agent.last_pressure_spill_ns, &last, now, false,
                                         __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
                return SPILL_NONE;
        {
                uint64_t episode = __atomic_load_n(&agent.episode, __ATOMIC_RELAXED);
                uint64_t reacted = __atomic_load_n(&agent.reacted_episode, __ATOMIC_RELAXED);
                if (reacted != episode &&
                    __atomic_compare_exchange_n(&agent.reacted_episode, &reacted, episode, false,
                                                __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
                        *ret_reaction_start =
                            __atomic_load_n(&agent.pressure_since_ns, __ATOMIC_RELAXED);
        }
        return JVA_REASON_PRESSURE;
}

static void disable_spills(const char *why)
{
        if (!__atomic_exchange_n(&agent.spill_disabled, true, __ATOMIC_ACQ_REL))
                log_error("forced spills off for the rest of this JVM: %s", why);
}

/* The spill itself, in the task thread that asked for memory, like Spark's own
 * TaskMemoryManager.trySpillAndAcquire: under the manager's lock, trigger == the consumer. */
static void force_spill(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jobject consumer,
                        jobject manager, const char *name, jlong required, uint64_t used,
                        enum jva_reason reason, uint64_t reaction_start)
{
        jmethodID get_used = __atomic_load_n(&agent.get_used, __ATOMIC_ACQUIRE);
        jmethodID spill = __atomic_load_n(&agent.spill, __ATOMIC_ACQUIRE);
        jthrowable thrown = NULL;
        jlong after = (jlong)used;
        uint64_t t0, t1;
        char what[512], message[700];
        jvmtiError err;

        /* the TaskMemoryManager: given, or `this` of the acquireExecutionMemory frame */
        if (!manager) {
                err = (*jvmti)->GetLocalObject(jvmti, thread, 0, SLOT_THIS, &manager);
                if (err != JVMTI_ERROR_NONE || !manager) {
                        snprintf(what, sizeof(what), "GetLocalObject(this) failed: %s",
                                 jvmti_error_name(err));
                        disable_spills(what);
                        return;
                }
        }
        if ((*env)->MonitorEnter(env, manager) != JNI_OK) {
                (*env)->ExceptionClear(env);
                disable_spills("MonitorEnter(TaskMemoryManager) failed");
                return;
        }
        t0 = jva_now_ns();
        (*env)->CallLongMethod(env, consumer, spill, required, consumer);
        if ((*env)->ExceptionCheck(env))
                take_exception(env, &thrown, what, sizeof(what));
        else
                after = (*env)->CallLongMethod(env, consumer, get_used);
        t1 = jva_now_ns();
        if (!thrown && (*env)->ExceptionCheck(env))
                take_exception(env, &thrown, what, sizeof(what));
        (*env)->MonitorExit(env, manager);
        if ((*env)->ExceptionCheck(env))
                (*env)->ExceptionClear(env);

        if (thrown) {
                jva_stats_count_spill(&agent.stats, name, reason, 0, t1 - t0, 0, true);
                snprintf(message, sizeof(message),
                         "sparkshim-agent: forced spill of %s (%" PRIu64 " bytes) failed: %s", name,
                         used, what);
                log_error("forced spill of %s failed: %s", name, what);
                disable_spills("a forced spill threw; the task fails with a RuntimeException");
                throw_runtime_exception(env, message, thrown);
                return;
        }
        jva_stats_count_spill(&agent.stats, name, reason,
                              (uint64_t)after < used ? used - (uint64_t)after : 0, t1 - t0,
                              reaction_start ? t1 - reaction_start : 0, false);
        if (reaction_start)
                jva_stats_count_decision(&agent.stats, name, t0 - reaction_start);
        log_debug("forced spill of %s (%s): %" PRIu64 " -> %" PRId64 " bytes in %" PRIu64 " us",
                  name, reason_name(reason), used, (int64_t)after, (t1 - t0) / 1000);
}

/* Spark's page size (spark.buffer.pageSize or its default from the execution memory and
 * cores), asked once of the TaskMemoryManager at hand; 0 when unknown. */
static uint64_t page_size(jvmtiEnv *jvmti, JNIEnv *env, jthread thread)
{
        uint64_t size = __atomic_load_n(&agent.page_size, __ATOMIC_ACQUIRE);
        jmethodID method = __atomic_load_n(&agent.page_size_bytes, __ATOMIC_ACQUIRE);
        jobject manager = NULL;
        jlong v;

        if (size || !method)
                return size;
        if ((*jvmti)->GetLocalObject(jvmti, thread, 0, SLOT_THIS, &manager) != JVMTI_ERROR_NONE ||
            !manager)
                return 0;
        v = (*env)->CallLongMethod(env, manager, method);
        if ((*env)->ExceptionCheck(env)) {
                (*env)->ExceptionClear(env);
                __atomic_store_n(&agent.page_size_bytes, NULL, __ATOMIC_RELEASE);
                log_warn("TaskMemoryManager.pageSizeBytes() threw: deciding at every request");
                return 0;
        }
        if (v > 0) {
                __atomic_store_n(&agent.page_size, (uint64_t)v, __ATOMIC_RELEASE);
                log_info("Spark page size: %" PRId64 " bytes", (int64_t)v);
        }
        return v > 0 ? (uint64_t)v : 0;
}

/* The executor's execution memory for consumers of `consumer`'s MemoryMode, the base of
 * allow-fraction: MemoryManager.maxOnHeapStorageMemory() + onHeapExecutionMemoryUsed() (or
 * the off-heap pair), read under the MemoryManager's lock so that both come from one moment.
 * For UnifiedMemoryManager that is its maxHeapMemory (maxOffHeapMemory): the whole region
 * execution may take, storage included, which does not change while the executor runs; so it
 * is read once per mode. 0 when it cannot be read (allow-fraction then stays inactive, with
 * one log line). Never takes the TaskMemoryManager's lock, so it cannot invert Spark's
 * TaskMemoryManager -> MemoryManager lock order. */
static uint64_t execution_memory(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jobject consumer)
{
        static const char *const getters[2][2] = {
            {"maxOnHeapStorageMemory", "onHeapExecutionMemoryUsed"},
            {"maxOffHeapStorageMemory", "offHeapExecutionMemoryUsed"},
        };
        jobject manager = NULL, memory_manager, mode, mode_name;
        jclass klass;
        jfieldID field;
        jmethodID get_mode, name, first, second;
        const char *chars;
        unsigned off_heap = 0;
        jlong a, b;

        if (__atomic_load_n(&agent.execution_memory_off, __ATOMIC_ACQUIRE))
                return 0;
        /* the consumer's mode: MemoryConsumer.getMode().name() */
        klass = (*env)->GetObjectClass(env, consumer);
        get_mode =
            (*env)->GetMethodID(env, klass, "getMode", "()Lorg/apache/spark/memory/MemoryMode;");
        mode = get_mode ? (*env)->CallObjectMethod(env, consumer, get_mode) : NULL;
        klass = mode ? (*env)->GetObjectClass(env, mode) : NULL;
        name = klass ? (*env)->GetMethodID(env, klass, "name", "()Ljava/lang/String;") : NULL;
        mode_name = name ? (*env)->CallObjectMethod(env, mode, name) : NULL;
        chars = mode_name ? (*env)->GetStringUTFChars(env, mode_name, NULL) : NULL;
        if (chars) {
                off_heap = strcmp(chars, "OFF_HEAP") == 0;
                (*env)->ReleaseStringUTFChars(env, mode_name, chars);
        }
        if ((*env)->ExceptionCheck(env) || !chars)
                goto fail;
        if (__atomic_load_n(&agent.execution_memory[off_heap], __ATOMIC_ACQUIRE))
                return __atomic_load_n(&agent.execution_memory[off_heap], __ATOMIC_ACQUIRE);

        if ((*jvmti)->GetLocalObject(jvmti, thread, 0, SLOT_THIS, &manager) != JVMTI_ERROR_NONE ||
            !manager)
                goto fail;
        klass = (*env)->GetObjectClass(env, manager);
        field = (*env)->GetFieldID(env, klass, "memoryManager",
                                   "Lorg/apache/spark/memory/MemoryManager;");
        memory_manager = field ? (*env)->GetObjectField(env, manager, field) : NULL;
        klass = memory_manager ? (*env)->GetObjectClass(env, memory_manager) : NULL;
        first = klass ? (*env)->GetMethodID(env, klass, getters[off_heap][0], "()J") : NULL;
        second = first ? (*env)->GetMethodID(env, klass, getters[off_heap][1], "()J") : NULL;
        if (!second || (*env)->MonitorEnter(env, memory_manager) != JNI_OK)
                goto fail;
        a = (*env)->CallLongMethod(env, memory_manager, first);
        b = (*env)->ExceptionCheck(env) ? 0 : (*env)->CallLongMethod(env, memory_manager, second);
        (*env)->MonitorExit(env, memory_manager);
        if ((*env)->ExceptionCheck(env) || a < 0 || b < 0 || a + b <= 0)
                goto fail;
        __atomic_store_n(&agent.execution_memory[off_heap], (uint64_t)(a + b), __ATOMIC_RELEASE);
        log_info("execution memory (%s): %" PRId64 " bytes; allow-fraction=%g: operators holding "
                 ">= %" PRIu64 " bytes",
                 off_heap ? "off-heap" : "on-heap", (int64_t)(a + b), agent.options.allow_fraction,
                 (uint64_t)((double)(a + b) * agent.options.allow_fraction));
        pthread_mutex_lock(&agent.state_lock);
        agent.pressure.execution_memory_bytes = (uint64_t)(a + b);
        pthread_mutex_unlock(&agent.state_lock);
        return (uint64_t)(a + b);
fail:
        (*env)->ExceptionClear(env);
        if (!__atomic_exchange_n(&agent.execution_memory_off, true, __ATOMIC_ACQ_REL))
                log_warn("allow-fraction=%g: cannot read the executor's execution memory from "
                         "TaskMemoryManager.memoryManager: allow-fraction inactive",
                         agent.options.allow_fraction);
        return 0;
}

/* allow-fraction in bytes for this consumer, when it can matter (under pressure); else 0. */
static uint64_t fraction_floor(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jobject consumer)
{
        uint64_t total;

        if (!(agent.options.allow_fraction > 0) ||
            !__atomic_load_n(&agent.under_pressure, __ATOMIC_ACQUIRE))
                return 0;
        total = execution_memory(jvmti, env, thread, consumer);
        if (!total)
                return 0;
        total = (uint64_t)((double)total * agent.options.allow_fraction);
        return total ? total : 1;
}

/* Answer this acquireExecutionMemory call with 0 bytes granted: Spark then spills by itself
 * (maybeSpill spills the collection; the aggregation map falls back to sorting). The spill
 * runs after the agent returns, so `holding` (what the operator held when told) stands for
 * the bytes it releases. False when the JVM refused: deny-side hooks are then turned off. */
static bool deny(jvmtiEnv *jvmti, jthread thread, const char *name, uint64_t holding,
                 enum jva_reason reason, uint64_t reaction_start)
{
        jvmtiError err = (*jvmti)->ForceEarlyReturnLong(jvmti, thread, 0);
        char what[200];

        if (err != JVMTI_ERROR_NONE) {
                snprintf(what, sizeof(what), "ForceEarlyReturnLong failed: %s",
                         jvmti_error_name(err));
                if (!__atomic_exchange_n(&agent.deny_off, true, __ATOMIC_ACQ_REL)) {
                        log_error("%s: Spillable and aggregation-map spills off", what);
                        hook_set(HOOK_SPILLABLE, JVA_HOOK_OFF, what);
                        hook_set(HOOK_BYTES_MAP, JVA_HOOK_OFF, what);
                        hook_set(HOOK_AGG_MAP, JVA_HOOK_OFF, what);
                }
                return false;
        }
        jva_stats_count_denial(&agent.stats, name, reason, holding,
                               reaction_start ? jva_now_ns() - reaction_start : 0);
        if (reaction_start)
                jva_stats_count_decision(&agent.stats, name, jva_now_ns() - reaction_start);
        log_debug("%s holding %" PRIu64 " bytes (%s): 0 bytes granted, Spark spills it", name,
                  holding, reason_name(reason));
        return true;
}

enum kind {
        KIND_OTHER,     /* counted only */
        KIND_SORTER,    /* self-spill */
        KIND_SPILLABLE, /* 0 granted to maybeSpill */
        KIND_AGG_MAP,   /* 0 granted to the aggregation map's data page */
};

static bool frame_method_is(jvmtiEnv *jvmti, jthread thread, jint depth, jmethodID method)
{
        jmethodID at = NULL;
        jlocation location;

        return method &&
               (*jvmti)->GetFrameLocation(jvmti, thread, depth, &at, &location) ==
                   JVMTI_ERROR_NONE &&
               at == method;
}

/* What the consumer is, for the statistics (name) and for the way it can be made to spill;
 * *ret_holding: for a Spillable, maybeSpill's currentMemory. */
static enum kind classify(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jobject consumer,
                          char *name, size_t size, jlong *ret_holding)
{
        jclass spillable = __atomic_load_n(&agent.spillable, __ATOMIC_ACQUIRE);
        jclass bytes_map = __atomic_load_n(&agent.bytes_map, __ATOMIC_ACQUIRE);
        jmethodID maybe_spill = __atomic_load_n(&agent.maybe_spill, __ATOMIC_ACQUIRE);
        jmethodID new_page = __atomic_load_n(&agent.acquire_new_page, __ATOMIC_ACQUIRE);
        jmethodID agg_buffer = __atomic_load_n(&agent.agg_buffer, __ATOMIC_ACQUIRE);

        class_simple_name(jvmti, env, consumer, name, size);
        for (unsigned i = 0; i < 2; i++) {
                jclass klass = __atomic_load_n(&agent.sorters[i], __ATOMIC_ACQUIRE);
                if (klass && (*env)->IsInstanceOf(env, consumer, klass))
                        return KIND_SORTER;
        }
        if (spillable && (*env)->IsInstanceOf(env, consumer, spillable)) {
                if (frame_method_is(jvmti, thread, DEPTH_MAYBE_SPILL, maybe_spill) &&
                    (*jvmti)->GetLocalLong(jvmti, thread, DEPTH_MAYBE_SPILL, SLOT_CURRENT_MEMORY,
                                           ret_holding) == JVMTI_ERROR_NONE)
                        return KIND_SPILLABLE;
                return KIND_OTHER;
        }
        if (bytes_map && agg_buffer && (*env)->IsInstanceOf(env, consumer, bytes_map)) {
                jvmtiFrameInfo frames[AGG_STACK_DEPTH];
                jint n = 0;
                bool page = false, aggregation = false;

                if ((*jvmti)->GetStackTrace(jvmti, thread, 0, AGG_STACK_DEPTH, frames, &n) !=
                    JVMTI_ERROR_NONE)
                        return KIND_OTHER;
                for (jint i = 1; i < n; i++) {
                        page |= frames[i].method == new_page;
                        aggregation |= frames[i].method == agg_buffer;
                }
                if (!aggregation)
                        return KIND_OTHER;
                /* its pointer array growth is counted under this name but not refused: the
                 * map would stop growing for the rest of the task */
                snprintf(name, size, "%s", AGG_MAP_NAME);
                return page ? KIND_AGG_MAP : KIND_OTHER;
        }
        return KIND_OTHER;
}

/* True when the aggregation map has no data page yet (or it cannot be told): never refused. */
static bool first_page(JNIEnv *env, jobject consumer)
{
        jmethodID method = __atomic_load_n(&agent.num_data_pages, __ATOMIC_ACQUIRE);
        jint n = method ? (*env)->CallIntMethod(env, consumer, method) : 0;

        if ((*env)->ExceptionCheck(env)) {
                (*env)->ExceptionClear(env);
                return true;
        }
        return n <= 0;
}

static void on_acquire(jvmtiEnv *jvmti, JNIEnv *env, jthread thread)
{
        jlong required = 0, used = 0;
        jobject consumer = NULL;
        char name[JVA_NAME_MAX], what[512];
        uint64_t reaction_start, floor;
        jthrowable thrown;
        jmethodID get_used;
        jvmtiError err;
        enum kind kind;
        int reason;

        err = (*jvmti)->GetLocalLong(jvmti, thread, 0, SLOT_REQUIRED, &required);
        if (err == JVMTI_ERROR_NONE)
                err = (*jvmti)->GetLocalObject(jvmti, thread, 0, SLOT_CONSUMER, &consumer);
        if (err != JVMTI_ERROR_NONE) {
                snprintf(what, sizeof(what), "cannot read the arguments: %s",
                         jvmti_error_name(err));
                __atomic_store_n(&agent.acquire_off, true, __ATOMIC_RELEASE);
                hook_set(HOOK_ACQUIRE, JVA_HOOK_OFF, what);
                return;
        }
        if (!consumer)
                return;
        kind = classify(jvmti, env, thread, consumer, name, sizeof(name), &used);
        jva_stats_count_call(&agent.stats, name, required > 0 ? (uint64_t)required : 0);

        if (kind == KIND_OTHER || !jva_options_spill_enabled(&agent.options) ||
            __atomic_load_n(&agent.spill_disabled, __ATOMIC_ACQUIRE))
                return;
        if (kind != KIND_SORTER && __atomic_load_n(&agent.deny_off, __ATOMIC_ACQUIRE))
                return;
        get_used = __atomic_load_n(&agent.get_used, __ATOMIC_ACQUIRE);
        if (kind != KIND_SPILLABLE && !get_used)
                return;
        /* A sorter decides when it asks for a data page, i.e. when its pages are full: it also
         * asks for memory to grow its pointer array while its last page is nearly empty, and
         * spilling then would write a few records at a time. */
        if (kind == KIND_SORTER && (uint64_t)required < page_size(jvmti, env, thread))
                return;
        /* The aggregation map's first page is always granted: Spark fails the task when it
         * cannot have it ("failed to allocate the first page"), as right after a fallback or
         * for an aggregation without grouping keys. */
        if (kind == KIND_AGG_MAP && first_page(env, consumer))
                return;
        if (kind != KIND_SPILLABLE) {
                used = (*env)->CallLongMethod(env, consumer, get_used);
                if ((*env)->ExceptionCheck(env)) {
                        take_exception(env, &thrown, what, sizeof(what));
                        disable_spills(what);
                        return;
                }
        }
        log_debug("%s asks for %" PRId64 " bytes holding %" PRId64, name, (int64_t)required,
                  (int64_t)used);
        floor = fraction_floor(jvmti, env, thread, consumer);
        reason = decide(used > 0 ? (uint64_t)used : 0, floor, &reaction_start);
        if (reason == SPILL_NONE)
                return;
        if (kind == KIND_SORTER) {
                force_spill(jvmti, env, thread, consumer, NULL, name, required, (uint64_t)used,
                            (enum jva_reason)reason, reaction_start);
                return;
        }
        deny(jvmti, thread, name, (uint64_t)used, (enum jva_reason)reason, reaction_start);
}

/* A shot at a sorter's insertRecord under pressure: the sorter inserting this row spills if
 * it holds allow-bytes, and the breakpoints are cleared; they are cleared unused after
 * INSERT_SHOTS rows, or when the pressure ends. */
static void on_insert(jvmtiEnv *jvmti, JNIEnv *env, jthread thread)
{
        jmethodID get_used = __atomic_load_n(&agent.get_used, __ATOMIC_ACQUIRE);
        jobject consumer = NULL, manager;
        char name[JVA_NAME_MAX], what[512];
        uint64_t reaction_start;
        jthrowable thrown;
        jfieldID field;
        jlong used;
        int reason;

        if (!__atomic_load_n(&agent.insert_armed, __ATOMIC_ACQUIRE))
                return;
        if (__atomic_sub_fetch(&agent.insert_shots, 1, __ATOMIC_ACQ_REL) <= 0)
                insert_arm(false);
        if (!__atomic_load_n(&agent.under_pressure, __ATOMIC_ACQUIRE) ||
            __atomic_load_n(&agent.spill_disabled, __ATOMIC_ACQUIRE) || !get_used ||
            !__atomic_load_n(&agent.spill, __ATOMIC_ACQUIRE))
                return;
        if ((*jvmti)->GetLocalObject(jvmti, thread, 0, SLOT_THIS, &consumer) != JVMTI_ERROR_NONE ||
            !consumer)
                return;
        class_simple_name(jvmti, env, consumer, name, sizeof(name));
        used = (*env)->CallLongMethod(env, consumer, get_used);
        if ((*env)->ExceptionCheck(env)) {
                take_exception(env, &thrown, what, sizeof(what));
                disable_spills(what);
                return;
        }
        reason = decide(used > 0 ? (uint64_t)used : 0, 0, &reaction_start);
        if (reason == SPILL_NONE)
                return;
        insert_arm(false);
        field = __atomic_load_n(&agent.consumer_tmm, __ATOMIC_ACQUIRE);
        if (!field) {
                field = (*env)->GetFieldID(env, (*env)->GetObjectClass(env, consumer),
                                           "taskMemoryManager", CLASS_TMM);
                if (!field) {
                        (*env)->ExceptionClear(env);
                        __atomic_store_n(&agent.inserts[0], NULL, __ATOMIC_RELEASE);
                        __atomic_store_n(&agent.inserts[1], NULL, __ATOMIC_RELEASE);
                        hook_set(HOOK_INSERT, JVA_HOOK_OFF,
                                 "field not found (MemoryConsumer.taskMemoryManager)");
                        return;
                }
                __atomic_store_n(&agent.consumer_tmm, field, __ATOMIC_RELEASE);
        }
        manager = (*env)->GetObjectField(env, consumer, field);
        if (!manager) {
                (*env)->ExceptionClear(env);
                return;
        }
        log_debug("%s holding %" PRId64 " bytes at insertRecord under pressure", name, (int64_t)used);
        force_spill(jvmti, env, thread, consumer, manager, name, used, (uint64_t)used,
                    (enum jva_reason)reason, reaction_start);
}

static void JNICALL on_breakpoint(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jmethodID method,
                                  jlocation location)
{
        bool insert = method == __atomic_load_n(&agent.inserts[0], __ATOMIC_ACQUIRE) ||
                      method == __atomic_load_n(&agent.inserts[1], __ATOMIC_ACQUIRE);

        if (insert && !__atomic_load_n(&agent.insert_armed, __ATOMIC_ACQUIRE)) {
                (*jvmti)->ClearBreakpoint(jvmti, method, location);
                return;
        }
        if ((!insert && method != __atomic_load_n(&agent.acquire, __ATOMIC_ACQUIRE)) || in_hook ||
            __atomic_load_n(&agent.acquire_off, __ATOMIC_ACQUIRE))
                return;
        in_hook = true;
        if ((*env)->PushLocalFrame(env, 32) == JNI_OK) {
                if (insert)
                        on_insert(jvmti, env, thread);
                else
                        on_acquire(jvmti, env, thread);
                /* keeps a pending RuntimeException: PopLocalFrame may run with one */
                (*env)->PopLocalFrame(env, NULL);
        } else {
                (*env)->ExceptionClear(env);
        }
        in_hook = false;
}

/* ---- life cycle ---- */

/* records=N: Spark's own count threshold, as a system property that SparkConf picks up
 * (a value set in the job's own configuration wins). */
static void set_records_property(JNIEnv *env)
{
        char value[32];
        jclass system = (*env)->FindClass(env, "java/lang/System");
        jmethodID get = system ? (*env)->GetStaticMethodID(env, system, "getProperty",
                                                           "(Ljava/lang/String;)Ljava/lang/String;")
                               : NULL;
        jmethodID set = system ? (*env)->GetStaticMethodID(
                                     env, system, "setProperty",
                                     "(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;")
                               : NULL;
        jstring key = get && set ? (*env)->NewStringUTF(env, RECORDS_PROPERTY) : NULL;
        jobject old = key ? (*env)->CallStaticObjectMethod(env, system, get, key) : NULL;

        if ((*env)->ExceptionCheck(env) || !key) {
                (*env)->ExceptionClear(env);
                log_warn("records=%" PRIu64 ": cannot set %s", agent.options.records,
                         RECORDS_PROPERTY);
                return;
        }
        if (old) {
                log_info("records=%" PRIu64 ": %s is already set; left alone",
                         agent.options.records, RECORDS_PROPERTY);
                return;
        }
        snprintf(value, sizeof(value), "%" PRIu64, agent.options.records);
        (*env)->CallStaticObjectMethod(env, system, set, key, (*env)->NewStringUTF(env, value));
        if ((*env)->ExceptionCheck(env)) {
                (*env)->ExceptionClear(env);
                log_warn("records=%s: cannot set %s", value, RECORDS_PROPERTY);
                return;
        }
        log_info("records=%s: set %s", value, RECORDS_PROPERTY);
}

static void start_agent_thread(jvmtiEnv *jvmti, JNIEnv *env)
{
        jclass klass = (*env)->FindClass(env, "java/lang/Thread");
        jmethodID init =
            klass ? (*env)->GetMethodID(env, klass, "<init>", "(Ljava/lang/String;)V") : NULL;
        jstring name = init ? (*env)->NewStringUTF(env, "sparkshim-agent") : NULL;
        jobject thread = name ? (*env)->NewObject(env, klass, init, name) : NULL;
        jvmtiError err;

        if (!thread) {
                (*env)->ExceptionClear(env);
                log_warn("cannot create the agent thread: pressure is not sampled and stats "
                         "are written at exit only");
                return;
        }
        err =
            (*jvmti)->RunAgentThread(jvmti, thread, agent_thread, NULL, JVMTI_THREAD_NORM_PRIORITY);
        if (err != JVMTI_ERROR_NONE)
                log_warn("cannot start the agent thread: %s", jvmti_error_name(err));
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread)
{
        if (agent.options.records)
                set_records_property(env);
        start_agent_thread(jvmti, env);
}

static void finish(void)
{
        for (unsigned i = 0; i < HOOK_COUNT; i++) {
                struct jva_hook *hook = &agent.hooks[i];
                bool pending;

                pthread_mutex_lock(&agent.state_lock);
                pending = hook->state == JVA_HOOK_PENDING;
                if (pending) {
                        hook->state = JVA_HOOK_OFF;
                        snprintf(hook->reason, sizeof(hook->reason), "class never loaded");
                }
                pthread_mutex_unlock(&agent.state_lock);
                if (pending)
                        log_info("hook %s: off: class never loaded", hook->name);
        }
        sample_pressure(NULL);
        write_stats(true);
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *env)
{
        __atomic_store_n(&agent.stopping, true, __ATOMIC_RELEASE);
        if ((*jvmti)->RawMonitorEnter(jvmti, agent.wakeup) == JVMTI_ERROR_NONE) {
                (*jvmti)->RawMonitorNotifyAll(jvmti, agent.wakeup);
                (*jvmti)->RawMonitorExit(jvmti, agent.wakeup);
        }
        finish();
}

/* Prints the one line that tells why the JVM may not start. */
static jint refuse(const char *message)
{
        fprintf(stderr, "sparkshim-agent: error: %s\n", message);
        return JNI_ERR;
}

static jint parse_options(const char *options)
{
        struct jva_error error;
        char message[JVA_MESSAGE_MAX + JVA_PATH_MAX];
        struct stat st;
        uint64_t anon;
        int r;

        if (jva_options_parse(options, &agent.options, &error) < 0)
                return refuse(error.message);
        if (agent.options.cgroup[0]) {
                const char *problem = NULL;

                if (stat(agent.options.cgroup, &st) < 0)
                        problem = strerror(errno);
                else if (!S_ISDIR(st.st_mode))
                        problem = "not a directory";
                if (problem) {
                        snprintf(message, sizeof(message),
                                 "cgroup=%s: %s; allowed: the absolute path of an existing "
                                 "cgroup v2 directory",
                                 agent.options.cgroup, problem);
                        return refuse(message);
                }
        }
        jva_log_set_level(agent.options.log_level);

        agent.pressure.source = "proc";
        agent.pressure.path = "/proc/self/status";
        if (agent.options.cgroup[0]) {
                r = jva_read_anon(agent.options.cgroup, &anon);
                if (r == 0) {
                        agent.pressure.source = "cgroup";
                        agent.pressure.path = agent.options.cgroup;
                } else {
                        log_warn("cgroup=%s: no memory.stat anon (%s): using this process's "
                                 "RssAnon instead",
                                 agent.options.cgroup, strerror(-r));
                }
        }
        agent.pressure.threshold_bytes = agent.options.threshold_bytes;
        agent.psi.fd = -1;
        if (agent.options.psi_stall_ms) {
                r = jva_psi_open(&agent.psi, agent.pressure.source[0] == 'c' ? agent.options.cgroup
                                                                          : NULL,
                                 agent.options.psi_stall_ms * 1000, agent.options.psi_window_ms * 1000);
                if (r < 0) {
                        log_warn("psi-stall-ms=%" PRIu64 ": %s: %s: memory PSI off",
                                 agent.options.psi_stall_ms, agent.psi.path, strerror(-r));
                } else {
                        agent.pressure.psi_on = true;
                        agent.pressure.psi_path = agent.psi.path;
                        agent.pressure.psi_trigger = agent.psi.trigger;
                        agent.pressure.psi_stall_us =
                            agent.psi.trigger ? agent.psi.trigger_stall_us : agent.psi.stall_us;
                        agent.pressure.psi_window_us =
                            agent.psi.trigger ? agent.psi.trigger_window_us : agent.psi.window_us;
                        log_info("psi-stall-ms=%" PRIu64 ": %s, %s", agent.options.psi_stall_ms,
                                 agent.psi.path,
                                 agent.psi.trigger ? "kernel trigger" : "totals polled");
                }
        }
        sample_pressure(NULL);
        return JNI_OK;
}

static jint start(JavaVM *vm, char *options, bool live)
{
        jvmtiCapabilities potential, wanted;
        jvmtiEventCallbacks callbacks;
        jvmtiEnv *jvmti = NULL;
        jint rc;

        jva_stats_init(&agent.stats);
        pthread_mutex_init(&agent.state_lock, NULL);
        pthread_mutex_init(&agent.write_lock, NULL);
        rc = parse_options(options);
        if (rc != JNI_OK)
                return rc;
        if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || !jvmti) {
                log_error("no JVMTI 1.2 environment: agent off");
                return live ? JNI_ERR : JNI_OK;
        }
        agent.jvmti = jvmti;

        memset(&wanted, 0, sizeof(wanted));
        wanted.can_generate_breakpoint_events = 1;
        wanted.can_access_local_variables = 1;
        memset(&potential, 0, sizeof(potential));
        if ((*jvmti)->GetPotentialCapabilities(jvmti, &potential) != JVMTI_ERROR_NONE)
                memset(&potential, 0, sizeof(potential));
        /*
         * Breakpoints and local variable access cost every JIT-compiled method of the JVM a
         * little (measured: a Spark sort 1-4% slower with the capabilities and no breakpoint
         * hit, docs/benchmarks.md): taken only when a spill mode may need the hooks.
         */
        if (!jva_options_spill_enabled(&agent.options))
                log_info("no spill mode: hooks off, statistics only");
        else if (!potential.can_generate_breakpoint_events || !potential.can_access_local_variables)
                log_warn("%s: hooks off, statistics only",
                         live ? "the JVM grants breakpoints and local variables only to agents "
                                "loaded at start-up (-agentpath)"
                              : "breakpoints or local variables are not available");
        else if ((*jvmti)->AddCapabilities(jvmti, &wanted) != JVMTI_ERROR_NONE)
                log_warn("cannot add the breakpoint and local variable capabilities: hooks "
                         "off, statistics only");
        else
                agent.capabilities = true;
        /* "0 bytes granted" for Spillables and the aggregation map; without it only the
         * sorters can be made to spill (their hooks say why at class preparation) */
        if (agent.capabilities && potential.can_force_early_return) {
                memset(&wanted, 0, sizeof(wanted));
                wanted.can_force_early_return = 1;
                agent.early_return = (*jvmti)->AddCapabilities(jvmti, &wanted) == JVMTI_ERROR_NONE;
        }

        memset(&callbacks, 0, sizeof(callbacks));
        callbacks.VMInit = on_vm_init;
        callbacks.VMDeath = on_vm_death;
        callbacks.ClassPrepare = on_class_prepare;
        callbacks.Breakpoint = on_breakpoint;
        if ((*jvmti)->SetEventCallbacks(jvmti, &callbacks, sizeof(callbacks)) != JVMTI_ERROR_NONE ||
            (*jvmti)->CreateRawMonitor(jvmti, "sparkshim-agent", &agent.wakeup) !=
                JVMTI_ERROR_NONE) {
                log_error("cannot set event callbacks: agent off");
                return live ? JNI_ERR : JNI_OK;
        }
        if (!live)
                (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_CLASS_PREPARE, NULL);
        if (agent.capabilities)
                (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_BREAKPOINT,
                                                   NULL);
        log_info("loaded: force-bytes=%" PRIu64 " allow-bytes=%" PRIu64 " allow-fraction=%g"
                 " periodic=%" PRIu64 " threshold=%" PRIu64 " pressure source %s",
                 agent.options.force_bytes, agent.options.allow_bytes, agent.options.allow_fraction,
                 agent.options.periodic_bytes, agent.options.threshold_bytes, agent.pressure.path);
        return JNI_OK;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
        return start(vm, options, false);
}

/* Loaded into a running JVM (jcmd JVMTI.agent_load): resolve the classes Spark has already
 * prepared, then behave as if loaded at start-up. */
JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
        JNIEnv *env = NULL;
        jclass *classes = NULL;
        jint n = 0, status;
        jint rc = start(vm, options, true);

        if (rc != JNI_OK)
                return rc;
        if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK || !env)
                return JNI_ERR;
        if ((*agent.jvmti)->GetLoadedClasses(agent.jvmti, &n, &classes) == JVMTI_ERROR_NONE) {
                for (jint i = 0; i < n; i++) {
                        if ((*agent.jvmti)->GetClassStatus(agent.jvmti, classes[i], &status) ==
                                JVMTI_ERROR_NONE &&
                            (status & JVMTI_CLASS_STATUS_PREPARED))
                                resolve_class(agent.jvmti, env, classes[i]);
                }
                (*agent.jvmti)->Deallocate(agent.jvmti, (unsigned char *)classes);
        }
        on_vm_init(agent.jvmti, env, NULL);
        return JNI_OK;
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
        /* VMDeath wrote the final statistics already when the VM got that far; a JVM that
         * never reached VMInit has none worth writing over them */
        if (!agent.jvmti)
                return;
        write_stats(true);
}
