/* SPDX-License-Identifier: Apache-2.0 */
/* Executor inputs: the values of the wrapped command line and of SPARKSHIM_* variables. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "policy-internal.h"
#include "util.h"

#define SPARK_SIZE_MIB_ALLOWED   "digits with an optional suffix b, k, m, g, t, p (MiB when none)"
#define SPARK_SIZE_BYTES_ALLOWED "digits with an optional suffix b, k, m, g, t, p (bytes when none)"
#define JVM_SIZE_ALLOWED         "digits with an optional suffix k, m, g, t (bytes when none)"
#define CORES_ALLOWED            "an integer >= 1"
#define MILLICORES_ALLOWED       "an integer number of millicores (1500, 1500m) or of cores (1.5)"
#define CPU_QUANTITY_ALLOWED     "a number of cores (2, 0.5) or millicores (500m), > 0"
#define RATIO_ALLOWED            "a number >= 0 and <= 1"
#define FACTOR_ALLOWED           "a number > 0 and <= 10"
#define BOOL_ALLOWED             "true or false"

const char *policy_source_name(enum policy_source s)
{
        switch (s) {
        case POLICY_SOURCE_NONE:
                return "none";
        case POLICY_SOURCE_POLICY:
                return "default";
        case POLICY_SOURCE_COMMAND:
                return "command";
        case POLICY_SOURCE_ENV:
                return "env";
        case POLICY_SOURCE_FLAG:
                return "flag";
        }
        return "unknown";
}

void policy_inputs_init(struct policy_inputs *in)
{
        *in = (struct policy_inputs){0};
}

static void set_origin(char origin[64], const char *text)
{
        snprintf(origin, 64, "%s", text ? text : "");
}

void policy_input_set_u64(struct policy_u64_input *i, uint64_t v, enum policy_source source,
                          const char *origin)
{
        if (source < i->source)
                return;
        i->value = v;
        i->source = source;
        set_origin(i->origin, origin);
}

void policy_input_set_double(struct policy_double_input *i, double v, enum policy_source source,
                             const char *origin)
{
        if (source < i->source)
                return;
        i->value = v;
        i->source = source;
        set_origin(i->origin, origin);
}

void policy_input_set_bool(struct policy_bool_input *i, bool v, enum policy_source source,
                           const char *origin)
{
        if (source < i->source)
                return;
        i->value = v;
        i->source = source;
        set_origin(i->origin, origin);
}

/* ---------------------------------------------------------------------------------- */
/* Value parsers shared by the command line and the environment                        */

enum kind {
        KIND_SPARK_MIB,   /* Spark byte string, MiB by default */
        KIND_SPARK_BYTES, /* Spark byte string, bytes by default */
        KIND_JVM_BYTES,
        KIND_CORES,
        KIND_MILLICORES,
        KIND_CPU_QUANTITY,
        KIND_RATIO,
        KIND_FACTOR,
        KIND_BOOL,
};

struct parsed {
        uint64_t u;
        double d;
        bool b;
};

/* Parse text of kind; on failure *ret_problem and *ret_allowed describe it. */
static int parse_kind(enum kind kind, const char *text, struct parsed *ret,
                      const char **ret_problem, const char **ret_allowed)
{
        const char *begin;
        char trimmed[64];
        size_t len;
        int r = -EINVAL;

        /* Spark trims its typed configuration values; so do we, for everything but sizes
         * (byteStringAs trims itself) and -Xmx (the JVM does not trim). */
        policy_trim(text, &begin, &len);
        if (len >= sizeof(trimmed))
                len = sizeof(trimmed) - 1; /* longer than any valid number: stays invalid */
        memcpy(trimmed, begin, len);
        trimmed[len] = '\0';

        switch (kind) {
        case KIND_SPARK_MIB:
        case KIND_SPARK_BYTES:
                *ret_allowed =
                    kind == KIND_SPARK_MIB ? SPARK_SIZE_MIB_ALLOWED : SPARK_SIZE_BYTES_ALLOWED;
                r = policy_parse_spark_bytes(
                    text, kind == KIND_SPARK_MIB ? POLICY_UNIT_MIB : POLICY_UNIT_BYTES, &ret->u);
                *ret_problem = r == -ERANGE ? "too large" : "not a size";
                return r;
        case KIND_JVM_BYTES:
                *ret_allowed = JVM_SIZE_ALLOWED;
                r = policy_parse_jvm_bytes(text, &ret->u);
                if (r == 0 && ret->u == 0) {
                        *ret_problem = "out of range";
                        *ret_allowed = JVM_SIZE_ALLOWED ", > 0";
                        return -ERANGE;
                }
                *ret_problem = r == -ERANGE ? "too large" : "not a size";
                return r;
        case KIND_CORES:
                *ret_allowed = CORES_ALLOWED;
                r = util_parse_u64(trimmed, &ret->u);
                if (r == 0 && (ret->u == 0 || ret->u > POLICY_MILLICORES_LIMIT / 1000))
                        r = -ERANGE;
                *ret_problem = r == -ERANGE ? "out of range" : "not an integer";
                return r;
        case KIND_MILLICORES:
                *ret_allowed = MILLICORES_ALLOWED;
                r = policy_parse_millicores(trimmed, &ret->u);
                *ret_problem = r == -ERANGE ? "too large" : "not a CPU quantity";
                return r;
        case KIND_CPU_QUANTITY:
                *ret_allowed = CPU_QUANTITY_ALLOWED;
                r = policy_parse_cpu_quantity(trimmed, &ret->u);
                *ret_problem = r == -ERANGE ? "too large" : "not a CPU quantity";
                return r;
        case KIND_RATIO:
                *ret_allowed = RATIO_ALLOWED;
                r = util_parse_double(trimmed, &ret->d);
                if (r == 0 && (ret->d < 0.0 || ret->d > 1.0))
                        r = -ERANGE;
                *ret_problem = r == -ERANGE ? "out of range" : "not a number";
                return r;
        case KIND_FACTOR:
                *ret_allowed = FACTOR_ALLOWED;
                r = util_parse_double(trimmed, &ret->d);
                if (r == 0 && (ret->d <= 0.0 || ret->d > 10.0))
                        r = -ERANGE;
                *ret_problem = r == -ERANGE ? "out of range" : "not a number";
                return r;
        case KIND_BOOL:
                /* Scala's String.toBoolean, as SparkConf's booleanConf uses it */
                *ret_allowed = BOOL_ALLOWED;
                *ret_problem = "not a boolean";
                if (strcasecmp(trimmed, "true") == 0) {
                        ret->b = true;
                        return 0;
                }
                if (strcasecmp(trimmed, "false") == 0) {
                        ret->b = false;
                        return 0;
                }
                return -EINVAL;
        }
        return r;
}

/* ---------------------------------------------------------------------------------- */
/* The command line                                                                     */

enum target {
        T_HEAP_SPARK,  /* spark.executor.memory: used only without -Xmx */
        T_HEAP_JVM,    /* -Xmx, -XX:MaxHeapSize= */
        T_CORES_SPARK, /* spark.executor.cores: used only without --cores */
        T_CORES_BACKEND,
        T_MILLICORES,    /* spark.executor.millicores */
        T_REQUEST_CORES, /* spark.kubernetes.executor.request.cores: only without millicores */
        T_LIMIT_CORES,
        T_OVERHEAD,
        T_OVERHEAD_FACTOR,
        T_OFFHEAP_ENABLED,
        T_OFFHEAP_SIZE,
        T_PYSPARK,
        T_BURST_RATIO,
        T_SPILL_FRACTION,
        T_COUNT,
};

static const struct {
        const char *property;
        enum kind kind;
        enum target target;
} properties[] = {
    {"spark.executor.memory", KIND_SPARK_MIB, T_HEAP_SPARK},
    {"spark.executor.cores", KIND_CORES, T_CORES_SPARK},
    {"spark.executor.millicores", KIND_MILLICORES, T_MILLICORES},
    {"spark.kubernetes.executor.request.cores", KIND_CPU_QUANTITY, T_REQUEST_CORES},
    {"spark.kubernetes.executor.limit.cores", KIND_CPU_QUANTITY, T_LIMIT_CORES},
    {"spark.executor.memoryOverhead", KIND_SPARK_MIB, T_OVERHEAD},
    {"spark.executor.memoryOverheadFactor", KIND_FACTOR, T_OVERHEAD_FACTOR},
    {"spark.memory.offHeap.enabled", KIND_BOOL, T_OFFHEAP_ENABLED},
    {"spark.memory.offHeap.size", KIND_SPARK_BYTES, T_OFFHEAP_SIZE},
    {"spark.executor.pyspark.memory", KIND_SPARK_MIB, T_PYSPARK},
    {"spark.executor.memoryBurst.ratio", KIND_RATIO, T_BURST_RATIO},
    {"spark.executor.sparkshim.spillFraction", KIND_RATIO, T_SPILL_FRACTION},
};

/* What the command said for each target; the last occurrence wins, as in the JVM. */
struct seen {
        bool set;
        struct parsed value;
        char origin[64];
};

static int command_error(struct util_error *err, int r, const char *arg, const char *problem,
                         const char *allowed)
{
        /* the argument can be long (a classpath never is one of ours, but be safe) */
        return util_error_set(err, r, "command: %.200s%s: %s; allowed: %s", arg,
                              strlen(arg) > 200 ? "..." : "", problem, allowed);
}

static int take(struct seen seen[], enum target t, enum kind kind, const char *value,
                const char *origin, const char *arg, struct util_error *err)
{
        const char *problem = "invalid", *allowed = "";
        struct parsed v = {0};
        int r;

        r = parse_kind(kind, value, &v, &problem, &allowed);
        if (r < 0)
                return command_error(err, r, arg, problem, allowed);
        seen[t].set = true;
        seen[t].value = v;
        set_origin(seen[t].origin, origin);
        return 0;
}

static int take_name(char dest[POLICY_NAME_MAX], const char *value, const char *arg,
                     struct util_error *err)
{
        if (strlen(value) >= POLICY_NAME_MAX)
                return command_error(err, ENAMETOOLONG, arg, "too long", "up to 127 characters");
        snprintf(dest, POLICY_NAME_MAX, "%s", value);
        return 0;
}

/* "--name value" or "--name=value"; returns the value or NULL, advancing *i past it. */
static const char *backend_option(int argc, char *const argv[], int *i, const char *name,
                                  bool *ret_missing)
{
        const char *arg = argv[*i];
        size_t n = strlen(name);

        *ret_missing = false;
        if (strncmp(arg, name, n) != 0)
                return NULL;
        if (arg[n] == '=')
                return arg + n + 1;
        if (arg[n] != '\0')
                return NULL;
        if (*i + 1 >= argc || !argv[*i + 1]) {
                *ret_missing = true;
                return NULL;
        }
        (*i)++;
        return argv[*i];
}

/* -Dkey=value: a property the plan reads (the others are the JVM's business). */
static int take_property(struct seen *seen, const char *arg, struct util_error *err)
{
        const char *eq = strchr(arg, '=');
        size_t klen = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);

        for (size_t k = 0; k < ELEMENTSOF(properties); k++) {
                char origin[64];

                if (strlen(properties[k].property) != klen ||
                    strncmp(arg + 2, properties[k].property, klen) != 0)
                        continue;
                snprintf(origin, sizeof(origin), "-D%s", properties[k].property);
                return take(seen, properties[k].target, properties[k].kind, eq ? eq + 1 : "",
                            origin, arg, err);
        }
        return 0;
}

struct names {
        char app_id[POLICY_NAME_MAX], executor_id[POLICY_NAME_MAX];
};

/*
 * The backend's --cores, --app-id or --executor-id at argv[*i], with its value (*i moves
 * past a separate one). Returns 1 when taken, 0 when argv[*i] is none of them, or -errno.
 */
static int take_backend_option(struct seen *seen, struct names *names, int argc, char *const argv[],
                               int *i, struct util_error *err)
{
        static const struct {
                const char *name;
                enum target target; /* T_COUNT: app id, executor id */
        } backend[] = {
            {"--cores", T_CORES_BACKEND},
            {"--app-id", T_COUNT},
            {"--executor-id", T_COUNT},
        };
        const char *arg = argv[*i];

        for (size_t k = 0; k < ELEMENTSOF(backend); k++) {
                int at = *i, r;
                bool missing;
                const char *value = backend_option(argc, argv, i, backend[k].name, &missing);
                char shown[256];

                if (missing)
                        return command_error(err, EINVAL, arg, "missing value",
                                             k == 0 ? CORES_ALLOWED : "a name");
                if (!value)
                        continue;
                if (*i != at)
                        snprintf(shown, sizeof(shown), "%s %.200s", arg, value);
                else
                        snprintf(shown, sizeof(shown), "%.250s", arg);
                if (backend[k].target == T_CORES_BACKEND)
                        r = take(seen, T_CORES_BACKEND, KIND_CORES, value, backend[k].name, shown,
                                 err);
                else
                        r = take_name(k == 1 ? names->app_id : names->executor_id, value, shown,
                                      err);
                return r < 0 ? r : 1;
        }
        return 0;
}

/* Everything is valid: store, resolving the precedence inside the command. */
static void store_command(struct policy_inputs *in, const struct seen *seen,
                          const struct names *names)
{
        const enum policy_source src = POLICY_SOURCE_COMMAND;

        if (seen[T_HEAP_JVM].set) {
                policy_input_set_u64(&in->heap_bytes, seen[T_HEAP_JVM].value.u, src,
                                     seen[T_HEAP_JVM].origin);
                policy_input_set_u64(&in->jvm_heap_bytes, seen[T_HEAP_JVM].value.u, src,
                                     seen[T_HEAP_JVM].origin);
        } else if (seen[T_HEAP_SPARK].set)
                policy_input_set_u64(&in->heap_bytes, seen[T_HEAP_SPARK].value.u, src,
                                     seen[T_HEAP_SPARK].origin);

        if (seen[T_CORES_BACKEND].set)
                policy_input_set_u64(&in->cores, seen[T_CORES_BACKEND].value.u, src,
                                     seen[T_CORES_BACKEND].origin);
        else if (seen[T_CORES_SPARK].set)
                policy_input_set_u64(&in->cores, seen[T_CORES_SPARK].value.u, src,
                                     seen[T_CORES_SPARK].origin);

        if (seen[T_MILLICORES].set)
                policy_input_set_u64(&in->millicores, seen[T_MILLICORES].value.u, src,
                                     seen[T_MILLICORES].origin);
        else if (seen[T_REQUEST_CORES].set)
                policy_input_set_u64(&in->millicores, seen[T_REQUEST_CORES].value.u, src,
                                     seen[T_REQUEST_CORES].origin);

        if (seen[T_LIMIT_CORES].set)
                policy_input_set_u64(&in->limit_millicores, seen[T_LIMIT_CORES].value.u, src,
                                     seen[T_LIMIT_CORES].origin);
        if (seen[T_OVERHEAD].set)
                policy_input_set_u64(&in->overhead_bytes, seen[T_OVERHEAD].value.u, src,
                                     seen[T_OVERHEAD].origin);
        if (seen[T_OVERHEAD_FACTOR].set)
                policy_input_set_double(&in->overhead_factor, seen[T_OVERHEAD_FACTOR].value.d, src,
                                        seen[T_OVERHEAD_FACTOR].origin);
        if (seen[T_OFFHEAP_ENABLED].set)
                policy_input_set_bool(&in->offheap_enabled, seen[T_OFFHEAP_ENABLED].value.b, src,
                                      seen[T_OFFHEAP_ENABLED].origin);
        if (seen[T_OFFHEAP_SIZE].set)
                policy_input_set_u64(&in->offheap_bytes, seen[T_OFFHEAP_SIZE].value.u, src,
                                     seen[T_OFFHEAP_SIZE].origin);
        if (seen[T_PYSPARK].set)
                policy_input_set_u64(&in->pyspark_bytes, seen[T_PYSPARK].value.u, src,
                                     seen[T_PYSPARK].origin);
        if (seen[T_BURST_RATIO].set)
                policy_input_set_double(&in->burst_ratio, seen[T_BURST_RATIO].value.d, src,
                                        seen[T_BURST_RATIO].origin);
        if (seen[T_SPILL_FRACTION].set)
                policy_input_set_double(&in->spill_fraction, seen[T_SPILL_FRACTION].value.d, src,
                                        seen[T_SPILL_FRACTION].origin);

        if (names->app_id[0])
                memcpy(in->app_id, names->app_id, sizeof(names->app_id));
        if (names->executor_id[0])
                memcpy(in->executor_id, names->executor_id, sizeof(names->executor_id));
}

/*
 * Precedence inside the command, where Spark's own launch code and the JVM agree:
 * -Xmx (what the JVM really uses) over spark.executor.memory; the backend's --cores over
 * spark.executor.cores; spark.executor.millicores over spark.kubernetes.executor.request.cores.
 * Several occurrences of one option: the last wins, as for the JVM.
 */
int policy_inputs_from_command(struct policy_inputs *in, int argc, char *const argv[],
                               struct util_error *err)
{
        struct seen seen[T_COUNT] = {0};
        struct names names = {"", ""};
        int r;

        for (int i = 1; i < argc && argv[i]; i++) {
                const char *arg = argv[i];

                if (strncmp(arg, "-D", 2) == 0)
                        r = take_property(seen, arg, err);
                else if (strncmp(arg, "-Xmx", 4) == 0)
                        r = take(seen, T_HEAP_JVM, KIND_JVM_BYTES, arg + 4, "-Xmx", arg, err);
                else if (strncmp(arg, "-XX:MaxHeapSize=", 16) == 0)
                        r = take(seen, T_HEAP_JVM, KIND_JVM_BYTES, arg + 16, "-XX:MaxHeapSize", arg,
                                 err);
                else
                        r = take_backend_option(seen, &names, argc, argv, &i, err);
                if (r < 0)
                        return r;
        }
        store_command(in, seen, &names);
        return 0;
}

int policy_inputs_check(const struct policy_inputs *in, struct util_error *err)
{
        const struct policy_u64_input *heap = &in->heap_bytes, *jvm = &in->jvm_heap_bytes;

        if (heap->source == POLICY_SOURCE_NONE)
                return util_error_set(err, EINVAL,
                                      "no executor memory: give --memory, SPARKSHIM_MEMORY or "
                                      "-Xmx in the command");
        if (jvm->source != POLICY_SOURCE_NONE && heap->value != jvm->value)
                return util_error_set(err, EINVAL,
                                      "%s: %" PRIu64 " bytes of heap, but the JVM will use %" PRIu64
                                      " bytes (%s in the command); allowed: the heap once, or the "
                                      "same value in both",
                                      heap->origin, heap->value, jvm->value, jvm->origin);
        return 0;
}

/* ---------------------------------------------------------------------------------- */
/* The environment                                                                      */

static const char *env_get(char *const envp[], const char *name)
{
        size_t n = strlen(name);

        if (!envp)
                return NULL;
        /* the first occurrence, as getenv(3) */
        for (size_t i = 0; envp[i]; i++)
                if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
                        return envp[i] + n + 1;
        return NULL;
}

int policy_inputs_from_env(struct policy_inputs *in, char *const envp[], struct util_error *err)
{
        enum env_target {
                E_CORES,
                E_MILLICORES,
                E_LIMIT_MILLICORES,
                E_MEMORY,
                E_OVERHEAD,
                E_OFFHEAP,
                E_PYSPARK,
                E_BURST_RATIO,
                E_SPILL_FRACTION,
        };
        static const struct {
                const char *name;
                enum kind kind;
                enum env_target target;
        } vars[] = {
            {"SPARKSHIM_CORES", KIND_CORES, E_CORES},
            {"SPARKSHIM_MILLICORES", KIND_MILLICORES, E_MILLICORES},
            {"SPARKSHIM_LIMIT_MILLICORES", KIND_MILLICORES, E_LIMIT_MILLICORES},
            {"SPARKSHIM_MEMORY", KIND_SPARK_MIB, E_MEMORY},
            {"SPARKSHIM_MEMORY_OVERHEAD", KIND_SPARK_MIB, E_OVERHEAD},
            {"SPARKSHIM_OFFHEAP", KIND_SPARK_MIB, E_OFFHEAP},
            {"SPARKSHIM_PYSPARK_MEMORY", KIND_SPARK_MIB, E_PYSPARK},
            {"SPARKSHIM_BURST_RATIO", KIND_RATIO, E_BURST_RATIO},
            {"SPARKSHIM_SPILL_FRACTION", KIND_RATIO, E_SPILL_FRACTION},
        };
        struct parsed values[ELEMENTSOF(vars)];
        bool present[ELEMENTSOF(vars)] = {false};
        const enum policy_source src = POLICY_SOURCE_ENV;

        /* validate all before storing any: on error *in is unchanged */
        for (size_t k = 0; k < ELEMENTSOF(vars); k++) {
                const char *value = env_get(envp, vars[k].name), *problem = "", *allowed = "";
                int r;

                /* an empty variable is unset: pod templates often define them empty */
                if (!value || value[0] == '\0')
                        continue;
                r = parse_kind(vars[k].kind, value, &values[k], &problem, &allowed);
                if (r < 0)
                        return util_error_set(err, r, "environment: %s=%.200s: %s; allowed: %s",
                                              vars[k].name, value, problem, allowed);
                present[k] = true;
        }

        for (size_t k = 0; k < ELEMENTSOF(vars); k++) {
                const char *name = vars[k].name;
                const struct parsed *v = &values[k];

                if (!present[k])
                        continue;
                switch (vars[k].target) {
                case E_CORES:
                        policy_input_set_u64(&in->cores, v->u, src, name);
                        break;
                case E_MILLICORES:
                        policy_input_set_u64(&in->millicores, v->u, src, name);
                        break;
                case E_LIMIT_MILLICORES:
                        policy_input_set_u64(&in->limit_millicores, v->u, src, name);
                        break;
                case E_MEMORY:
                        policy_input_set_u64(&in->heap_bytes, v->u, src, name);
                        break;
                case E_OVERHEAD:
                        policy_input_set_u64(&in->overhead_bytes, v->u, src, name);
                        break;
                case E_OFFHEAP:
                        /* a size turns off-heap memory on, 0 turns it off */
                        policy_input_set_u64(&in->offheap_bytes, v->u, src, name);
                        policy_input_set_bool(&in->offheap_enabled, v->u > 0, src, name);
                        break;
                case E_PYSPARK:
                        policy_input_set_u64(&in->pyspark_bytes, v->u, src, name);
                        break;
                case E_BURST_RATIO:
                        policy_input_set_double(&in->burst_ratio, v->d, src, name);
                        break;
                case E_SPILL_FRACTION:
                        policy_input_set_double(&in->spill_fraction, v->d, src, name);
                        break;
                }
        }
        return 0;
}

/*
 * entrypoint.sh builds the executor's JVM options with
 *
 *     env | grep SPARK_JAVA_OPT_ | sort -t_ -k4 -n | sed 's/[^=]*=\(.*\)/\1/g'
 *
 * and `readarray -t`: every line of the environment (a value can hold newlines) that
 * contains SPARK_JAVA_OPT_, ordered by the number that starts its fourth '_'-separated
 * field (sort -n: blanks, an optional '-', digits, an optional fraction; none is 0), ties
 * by the whole line (the C locale's byte order), each with the text up to its first '='
 * removed. The same here, with no bound but memory: duplicate indexes (_0, _00) and
 * names that are no index at all (_x) are options like any other, as they are for Spark.
 */
struct java_opt_line {
        const char *text;
        size_t len;
};

/* The sort -n key of a line: field 4 when split at '_', "" when it has fewer. */
static const char *java_opt_key(const struct java_opt_line *l, size_t *ret_len)
{
        const char *p = l->text, *end = l->text + l->len;

        for (int field = 1; field < 4; field++) {
                p = memchr(p, '_', (size_t)(end - p));
                if (!p) {
                        *ret_len = 0;
                        return end;
                }
                p++;
        }
        *ret_len = (size_t)(end - p);
        return p;
}

struct sort_number {
        bool negative;
        const char *integer, *fraction; /* digits without leading (integer) or trailing zeros */
        size_t integer_len, fraction_len;
};

static struct sort_number sort_number_parse(const char *s, size_t len)
{
        struct sort_number n = {0};
        const char *end = s + len;

        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        if (s < end && *s == '-') {
                n.negative = true;
                s++;
        }
        while (s < end && *s == '0')
                s++;
        n.integer = s;
        while (s < end && isdigit((unsigned char)*s))
                s++;
        n.integer_len = (size_t)(s - n.integer);
        if (s < end && *s == '.') {
                n.fraction = ++s;
                while (s < end && isdigit((unsigned char)*s))
                        s++;
                n.fraction_len = (size_t)(s - n.fraction);
                while (n.fraction_len > 0 && n.fraction[n.fraction_len - 1] == '0')
                        n.fraction_len--;
        }
        if (n.integer_len == 0 && n.fraction_len == 0)
                n.negative = false; /* -0 is 0 */
        return n;
}

/* Compare two numbers of any length as sort -n does: -1, 0, 1. */
static int sort_number_compare(const struct sort_number *a, const struct sort_number *b)
{
        int sign = a->negative ? -1 : 1, c;
        size_t n;

        if (a->negative != b->negative)
                return a->negative ? -1 : 1;
        if (a->integer_len != b->integer_len)
                return a->integer_len < b->integer_len ? -sign : sign;
        c = memcmp(a->integer, b->integer, a->integer_len);
        if (c != 0)
                return c < 0 ? -sign : sign;
        n = a->fraction_len < b->fraction_len ? a->fraction_len : b->fraction_len;
        c = n ? memcmp(a->fraction, b->fraction, n) : 0;
        if (c == 0 && a->fraction_len != b->fraction_len)
                c = a->fraction_len < b->fraction_len ? -1 : 1;
        return c < 0 ? -sign : c > 0 ? sign : 0;
}

static int java_opt_compare(const void *x, const void *y)
{
        const struct java_opt_line *a = x, *b = y;
        struct sort_number na, nb;
        const char *ka, *kb;
        size_t la, lb, n;
        int c;

        ka = java_opt_key(a, &la);
        kb = java_opt_key(b, &lb);
        na = sort_number_parse(ka, la);
        nb = sort_number_parse(kb, lb);
        c = sort_number_compare(&na, &nb);
        if (c != 0)
                return c;
        n = a->len < b->len ? a->len : b->len;
        c = memcmp(a->text, b->text, n);
        if (c != 0)
                return c < 0 ? -1 : 1;
        return a->len < b->len ? -1 : a->len > b->len;
}

static bool line_has_java_opt(const char *line, size_t len)
{
        static const char needle[] = "SPARK_JAVA_OPT_";

        return memmem(line, len, needle, sizeof(needle) - 1) != NULL;
}

ssize_t policy_spark_java_opts(char *const envp[], char ***ret_lines, char **ret_storage)
{
        _cleanup_free_ struct java_opt_line *lines = NULL;
        _cleanup_free_ char **out = NULL;
        _cleanup_free_ char *storage = NULL;
        size_t count = 0, bytes = 0, at = 0;
        char *w;

        /* count first, so that nothing below can outgrow its allocation */
        for (char *const *e = envp; e && *e; e++)
                for (const char *line = *e, *nl;; line = nl + 1) {
                        nl = strchr(line, '\n');
                        size_t len = nl ? (size_t)(nl - line) : strlen(line);
                        if (line_has_java_opt(line, len)) {
                                count++;
                                bytes += len + 1;
                        }
                        if (!nl)
                                break;
                }
        if (count == 0) {
                *ret_lines = NULL;
                *ret_storage = NULL;
                return 0;
        }
        if (count > (size_t)INT_MAX / 2)
                return -E2BIG;
        lines = calloc(count, sizeof(*lines));
        out = calloc(count + 1, sizeof(*out));
        storage = malloc(bytes);
        if (!lines || !out || !storage)
                return -ENOMEM;
        for (char *const *e = envp; e && *e; e++)
                for (const char *line = *e, *nl;; line = nl + 1) {
                        nl = strchr(line, '\n');
                        size_t len = nl ? (size_t)(nl - line) : strlen(line);
                        if (line_has_java_opt(line, len) && at < count)
                                lines[at++] = (struct java_opt_line){.text = line, .len = len};
                        if (!nl)
                                break;
                }
        qsort(lines, at, sizeof(*lines), java_opt_compare);
        w = storage;
        for (size_t i = 0; i < at; i++) {
                const char *text = lines[i].text, *eq = memchr(text, '=', lines[i].len);
                size_t len = lines[i].len;

                if (eq) {
                        len -= (size_t)(eq + 1 - text);
                        text = eq + 1;
                }
                memcpy(w, text, len);
                w[len] = '\0';
                out[i] = w;
                w += len + 1;
        }
        *ret_lines = out;
        *ret_storage = storage;
        out = NULL;
        storage = NULL;
        return (ssize_t)at;
}

int policy_inputs_from_spark_env(struct policy_inputs *in, char *const envp[],
                                 struct util_error *err)
{
        static const struct {
                const char *env, *flag;
        } backend[] = {
            {"SPARK_EXECUTOR_CORES", "--cores"},
            {"SPARK_APPLICATION_ID", "--app-id"},
            {"SPARK_EXECUTOR_ID", "--executor-id"},
        };
        _cleanup_free_ char *xmx = NULL, **opts = NULL, *storage = NULL;
        _cleanup_free_ const char **argv = NULL;
        size_t argc = 0;
        ssize_t nopts;
        const char *memory;
        int r;

        nopts = policy_spark_java_opts(envp, &opts, &storage);
        if (nopts < 0)
                return util_error_set(err, (int)-nopts,
                                      "Spark pod environment: SPARK_JAVA_OPT_<n>: %s",
                                      nopts == -E2BIG ? "too many options" : "out of memory");
        argv = calloc((size_t)nopts + 2 * ELEMENTSOF(backend) + 3, sizeof(*argv));
        if (!argv)
                return util_error_set(err, ENOMEM, "out of memory");
        argv[argc++] = "entrypoint.sh";
        for (ssize_t i = 0; i < nopts; i++)
                argv[argc++] = opts[i];
        memory = env_get(envp, "SPARK_EXECUTOR_MEMORY");
        if (memory && *memory) {
                if (asprintf((char **)&xmx, "-Xmx%s", memory) < 0)
                        return util_error_set(err, ENOMEM, "out of memory");
                argv[argc++] = xmx;
        }
        for (size_t k = 0; k < ELEMENTSOF(backend); k++) {
                const char *v = env_get(envp, backend[k].env);
                if (v && *v) {
                        argv[argc++] = backend[k].flag;
                        argv[argc++] = v;
                }
        }
        if (argc == 1)
                return 0;
        r = policy_inputs_from_command(in, (int)argc, (char *const *)argv, err);
        if (r < 0 && err) {
                char detail[UTIL_ERROR_TEXT_MAX];
                snprintf(detail, sizeof(detail), "%s", err->text);
                util_error_set(
                    err, -r,
                    "Spark pod environment (SPARK_EXECUTOR_MEMORY, SPARK_EXECUTOR_CORES, "
                    "SPARK_JAVA_OPT_<n>): %s",
                    detail);
        }
        return r;
}
