/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JVMTI side of sparkshim-agent.
 *
 * Every forced spill runs in the operator's own task thread, at a point where unmodified
 * Spark already spills: a breakpoint at the entry of TaskMemoryManager.acquireExecutionMemory
 * (called per page or pointer array, not per row). There, under the TaskMemoryManager's lock
 * as Spark's own trySpillAndAcquire holds it, a sorter asking for memory is made to spill
 * itself (trigger == itself), which is exactly what Spark does when the pool runs dry.
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

#define CLASS_TMM            "Lorg/apache/spark/memory/TaskMemoryManager;"
#define CLASS_CONSUMER       "Lorg/apache/spark/memory/MemoryConsumer;"
#define CLASS_UNSAFE_SORTER  "Lorg/apache/spark/util/collection/unsafe/sort/UnsafeExternalSorter;"
#define CLASS_SHUFFLE_SORTER "Lorg/apache/spark/shuffle/sort/ShuffleExternalSorter;"
#define ACQUIRE_SIGNATURE    "(JLorg/apache/spark/memory/MemoryConsumer;)J"
#define SPILL_SIGNATURE      "(JLorg/apache/spark/memory/MemoryConsumer;)J"
#define RECORDS_PROPERTY     "spark.shuffle.spill.numElementsForceSpillThreshold"

/* Local slots of acquireExecutionMemory(long required, MemoryConsumer consumer): an instance
 * method, so `this` is slot 0, the long takes slots 1-2 and the consumer slot 3. */
#define SLOT_THIS     0
#define SLOT_REQUIRED 1
#define SLOT_CONSUMER 3

#define POLL_MS            100
#define HYSTERESIS_DIVISOR 20 /* leave pressure 5% below the threshold */

enum hook_id {
        HOOK_ACQUIRE,        /* breakpoint at TaskMemoryManager.acquireExecutionMemory */
        HOOK_CONSUMER,       /* MemoryConsumer.getUsed()J and spill(JMemoryConsumer)J */
        HOOK_UNSAFE_SORTER,  /* self-spill of UnsafeExternalSorter */
        HOOK_SHUFFLE_SORTER, /* self-spill of ShuffleExternalSorter */
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

        /* atomics */
        bool capabilities;   /* breakpoints and locals were granted */
        bool acquire_off;    /* the breakpoint failed at run time: ignore it */
        bool spill_disabled; /* a forced spill failed: count only from now on */
        bool stopping;
        bool under_pressure;
        uint64_t pressure_since_ns; /* when the current episode was seen to start */
        uint64_t episode;           /* pressure episodes so far */
        uint64_t reacted_episode;   /* last episode whose first spill recorded a reaction */
        uint64_t last_pressure_spill_ns;
} agent = {
    .hooks =
        {
            [HOOK_ACQUIRE] = {.name = "TaskMemoryManager.acquireExecutionMemory"},
            [HOOK_CONSUMER] = {.name = "MemoryConsumer.spill"},
            [HOOK_UNSAFE_SORTER] = {.name = "UnsafeExternalSorter.spill"},
            [HOOK_SHUFFLE_SORTER] = {.name = "ShuffleExternalSorter.spill"},
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

static void sample_pressure(void)
{
        uint64_t anon, threshold = agent.options.threshold_bytes;
        int r = jva_read_anon(agent.pressure.source[0] == 'c' ? agent.options.cgroup : NULL, &anon);
        bool entered = false, left = false;

        pthread_mutex_lock(&agent.state_lock);
        if (r < 0) {
                if (agent.pressure.read_errors++ == 0)
                        log_warn("pressure: cannot read %s: %s", agent.pressure.path, strerror(-r));
                pthread_mutex_unlock(&agent.state_lock);
                return;
        }
        agent.pressure.anon_bytes = anon;
        if (anon > agent.pressure.peak_anon_bytes)
                agent.pressure.peak_anon_bytes = anon;
        if (threshold) {
                if (!agent.pressure.under_pressure && anon >= threshold) {
                        agent.pressure.under_pressure = entered = true;
                        agent.pressure.crossings++;
                } else if (agent.pressure.under_pressure &&
                           anon < threshold - threshold / HYSTERESIS_DIVISOR) {
                        agent.pressure.under_pressure = false;
                        left = true;
                }
        }
        pthread_mutex_unlock(&agent.state_lock);

        if (entered) {
                __atomic_store_n(&agent.pressure_since_ns, jva_now_ns(), __ATOMIC_RELAXED);
                __atomic_add_fetch(&agent.episode, 1, __ATOMIC_RELAXED);
                __atomic_store_n(&agent.under_pressure, true, __ATOMIC_RELEASE);
                log_debug("pressure: anon %" PRIu64 " >= threshold %" PRIu64, anon, threshold);
        } else if (left) {
                __atomic_store_n(&agent.under_pressure, false, __ATOMIC_RELEASE);
                log_debug("pressure: anon %" PRIu64 " below threshold again", anon);
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
                sample_pressure();
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
                hook_set(HOOK_ACQUIRE, JVA_HOOK_OFF, "no breakpoint capability");
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
                 "no spill mode in the options");
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

enum decision {
        SPILL_NONE = -1,
};

/* Which mode, if any, makes an operator holding `used` bytes spill now. */
static int decide(uint64_t used, uint64_t *ret_reaction_start)
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
        if (!o->allow_bytes || used < o->allow_bytes ||
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
                        const char *name, jlong required, uint64_t used, enum jva_reason reason,
                        uint64_t reaction_start)
{
        jmethodID get_used = __atomic_load_n(&agent.get_used, __ATOMIC_ACQUIRE);
        jmethodID spill = __atomic_load_n(&agent.spill, __ATOMIC_ACQUIRE);
        jobject manager = NULL;
        jthrowable thrown = NULL;
        jlong after = (jlong)used;
        uint64_t t0, t1;
        char what[512], message[700];
        jvmtiError err;

        err = (*jvmti)->GetLocalObject(jvmti, thread, 0, SLOT_THIS, &manager);
        if (err != JVMTI_ERROR_NONE || !manager) {
                snprintf(what, sizeof(what), "GetLocalObject(this) failed: %s",
                         jvmti_error_name(err));
                disable_spills(what);
                return;
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
        log_debug("forced spill of %s (%s): %" PRIu64 " -> %" PRId64 " bytes in %" PRIu64 " us",
                  name,
                  reason == JVA_REASON_FORCE      ? "force-bytes"
                  : reason == JVA_REASON_PERIODIC ? "periodic"
                                                  : "pressure",
                  used, (int64_t)after, (t1 - t0) / 1000);
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

static void on_acquire(jvmtiEnv *jvmti, JNIEnv *env, jthread thread)
{
        jlong required = 0, used;
        jobject consumer = NULL;
        char name[JVA_NAME_MAX], what[512];
        uint64_t reaction_start;
        jthrowable thrown;
        jmethodID get_used;
        jvmtiError err;
        int reason;
        bool sorter = false;

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
        class_simple_name(jvmti, env, consumer, name, sizeof(name));
        jva_stats_count_call(&agent.stats, name, required > 0 ? (uint64_t)required : 0);

        if (!jva_options_spill_enabled(&agent.options) ||
            __atomic_load_n(&agent.spill_disabled, __ATOMIC_ACQUIRE))
                return;
        for (unsigned i = 0; i < 2 && !sorter; i++) {
                jclass klass = __atomic_load_n(&agent.sorters[i], __ATOMIC_ACQUIRE);
                sorter = klass && (*env)->IsInstanceOf(env, consumer, klass);
        }
        get_used = __atomic_load_n(&agent.get_used, __ATOMIC_ACQUIRE);
        if (!sorter || !get_used)
                return;
        /* Decide when the operator asks for a data page, i.e. when its pages are full: a
         * sorter also asks for memory to grow its pointer array while its last page is
         * nearly empty, and spilling then would write a few records at a time. */
        if ((uint64_t)required < page_size(jvmti, env, thread))
                return;
        used = (*env)->CallLongMethod(env, consumer, get_used);
        if ((*env)->ExceptionCheck(env)) {
                take_exception(env, &thrown, what, sizeof(what));
                disable_spills(what);
                return;
        }
        log_debug("%s asks for %" PRId64 " bytes holding %" PRId64, name, (int64_t)required,
                  (int64_t)used);
        reason = decide(used > 0 ? (uint64_t)used : 0, &reaction_start);
        if (reason == SPILL_NONE)
                return;
        force_spill(jvmti, env, thread, consumer, name, required, (uint64_t)used,
                    (enum jva_reason)reason, reaction_start);
}

static void JNICALL on_breakpoint(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jmethodID method,
                                  jlocation location)
{
        if (method != __atomic_load_n(&agent.acquire, __ATOMIC_ACQUIRE) || in_hook ||
            __atomic_load_n(&agent.acquire_off, __ATOMIC_ACQUIRE))
                return;
        in_hook = true;
        if ((*env)->PushLocalFrame(env, 32) == JNI_OK) {
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
        sample_pressure();
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
        sample_pressure();
        if (agent.options.allow_fraction > 0)
                log_warn("allow-fraction is not implemented yet: ignored");
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
        if (!potential.can_generate_breakpoint_events || !potential.can_access_local_variables)
                log_warn("%s: hooks off, statistics only",
                         live ? "the JVM grants breakpoints and local variables only to agents "
                                "loaded at start-up (-agentpath)"
                              : "breakpoints or local variables are not available");
        else if ((*jvmti)->AddCapabilities(jvmti, &wanted) != JVMTI_ERROR_NONE)
                log_warn("cannot add the breakpoint and local variable capabilities: hooks "
                         "off, statistics only");
        else
                agent.capabilities = true;

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
        log_info("loaded: force-bytes=%" PRIu64 " allow-bytes=%" PRIu64 " periodic=%" PRIu64
                 " threshold=%" PRIu64 " pressure source %s",
                 agent.options.force_bytes, agent.options.allow_bytes, agent.options.periodic_bytes,
                 agent.options.threshold_bytes, agent.pressure.path);
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
