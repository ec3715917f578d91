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
/*
 * A filter in front of the watched map: per bucket of cgroup ids, how many are watched
 * (saturating at 255). An array lookup is inlined by the verifier, a hash lookup is a helper
 * call that hashes the key: a task nobody watches, on almost every event of the node, costs
 * the former only (with 1,024 watched in 65,536 buckets, 1 in 64 of the others pass on to
 * the hash lookup). The loader rebuilds it from the watched map after every change.
 */
#define PROBE_FILTER_BITS 16
struct probe_filter {
        __u8 count[1u << PROBE_FILTER_BITS];
};

static inline __u32 probe_filter_index(__u64 cgroup_id)
{
        return (__u32)((cgroup_id * 0x9e3779b97f4a7c15ull) >> (64 - PROBE_FILTER_BITS));
}

struct probe_watch {
        __u32 slot;
        __u32 owner_pid;   /* the registering process, in owner_pidns */
        __u64 start_ns;    /* CLOCK_MONOTONIC at registration: older tasks count from then */
        __u64 owner_start; /* its start time, clock ticks after boot (/proc/PID/stat field 22) */
        __u64 owner_pidns; /* the inode of its pid namespace */
};
