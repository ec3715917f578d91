// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Sizes and the watched-cgroup entry shared by the BPF programs and their loaders. The BPF
 * side cannot include probe.h (libc headers clash with vmlinux.h), so probe.c checks at
 * compile time that these equal PROBE_CGROUPS_MAX and PROBE_HIST_SLOTS.
 */
#pragma once

/*
 * The cgroups one probe set can watch: the node's shared set (docs/probes.md, "One set per
 * node") has this many slots; a set of one shim's own sizes its maps to what it watches.
 */
#define PROBE_LIMIT_CGROUPS 1024
#define PROBE_LIMIT_HIST    32

/*
 * A watched cgroup: the value of the `watched` hash map, keyed by the cgroup v2 id. The
 * programs read slot (the index into the per-CPU counter arrays) and start_ns; the owner
 * fields are the loader's, to tell a live registration from one whose shim died.
 */
struct probe_watch {
        __u32 slot;
        __u32 owner_pid;   /* the registering process, in owner_pidns */
        __u64 start_ns;    /* CLOCK_MONOTONIC at registration: older tasks count from then */
        __u64 owner_start; /* its start time, clock ticks after boot (/proc/PID/stat field 22) */
        __u64 owner_pidns; /* the inode of its pid namespace */
};
