// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * BPF side only: what every probe program shares. Include once per BPF object, after
 * vmlinux.h and the libbpf headers; it defines the watched-cgroup rodata of that object.
 */
#pragma once

#include "probe-limits.h"

/*
 * The watched cgroups, by cgroup v2 id. One map for every probe kind of a set: the loader
 * creates it and hands its fd to each object (bpf_map__reuse_fd), sized to what the set may
 * watch. A task nobody watches costs one hash lookup per event, however many are watched.
 */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, PROBE_LIMIT_CGROUPS);
        __type(key, __u64);
        __type(value, struct probe_watch);
} watched SEC(".maps");

/* The filter in front of it (probe-limits.h), shared likewise. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct probe_filter);
} filter SEC(".maps");

/* The watched entry of a cgroup id, or NULL. */
static __always_inline struct probe_watch *watch_of(__u64 cgroup_id)
{
        __u32 zero = 0;
        struct probe_filter *f = bpf_map_lookup_elem(&filter, &zero);

        if (!f || !f->count[probe_filter_index(cgroup_id)])
                return NULL;
        return bpf_map_lookup_elem(&watched, &cgroup_id);
}

/* The slot (index into the counter arrays) of a cgroup id, or -1 when it is not watched. */
static __always_inline int watched_slot(__u64 cgroup_id)
{
        struct probe_watch *w = watch_of(cgroup_id);

        if (!w || w->slot >= PROBE_LIMIT_CGROUPS)
                return -1;
        return (int)w->slot;
}

/*
 * The cgroup v2 id of a task that is not current (bpf_get_current_cgroup_id() only sees
 * current): its default-hierarchy cgroup's kernfs node id, read with CO-RE.
 */
static __always_inline __u64 task_cgroup_id(struct task_struct *task)
{
        return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

/* floor(log2(v)) for v > 0, 0 for v == 0, capped to the last histogram slot. */
static __always_inline __u32 hist_slot(__u64 v)
{
        __u32 r = 0;

        if (v >> 32) {
                v >>= 32;
                r += 32;
        }
        if (v >> 16) {
                v >>= 16;
                r += 16;
        }
        if (v >> 8) {
                v >>= 8;
                r += 8;
        }
        if (v >> 4) {
                v >>= 4;
                r += 4;
        }
        if (v >> 2) {
                v >>= 2;
                r += 2;
        }
        if (v >> 1)
                r += 1;
        return r < PROBE_LIMIT_HIST ? r : PROBE_LIMIT_HIST - 1;
}
