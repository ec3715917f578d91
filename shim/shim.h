/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sparkshim executable: private declarations shared by its files. Functions return >= 0
 * or -errno; the human detail goes into a struct util_error (one line) and the commands
 * (main.c, options.c, cmd-plan.c, run.c) and the supervisor log. The command line's own
 * declarations are in run.h.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"
#include "shim-common.h"

/* ---- cgroup v2 backend (cgroup.c) ---- */

struct shim_cgroup {
        int mount_fd;  /* cgroup2 mount root */
        int leaf_fd;   /* the executor's cgroup */
        int parent_fd; /* its parent */
        char leaf_name[POLICY_NAME_MAX];
        char path[4096]; /* leaf path relative to the mount, for messages and reports */
        char mount[256];
};

#define SHIM_CGROUP_INIT                                                                           \
        {                                                                                          \
                .mount_fd = -1, .leaf_fd = -1, .parent_fd = -1                                     \
        }

/* The controllers the plan's writes need, as a space-separated "+cpu +memory" list. */
void shim_cgroup_needed_controllers(const struct policy_write *w, size_t n, char *buf, size_t size);

/*
 * Wrap mode: create <mount>/<parent>/<name>, enable the controllers the writes need along
 * the way, write and read back every value. On failure nothing is left behind that this
 * call created.
 */
/*
 * Whether init mode may set up its cgroups here: this process at the root (0::/) of a cgroup
 * namespace of its own, with the cgroup2 mount at mount showing that root. 0 when so; 1 when
 * all holds but this process is below the namespace's root (where `kubectl exec` lands in a
 * pod whose PID 1 is sparkshim: the container is fit, this process may not be its init);
 * else -EPERM or -EOPNOTSUPP. detail gets the verdict (with the fix when not) either way.
 */
int shim_cgroup_init_namespace(const char *mount, char *detail, size_t size);

enum shim_cgroup_layout {
        SHIM_CGROUP_NONE = 0, /* no cgroup2 mount found */
        SHIM_CGROUP_UNIFIED,  /* pure cgroup v2 at /sys/fs/cgroup */
        SHIM_CGROUP_HYBRID,   /* v2 at /sys/fs/cgroup/unified, controllers on v1 */
        SHIM_CGROUP_LEGACY,   /* v1 only */
};

struct shim_cgroup_host {
        enum shim_cgroup_layout layout;
        char mount[256]; /* cgroup2 mount point, "" when none */
};

/* Find the cgroup2 mount under root ("/sys/fs/cgroup" normally). */
int shim_cgroup_detect(const char *root, struct shim_cgroup_host *ret);
const char *shim_cgroup_layout_name(enum shim_cgroup_layout l);

int shim_cgroup_setup_wrap(const struct shim_cgroup_host *host, const char *parent,
                           const char *name, const struct policy_write *w, size_t n,
                           struct shim_cgroup *ret, struct util_error *err);

/*
 * Init mode: the shim is alone in the root of its cgroup namespace. Move itself into
 * <mount>/init, enable the controllers in the root, create <mount>/<name> with the writes.
 */
int shim_cgroup_setup_init(const struct shim_cgroup_host *host, const char *name,
                           const struct policy_write *w, size_t n, struct shim_cgroup *ret,
                           struct util_error *err);

/* Is anything still running in the leaf? 1 yes, 0 no, -errno. */
int shim_cgroup_populated(const struct shim_cgroup *cg);

/* Kill everything in the leaf (cgroup.kill, or SIGKILL per pid before 5.14). */
int shim_cgroup_kill(const struct shim_cgroup *cg);

/* Kill leftovers, wait for empty, rmdir; closes the fds. NULL-safe, idempotent. */
int shim_cgroup_destroy(struct shim_cgroup *cg);

int shim_cgroup_memory_events(const struct shim_cgroup *cg, struct util_memory_events *ret);

/*
 * The leaf name for <name>: '_' in front of a name that starts with '_' or '.', or with a
 * lowercase word and a '.', which kernel interface files (cgroup.procs, memory.max) do.
 */
void shim_cgroup_escape_name(const char *name, char *buf, size_t size);

/* Is <name> a valid cgroup leaf name: [A-Za-z0-9_.-]{1,100}, not "." or "..". */
bool shim_cgroup_name_valid(const char *name);

/* ---- process supervision (supervise.c) ---- */

struct shim_supervise_opts {
        char *const *argv;                       /* the command */
        int cgroup_fd;                           /* leaf to start it in, -1 for none */
        bool signal_group;                       /* forward signals to the child's process group */
        unsigned grace_seconds;                  /* TERM -> wait -> cgroup.kill */
        const struct shim_cgroup *cgroup;        /* NULL when not enforced */
        void (*on_start)(void *data, pid_t pid); /* the command started */
        void (*on_tick)(void *data);             /* about once a second */
        /*
         * About once a second while the command runs: true to go the normal TERM path now,
         * as if TERM had been received (executor rolling's TERM after its grace). NULL: never.
         */
        bool (*on_rolling_term)(void *data);
        void *data;
};

/* Block the signals the supervisor handles; call before any child is started. */
int shim_signals_block(void);

/*
 * Start the command and supervise it until it exits. Returns the exit status to use
 * (child's code, 128+signal, 126/127) or a negative errno when it could not be started,
 * in which case err says why.
 */
int shim_supervise(const struct shim_supervise_opts *opts, struct util_error *err);

/* ---- check (check.c) ---- */

int shim_check(const char *policy_path, bool policy_explicit, const char *cgroup_root, bool init);

/* ---- sparkshim report and sparkshim probe (cmd-report.c) ---- */

int shim_cmd_report(int argc, char **argv, bool as_json, bool all);
int shim_cmd_probe(const char *cgroup, pid_t pid, const char *cgroup_root, unsigned interval,
                   unsigned count, bool use_bpf);

/*
 * `sparkshim java-home --jdk JDK [--policy POLICY] DIR` (shim/java.c): make or refresh DIR,
 * a java home that mirrors JDK but for bin/java, which is this program, and whose
 * personality reads POLICY (an absolute path the caller checked; NULL: the build's default
 * policy). Refused (-EPERM): a build with test hooks (sparkshim-test), and as root a
 * program that util_trusted_file() refuses. Returns 0 or -errno with err set.
 */
int shim_java_home(const char *jdk, const char *policy, const char *dir, struct util_error *err);

/*
 * The java personality: the JDK's java (into real) of the java home this program was
 * executed from (AT_EXECFN, else argv0), and the policy the home names (into policy, "" for
 * the build's default). As root the home must be root's and the JDK's java a trusted file;
 * a build with test hooks is refused. Returns 0 or -errno with err set.
 */
int shim_java_locate(const char *argv0, char *real, size_t size, char *policy, size_t policy_size,
                     struct util_error *err);

/*
 * The java personality at spark-submit (shim/submit.c): argv (argv[class_index] is the class
 * org.apache.spark.deploy.SparkSubmit) with the job's published settings added after the class
 * as the policy at policy_path says (tuner.apply; policy_explicit: a missing file is an error,
 * not the built-in defaults), or argv itself. Never fails: anything wrong leaves argv as it
 * is, with one warning line. The result is malloc'd for the exec that follows, never freed.
 */
char **shim_submit_apply(int argc, char **argv, int class_index, const char *policy_path,
                         bool policy_explicit);
