/* SPDX-License-Identifier: Apache-2.0 */
/*
 * policy: the cluster policy, the executor's inputs and the plan.
 *
 * Pure library: no I/O except policy_load_file(), no logging, no global state; every
 * function is thread-safe on distinct objects. Functions returning int give >= 0 on
 * success or -errno; on failure they fill the optional caller-owned struct util_error
 * with one human line (never more) naming the file/key/flag, the value and what is allowed.
 */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define POLICY_SCHEMA_VERSION 1
#define POLICY_PATH_MAX       4096
#define POLICY_NAME_MAX       128

enum policy_protection {
        POLICY_PROTECTION_LOW = 0, /* memory.low = request */
        POLICY_PROTECTION_MIN,     /* memory.min = request */
        POLICY_PROTECTION_NONE,
};

enum policy_fail_mode {
        POLICY_FAIL_CLOSED = 0, /* refuse to start when the plan cannot be enforced */
        POLICY_FAIL_OPEN,       /* run unconstrained, warn, report enforced=false */
};

/* What a report sink that cannot be opened does to the start (report.sink_failure). */
enum policy_sink_failure {
        POLICY_SINK_WARN = 0, /* warn, run, count its lines as dropped in the report */
        POLICY_SINK_REFUSE,   /* refuse the start (exit 125) */
};

enum policy_out_of_bounds {
        POLICY_BOUNDS_REJECT = 0, /* a user value outside the bounds is an error */
        POLICY_BOUNDS_CLAMP,      /* ... is clamped into the bounds (the plan says so) */
};

/* Values a user (flags, environment, the wrapped command) may set; bit set = allowed. */
enum policy_override {
        POLICY_OVERRIDE_MILLICORES = 1u << 0, /* millicores, request/limit cores */
        POLICY_OVERRIDE_CORES = 1u << 1,      /* task concurrency (--cores) */
        POLICY_OVERRIDE_MEMORY = 1u << 2,     /* heap, overhead, offheap, pyspark */
        POLICY_OVERRIDE_BURST_RATIO = 1u << 3,
        POLICY_OVERRIDE_CGROUP_PARENT = 1u << 4,
        POLICY_OVERRIDE_FAIL_MODE = 1u << 5,
        POLICY_OVERRIDE_AGENT = 1u << 6, /* agent on/off and its library (--agent...) */
        POLICY_OVERRIDE_GRACE = 1u << 7, /* a grace period longer than the policy's */
        POLICY_OVERRIDE_NAME = 1u << 8,  /* the executor's cgroup name (--name) */
};

/* How `sparkshim run` puts the JVMTI agent into the executor JVM. */
enum policy_agent_injection {
        POLICY_AGENT_INJECT_AUTO = 0,          /* -agentpath for a java launcher, else the env */
        POLICY_AGENT_INJECT_AGENTPATH,         /* -agentpath: right after the java executable */
        POLICY_AGENT_INJECT_JAVA_TOOL_OPTIONS, /* appended to JAVA_TOOL_OPTIONS */
};

/* What the agent's pressure threshold is measured against. */
enum policy_agent_threshold {
        POLICY_AGENT_THRESHOLD_NONE = 0, /* no threshold: the allow modes are refused */
        POLICY_AGENT_THRESHOLD_BYTES,    /* threshold_bytes as given */
        POLICY_AGENT_THRESHOLD_REQUEST,  /* threshold_fraction x the plan's memory request */
        POLICY_AGENT_THRESHOLD_LIMIT,    /* threshold_fraction x the plan's memory limit */
};

enum policy_agent_log {
        POLICY_AGENT_LOG_ERROR = 0,
        POLICY_AGENT_LOG_WARN,
        POLICY_AGENT_LOG_INFO,
        POLICY_AGENT_LOG_DEBUG,
};

/*
 * The JVMTI agent (libsparkshim-agent.so, sparkshim-agent(7)) as `sparkshim run` injects it.
 * Sizes in bytes; 0 turns a mode off.
 */
struct policy_agent {
        bool enabled;                          /* default false */
        char path[POLICY_PATH_MAX];            /* "" = the installed agent (SPARKSHIM_AGENT_PATH) */
        enum policy_agent_injection injection; /* default auto */
        uint64_t force_bytes;                  /* force-bytes */
        uint64_t periodic_bytes;               /* periodic */
        uint64_t allow_bytes;                  /* allow-bytes, needs a threshold */
        double allow_fraction; /* allow-fraction in (0,1], needs a threshold; 0 = off */
        uint64_t records;      /* records (Spark's count threshold), 1..2^31-1 */
        enum policy_agent_threshold threshold; /* default: 1.0 x the request */
        uint64_t threshold_bytes;              /* POLICY_AGENT_THRESHOLD_BYTES */
        double threshold_fraction;             /* REQUEST / LIMIT, in (0,1] */
        uint64_t cooldown_ms;                  /* default 500 */
        uint64_t min_spill_bytes;              /* default 0 */
        uint64_t max_spills;                   /* forced spills per task, default 32; 0 = no cap */
        uint64_t psi_stall_ms;     /* psi-stall-ms, 0 = no PSI source; <= psi_window_ms */
        uint64_t psi_window_ms;    /* psi-window-ms, 500..10000, default 1000 */
        double heap_threshold;     /* heap-threshold in (0,1]; 0 = no heap source */
        enum policy_agent_log log; /* default warn */
};

/* What the java personality (a `sparkshim java-home`'s bin/java) does with an executor. */
enum policy_java_executors {
        POLICY_JAVA_RUN = 0, /* as `sparkshim run -- JDK/bin/java ARGS` */
        POLICY_JAVA_EXEC,    /* exec the JDK's java, nothing added */
};

/*
 * The tuner (`sparkshim ingest` / `sparkshim tune`, sparkshim-tune(1)): where the history is,
 * which Spark property names a recurring job, and the admin's bounds on what it recommends
 * (beside the plan's own: cpu.millicores, memory.burst_ratio.max, memory.limit_max,
 * memory.overhead.min).
 */
/* What the java personality does with a job's published settings at spark-submit
 * (tuner.apply, sparkshim-tune(1)). */
enum policy_tuner_apply {
        POLICY_APPLY_OFF = 0, /* nothing: the personality does not look */
        POLICY_APPLY_SHOW,    /* one line saying what would be added; nothing added (default) */
        POLICY_APPLY_SAFE,    /* the job's safe settings only */
        POLICY_APPLY_EXPLORE, /* the next settings to try (safe after a failure or a retry) */
};

#define POLICY_SERVICE_DIRS_MAX 8
#define POLICY_SERVICE_PATH_MAX 1024

#define POLICY_HISTORY_SERVERS_MAX 4

/* A Spark History Server the service reads event logs from, and whose runs they are: the
 * user named by the attempt's sparkUser (owner_spark_user), or owner_uid. */
struct policy_history_server {
        char url[POLICY_SERVICE_PATH_MAX]; /* http(s)://host[:port][/prefix], no trailing '/' */
        bool owner_spark_user;
        uint32_t owner_uid;
};

/* `sparkshim tune-service` (sparkshim-tune(1)): what it collects, how often, where it
 * publishes. */
struct policy_tuner_service {
        struct policy_history_server history_servers[POLICY_HISTORY_SERVERS_MAX];
        size_t n_history_servers;
        char reports[POLICY_SERVICE_DIRS_MAX][POLICY_SERVICE_PATH_MAX]; /* report directories */
        size_t n_reports;
        char eventlogs[POLICY_SERVICE_DIRS_MAX][POLICY_SERVICE_PATH_MAX]; /* spark.eventLog.dir */
        size_t n_eventlogs;
        unsigned period_seconds;                   /* between passes; default 300 */
        char publish_dir[POLICY_SERVICE_PATH_MAX]; /* default /var/lib/sparkshim/published */
        unsigned expiry_seconds;                   /* a published file's life; default 7 days */
};

struct policy_tuner {
        char db[POLICY_PATH_MAX]; /* absolute SQLite path or postgresql:// URL */
        char job_key[256];        /* Spark property naming the job; default spark.app.name */
        unsigned history_runs;    /* newest runs read per job, 1..1000; default 20 */
        double failure_bound;     /* stage 2 proposes P(failure) below it, (0,1); default 0.1 */
        double runtime_allowance; /* failure past this x the first good run's time; default 1.5 */
        double runtime_target;    /* the rules keep runs within this x the best; default 1.1 */
        double work_target;       /* stage 2's work bound; 0 (default): runtime_target */
        double cpu_target;        /* utilisation the rules aim at, (0,1]; default 0.85 */
        double memory_target;     /* (0,1]; default 0.7 */
        uint64_t seed;            /* stage 2's random stream; default 1 */
        uint64_t heap_min, heap_max; /* bytes; default 512 MiB (Spark: >= 450 MiB), 64 GiB */
        uint64_t overhead_max;       /* bytes; default 16 GiB */
        double spill_fraction_min, spill_fraction_max; /* default 0.5, 1 */
        uint64_t partitions_min, partitions_max;       /* default 1, 100000 */
        enum policy_tuner_apply apply;                 /* default show */
        struct policy_tuner_service service;
};

/*
 * Executor rolling (docs/rolling.md): when one of these thresholds is crossed, the executor
 * gets SIGPWR once (Spark's decommission signal), then, if it still runs after grace_seconds,
 * the normal TERM path. Every trigger is optional and off when its section is absent; a
 * trigger fires at most once per its cooldown_seconds (it fires again only when the first
 * firing could not decommission the executor). No trigger at all (the default) = rolling off.
 */
struct policy_rolling {
        bool enabled;             /* at least one trigger is set */
        uint64_t grace_seconds;   /* SIGPWR -> TERM; 1..86400, default 600 */
        uint64_t min_age_seconds; /* no trigger fires earlier; default 0 */
        /* disk_write: bytes written to local disk since the executor started */
        uint64_t disk_write_bytes; /* 0 = off */
        uint64_t disk_write_cooldown_seconds;
        /* age: seconds since the executor started */
        uint64_t age_seconds; /* 0 = off */
        uint64_t age_cooldown_seconds;
        /* memory_high: memory.events "high" grew by at least events within window_seconds */
        uint64_t memory_high_events; /* 0 = off */
        uint64_t memory_high_window_seconds;
        uint64_t memory_high_cooldown_seconds;
        /* memory_pressure: memory.pressure stall time over window_seconds, percent of it */
        double pressure_some_percent; /* 0 = off; (0,100] */
        double pressure_full_percent; /* 0 = off; (0,100] */
        uint64_t pressure_window_seconds;
        uint64_t pressure_cooldown_seconds;
        /* spills: the agent's forced spills that released nothing (empty + failed) */
        uint64_t spills_ineffective; /* 0 = off: at least this many within window_seconds */
        double spills_fraction;      /* and at least this share of the forced ones; [0,1] */
        uint64_t spills_window_seconds;
        uint64_t spills_cooldown_seconds;
};

/*
 * The cluster policy. policy_init_defaults() gives the built-in defaults, which are also
 * what a key absent from the file means.
 */
struct policy {
        unsigned version;                    /* POLICY_SCHEMA_VERSION */
        char cgroup_parent[POLICY_PATH_MAX]; /* below the cgroup2 mount; default "sparkshim" */

        /* CPU */
        bool cpu_unlimited;      /* "overcommit": "unlimited" -> cpu.max "max 100000" */
        double overcommit;       /* >= 1, default 2.0 */
        uint64_t millicores_min; /* default 1 */
        uint64_t millicores_max; /* default 256000 */

        /* memory */
        double burst_ratio_default; /* default 0 */
        double burst_ratio_max;     /* in [0,1], default 1 */
        enum policy_protection protection;
        bool memory_high_enabled;    /* default false */
        double memory_high_factor;   /* in [0,1], default 0.9 */
        uint64_t overhead_min_bytes; /* default 384 MiB */
        double overhead_factor;      /* default 0.10 */
        uint64_t memory_limit_max;   /* bytes; 0 = no bound */

        /* others; 0 = not written */
        uint64_t pids_max;
        unsigned io_weight; /* 1..10000 */

        unsigned overrides; /* enum policy_override bits; default all */
        enum policy_out_of_bounds out_of_bounds;
        enum policy_fail_mode fail_mode;
        unsigned grace_seconds; /* TERM -> cgroup.kill; default 10 */

        char report_path[POLICY_PATH_MAX];            /* JSON lines file; "" = none */
        char report_socket[POLICY_PATH_MAX];          /* unix socket to send them to; "" = none */
        char report_prometheus[POLICY_PATH_MAX];      /* text-exposition file; "" = none */
        unsigned report_interval_seconds;             /* samples; default 10, 1..3600 */
        enum policy_sink_failure report_sink_failure; /* default warn */

        struct policy_agent agent;

        enum policy_java_executors java_executors; /* default run */

        /* the Kubernetes feature step makes `sparkshim run --init` the executor
         * container's command (sparkshim-k8s(7)); default false */
        bool kubernetes_init;

        struct policy_tuner tuner;

        struct policy_rolling rolling; /* executor rolling; default off */
};

void policy_init_defaults(struct policy *p);

/*
 * Parse a policy document. Unknown keys, wrong types, duplicate keys and out-of-range
 * values are rejected: err->text reads
 *   "<source>:<line>:<column>: <key.path>: <value> <what is wrong>; allowed: <what is>"
 * source names the file (or "<string>"). On error *ret is unchanged.
 */
int policy_parse(const char *text, size_t len, const char *source, struct policy *ret,
                 struct util_error *err);

/*
 * Load and parse a policy file. When check_owner is true the file must be a regular file
 * owned by root and not writable by group or others (-EPERM otherwise).
 */
int policy_load_file(const char *path, bool check_owner, struct policy *ret,
                     struct util_error *err);

/* The name of one enum policy_override bit as the policy's "overrides" array spells it
 * ("millicores", "cores", "memory", "burst_ratio", "cgroup_parent", "fail_mode", "agent", "grace");
 * NULL for anything else. */
const char *policy_override_name(enum policy_override o);

/*
 * Validate a cgroup path below the cgroup2 mount, as "cgroup.parent" takes it, and write it
 * normalised (leading and trailing '/' removed) to ret (size bytes): components
 * [A-Za-z0-9_.-]+, none "." or "..", not empty. -EINVAL, or -ENAMETOOLONG when it does not fit.
 */
int policy_normalize_cgroup_path(const char *s, char *ret, size_t size);

/* ---------------------------------------------------------------------------------- */
/* Sizes                                                                               */

enum policy_unit {
        POLICY_UNIT_BYTES = 0,
        POLICY_UNIT_KIB,
        POLICY_UNIT_MIB,
        POLICY_UNIT_GIB,
};

/*
 * Spark's byte strings (JavaUtils.byteStringAs): "<digits>[b|k|kb|m|mb|g|gb|t|tb|p|pb]",
 * case-insensitive, surrounding whitespace ignored; no suffix means default_unit.
 * Fractions ("1.5g") and negatives are -EINVAL, overflow -ERANGE.
 */
int policy_parse_spark_bytes(const char *s, enum policy_unit default_unit, uint64_t *ret);

/* JVM sizes (-Xmx): "<digits>[k|K|m|M|g|G|t|T]", no suffix = bytes. */
int policy_parse_jvm_bytes(const char *s, uint64_t *ret);

/* Kubernetes CPU quantities as Spark takes them: "0.5", "2", "500m" -> millicores. */
int policy_parse_cpu_quantity(const char *s, uint64_t *ret_millicores);

/*
 * Millicores as sparkshim's own knobs take them (SPARKSHIM_MILLICORES,
 * spark.executor.millicores): an integer ("1500") or "1500m" is millicores, a decimal number
 * ("1.5") is cores as in policy_parse_cpu_quantity(). Zero is -EINVAL.
 */
int policy_parse_millicores(const char *s, uint64_t *ret_millicores);

/* ---------------------------------------------------------------------------------- */
/* Executor inputs                                                                     */

/* Where a value came from; a higher source replaces a lower one. */
enum policy_source {
        POLICY_SOURCE_NONE = 0,
        POLICY_SOURCE_POLICY,  /* policy default */
        POLICY_SOURCE_COMMAND, /* read from the wrapped command line */
        POLICY_SOURCE_ENV,     /* SPARKSHIM_* environment */
        POLICY_SOURCE_FLAG,    /* sparkshim command-line flag */
};

const char *policy_source_name(enum policy_source s); /* "default", "command", "env", "flag" */

/*
 * 0 when source is not a user source (flag, env, command) or p allows overriding o; else
 * -EPERM with err "<origin>: set by the user, but the policy does not allow overriding <name>".
 * For the shim's own flags (--cgroup-parent, --fail-mode).
 */
int policy_check_override(const struct policy *p, enum policy_override o, enum policy_source source,
                          const char *origin, struct util_error *err);

struct policy_u64_input {
        uint64_t value;
        enum policy_source source;
        char origin[64]; /* what set it, for messages: "--millicores", "-Xmx", "SPARKSHIM_CORES" */
};

struct policy_double_input {
        double value;
        enum policy_source source;
        char origin[64];
};

struct policy_bool_input {
        bool value;
        enum policy_source source;
        char origin[64];
};

struct policy_inputs {
        struct policy_u64_input cores;            /* task concurrency */
        struct policy_u64_input millicores;       /* CPU request */
        struct policy_u64_input limit_millicores; /* explicit CPU limit (limit.cores) */
        struct policy_u64_input heap_bytes;
        /* the heap the JVM itself will take: the command's last -Xmx / -XX:MaxHeapSize */
        struct policy_u64_input jvm_heap_bytes;
        struct policy_u64_input overhead_bytes;
        struct policy_double_input overhead_factor;
        struct policy_bool_input offheap_enabled;
        struct policy_u64_input offheap_bytes;
        struct policy_u64_input pyspark_bytes;
        struct policy_double_input burst_ratio;
        /* spark.executor.sparkshim.spillFraction: the agent's threshold as a fraction of the
         * memory request or limit (agent.threshold), within tuner.spill_fraction */
        struct policy_double_input spill_fraction;
        char app_id[POLICY_NAME_MAX];      /* --app-id of the executor backend, "" if none */
        char executor_id[POLICY_NAME_MAX]; /* --executor-id, "" if none */
};

void policy_inputs_init(struct policy_inputs *in);

/* Store v if source >= the value's current source; origin is copied (truncated). */
void policy_input_set_u64(struct policy_u64_input *i, uint64_t v, enum policy_source source,
                          const char *origin);
void policy_input_set_double(struct policy_double_input *i, double v, enum policy_source source,
                             const char *origin);
void policy_input_set_bool(struct policy_bool_input *i, bool v, enum policy_source source,
                           const char *origin);

/*
 * Read the values a Spark executor launch carries on its command line: -Xmx, -D options
 * (spark.executor.memory, spark.executor.memoryOverhead, spark.executor.memoryOverheadFactor,
 * spark.executor.millicores, spark.executor.memoryBurst.ratio, spark.memory.offHeap.enabled,
 * spark.memory.offHeap.size, spark.executor.pyspark.memory,
 * spark.kubernetes.executor.request.cores, spark.kubernetes.executor.limit.cores,
 * spark.executor.cores) and the backend's --cores, --app-id, --executor-id. Everything is
 * stored with POLICY_SOURCE_COMMAND. argv is the wrapped command (argv[0] is the program).
 * A malformed value of a recognised option is an error naming it; unknown args are ignored.
 */
int policy_inputs_from_command(struct policy_inputs *in, int argc, char *const argv[],
                               struct util_error *err);

/*
 * Read the executor settings a Kubernetes executor pod carries in Spark's environment
 * (BasicExecutorFeatureStep): SPARK_EXECUTOR_MEMORY (the -Xmx of entrypoint.sh),
 * SPARK_EXECUTOR_CORES, SPARK_APPLICATION_ID, SPARK_EXECUTOR_ID and the SPARK_JAVA_OPT_<n>
 * JVM options in index order -- the command line `entrypoint.sh executor` will exec. Stored
 * with POLICY_SOURCE_COMMAND; call it before policy_inputs_from_command() so that the
 * wrapped command's own values win. Errors name the environment variable.
 */
int policy_inputs_from_spark_env(struct policy_inputs *in, char *const envp[],
                                 struct util_error *err);

/*
 * Inputs that cannot make a plan, whatever the policy: no heap size at all, or a heap given
 * by a flag or SPARKSHIM_MEMORY that differs from the -Xmx the JVM will use (memory.max
 * would then be planned for a heap the JVM does not have). -EINVAL with err naming both.
 */
int policy_inputs_check(const struct policy_inputs *in, struct util_error *err);

/*
 * Read SPARKSHIM_CORES, SPARKSHIM_MILLICORES, SPARKSHIM_LIMIT_MILLICORES, SPARKSHIM_MEMORY,
 * SPARKSHIM_MEMORY_OVERHEAD, SPARKSHIM_OFFHEAP, SPARKSHIM_PYSPARK_MEMORY,
 * SPARKSHIM_BURST_RATIO from envp (NULL-terminated), stored with POLICY_SOURCE_ENV. Sizes use
 * Spark byte strings with MiB as the default unit; millicores accept "500m"/"0.5" forms.
 */
int policy_inputs_from_env(struct policy_inputs *in, char *const envp[], struct util_error *err);

/* ---------------------------------------------------------------------------------- */
/* The plan                                                                            */

#define POLICY_CPU_PERIOD_US 100000u
#define POLICY_PAGE_SIZE     4096u

struct policy_plan {
        /* CPU */
        uint64_t cpu_request_millicores;
        uint64_t cpu_limit_millicores; /* 0 when unlimited */
        bool cpu_unlimited;
        uint64_t cpu_shares;   /* max(2, request x 1024 / 1000) */
        uint64_t cpu_weight;   /* policy_shares_to_weight(cpu_shares) */
        uint64_t cpu_quota_us; /* 0 when unlimited */
        uint64_t cpu_period_us;

        /* memory, bytes */
        uint64_t heap_bytes;
        uint64_t offheap_bytes;
        uint64_t pyspark_bytes;
        uint64_t overhead_bytes;
        double burst_ratio;
        uint64_t memory_limit_bytes;   /* heap + offheap + pyspark + overhead = memory.max */
        uint64_t memory_request_bytes; /* heap + offheap + pyspark + overhead x (1 - ratio) */
        enum policy_protection protection;
        uint64_t memory_high_bytes;  /* 0 = not written */
        double agent_spill_fraction; /* the user's agent threshold fraction; 0 = the policy's */

        uint64_t pids_max;  /* 0 = not written */
        unsigned io_weight; /* 0 = not written */

        /* Values changed by clamping, one "key: from -> to" line each, ';'-separated. */
        char clamped[UTIL_ERROR_TEXT_MAX];
};

/* crun >= 1.23 / runc >= 1.3.2 conversion: 2 -> 1, 1024 -> 100, 262144 -> 10000. */
uint64_t policy_shares_to_weight(uint64_t shares);

/*
 * Compute the plan. Inputs outside the policy bounds, or set by a user where the policy
 * does not allow overriding, are rejected (-EINVAL / -EPERM, err names the origin, the value
 * and the bounds) or clamped per policy->out_of_bounds. A missing heap size is -EINVAL
 * ("no executor memory: give --memory, SPARKSHIM_MEMORY or -Xmx in the command").
 */
int policy_plan_compute(const struct policy *p, const struct policy_inputs *in,
                        struct policy_plan *ret, struct util_error *err);

/* One cgroup v2 file write of the plan, in the order they must be applied. */
struct policy_write {
        const char *controller; /* "cpu", "memory", "pids", "io" */
        const char *file;       /* "cpu.max", ... */
        char value[64];         /* exactly what is written */
};

#define POLICY_WRITES_MAX 8

/* Fill out[] (POLICY_WRITES_MAX entries) with the writes of the plan; returns how many. */
size_t policy_plan_writes(const struct policy_plan *plan, struct policy_write out[]);

/*
 * The plan as JSON (new reference, NULL only on ENOMEM):
 * { "cpu": { "request_millicores", "limit_millicores" (null if unlimited), "weight", "max" },
 *   "memory": { "heap_bytes", "offheap_bytes", "pyspark_bytes", "overhead_bytes",
 *               "burst_ratio", "request_bytes", "limit_bytes", "max", "low"|"min", "high" },
 *   "pids": { "max" }, "io": { "weight" }, "clamped": [..] }
 * cgroup file values are strings exactly as written ("50000 100000", "max").
 */
json_t *policy_plan_to_json(const struct policy_plan *plan);

/*
 * The agent's pressure threshold for a plan, in bytes: threshold_bytes, or the fraction of
 * the plan's memory request or limit rounded down (at least 1); 0 when the policy sets none.
 */
uint64_t policy_agent_threshold_bytes(const struct policy_agent *agent,
                                      const struct policy_plan *plan);

/* "error", "warn", "info", "debug": the agent's log= values. */
const char *policy_agent_log_name(enum policy_agent_log level);

/* Kubernetes quantity text: millicores -> "500m" / "2"; bytes -> "4608Mi" / "1234". */
void policy_format_cpu_quantity(uint64_t millicores, char *buf, size_t size);
void policy_format_memory_quantity(uint64_t bytes, char *buf, size_t size);

/* ---------------------------------------------------------------------------------- */
/* Utilization, the tuner's input                                                      */

struct policy_utilization {
        double cpu;       /* CPU seconds / (request cores x wall seconds); NAN when unknown */
        double memory;    /* memory peak / memory request; NAN when unknown */
        double objective; /* 1 / (cpu x memory), the paper's objective; NAN unless both > 0 */
};

/*
 * Utilization of a run against its plan. cpu_seconds, wall_seconds and peak_bytes may be
 * NAN (unknown); the matching figures are then NAN.
 */
void policy_utilization(const struct policy_plan *plan, double cpu_seconds, double wall_seconds,
                        double peak_bytes, struct policy_utilization *ret);

/* What a java command line runs (policy/java-command.c). */
enum policy_java_main {
        POLICY_JAVA_MAIN_NONE = 0, /* nothing: -version, --help, no class given */
        POLICY_JAVA_MAIN_CLASS,    /* a class (also the class of -m MODULE/CLASS) */
        POLICY_JAVA_MAIN_JAR,      /* -jar FILE: the manifest's */
        POLICY_JAVA_MAIN_MODULE,   /* -m MODULE: the module's */
        POLICY_JAVA_MAIN_UNKNOWN,  /* an @argfile before the main class: the launcher's to read */
};

/*
 * Read argv (argv[0] is java) as the JDK's launcher reads its options; *ret_class is the
 * main class with POLICY_JAVA_MAIN_CLASS (a pointer into argv), else NULL.
 */
enum policy_java_main policy_java_main_class(int argc, char *const argv[], const char **ret_class);

/* True when class_name is one of the executor backends of Spark 3.3 to 4.x. */
bool policy_java_is_backend(const char *class_name);

/*
 * True when the command runs a Spark executor: its main class is a backend, or a backend's
 * name (also spelt with '/') is any of its arguments, unless the command is certainly
 * Spark's launcher (org.apache.spark.launcher.Main, with env_options false: see
 * policy_java_env_options()). A job's options can change how the JDK's launcher reads a
 * command line, never remove the backend's name that Spark passes: a reading that errs
 * wraps a command, it never lets an executor through.
 */
bool policy_java_runs_executor(int argc, char *const argv[], bool env_options);

/*
 * True when envp (NULL-terminated, may be NULL) gives the JVM options its command line does
 * not show: JAVA_TOOL_OPTIONS, _JAVA_OPTIONS or JDK_JAVA_OPTIONS set and not empty (any of
 * them can add a -javaagent that starts a backend). The env_options of
 * policy_java_runs_executor().
 */
bool policy_java_env_options(char *const envp[]);

/* ---------------------------------------------------------------------------------- */
/* Report file name templates (template.c)                                             */

/*
 * report.path, report.prometheus_path, --report and --prometheus may name {app_id},
 * {executor_id} and {name} (the executor's cgroup name) in their file name, never in the
 * directory part: one file per executor in the admin's directory. The values are the job
 * user's; each expands to at most POLICY_TEMPLATE_FIELD_MAX bytes of [A-Za-z0-9_.-].
 */
#define POLICY_TEMPLATE_FIELD_MAX 64
/* the expanded file name (last component); its temporary twin (.NAME.<16 hex>.tmp) fits NAME_MAX */
#define POLICY_TEMPLATE_NAME_MAX 200

struct policy_template_values {
        const char *app_id, *executor_id, *name; /* NULL or "" when unknown: expand to "" */
};

/*
 * Check a template: fields only in the file name, no other '{' or '}', a file name that is
 * not "", ".", ".." and does not start with '.', at most POLICY_TEMPLATE_NAME_MAX bytes
 * however long the values; with prometheus, a name ending in ".prom". Returns 1 when it
 * has a field, 0 when it names one file, -EINVAL or -ENAMETOOLONG with err.
 */
int policy_template_check(const char *template, bool prometheus, struct util_error *err);

/*
 * One value as it goes into a file name: bytes of [A-Za-z0-9_.-] kept, any other '_'; a
 * value longer than POLICY_TEMPLATE_FIELD_MAX is cut and ends in '-' and 16 hex digits of
 * a hash of the whole value. buf holds POLICY_TEMPLATE_FIELD_MAX + 1 bytes or is cut.
 */
void policy_template_escape(const char *value, char *buf, size_t size);

/*
 * The path for these values: the directory part as written, the file name with every field
 * escaped (policy_template_escape) and a '_' in front when it would start with '.' or be
 * empty. Returns 0, or -EINVAL (policy_template_check) / -ENAMETOOLONG with err.
 */
int policy_template_expand(const char *template, const struct policy_template_values *v, char *buf,
                           size_t size, struct util_error *err);

/* ---------------------------------------------------------------------------------- */
/* Spark's decommission settings on the command line (decommission.c)                  */

enum policy_decommission {
        POLICY_DECOMMISSION_UNSET = 0, /* not on the command line */
        POLICY_DECOMMISSION_ON,        /* "true" as Spark reads it (trimmed, any case) */
        POLICY_DECOMMISSION_OFF,       /* "false" */
        POLICY_DECOMMISSION_INVALID,   /* Spark refuses it: the executor fails in onStart */
};

struct policy_decommission_conf {
        enum policy_decommission enabled; /* -Dspark.decommission.enabled */
        char value[64];                   /* its value as given (cut to fit), for messages */
        char origin[64];                  /* "-Dspark.decommission.enabled", "" when unset */
        bool signal_set;                  /* -Dspark.executor.decommission.signal given */
        char signal[16];                  /* its value, trimmed; "" when too long */
};

/*
 * spark.decommission.enabled and spark.executor.decommission.signal from the -D options of a
 * java command line (argv[0] is java): the JVM's options only (before the main class, when
 * policy_java_main_class() finds it; all arguments otherwise), the last of each winning.
 * Only a hint, never the answer (docs/rolling.md): YARN, standalone and Kubernetes put no
 * such -D on an executor's command line (SparkConf.isExecutorStartupConf), Spark refuses
 * -Dspark.* in spark.executor.extraJavaOptions, and the executor takes the driver's conf
 * over its own system properties. Whether the executor decommissions on SIGPWR is what its
 * JVM catches (rolling_status_sigcgt() in measure/rolling.h). Never fails.
 */
void policy_decommission_from_command(int argc, char *const argv[],
                                      struct policy_decommission_conf *ret);

/* "true", "false", "invalid", "unset" */
const char *policy_decommission_name(enum policy_decommission d);

/* ---- published settings (policy/published.c; sparkshim-tune(1), PUBLISHED SETTINGS) ---- */

/* a published file's name holds at most this many bytes before ".json" */
#define POLICY_PUBLISHED_NAME_MAX 200
/* The property a job names itself by at submit, and the one the applied settings are
 * marked with ("next-<16 hex>" or "safe-<16 hex>"); a job opts out with spark.sparkshim.tune
 * "off". */
#define POLICY_JOB_PROPERTY    "spark.sparkshim.job"
#define POLICY_CONFIG_PROPERTY "spark.sparkshim.config"
#define POLICY_TUNE_PROPERTY   "spark.sparkshim.tune"
/*
 * The file name (in buf, size bytes) of a job's published settings in its owner's
 * directory: the job's bytes [A-Za-z0-9_.-] as they are (but a leading '.'), every other byte
 * as %XX, then ".json". -EINVAL for an empty job, -ENAMETOOLONG past
 * POLICY_PUBLISHED_NAME_MAX (such a job is never published).
 */
int policy_published_name(const char *job, char *buf, size_t size);
/*
 * Whether key=value may be published and added at submit: 0; -ENOENT for a key outside the
 * allow-list (sizes, counts, ratios: spark.executor.cores, .memory, .memoryOverhead,
 * .millicores, .memoryBurst.ratio, .sparkshim.spillFraction,
 * spark.kubernetes.executor.request.cores, spark.sql.shuffle.partitions and the
 * spark.executorEnv.SPARKSHIM_* four); -EINVAL for a value not of the key's form.
 */
int policy_published_check(const char *key, const char *value);

/* ---- spark-submit arguments (policy/submit-args.c) ---- */

/* The class Spark's launcher starts for spark-submit, pyspark, spark-shell, spark-sql, ... */
#define POLICY_SUBMIT_CLASS "org.apache.spark.deploy.SparkSubmit"
/* A properties file of spark-submit is read up to this size */
#define POLICY_SUBMIT_PROPERTIES_MAX (1024 * 1024)

/* Where a setting of a spark-submit command comes from, weakest first. For one key Spark takes
 * the strongest source's value, and of one source the last. */
enum policy_submit_source {
        POLICY_SUBMIT_PROPERTIES = 0,   /* the (last) --properties-file */
        POLICY_SUBMIT_EXTRA_PROPERTIES, /* --extra-properties-file, in their order */
        POLICY_SUBMIT_CONF,             /* --conf KEY=VALUE, -c KEY=VALUE */
        POLICY_SUBMIT_OPTION,           /* an option Spark maps to the key: --executor-memory */
};

struct policy_submit_setting {
        char *key, *value; /* owned by the struct policy_submit */
        enum policy_submit_source source;
};

/* What a spark-submit command line sets. policy_submit_init() before use,
 * policy_submit_free() after; not thread-safe. */
struct policy_submit {
        bool submission;                     /* false: --help, --version, --kill, --status,
                                              * --usage-error, or no primary resource */
        int resource;                        /* the primary resource's index in argv; else argc */
        const char *resource_arg;            /* it (points into argv); NULL without */
        const char *main_class;              /* --class's value (points into argv); NULL */
        const char *properties_file;         /* the last --properties-file: points into argv */
        const char **extra_properties_files; /* --extra-properties-file: point into argv */
        size_t n_extra_properties_files;
        struct policy_submit_setting *settings;
        size_t n_settings, allocated_settings;
};

void policy_submit_init(struct policy_submit *s);
/* Frees what s holds (not s); NULL-safe; s is as after policy_submit_init() again. */
void policy_submit_free(struct policy_submit *s);

/*
 * Read spark-submit's arguments (argv: argc of them, those after the SparkSubmit class) as
 * Spark 3.3 to 4.x reads them (SparkSubmitOptionParser, SparkSubmitArguments): options up to
 * the primary resource, each with its value as the next argument or as --opt=VALUE; the
 * application's arguments after the resource are never looked at. argv must outlive s.
 * Returns 0 (s->submission false for a command that submits nothing); -EINVAL with err for
 * what Spark refuses: an unknown option before the resource, an option without its value,
 * --conf without '='; -ENOMEM.
 */
int policy_submit_parse(int argc, char *const argv[], struct policy_submit *s,
                        struct util_error *err);

/*
 * Add the properties of a Java properties text (java.util.Properties.load: '=', ':' or
 * blanks between key and value, '#'/'!' comments, backslash continuations and escapes; the
 * value trimmed as Spark's Utils.getPropertiesFromFile does) as settings of source. name
 * names the text in err. Returns 0; -EINVAL with err for a malformed \uxxxx escape or a NUL
 * in a key or value; -ENOMEM.
 */
int policy_submit_add_properties(struct policy_submit *s, const char *text, size_t len,
                                 enum policy_submit_source source, const char *name,
                                 struct util_error *err);

/*
 * Read the files s names (the last --properties-file, each --extra-properties-file) as the
 * calling user and add their properties: regular files (a FIFO is not waited for) of at most
 * POLICY_SUBMIT_PROPERTIES_MAX bytes. Returns 0 or -errno with err naming the file.
 */
int policy_submit_read_properties(struct policy_submit *s, struct util_error *err);

/* The value Spark takes for key, or NULL when the command does not set it. */
const char *policy_submit_get(const struct policy_submit *s, const char *key);

/*
 * The job a command submits: POLICY_JOB_PROPERTY when set and not empty, else the value of
 * job_key (the policy's tuner.job_key: spark.app.name by default, which --name sets); for
 * spark.app.name unset, the name Spark gives the application: the --class, else the primary
 * resource's file name; else NULL. Points into s (or the argv s was read from).
 */
const char *policy_submit_job(const struct policy_submit *s, const char *job_key);

/* True when the command opts out of published settings: POLICY_TUNE_PROPERTY is "off" in any
 * case. */
bool policy_submit_opted_out(const struct policy_submit *s);
