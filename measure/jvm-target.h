/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jvm-target: the executor's JVM among the processes of its cgroup, for executor rolling
 * (docs/rolling.md): whether it catches SIGPWR, and SIGPWR sent to it and to nothing else.
 *
 * The JVM is the shim's child or a process of the child's cgroup (cgroup.procs in order,
 * and its /proc/PID/cgroup the child's), whose /proc/PID/comm is "java", whose command line
 * runs an executor (policy_java_runs_executor) and whose credentials pass
 * jvm_target_ids_ok(). It is held by a pidfd: everything read about it from /proc is read
 * after the pidfd was opened and used only if the process is still alive after the read,
 * so a pid that was reused in between is never taken for it, and the signal goes through
 * the pidfd. Nothing is looked for once the child is reaped (its pid may be another's). Everything
 * read from /proc here but the ids is the job's to write (comm, the command line, its SigCgt).
 *
 * Used by one thread (the monitor's). Bounded: JVM_TARGET_SCAN_MAX pids a scan, the
 * command lines of JVM_TARGET_CANDIDATES_MAX of them, JVM_TARGET_CMDLINE_MAX bytes each.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rolling.h"

#define JVM_TARGET_SCAN_MAX       4096
#define JVM_TARGET_CANDIDATES_MAX 16
#define JVM_TARGET_CMDLINE_MAX    (1024 * 1024)
#define JVM_TARGET_ARGS_MAX       65536
#define JVM_TARGET_STATUS_MAX     (1024 * 1024) /* status grows with the groups */

struct jvm_target;

/* NULL with errno set when /proc cannot be opened or on ENOMEM. */
struct jvm_target *jvm_target_new(void);
void jvm_target_free(struct jvm_target *t); /* NULL-safe */

/*
 * The shim's child: child_pidfd (taken over; opened by the supervisor before it could reap
 * the child, so it is certainly the child's) and its pid. Reads the child's cgroup (the
 * "0::" line of /proc/PID/cgroup), which every other candidate must share. -ESRCH when the
 * child is gone already (nothing will be found).
 */
int jvm_target_set_child(struct jvm_target *t, int child_pidfd, pid_t child);

/*
 * Find (or keep) the JVM of the executor, in the cgroup of cgroup_fd (-1: the child alone),
 * and read whether it catches SIGPWR. UNKNOWN when there is none (yet): no child set, the
 * child reaped, a wrapper whose JVM is not started, the JVM gone, /proc unreadable. Never
 * fails otherwise.
 */
enum rolling_sigpwr jvm_target_update(struct jvm_target *t, int cgroup_fd);

/* The pid of the JVM held, 0 when none. */
pid_t jvm_target_pid(const struct jvm_target *t);

/*
 * spark.decommission.enabled as the held JVM's command line gives it (only a hint,
 * policy_decommission_from_command); POLICY_DECOMMISSION_UNSET when none is held.
 */
enum policy_decommission jvm_target_command_line(const struct jvm_target *t);

/* A new pidfd of the held JVM (O_CLOEXEC), for another thread to signal; -errno. */
int jvm_target_dup_pidfd(const struct jvm_target *t);

/* pidfd_open(2) of pid, O_CLOEXEC; -errno. */
int jvm_pidfd_open(pid_t pid);

/*
 * The real uid of the process of pidfd (pid its pid), from /proc/PID/status read while the
 * pidfd says it is not reaped (so a reused pid is never read for it): 0 with *ret, -ESRCH
 * when it is gone, other -errno. For the report's identity.run_as_uid.
 */
int jvm_process_uid(int pidfd, pid_t pid, uid_t *ret);

/* sig to the process of pidfd (pidfd_send_signal); 0 or -errno (-ESRCH: it is gone). */
int jvm_pidfd_send_signal(int pidfd, int sig);

/* ---- pure parts (fuzzed: tests/fuzz/fuzz-jvm-target.c) ---- */

/*
 * The Uid: and Gid: lines of a /proc/PID/status text (len bytes, need not be NUL-terminated):
 * real, effective, saved and filesystem ids. Exactly one of each line, four decimal ids
 * each, is accepted; anything else is -EINVAL.
 */
int jvm_status_ids(const char *text, size_t len, uid_t uid[4], gid_t gid[4]);

/*
 * Whether a process with these ids may be the JVM signalled for an executor whose child
 * (the shim's) has real uid child_uid now: its four uids alike and its four gids alike (not
 * a set-id program, which runs with another's privileges), and its uid the child's, unless
 * that is root (a root launch may run its JVM as any user, e.g. through runuser, and root
 * could signal it anyway). A user's executor never has another user's or root's process
 * signalled.
 */
bool jvm_target_ids_ok(const uid_t uid[4], const gid_t gid[4], uid_t child_uid);

/*
 * Split a /proc/PID/cmdline text (len bytes of NUL-terminated arguments; a last one
 * without its NUL, as a cut-off read leaves it, is dropped) in place: argv gets at most
 * max - 1 pointers into buf and a NULL. Returns the count.
 */
size_t jvm_cmdline_split(char *buf, size_t len, char **argv, size_t max);
