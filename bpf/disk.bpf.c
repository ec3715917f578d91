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

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, DISK_REQUESTS_MAX);
        __type(key, __u64);
        __type(value, struct probe_disk_request);
} requests SEC(".maps");

/* Claim rq for the cgroup of current if it is a watched one's read or write; else forget it. */
static __always_inline void claim(struct request *rq, __u64 issue_ts)
{
        __u64 key = (__u64)rq;
        struct probe_disk_request req = {};
        int slot = watched_slot(bpf_get_current_cgroup_id());
        __u32 op;

        if (slot < 0)
                goto forget;
        op = BPF_CORE_READ(rq, cmd_flags) & REQ_OP_MASK;
        if (op != OP_READ && op != OP_WRITE)
                goto forget;
        /* an empty write is a cache flush (REQ_PREFLUSH): no data, often never issued */
        if (BPF_CORE_READ(rq, __data_len) == 0)
                goto forget;
        req.issue_ts = issue_ts;
        req.slot = slot;
        req.write = op == OP_WRITE;
        bpf_map_update_elem(&requests, &key, &req, BPF_ANY);
        return;
forget:
        /* a stale entry from an earlier request at this address; the lookup takes no lock */
        if (bpf_map_lookup_elem(&requests, &key))
                bpf_map_delete_elem(&requests, &key);
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
        __u64 key = (__u64)rq;
        struct probe_disk_request *req = bpf_map_lookup_elem(&requests, &key);

        /* an issued request inserted again is a requeue (from a kworker): keep its owner */
        if (req && req->issue_ts)
                return 0;
        claim(rq, 0);
        return 0;
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(disk_rq_issue, struct request *rq)
{
        __u64 key = (__u64)rq;
        struct probe_disk_request *req = bpf_map_lookup_elem(&requests, &key);
        __u64 now = bpf_ktime_get_ns();

        if (req) {
                req->issue_ts = now;
                return 0;
        }
        /*
         * Without block_io_start: with an I/O scheduler every request was inserted first, and
         * whoever dispatches it now (often another task, or kblockd) does not own it. Without
         * one, the request is issued directly, in the submitter's context.
         */
        if (!start_at_io_start && !BPF_CORE_READ(rq, q, elevator))
                claim(rq, now);
        return 0;
}

SEC("raw_tp/block_rq_merge")
int BPF_PROG(disk_rq_merge, struct request *rq)
{
        __u64 key = (__u64)rq;

        if (bpf_map_lookup_elem(&requests, &key))
                bpf_map_delete_elem(&requests, &key);
        return 0;
}

/* block_rq_complete(rq, error, nr_bytes): nr_bytes of rq are done, maybe not all of it */
SEC("raw_tp/block_rq_complete")
int BPF_PROG(disk_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
        __u64 key = (__u64)rq;
        struct probe_disk_request *req = bpf_map_lookup_elem(&requests, &key);
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
        bpf_map_delete_elem(&requests, &key);
        return 0;
}
