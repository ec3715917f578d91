// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* disk probe: shared between disk.bpf.c and its loader disk.c. */
#pragma once

#include "probe-limits.h"

struct probe_disk_stat {
        __u64 read_bytes, write_bytes;
        __u64 read_ops, write_ops;
        __u64 lat_hist[PROBE_LIMIT_HIST];
};

/* A read or write request of a watched cgroup in flight, keyed by its address (requests). */
struct probe_disk_request {
        __u64 issue_ts; /* 0 until block_rq_issue */
        __u32 slot;
        __u32 write;
};

#define DISK_REQUESTS_MAX 8192
