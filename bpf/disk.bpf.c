// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * disk probe: bytes, operations and device latency of the block requests that tasks of
 * watched cgroups submit.
 *
 * A request is attributed to the cgroup of the task that creates it. Kernels >= 6.5 trace
 * block_io_start when a bio becomes a request, in the submitter's context: that is the
 * attribution point there. Older kernels have no such event; there the request is claimed at
 * block_rq_insert (the submitter queueing it to the I/O scheduler) or, on queues without a
 * scheduler, where requests go straight to the driver, at block_rq_issue. Requests merged into
 * another one are dropped (block_rq_merge) so their address cannot carry a stale owner into its
 * next use. Latency is block_rq_issue -> the completion that finishes the request.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "disk.h"
#include "probe.bpf.h"

#define REQ_OP_BITS 8
#define REQ_OP_MASK ((1u << REQ_OP_BITS) - 1)
/* enum req_op values, stable since 4.10 */
#define OP_READ  0
#define OP_WRITE 1

char LICENSE[] SEC("license") = "GPL";

/* The kernel traces block_io_start: attribute there, and never at insert/issue. */
const volatile bool start_at_io_start = false;

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, PROBE_LIMIT_CGROUPS);
        __type(key, __u32);
        __type(value, struct probe_disk_stat);
} disk_stats SEC(".maps");

/*
 * Requests in flight, in buckets by address (disk.h): an array lookup is a few inlined
 * instructions, where a hash map's insert and delete take a bucket lock and a free-list
 * operation each, on every I/O.
 */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, DISK_BUCKETS);
        __type(key, __u32);
        __type(value, struct probe_disk_bucket);
} requests SEC(".maps");

static __always_inline struct probe_disk_bucket *bucket_of(__u64 key)
{
        __u32 index = (__u32)((key * 0x9e3779b97f4a7c15ull) >> (64 - DISK_BUCKETS_LOG2));

        return bpf_map_lookup_elem(&requests, &index);
}

/* The way of b that follows request `key`, or -1. */
static __always_inline int find(struct probe_disk_bucket *b, __u64 key)
{
        for (int i = 0; i < DISK_WAYS; i++)
                if (b->rq[i] == key)
                        return i;
        return -1;
}

/* Stop following request `key` (completed, merged, or claimed by nobody watched). */
static __always_inline void forget(__u64 key)
{
        struct probe_disk_bucket *b = bucket_of(key);
        int way = b ? find(b, key) : -1;

        if (b && way >= 0 && way < DISK_WAYS)
                b->rq[way] = 0;
}

/* Claim rq for the cgroup of current if it is a watched one's read or write; else forget it. */
static __always_inline void claim(struct request *rq, __u64 issue_ts)
{
        __u64 key = (__u64)rq;
        struct probe_disk_bucket *b;
        struct probe_disk_request *req;
        struct probe_disk_stat *st;
        int slot = watched_slot(bpf_get_current_cgroup_id());
        int way;
        __u32 op;

        if (slot < 0)
                goto forget;
        op = BPF_CORE_READ(rq, cmd_flags) & REQ_OP_MASK;
        if (op != OP_READ && op != OP_WRITE)
                goto forget;
        /* an empty write is a cache flush (REQ_PREFLUSH): no data, often never issued */
        if (BPF_CORE_READ(rq, __data_len) == 0)
                goto forget;
        b = bucket_of(key);
        if (!b)
                return;
        way = find(b, key); /* a stale way from an earlier request at this address */
        for (int i = 0; i < DISK_WAYS && way < 0; i++)
                if (!b->rq[i] && __sync_val_compare_and_swap(&b->rq[i], 0, key) == 0)
                        way = i;
        if (way < 0 || way >= DISK_WAYS) {
                st = bpf_map_lookup_elem(&disk_stats, &slot);
                if (st)
                        st->lost++;
                return;
        }
        req = &b->way[way];
        req->issue_ts = issue_ts;
        req->slot = slot;
        req->write = op == OP_WRITE;
        return;
forget:
        forget(key);
}

SEC("raw_tp/block_io_start")
int BPF_PROG(disk_io_start, struct request *rq)
{
        claim(rq, 0);
        return 0;
}

SEC("raw_tp/block_rq_insert")
int BPF_PROG(disk_rq_insert, struct request *rq)
{
        struct probe_disk_bucket *b = bucket_of((__u64)rq);
        int way = b ? find(b, (__u64)rq) : -1;
        struct probe_disk_request *req = b && way >= 0 && way < DISK_WAYS ? &b->way[way] : NULL;

        /* an issued request inserted again is a requeue (from a kworker): keep its owner */
        if (req && req->issue_ts)
                return 0;
        claim(rq, 0);
        return 0;
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(disk_rq_issue, struct request *rq)
{
        struct probe_disk_bucket *b = bucket_of((__u64)rq);
        int way = b ? find(b, (__u64)rq) : -1;
        struct probe_disk_request *req = b && way >= 0 && way < DISK_WAYS ? &b->way[way] : NULL;
        __u64 now;

        if (req) {
                req->issue_ts = bpf_ktime_get_ns();
                return 0;
        }
        /*
         * Without block_io_start: with an I/O scheduler every request was inserted first, and
         * whoever dispatches it now (often another task, or kblockd) does not own it. Without
         * one, the request is issued directly, in the submitter's context.
         */
        if (start_at_io_start || BPF_CORE_READ(rq, q, elevator))
                return 0;
        now = bpf_ktime_get_ns();
        claim(rq, now);
        return 0;
}

SEC("raw_tp/block_rq_merge")
int BPF_PROG(disk_rq_merge, struct request *rq)
{
        forget((__u64)rq);
        return 0;
}

/* block_rq_complete(rq, error, nr_bytes): nr_bytes of rq are done, maybe not all of it */
SEC("raw_tp/block_rq_complete")
int BPF_PROG(disk_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
        struct probe_disk_bucket *b = bucket_of((__u64)rq);
        int way = b ? find(b, (__u64)rq) : -1;
        struct probe_disk_request *req = b && way >= 0 && way < DISK_WAYS ? &b->way[way] : NULL;
        struct probe_disk_stat *st;
        __u64 issue_ts, now;
        __u32 slot, write;

        if (!req)
                return 0;
        slot = req->slot;
        write = req->write;
        issue_ts = req->issue_ts;
        st = bpf_map_lookup_elem(&disk_stats, &slot);
        if (!st)
                return 0;
        if (write)
                st->write_bytes += nr_bytes;
        else
                st->read_bytes += nr_bytes;
        /* __data_len is what remains before this completion */
        if (nr_bytes < BPF_CORE_READ(rq, __data_len))
                return 0;
        if (write)
                st->write_ops++;
        else
                st->read_ops++;
        if (issue_ts) {
                now = bpf_ktime_get_ns();
                st->lat_hist[hist_slot((now > issue_ts ? now - issue_ts : 0) / 1000)]++;
        }
        b->rq[way & (DISK_WAYS - 1)] = 0;
        return 0;
}
