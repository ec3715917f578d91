// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * BPF side only: what every probe program shares. Include once per BPF object, after
 * vmlinux.h and the libbpf headers; it defines the watched-cgroup rodata of that object.
 */
#pragma once

#include "probe-limits.h"

/*
 * The watched cgroup v2 ids, set by the loader before load. Frozen rodata: the verifier
 * sees nwatched as a constant and prunes the rest of the slot search.
 */
const volatile __u64 watched_ids[PROBE_LIMIT_CGROUPS] = {};
const volatile __u32 nwatched = 0;

/* The slot (index into watched_ids) of a cgroup id, or -1 when it is not watched. */
static __always_inline int watched_slot(__u64 cgroup_id)
{
        for (int i = 0; i < PROBE_LIMIT_CGROUPS; i++) {
                if (i >= nwatched)
                        break;
                if (watched_ids[i] == cgroup_id)
                        return i;
        }
        return -1;
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
