// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* disk probe: shared between disk.bpf.c and its loader disk.c. */
#pragma once

#include "probe-limits.h"

struct probe_disk_stat {
        __u64 read_bytes, write_bytes;
        __u64 read_ops, write_ops;
        __u64 lat_hist[PROBE_LIMIT_HIST];
        __u64 lost; /* requests not followed: every way of their bucket was taken */
};

/* A read or write request of a watched cgroup in flight. */
struct probe_disk_request {
        __u64 issue_ts; /* 0 until block_rq_issue */
        __u32 slot;
        __u32 write;
};

/*
 * The requests array: DISK_BUCKETS buckets of DISK_WAYS requests, the bucket chosen by a hash
 * of the request's address. Requests come from a device's fixed pool and only as many as its
 * queue depth are in flight, so 8 ways of 1024 buckets are plenty.
 */
#define DISK_WAYS         8
#define DISK_BUCKETS_LOG2 10
#define DISK_BUCKETS      (1u << DISK_BUCKETS_LOG2)

struct probe_disk_bucket {
        __u64 rq[DISK_WAYS]; /* the requests' addresses, in one cache line; 0: the way is free */
        struct probe_disk_request way[DISK_WAYS];
};
