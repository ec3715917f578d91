/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JVMTI side of sparkshim-agent.
 *
 * Every forced spill runs in the operator's own task thread, at a point where unmodified
 * Spark already spills. The agent reaches those points through calls it inserts into Spark's
 * bytecode when the classes load (ClassFileLoadHook, classfile.h), into static native
 * methods of a small class it defines in the boot loader (sparkshim/agent/Hooks):
 *  - TaskMemoryManager.acquireExecutionMemory (per page or pointer array, not per row): a
 *    sorter (UnsafeExternalSorter, ShuffleExternalSorter) asking for a page spills itself
 *    under the TaskMemoryManager's lock, as Spark's own trySpillAndAcquire does
 *    (trigger == itself);
 *  - Spillable.maybeSpill's acquireMemory call (ExternalSorter, ExternalAppendOnlyMap) and
 *    BytesToBytesMap.acquireNewPage under UnsafeFixedWidthAggregationMap are answered
 *    "0 bytes granted" / "no page", so that Spark takes its own spill path: maybeSpill spills
 *    the collection, the aggregation falls back to sorting
 *    (destructAndCreateExternalSorter). Their spill() cannot be used: a Spillable ignores a
 *    self-triggered spill and BytesToBytesMap.spill frees nothing while it is written to;
 *  - the sorters' insertRecord (and UnsafeExternalSorter's insertKVRecord), behind a static
 *    volatile flag set only under pressure: a sorter that is not asking for memory spills at
 *    its next row rather than its next page.
 * Pool sizes are never touched; no spill is ever started from another thread. The agent
 * takes no JVMTI capability: breakpoints and local-variable access, what it used before,
 * slow every compiled method of the JVM (docs/benchmarks.md).
 *
 * The agent thread (RunAgentThread, woken by a raw monitor every 100 ms) only reads the
 * pressure source and rewrites the statistics file; hooks only read its results.
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
#include "classfile.h"
#include "psi.h"
#include "util.h"

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
/* UnsafeExternalSorter.insertKVRecord(Object keyBase, long, int, Object valueBase, long, int,
 * long prefix, boolean prefixIsNull): UnsafeKVExternalSorter's rows, as in the sort-based
 * aggregation that ObjectHashAggregateExec falls back to */
#define INSERT_KV_SIGNATURE "(Ljava/lang/Object;JILjava/lang/Object;JIJZ)V"
#define RECORDS_PROPERTY    "spark.shuffle.spill.numElementsForceSpillThreshold"
/* Why a hook is off when the options ask for no spill: the agent then changes no class. */
#define NO_SPILL_MODE "no spill mode in the options"

/* The hook class, defined in the boot loader so that every class loader sees it; the
 * insertRecord calls run only while its guard is true. */
#define HOOKS_CLASS "sparkshim/agent/Hooks"
#define HOOKS_GUARD "armed"

/* The name the statistics give a BytesToBytesMap that serves hash aggregation. */
#define AGG_MAP_NAME "UnsafeFixedWidthAggregationMap"

/* Hooks.newPage <- BytesToBytesMap.acquireNewPage [<- access$NNNN on Java 8 bytecode]
 * <- Location.append <- getAggregationBufferFromUnsafeRow, and acquireExecutionMemory's
 * deeper stack: frames looked at for the aggregation map. */
#define AGG_STACK_DEPTH 12

#define POLL_MS            100
#define HYSTERESIS_DIVISOR 20 /* leave pressure 5% below the threshold */

enum hook_id {
        HOOK_ACQUIRE,        /* call at TaskMemoryManager.acquireExecutionMemory */
        HOOK_CONSUMER,       /* MemoryConsumer.getUsed()J and spill(JMemoryConsumer)J */
        HOOK_UNSAFE_SORTER,  /* self-spill of UnsafeExternalSorter */
        HOOK_SHUFFLE_SORTER, /* self-spill of ShuffleExternalSorter */
        HOOK_SPILLABLE,      /* 0 granted to Spillable.maybeSpill */
        HOOK_BYTES_MAP,      /* no page for BytesToBytesMap.acquireNewPage ... */
        HOOK_AGG_MAP,        /* ... under UnsafeFixedWidthAggregationMap */
        HOOK_INSERT,         /* guarded calls at the sorters' insertRecord, under pressure */
        HOOK_COUNT,
};

/* The classes the agent edits at load, and which hook each edit serves. */
struct target {
        const char *name; /* internal name */
        struct jva_edit edit;
        enum hook_id hook;
};

static const struct target targets[] = {
    {"org/apache/spark/memory/TaskMemoryManager",
     {JVA_EDIT_CALL, "acquireExecutionMemory", ACQUIRE_SIGNATURE, "acquire", NULL, NULL},
     HOOK_ACQUIRE},
    {"org/apache/spark/util/collection/Spillable",
     {JVA_EDIT_REPLACE_CALL, "maybeSpill", MAYBE_SPILL_SIGNATURE, "spillableAcquire",
      "acquireMemory", "(J)J"},
     HOOK_SPILLABLE},
    {"org/apache/spark/unsafe/map/BytesToBytesMap",
     {JVA_EDIT_DENY, "acquireNewPage", NEW_PAGE_SIGNATURE, "newPage", NULL, NULL},
     HOOK_BYTES_MAP},
    {"org/apache/spark/util/collection/unsafe/sort/UnsafeExternalSorter",
     {JVA_EDIT_GUARDED, "insertRecord", INSERT_SIGNATURE_UNSAFE, "insertUnsafe", NULL, NULL},
     HOOK_INSERT},
    {"org/apache/spark/util/collection/unsafe/sort/UnsafeExternalSorter",
     {JVA_EDIT_GUARDED, "insertKVRecord", INSERT_KV_SIGNATURE, "insertUnsafeKV", NULL, NULL},
     HOOK_INSERT},
    {"org/apache/spark/shuffle/sort/ShuffleExternalSorter",
     {JVA_EDIT_GUARDED, "insertRecord", INSERT_SIGNATURE_SHUFFLE, "insertShuffle", NULL, NULL},
     HOOK_INSERT},
};
#define N_TARGETS ELEMENTSOF(targets)

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

        /* the hook class; instrument: classes are being edited as they load */
        bool instrument;
        char instrument_off[200]; /* why not, with a spill mode */
        jclass hooks_class;       /* global ref */
        jfieldID guard;

        /* set once at class preparation or first use, read by task threads (atomics) */
        jmethodID page_size_bytes; /* TaskMemoryManager.pageSizeBytes()J, may be NULL */
        uint64_t page_size;        /* its value, read at the first hook (0 = unknown) */
        jmethodID get_used, spill;
        jclass sorters[2]; /* global refs: UnsafeExternalSorter, ShuffleExternalSorter */
        jclass bytes_map;  /* global ref */
        jmethodID agg_buffer, num_data_pages;
        jmethodID acquire_memory;     /* MemoryConsumer.acquireMemory(J)J */
        jfieldID memory_threshold;    /* Spillable.myMemoryThreshold */
        uint64_t execution_memory[2]; /* allow-fraction's base, per MemoryMode; 0 = not read */

        /* atomics */
        bool execution_memory_off; /* it could not be read: allow-fraction inactive */
        bool spillable_off;        /* its threshold field is missing: pass through */
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

        /* the insertRecord calls */
        bool insert_armed;     /* the guard is (being) set */
        int64_t insert_shots;  /* rows left to look at before it is cleared */
        jfieldID consumer_tmm; /* MemoryConsumer.taskMemoryManager, found at the first use */
        bool heap_tried;

        /* max-spills: TaskMemoryManager.taskAttemptId, found at the first use (atomics) */
        jfieldID task_attempt;
        bool max_spills_off; /* the field is missing: no cap */
        bool max_spills_told;
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

static enum jva_hook_state hook_state(enum hook_id id)
{
        enum jva_hook_state state;

        pthread_mutex_lock(&agent.state_lock);
        state = agent.hooks[id].state;
        pthread_mutex_unlock(&agent.state_lock);
        return state;
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

static void insert_arm(JNIEnv *env, bool on);

/*
 * heap-threshold: the Java heap in use right after the last garbage collection, from
 * com.sun.management.GarbageCollectorMXBean.getLastGcInfo().getMemoryUsageAfterGc(), summed
 * over the heap pools (MemoryType.HEAP), read when the collectors' count has grown. The pools'
 * own getCollectionUsage() is not used: on JDK 17 G1 updates the old generation's only at
 * mixed and full collections, so Spark's pages living there go unseen for a whole job.
 * Agent thread only, inside a local frame. false, with one log line, when the JVM does not
 * offer these beans (another vendor's JVM).
 */
/* The JNI classes and methods the heap source uses; false when one is missing. */
struct heap_lookup {
        jclass factory, list_class, pool_class, type_class, gc_class, runtime_class;
        jmethodID get_pools, get_gcs, to_array, get_type, get_name, get_runtime, max_memory;
        jfieldID heap_field;
};

static bool heap_lookup(JNIEnv *env, struct heap_lookup *l)
{
        jclass info_class, map_class, usage_class;

        l->factory = (*env)->FindClass(env, "java/lang/management/ManagementFactory");
        l->list_class = (*env)->FindClass(env, "java/util/List");
        l->pool_class = (*env)->FindClass(env, "java/lang/management/MemoryPoolMXBean");
        l->type_class = (*env)->FindClass(env, "java/lang/management/MemoryType");
        l->gc_class = (*env)->FindClass(env, "com/sun/management/GarbageCollectorMXBean");
        info_class = (*env)->FindClass(env, "com/sun/management/GcInfo");
        map_class = (*env)->FindClass(env, "java/util/Map");
        usage_class = (*env)->FindClass(env, "java/lang/management/MemoryUsage");
        l->runtime_class = (*env)->FindClass(env, "java/lang/Runtime");
        if (!l->factory || !l->list_class || !l->pool_class || !l->type_class || !l->gc_class ||
            !info_class || !map_class || !usage_class || !l->runtime_class)
                return false;
        l->get_pools = (*env)->GetStaticMethodID(env, l->factory, "getMemoryPoolMXBeans",
                                                 "()Ljava/util/List;");
        l->get_gcs = (*env)->GetStaticMethodID(env, l->factory, "getGarbageCollectorMXBeans",
                                               "()Ljava/util/List;");
        l->to_array = (*env)->GetMethodID(env, l->list_class, "toArray", "()[Ljava/lang/Object;");
        l->get_type = (*env)->GetMethodID(env, l->pool_class, "getType",
                                          "()Ljava/lang/management/MemoryType;");
        l->get_name = (*env)->GetMethodID(env, l->pool_class, "getName", "()Ljava/lang/String;");
        l->heap_field = (*env)->GetStaticFieldID(env, l->type_class, "HEAP",
                                                 "Ljava/lang/management/MemoryType;");
        l->get_runtime =
            (*env)->GetStaticMethodID(env, l->runtime_class, "getRuntime", "()Ljava/lang/Runtime;");
        l->max_memory = (*env)->GetMethodID(env, l->runtime_class, "maxMemory", "()J");
        agent.gc_count = (*env)->GetMethodID(env, l->gc_class, "getCollectionCount", "()J");
        agent.gc_last_info =
            (*env)->GetMethodID(env, l->gc_class, "getLastGcInfo", "()Lcom/sun/management/GcInfo;");
        agent.gc_info_end = (*env)->GetMethodID(env, info_class, "getEndTime", "()J");
        agent.gc_info_after =
            (*env)->GetMethodID(env, info_class, "getMemoryUsageAfterGc", "()Ljava/util/Map;");
        agent.map_get =
            (*env)->GetMethodID(env, map_class, "get", "(Ljava/lang/Object;)Ljava/lang/Object;");
        agent.usage_used = (*env)->GetMethodID(env, usage_class, "getUsed", "()J");
        return l->get_pools && l->get_gcs && l->to_array && l->get_type && l->get_name &&
               l->heap_field && l->get_runtime && l->max_memory && agent.gc_count &&
               agent.gc_last_info && agent.gc_info_end && agent.gc_info_after && agent.map_get &&
               agent.usage_used;
}

/* The names of the heap's memory pools into names; their number, or -1 on an exception. */
static jint heap_pool_names(JNIEnv *env, const struct heap_lookup *l, jobjectArray pools,
                            jobject heap_type, jobjectArray names)
{
        jint n = (*env)->GetArrayLength(env, pools), k = 0;

        for (jint i = 0; i < n; i++) {
                jobject pool = (*env)->GetObjectArrayElement(env, pools, i);
                jobject type = pool ? (*env)->CallObjectMethod(env, pool, l->get_type) : NULL;
                jobject name = type && (*env)->IsSameObject(env, type, heap_type)
                                   ? (*env)->CallObjectMethod(env, pool, l->get_name)
                                   : NULL;

                if ((*env)->ExceptionCheck(env))
                        return -1;
                if (name)
                        (*env)->SetObjectArrayElement(env, names, k++, name);
        }
        return k;
}

static bool heap_init(JNIEnv *env)
{
        struct heap_lookup l;
        jobject pools_list, gcs_list, heap_type, runtime;
        jobjectArray pools, gcs, names;
        jint n, k;
        jlong max;

        if (!heap_lookup(env, &l))
                goto fail;
        runtime = (*env)->CallStaticObjectMethod(env, l.runtime_class, l.get_runtime);
        max = runtime ? (*env)->CallLongMethod(env, runtime, l.max_memory) : 0;
        heap_type = (*env)->GetStaticObjectField(env, l.type_class, l.heap_field);
        pools_list = (*env)->CallStaticObjectMethod(env, l.factory, l.get_pools);
        pools = pools_list ? (*env)->CallObjectMethod(env, pools_list, l.to_array) : NULL;
        gcs_list = (*env)->CallStaticObjectMethod(env, l.factory, l.get_gcs);
        gcs = gcs_list ? (*env)->CallObjectMethod(env, gcs_list, l.to_array) : NULL;
        if ((*env)->ExceptionCheck(env) || !pools || !gcs || !heap_type || max <= 0)
                goto fail;
        n = (*env)->GetArrayLength(env, gcs);
        for (jint i = 0; i < n; i++) {
                jobject gc = (*env)->GetObjectArrayElement(env, gcs, i);
                if (!gc || !(*env)->IsInstanceOf(env, gc, l.gc_class)) {
                        log_warn("heap-threshold: a garbage collector bean is not a "
                                 "com.sun.management.GarbageCollectorMXBean: off");
                        return false;
                }
        }
        names = (*env)->NewObjectArray(env, (*env)->GetArrayLength(env, pools),
                                       (*env)->FindClass(env, "java/lang/String"), NULL);
        if (!names)
                goto fail;
        k = heap_pool_names(env, &l, pools, heap_type, names);
        if (k < 0)
                goto fail;
        if (k == 0 || n == 0) {
                log_warn("heap-threshold: no heap memory pool or no garbage collector bean: off");
                return false;
        }
        agent.heap_pool_names = (*env)->NewGlobalRef(env, names);
        agent.gc_beans = (*env)->NewGlobalRef(env, gcs);
        if (!agent.heap_pool_names || !agent.gc_beans)
                goto fail;
        pthread_mutex_lock(&agent.state_lock);
        agent.pressure.heap_max_bytes = (uint64_t)max;
        agent.pressure.heap_threshold_bytes =
            (uint64_t)((double)max * agent.options.heap_threshold);
        pthread_mutex_unlock(&agent.state_lock);
        log_info("heap-threshold=%.3f: %" PRIu64 " bytes of a %" PRId64 " byte heap in use after "
                 "a collection (%d heap pools, %d collectors)",
                 agent.options.heap_threshold, agent.pressure.heap_threshold_bytes, (int64_t)max,
                 (int)k, (int)n);
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
/* The heap source, set up at its first use: the heap in use after the last collection. */
static bool heap_poll(JNIEnv *env, uint64_t *heap)
{
        bool known = false;

        if (!env)
                return false;
        if (agent.options.heap_threshold > 0 && !agent.heap_tried) {
                agent.heap_tried = true;
                if ((*env)->PushLocalFrame(env, 64) == JNI_OK) {
                        bool ok = heap_init(env);
                        (*env)->PopLocalFrame(env, NULL);
                        pthread_mutex_lock(&agent.state_lock);
                        agent.pressure.heap_on = ok;
                        pthread_mutex_unlock(&agent.state_lock);
                }
        }
        if (agent.gc_beans && (*env)->PushLocalFrame(env, 64) == JNI_OK) {
                known = heap_after_gc(env, heap);
                (*env)->PopLocalFrame(env, NULL);
        }
        return known;
}

/* A reading against its threshold, with hysteresis: updates *over, counts crossings. */
static void cross(uint64_t value, uint64_t threshold, bool *over, uint64_t *crossings)
{
        if (!*over && value >= threshold) {
                *over = true;
                (*crossings)++;
        } else if (*over && value < threshold - threshold / HYSTERESIS_DIVISOR) {
                *over = false;
        }
}

/* Under state_lock: the three sources' readings into agent.pressure; true when over. */
static bool pressure_update_locked(int r, uint64_t anon, int psi_r, bool heap_known, uint64_t heap,
                                   uint64_t now)
{
        struct jva_pressure *ps = &agent.pressure;
        uint64_t threshold = agent.options.threshold_bytes;

        if (r < 0) {
                if (ps->read_errors++ == 0)
                        log_warn("pressure: cannot read %s: %s", ps->path, strerror(-r));
        } else {
                ps->anon_bytes = anon;
                if (anon > ps->peak_anon_bytes)
                        ps->peak_anon_bytes = anon;
                if (threshold)
                        cross(anon, threshold, &ps->anon_over, &ps->crossings);
        }
        if (ps->psi_on) {
                if (psi_r < 0 && psi_r != -EINTR) {
                        log_warn("psi: %s: %s: off", agent.psi.path, strerror(-psi_r));
                        jva_psi_close(&agent.psi);
                        ps->psi_on = false;
                }
                ps->psi_events = agent.psi.events;
                ps->psi_over = now < agent.psi_over_until_ns;
        }
        if (heap_known) {
                ps->heap_after_gc_bytes = heap;
                if (heap > ps->peak_heap_after_gc_bytes)
                        ps->peak_heap_after_gc_bytes = heap;
                cross(heap, ps->heap_threshold_bytes, &ps->heap_over, &ps->heap_crossings);
        }
        return ps->anon_over || ps->psi_over || ps->heap_over;
}

static void sample_pressure(JNIEnv *env)
{
        uint64_t anon = 0, threshold = agent.options.threshold_bytes, heap = 0;
        uint64_t now = jva_now_ns(), heap_threshold;
        int r = jva_read_anon(agent.pressure.source[0] == 'c' ? agent.options.cgroup : NULL, &anon);
        bool entered = false, left = false, fired = false, heap_known, over;
        int psi_r = 0;

        if (agent.psi.fd >= 0) {
                psi_r = jva_psi_poll(&agent.psi, &fired);
                if (fired)
                        agent.psi_over_until_ns = now + agent.options.psi_window_ms * 1000000u;
        }
        heap_known = heap_poll(env, &heap);

        pthread_mutex_lock(&agent.state_lock);
        over = pressure_update_locked(r, anon, psi_r, heap_known, heap, now);
        heap_threshold = agent.pressure.heap_threshold_bytes;
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
                        insert_arm(env, true);
                log_debug("pressure: on (anon %" PRIu64 "/%" PRIu64
                          ", psi %s, heap after GC %" PRIu64 "/%" PRIu64 ")",
                          anon, threshold, fired ? "event" : "-", heap, heap_threshold);
        } else if (left) {
                __atomic_store_n(&agent.under_pressure, false, __ATOMIC_RELEASE);
                if (env)
                        insert_arm(env, false);
                log_debug("pressure: off (anon %" PRIu64 ", heap after GC %" PRIu64 ")", anon,
                          heap);
        } else if (over && env && !__atomic_load_n(&agent.spill_disabled, __ATOMIC_ACQUIRE) &&
                   !__atomic_load_n(&agent.insert_armed, __ATOMIC_ACQUIRE) &&
                   __atomic_load_n(&agent.reacted_episode, __ATOMIC_ACQUIRE) !=
                       __atomic_load_n(&agent.episode, __ATOMIC_ACQUIRE)) {
                /* The episode's shots went to sorters below allow-bytes (they were small when
                 * the threshold was crossed): look again until one has spilled, rather than
                 * wait for a sorter's next page request, seconds later. After that first
                 * spill the sorters are decided on at their page requests, as before. */
                insert_arm(env, true);
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

/* ---- editing classes as they load, resolving at class preparation ---- */

/* Why the edited hooks are off when the agent does not instrument. */
static const char *instrument_off_reason(void)
{
        return jva_options_spill_enabled(&agent.options) ? agent.instrument_off : NO_SPILL_MODE;
}

/* Rows the insertRecord calls look at per arming before the guard is cleared unused (each
 * row then costs its task thread a native call and a getUsed()): enough to meet every
 * sorter of the executor's running tasks. */
#define INSERT_SHOTS 256

/* Set the guard of the insertRecord calls (on) or clear it. From the agent thread when
 * pressure starts and ends, from a task thread after a spill or the last shot. */
static void insert_arm(JNIEnv *env, bool on)
{
        if (on)
                __atomic_store_n(&agent.insert_shots, INSERT_SHOTS, __ATOMIC_RELEASE);
        if (__atomic_exchange_n(&agent.insert_armed, on, __ATOMIC_ACQ_REL) == on)
                return;
        if (agent.hooks_class && agent.guard)
                (*env)->SetStaticBooleanField(env, agent.hooks_class, agent.guard,
                                              on ? JNI_TRUE : JNI_FALSE);
}

/*
 * ClassFileLoadHook: the classes of targets[] get their calls into the hook class. An edit
 * that cannot be made (another Spark, a method renamed) turns its hook off and leaves the
 * method alone; the class loads either way.
 */
static void JNICALL on_class_file_load(jvmtiEnv *jvmti, JNIEnv *env, jclass redefined,
                                       jobject loader, const char *name, jobject domain, jint len,
                                       const unsigned char *data, jint *ret_len,
                                       unsigned char **ret_data)
{
        static const struct jva_hook_class hooks = {.name = HOOKS_CLASS, .guard = HOOKS_GUARD};
        struct jva_edit edits[N_TARGETS];
        struct jva_edit_result results[N_TARGETS];
        const struct target *mine[N_TARGETS];
        unsigned n = 0;
        uint8_t *edited = NULL;
        size_t edited_len = 0;
        unsigned char *copy;
        int r;

        if (!name || redefined || strncmp(name, "org/apache/spark/", 17) != 0)
                return;
        for (size_t i = 0; i < N_TARGETS; i++) {
                if (strcmp(name, targets[i].name) != 0)
                        continue;
                if (targets[i].hook == HOOK_INSERT && !agent.options.allow_bytes) {
                        hook_set(HOOK_INSERT, JVA_HOOK_OFF, "no allow-bytes in the options");
                        continue;
                }
                mine[n] = &targets[i];
                edits[n++] = targets[i].edit;
        }
        if (n == 0)
                return;
        r = jva_class_edit(data, (size_t)len, &hooks, edits, results, n, &edited, &edited_len);
        if (r < 0) {
                char reason[160];

                snprintf(reason, sizeof(reason), "cannot read the class file of %s: %s", name,
                         strerror(-r));
                for (unsigned i = 0; i < n; i++)
                        hook_set(mine[i]->hook, JVA_HOOK_OFF, reason);
                return;
        }
        if (r > 0) {
                if ((*jvmti)->Allocate(jvmti, (jlong)edited_len, &copy) != JVMTI_ERROR_NONE) {
                        free(edited);
                        for (unsigned i = 0; i < n; i++)
                                hook_set(mine[i]->hook, JVA_HOOK_OFF,
                                         "out of memory editing the class");
                        return;
                }
                memcpy(copy, edited, edited_len);
                free(edited);
                *ret_data = copy;
                *ret_len = (jint)edited_len;
        }
        /* the edits made first: one edited insert method is enough to keep that hook on */
        for (unsigned i = 0; i < n; i++)
                if (results[i].status == 0) {
                        log_debug("%s: %s%s edited", name, edits[i].method, edits[i].descriptor);
                        hook_set(mine[i]->hook, JVA_HOOK_ON, NULL);
                }
        for (unsigned i = 0; i < n; i++) {
                if (results[i].status == 0)
                        continue;
                if (mine[i]->hook != HOOK_INSERT || hook_state(HOOK_INSERT) != JVA_HOOK_ON)
                        hook_set(mine[i]->hook, JVA_HOOK_OFF, results[i].reason);
                else
                        log_info("%s: %s", name, results[i].reason);
        }
}

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

/* An edited hook whose class is prepared: off with the reason when the agent does not edit
 * classes; off when its class got past the editor (loaded before the agent started). */
static void prepared(enum hook_id id)
{
        if (!__atomic_load_n(&agent.instrument, __ATOMIC_ACQUIRE)) {
                hook_set(id, JVA_HOOK_OFF, instrument_off_reason());
                return;
        }
        if (hook_state(id) == JVA_HOOK_PENDING)
                hook_set(id, JVA_HOOK_OFF, "class loaded before the agent could edit it");
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

/* A global ref to klass in *ret (once); false when it cannot be had. */
static bool keep_class(JNIEnv *env, jclass klass, jclass *ret, enum hook_id id)
{
        jclass ref;

        if (__atomic_load_n(ret, __ATOMIC_ACQUIRE))
                return true;
        ref = (*env)->NewGlobalRef(env, klass);
        if (!ref) {
                (*env)->ExceptionClear(env);
                hook_set(id, JVA_HOOK_OFF, "NewGlobalRef failed");
                return false;
        }
        __atomic_store_n(ret, ref, __ATOMIC_RELEASE);
        return true;
}

static void resolve_sorter(JNIEnv *env, jclass klass, enum hook_id id)
{
        if (!keep_class(env, klass, &agent.sorters[id == HOOK_UNSAFE_SORTER ? 0 : 1], id))
                return;
        if (__atomic_load_n(&agent.instrument, __ATOMIC_ACQUIRE))
                hook_set(id, JVA_HOOK_ON, NULL);
        else
                hook_set(id, JVA_HOOK_OFF, instrument_off_reason());
        prepared(HOOK_INSERT);
}

/* The aggregation map is never refused its first data page (getNumDataPages() == 0): Spark
 * fails the task when that one cannot be had, e.g. right after the fallback. */
static void resolve_bytes_map(jvmtiEnv *jvmti, JNIEnv *env, jclass klass)
{
        jmethodID pages = find_method(jvmti, klass, "getNumDataPages", "()I");

        if (!pages) {
                hook_set(HOOK_BYTES_MAP, JVA_HOOK_OFF, "method not found (getNumDataPages()I)");
                return;
        }
        __atomic_store_n(&agent.num_data_pages, pages, __ATOMIC_RELEASE);
        if (keep_class(env, klass, &agent.bytes_map, HOOK_BYTES_MAP))
                prepared(HOOK_BYTES_MAP);
}

static void resolve_agg_map(jvmtiEnv *jvmti, jclass klass)
{
        jmethodID method;

        if (!__atomic_load_n(&agent.instrument, __ATOMIC_ACQUIRE)) {
                hook_set(HOOK_AGG_MAP, JVA_HOOK_OFF, instrument_off_reason());
                return;
        }
        method =
            find_method(jvmti, klass, "getAggregationBufferFromUnsafeRow", AGG_BUFFER_SIGNATURE);
        if (!method) {
                hook_set(HOOK_AGG_MAP, JVA_HOOK_OFF,
                         "method not found (getAggregationBufferFromUnsafeRow" AGG_BUFFER_SIGNATURE
                         ")");
                return;
        }
        __atomic_store_n(&agent.agg_buffer, method, __ATOMIC_RELEASE);
        hook_set(HOOK_AGG_MAP, JVA_HOOK_ON, NULL);
}

static void resolve_class(jvmtiEnv *jvmti, JNIEnv *env, jclass klass)
{
        char *signature = NULL;

        if ((*jvmti)->GetClassSignature(jvmti, klass, &signature, NULL) != JVMTI_ERROR_NONE)
                return;
        if (strncmp(signature, "Lorg/apache/spark/", 18) == 0) {
                if (strcmp(signature, CLASS_TMM) == 0) {
                        __atomic_store_n(&agent.page_size_bytes,
                                         find_method(jvmti, klass, "pageSizeBytes", "()J"),
                                         __ATOMIC_RELEASE);
                        prepared(HOOK_ACQUIRE);
                } else if (strcmp(signature, CLASS_CONSUMER) == 0) {
                        resolve_consumer(jvmti, klass);
                } else if (strcmp(signature, CLASS_UNSAFE_SORTER) == 0) {
                        resolve_sorter(env, klass, HOOK_UNSAFE_SORTER);
                } else if (strcmp(signature, CLASS_SHUFFLE_SORTER) == 0) {
                        resolve_sorter(env, klass, HOOK_SHUFFLE_SORTER);
                } else if (strcmp(signature, CLASS_SPILLABLE) == 0) {
                        prepared(HOOK_SPILLABLE);
                } else if (strcmp(signature, CLASS_BYTES_MAP) == 0) {
                        resolve_bytes_map(jvmti, env, klass);
                } else if (strcmp(signature, CLASS_AGG_MAP) == 0) {
                        resolve_agg_map(jvmti, klass);
                }
        }
        (*jvmti)->Deallocate(jvmti, (unsigned char *)signature);
}

static void JNICALL on_class_prepare(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jclass klass)
{
        resolve_class(jvmti, env, klass);
}

/* ---- the hooks: a task thread asks for memory, or inserts a row under pressure ---- */

/* Set while this thread runs a hook: Spark re-enters acquireExecutionMemory from spill()
 * (reset() allocates a fresh pointer array), and that nested call must pass untouched. */
static __thread bool in_hook;

/* The simple name of obj's class ("UnsafeExternalSorter"); "?" when unknown. */
static void class_simple_name(JNIEnv *env, jobject obj, char *buf, size_t size)
{
        jvmtiEnv *jvmti = agent.jvmti;
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
        SPILL_CAPPED = -2, /* it would spill, but its task has had max-spills */
};

/* The forced spills of the task running on this thread (a task runs in one thread, and a
 * thread runs one task at a time): started again when the thread's task attempt changes. */
static __thread struct {
        jlong task;
        uint64_t forced;
} this_task = {.task = -1};

/*
 * Has the task of `manager` had max-spills forced spills? Also makes it this thread's task.
 * Every forced spill is one more file for the task's operator to merge at its end, and the
 * merge holds buffers for all of them at once (about 3 MiB each for a sort): past the cap the
 * task's operators are left to Spark, so that the agent cannot make a merge run out of heap.
 */
static bool task_at_cap(JNIEnv *env, jobject manager)
{
        jfieldID field = __atomic_load_n(&agent.task_attempt, __ATOMIC_ACQUIRE);
        jlong task;

        if (!agent.options.max_spills || !manager ||
            __atomic_load_n(&agent.max_spills_off, __ATOMIC_ACQUIRE))
                return false;
        if (!field) {
                field = (*env)->GetFieldID(env, (*env)->GetObjectClass(env, manager),
                                           "taskAttemptId", "J");
                if (!field) {
                        (*env)->ExceptionClear(env);
                        if (!__atomic_exchange_n(&agent.max_spills_off, true, __ATOMIC_ACQ_REL))
                                log_warn("max-spills: field not found "
                                         "(TaskMemoryManager.taskAttemptId): no cap");
                        return false;
                }
                __atomic_store_n(&agent.task_attempt, field, __ATOMIC_RELEASE);
        }
        task = (*env)->GetLongField(env, manager, field);
        if (task != this_task.task) {
                this_task.task = task;
                this_task.forced = 0;
        }
        return this_task.forced >= agent.options.max_spills;
}

/* A spill was forced (or a denial made) in this thread's task. */
static void task_count_forced(void)
{
        this_task.forced++;
}

/* What a hook does with SPILL_CAPPED: count it; say it once per JVM. */
static void count_capped(const char *name, uint64_t used)
{
        jva_stats_count_capped(&agent.stats, name);
        if (!__atomic_exchange_n(&agent.max_spills_told, true, __ATOMIC_ACQ_REL))
                log_warn("task %" PRId64 " has had max-spills=%" PRIu64
                         " forced spills: its operators are left to Spark (%s holding %" PRIu64
                         " bytes; counted as \"capped\")",
                         (int64_t)this_task.task, agent.options.max_spills, name, used);
}

/* Which mode, if any, makes an operator holding `used` bytes spill now; SPILL_CAPPED when one
 * would but `capped` (task_at_cap). fraction_floor: allow-fraction of the execution memory in
 * bytes (0: not in force). */
static int decide(uint64_t used, uint64_t fraction_floor, bool capped, uint64_t *ret_reaction_start)
{
        const struct jva_options *o = &agent.options;
        uint64_t now, last;

        *ret_reaction_start = 0;
        if (used == 0 || used < o->min_spill_bytes)
                return SPILL_NONE;
        if (o->force_bytes && used >= o->force_bytes)
                return capped ? SPILL_CAPPED : JVA_REASON_FORCE;
        if (o->periodic_bytes && used >= o->periodic_bytes)
                return capped ? SPILL_CAPPED : JVA_REASON_PERIODIC;
        if (!((o->allow_bytes && used >= o->allow_bytes) ||
              (fraction_floor && used >= fraction_floor)) ||
            !__atomic_load_n(&agent.under_pressure, __ATOMIC_ACQUIRE))
                return SPILL_NONE;
        /* before the cool-down and the episode's reaction are taken */
        if (capped)
                return SPILL_CAPPED;
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
static void force_spill(JNIEnv *env, jobject consumer, jobject manager, const char *name,
                        jlong required, uint64_t used, enum jva_reason reason,
                        uint64_t reaction_start)
{
        jmethodID get_used = __atomic_load_n(&agent.get_used, __ATOMIC_ACQUIRE);
        jmethodID spill = __atomic_load_n(&agent.spill, __ATOMIC_ACQUIRE);
        jthrowable thrown = NULL;
        jlong after = (jlong)used;
        uint64_t t0, t1;
        char what[512], message[700];

        if ((*env)->MonitorEnter(env, manager) != JNI_OK) {
                (*env)->ExceptionClear(env);
                disable_spills("MonitorEnter(TaskMemoryManager) failed");
                return;
        }
        task_count_forced();
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
static uint64_t page_size(JNIEnv *env, jobject manager)
{
        uint64_t size = __atomic_load_n(&agent.page_size, __ATOMIC_ACQUIRE);
        jmethodID method = __atomic_load_n(&agent.page_size_bytes, __ATOMIC_ACQUIRE);
        jlong v;

        if (size || !method)
                return size;
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
static uint64_t execution_memory(JNIEnv *env, jobject manager, jobject consumer)
{
        static const char *const getters[2][2] = {
            {"maxOnHeapStorageMemory", "onHeapExecutionMemoryUsed"},
            {"maxOffHeapStorageMemory", "offHeapExecutionMemoryUsed"},
        };
        jobject memory_manager, mode, mode_name;
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
static uint64_t fraction_floor(JNIEnv *env, jobject manager, jobject consumer)
{
        uint64_t total;

        if (!manager || !(agent.options.allow_fraction > 0) ||
            !__atomic_load_n(&agent.under_pressure, __ATOMIC_ACQUIRE))
                return 0;
        total = execution_memory(env, manager, consumer);
        if (!total)
                return 0;
        total = (uint64_t)((double)total * agent.options.allow_fraction);
        return total ? total : 1;
}

/* The TaskMemoryManager of a consumer: MemoryConsumer.taskMemoryManager; NULL (cleared) when
 * it cannot be read. */
static jobject manager_of(JNIEnv *env, jobject consumer)
{
        jfieldID field = __atomic_load_n(&agent.consumer_tmm, __ATOMIC_ACQUIRE);
        jobject manager;

        if (!field) {
                field = (*env)->GetFieldID(env, (*env)->GetObjectClass(env, consumer),
                                           "taskMemoryManager", CLASS_TMM);
                if (!field) {
                        (*env)->ExceptionClear(env);
                        return NULL;
                }
                __atomic_store_n(&agent.consumer_tmm, field, __ATOMIC_RELEASE);
        }
        manager = (*env)->GetObjectField(env, consumer, field);
        if (!manager)
                (*env)->ExceptionClear(env);
        return manager;
}

/* A consumer refused memory so that Spark spills it by itself (maybeSpill spills the
 * collection; the aggregation map falls back to sorting): counted, with `holding` (what it
 * held when told) for the bytes it releases, since the spill runs after the hook returns. */
static void count_denial(const char *name, uint64_t holding, enum jva_reason reason,
                         uint64_t reaction_start)
{
        uint64_t now = jva_now_ns();

        task_count_forced();
        jva_stats_count_denial(&agent.stats, name, reason, holding,
                               reaction_start ? now - reaction_start : 0);
        if (reaction_start)
                jva_stats_count_decision(&agent.stats, name, now - reaction_start);
        log_debug("%s holding %" PRIu64 " bytes (%s): 0 bytes granted, Spark spills it", name,
                  holding, reason_name(reason));
}

/* Is this thread inside UnsafeFixedWidthAggregationMap.getAggregationBufferFromUnsafeRow? */
static bool under_aggregation(void)
{
        jmethodID agg_buffer = __atomic_load_n(&agent.agg_buffer, __ATOMIC_ACQUIRE);
        jvmtiFrameInfo frames[AGG_STACK_DEPTH];
        jint n = 0;

        if (!agg_buffer ||
            (*agent.jvmti)->GetStackTrace(agent.jvmti, NULL, 0, AGG_STACK_DEPTH, frames, &n) !=
                JVMTI_ERROR_NONE)
                return false;
        for (jint i = 0; i < n; i++)
                if (frames[i].method == agg_buffer)
                        return true;
        return false;
}

/* The consumer's name for the statistics; true for a sorter (it can spill itself). */
static bool classify(JNIEnv *env, jobject consumer, char *name, size_t size)
{
        jclass bytes_map = __atomic_load_n(&agent.bytes_map, __ATOMIC_ACQUIRE);

        class_simple_name(env, consumer, name, size);
        for (unsigned i = 0; i < 2; i++) {
                jclass klass = __atomic_load_n(&agent.sorters[i], __ATOMIC_ACQUIRE);
                if (klass && (*env)->IsInstanceOf(env, consumer, klass))
                        return true;
        }
        /* the aggregation map's pointer array growth is counted under its name too */
        if (bytes_map && (*env)->IsInstanceOf(env, consumer, bytes_map) && under_aggregation())
                snprintf(name, size, "%s", AGG_MAP_NAME);
        return false;
}

/* getUsed() of a consumer; -1 (forced spills turned off) when it threw. */
static jlong used_of(JNIEnv *env, jobject consumer)
{
        jmethodID get_used = __atomic_load_n(&agent.get_used, __ATOMIC_ACQUIRE);
        jthrowable thrown;
        char what[512];
        jlong used;

        if (!get_used)
                return -1;
        used = (*env)->CallLongMethod(env, consumer, get_used);
        if ((*env)->ExceptionCheck(env)) {
                take_exception(env, &thrown, what, sizeof(what));
                disable_spills(what);
                return -1;
        }
        return used;
}

static bool spills_allowed(void)
{
        return jva_options_spill_enabled(&agent.options) &&
               !__atomic_load_n(&agent.spill_disabled, __ATOMIC_ACQUIRE);
}

/* TaskMemoryManager.acquireExecutionMemory(required, consumer), before it runs. */
static void on_acquire(JNIEnv *env, jobject manager, jlong required, jobject consumer)
{
        char name[JVA_NAME_MAX];
        bool sorter;
        uint64_t reaction_start;
        jlong used;
        int reason;

        if (!consumer || !manager)
                return;
        sorter = classify(env, consumer, name, sizeof(name));
        jva_stats_count_call(&agent.stats, name, required > 0 ? (uint64_t)required : 0);
        if (!sorter || !spills_allowed() || !__atomic_load_n(&agent.spill, __ATOMIC_ACQUIRE))
                return;
        /* A sorter decides when it asks for a data page, i.e. when its pages are full: it also
         * asks for memory to grow its pointer array while its last page is nearly empty, and
         * spilling then would write a few records at a time. */
        if ((uint64_t)required < page_size(env, manager))
                return;
        used = used_of(env, consumer);
        if (used < 0)
                return;
        log_debug("%s asks for %" PRId64 " bytes holding %" PRId64, name, (int64_t)required,
                  (int64_t)used);
        reason = decide((uint64_t)used, fraction_floor(env, manager, consumer),
                        task_at_cap(env, manager), &reaction_start);
        if (reason == SPILL_CAPPED)
                count_capped(name, (uint64_t)used);
        else if (reason != SPILL_NONE)
                force_spill(env, consumer, manager, name, required, (uint64_t)used,
                            (enum jva_reason)reason, reaction_start);
}

/* A sorter's insertRecord or insertKVRecord (method, for the log) while the guard is set
 * (under pressure): the sorter inserting this row spills if it holds allow-bytes, and the
 * guard is cleared; it is cleared unused after INSERT_SHOTS rows, or when the pressure ends. */
static void on_insert(JNIEnv *env, jobject sorter, const char *method)
{
        char name[JVA_NAME_MAX];
        uint64_t reaction_start;
        jobject manager;
        jlong used;
        int reason;

        if (!__atomic_load_n(&agent.insert_armed, __ATOMIC_ACQUIRE))
                return;
        if (__atomic_sub_fetch(&agent.insert_shots, 1, __ATOMIC_ACQ_REL) <= 0)
                insert_arm(env, false);
        if (!__atomic_load_n(&agent.under_pressure, __ATOMIC_ACQUIRE) || !spills_allowed() ||
            !__atomic_load_n(&agent.spill, __ATOMIC_ACQUIRE))
                return;
        used = used_of(env, sorter);
        if (used < 0)
                return;
        manager = manager_of(env, sorter);
        if (!manager) {
                insert_arm(env, false);
                hook_set(HOOK_INSERT, JVA_HOOK_OFF,
                         "field not found (MemoryConsumer.taskMemoryManager)");
                return;
        }
        reason = decide((uint64_t)used, 0, task_at_cap(env, manager), &reaction_start);
        if (reason == SPILL_NONE)
                return;
        class_simple_name(env, sorter, name, sizeof(name));
        if (reason == SPILL_CAPPED) {
                /* another task's sorter may still spill: the guard stays */
                count_capped(name, (uint64_t)used);
                return;
        }
        insert_arm(env, false);
        log_debug("%s holding %" PRId64 " bytes at %s under pressure", name, (int64_t)used, method);
        force_spill(env, sorter, manager, name, used, (uint64_t)used, (enum jva_reason)reason,
                    reaction_start);
}

/*
 * Spillable.maybeSpill's acquireMemory(amount): answered 0 when the collection must spill,
 * else passed on. maybeSpill asks for 2 * currentMemory - myMemoryThreshold, so the
 * collection's size (what Spark spills and counts) is (amount + myMemoryThreshold) / 2.
 */
static jlong on_spillable_acquire(JNIEnv *env, jobject spillable, jlong amount)
{
        jmethodID acquire = __atomic_load_n(&agent.acquire_memory, __ATOMIC_ACQUIRE);
        jfieldID threshold = __atomic_load_n(&agent.memory_threshold, __ATOMIC_ACQUIRE);
        char name[JVA_NAME_MAX];
        uint64_t reaction_start;
        jobject manager;
        jclass klass;
        jlong holding;
        int reason;

        if (!acquire) {
                klass = (*env)->GetObjectClass(env, spillable);
                acquire = (*env)->GetMethodID(env, klass, "acquireMemory", "(J)J");
                if (!acquire)
                        return 0; /* NoSuchMethodError pending: the task fails as it would */
                __atomic_store_n(&agent.acquire_memory, acquire, __ATOMIC_RELEASE);
        }
        if (in_hook || !spills_allowed() || __atomic_load_n(&agent.spillable_off, __ATOMIC_ACQUIRE))
                goto pass;
        if (!threshold) {
                klass = (*env)->GetObjectClass(env, spillable);
                threshold = (*env)->GetFieldID(env, klass, "myMemoryThreshold", "J");
                if (!threshold) {
                        (*env)->ExceptionClear(env);
                        __atomic_store_n(&agent.spillable_off, true, __ATOMIC_RELEASE);
                        hook_set(HOOK_SPILLABLE, JVA_HOOK_OFF,
                                 "field not found (Spillable.myMemoryThreshold)");
                        goto pass;
                }
                __atomic_store_n(&agent.memory_threshold, threshold, __ATOMIC_RELEASE);
        }
        holding = (amount + (*env)->GetLongField(env, spillable, threshold)) / 2;
        manager = manager_of(env, spillable);
        reason =
            decide(holding > 0 ? (uint64_t)holding : 0, fraction_floor(env, manager, spillable),
                   task_at_cap(env, manager), &reaction_start);
        if (reason != SPILL_NONE) {
                class_simple_name(env, spillable, name, sizeof(name));
                if (reason == SPILL_CAPPED) {
                        count_capped(name, (uint64_t)holding);
                        goto pass;
                }
                count_denial(name, (uint64_t)holding, (enum jva_reason)reason, reaction_start);
                return 0;
        }
pass:
        return (*env)->CallLongMethod(env, spillable, acquire, amount);
}

/* BytesToBytesMap.acquireNewPage(required): true = "no page" (Spark's own answer when the
 * pool is dry), for a map that serves hash aggregation and has a data page already. */
static bool on_new_page(JNIEnv *env, jobject map)
{
        jmethodID pages = __atomic_load_n(&agent.num_data_pages, __ATOMIC_ACQUIRE);
        jobject manager;
        uint64_t reaction_start;
        jlong used;
        jint n;
        int reason;

        if (!spills_allowed() || !pages || !under_aggregation())
                return false;
        /* The first page is always granted: Spark fails the task when it cannot have it
         * ("failed to allocate the first page"), as right after a fallback or for an
         * aggregation without grouping keys. */
        n = (*env)->CallIntMethod(env, map, pages);
        if ((*env)->ExceptionCheck(env)) {
                (*env)->ExceptionClear(env);
                return false;
        }
        if (n <= 0)
                return false;
        used = used_of(env, map);
        if (used < 0)
                return false;
        manager = manager_of(env, map);
        reason = decide((uint64_t)used, fraction_floor(env, manager, map),
                        task_at_cap(env, manager), &reaction_start);
        if (reason == SPILL_NONE)
                return false;
        if (reason == SPILL_CAPPED) {
                count_capped(AGG_MAP_NAME, (uint64_t)used);
                return false;
        }
        count_denial(AGG_MAP_NAME, (uint64_t)used, (enum jva_reason)reason, reaction_start);
        return true;
}

/* ---- the hook class's native methods (see targets[] for who calls them) ---- */

/* Runs fn's work with a local frame and the re-entry guard; a RuntimeException the hook
 * leaves pending (a failed forced spill) propagates to Spark's code. */
#define HOOK_ENTER(env)                                                                            \
        do {                                                                                       \
                if (in_hook || (*(env))->PushLocalFrame((env), 32) != JNI_OK)                      \
                        return;                                                                    \
                in_hook = true;                                                                    \
        } while (0)
#define HOOK_LEAVE(env)                                                                            \
        do {                                                                                       \
                in_hook = false;                                                                   \
                (*(env))->PopLocalFrame((env), NULL);                                              \
        } while (0)

static void JNICALL hook_acquire(JNIEnv *env, jclass klass, jobject manager, jlong required,
                                 jobject consumer)
{
        HOOK_ENTER(env);
        on_acquire(env, manager, required, consumer);
        HOOK_LEAVE(env);
}

static void JNICALL hook_insert_unsafe(JNIEnv *env, jclass klass, jobject sorter, jobject base,
                                       jlong offset, jint length, jlong prefix, jboolean null)
{
        HOOK_ENTER(env);
        on_insert(env, sorter, "insertRecord");
        HOOK_LEAVE(env);
}

static void JNICALL hook_insert_unsafe_kv(JNIEnv *env, jclass klass, jobject sorter,
                                          jobject key_base, jlong key_offset, jint key_length,
                                          jobject value_base, jlong value_offset, jint value_length,
                                          jlong prefix, jboolean null)
{
        HOOK_ENTER(env);
        on_insert(env, sorter, "insertKVRecord");
        HOOK_LEAVE(env);
}

static void JNICALL hook_insert_shuffle(JNIEnv *env, jclass klass, jobject sorter, jobject base,
                                        jlong offset, jint length, jint partition)
{
        HOOK_ENTER(env);
        on_insert(env, sorter, "insertRecord");
        HOOK_LEAVE(env);
}

static jboolean JNICALL hook_new_page(JNIEnv *env, jclass klass, jobject map, jlong required)
{
        bool deny;

        if (in_hook || (*env)->PushLocalFrame(env, 32) != JNI_OK)
                return JNI_FALSE;
        in_hook = true;
        deny = on_new_page(env, map);
        in_hook = false;
        (*env)->PopLocalFrame(env, NULL);
        return deny ? JNI_TRUE : JNI_FALSE;
}

static jlong JNICALL hook_spillable_acquire(JNIEnv *env, jclass klass, jobject spillable,
                                            jlong amount)
{
        jlong granted;

        if ((*env)->PushLocalFrame(env, 32) != JNI_OK)
                return 0;
        granted = on_spillable_acquire(env, spillable, amount);
        (*env)->PopLocalFrame(env, NULL);
        return granted;
}

/* Define the hook class in the boot loader and bind its natives; false with the reason in
 * agent.instrument_off. */
static bool define_hooks(JNIEnv *env)
{
        static const struct jva_hook_class hooks = {.name = HOOKS_CLASS, .guard = HOOKS_GUARD};
        struct {
                const char *name;
                void *function;
        } functions[] = {
            {"acquire", (void *)(uintptr_t)hook_acquire},
            {"spillableAcquire", (void *)(uintptr_t)hook_spillable_acquire},
            {"newPage", (void *)(uintptr_t)hook_new_page},
            {"insertUnsafe", (void *)(uintptr_t)hook_insert_unsafe},
            {"insertUnsafeKV", (void *)(uintptr_t)hook_insert_unsafe_kv},
            {"insertShuffle", (void *)(uintptr_t)hook_insert_shuffle},
        };
        struct jva_native natives[N_TARGETS];
        JNINativeMethod methods[N_TARGETS];
        char descriptors[N_TARGETS][512];
        uint8_t *bytes = NULL;
        size_t len = 0;
        jclass klass;

        for (size_t i = 0; i < N_TARGETS; i++) {
                natives[i].name = methods[i].name = (char *)targets[i].edit.hook;
                if (jva_edit_hook_descriptor(&targets[i].edit, descriptors[i],
                                             sizeof(descriptors[i])) < 0 ||
                    strcmp(functions[i].name, targets[i].edit.hook) != 0) {
                        snprintf(agent.instrument_off, sizeof(agent.instrument_off),
                                 "bad hook table entry %s", targets[i].edit.hook);
                        return false;
                }
                natives[i].descriptor = methods[i].signature = descriptors[i];
                methods[i].fnPtr = functions[i].function;
        }
        if (jva_hook_class_build(&hooks, natives, N_TARGETS, &bytes, &len) < 0) {
                snprintf(agent.instrument_off, sizeof(agent.instrument_off),
                         "cannot build the hook class");
                return false;
        }
        klass = (*env)->DefineClass(env, HOOKS_CLASS, NULL, (const jbyte *)bytes, (jsize)len);
        free(bytes);
        if (klass && (*env)->RegisterNatives(env, klass, methods, N_TARGETS) == 0) {
                agent.guard = (*env)->GetStaticFieldID(env, klass, HOOKS_GUARD, "Z");
                agent.hooks_class = agent.guard ? (*env)->NewGlobalRef(env, klass) : NULL;
        }
        if (!agent.hooks_class) {
                jthrowable thrown;
                char what[300];

                take_exception(env, &thrown, what, sizeof(what));
                snprintf(agent.instrument_off, sizeof(agent.instrument_off),
                         "cannot define the hook class " HOOKS_CLASS ": %s", what);
                return false;
        }
        return true;
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
        if (jva_options_spill_enabled(&agent.options)) {
                if (!define_hooks(env)) {
                        log_warn("%s: hooks off, statistics only", agent.instrument_off);
                } else if ((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
                                                              JVMTI_EVENT_CLASS_FILE_LOAD_HOOK,
                                                              NULL) != JVMTI_ERROR_NONE) {
                        snprintf(agent.instrument_off, sizeof(agent.instrument_off),
                                 "cannot enable ClassFileLoadHook");
                        log_warn("%s: hooks off, statistics only", agent.instrument_off);
                } else {
                        __atomic_store_n(&agent.instrument, true, __ATOMIC_RELEASE);
                }
        }
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
        struct util_error error;
        char message[UTIL_ERROR_TEXT_MAX + JVA_PATH_MAX];
        struct stat st;
        uint64_t anon;
        int r;

        if (jva_options_parse(options, &agent.options, &error) < 0)
                return refuse(error.text);
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
                r = jva_psi_open(
                    &agent.psi, agent.pressure.source[0] == 'c' ? agent.options.cgroup : NULL,
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

        if (!jva_options_spill_enabled(&agent.options))
                log_info("no spill mode: hooks off, statistics only");

        memset(&callbacks, 0, sizeof(callbacks));
        callbacks.VMInit = on_vm_init;
        callbacks.VMDeath = on_vm_death;
        callbacks.ClassPrepare = on_class_prepare;
        callbacks.ClassFileLoadHook = on_class_file_load;
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

/* Loaded into a running JVM (jcmd JVMTI.agent_load): Spark classes loaded from now on are
 * edited; those already prepared say that they were loaded too early. */
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
        on_vm_init(agent.jvmti, env, NULL);
        if ((*agent.jvmti)->GetLoadedClasses(agent.jvmti, &n, &classes) == JVMTI_ERROR_NONE) {
                for (jint i = 0; i < n; i++) {
                        if ((*agent.jvmti)->GetClassStatus(agent.jvmti, classes[i], &status) ==
                                JVMTI_ERROR_NONE &&
                            (status & JVMTI_CLASS_STATUS_PREPARED))
                                resolve_class(agent.jvmti, env, classes[i]);
                }
                (*agent.jvmti)->Deallocate(agent.jvmti, (unsigned char *)classes);
        }
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
