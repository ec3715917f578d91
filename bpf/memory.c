/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loader of the memory probe (memory.bpf.c): mark_victim (+ signal_generate where
 * mark_victim passes only a pid), memcg and direct reclaim begin/end, and the OOM ring buffer.
 */
#include "probe-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memory.h"
/* the generated skeleton embeds the BPF object as one long string literal */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
#include "memory.skel.h"
#pragma GCC diagnostic pop

struct memory_part {
        struct memory_bpf *skel;
        struct ring_buffer *events;
        /* set for the duration of probe_memory_consume() */
        const uint64_t *ids;
        size_t n;
        int (*fn)(const struct probe_oom_event *event, void *userdata);
        void *userdata;
};

static int handle_record(void *ctx, void *data, size_t size)
{
        struct memory_part *part = ctx;
        struct probe_oom_record record;
        struct probe_oom_event event = {0};

        if (size < sizeof(record) || !part->fn)
                return 0;
        memcpy(&record, data, sizeof(record));
        if (record.slot >= part->n)
                return 0;
        event.cgroup_id = part->ids[record.slot];
        event.t_ns = record.ts;
        event.pid = record.pid;
        event.attribution = (enum probe_oom_attribution)record.how;
        memcpy(event.comm, record.comm, sizeof(event.comm));
        event.comm[sizeof(event.comm) - 1] = '\0';
        return part->fn(&event, part->userdata);
}

static bool has_pair(const struct btf *vmlinux, const char *begin, const char *end)
{
        return probe_tracepoint_nargs(vmlinux, begin) >= 0 &&
               probe_tracepoint_nargs(vmlinux, end) == 1;
}

static int memory_open(const struct probe_config *cfg, void **ret, char *detail, size_t detail_size,
                       struct util_error *why)
{
        struct memory_part *part;
        struct memory_bpf *skel;
        static const char *const shape_names[] = {
            [VICTIM_TASK] = "mark_victim(task)",
            [VICTIM_PID] = "mark_victim(pid)",
            [VICTIM_TASK_AS_PID] = "mark_victim(task,as-pid)",
        };
        enum probe_victim_shape shape;
        int victim_args, err;
        bool signals, memcg, direct;

        /* mark_victim(int pid) before 6.8; mark_victim(struct task_struct *, uid_t) after */
        victim_args = probe_tracepoint_nargs(cfg->vmlinux, "mark_victim");
        if (victim_args == 1)
                shape = VICTIM_PID;
        else if (cfg->oom_by_pid)
                shape = VICTIM_TASK_AS_PID;
        else
                shape = VICTIM_TASK;
        /* without it, mark_victim(pid) can only blame the killing task's cgroup */
        signals =
            shape != VICTIM_TASK && probe_tracepoint_nargs(cfg->vmlinux, "signal_generate") >= 3;
        memcg =
            has_pair(cfg->vmlinux, "mm_vmscan_memcg_reclaim_begin", "mm_vmscan_memcg_reclaim_end");
        direct = has_pair(cfg->vmlinux, "mm_vmscan_direct_reclaim_begin",
                          "mm_vmscan_direct_reclaim_end");
        if (victim_args < 1 && !memcg && !direct) {
                util_error_set(why, EOPNOTSUPP,
                               "the kernel has neither a usable mark_victim nor the vmscan reclaim "
                               "tracepoints");
                return -EOPNOTSUPP;
        }

        part = calloc(1, sizeof(*part));
        if (!part)
                return -ENOMEM;
        skel = memory_bpf__open();
        if (!skel) {
                err = -errno;
                probe_format_failure(why, "open", err);
                free(part);
                return err;
        }
        skel->rodata->victim_shape = shape;
        skel->rodata->ring_events = !cfg->node;
        err = probe_share_maps(skel->obj, "memory_stats", cfg);
        if (err) {
                probe_format_failure(why, "maps", err);
                goto fail;
        }

        bpf_program__set_autoload(skel->progs.mem_victim, victim_args >= 1);
        bpf_program__set_autoload(skel->progs.mem_sigkill, signals);
        if (victim_args >= 1)
                probe_detail_add(detail, detail_size, shape_names[shape]);
        if (signals)
                probe_detail_add(detail, detail_size, "signal_generate");
        bpf_program__set_autoload(skel->progs.mem_memcg_begin, memcg);
        bpf_program__set_autoload(skel->progs.mem_memcg_end, memcg);
        if (memcg)
                probe_detail_add(detail, detail_size, "mm_vmscan_memcg_reclaim_begin/end");
        bpf_program__set_autoload(skel->progs.mem_direct_begin, direct);
        bpf_program__set_autoload(skel->progs.mem_direct_end, direct);
        if (direct)
                probe_detail_add(detail, detail_size, "mm_vmscan_direct_reclaim_begin/end");

        err = memory_bpf__load(skel);
        if (err) {
                probe_format_failure(why, "load", err);
                goto fail;
        }
        part->skel = skel;
        part->events =
            ring_buffer__new(bpf_map__fd(skel->maps.oom_events), handle_record, part, NULL);
        if (!part->events) {
                err = -errno;
                probe_format_failure(why, "ring buffer", err);
                goto fail;
        }
        *ret = part;
        return 0;
fail:
        memory_bpf__destroy(skel);
        free(part);
        return err;
}

static int memory_read(int stats_fd, unsigned slot, struct probe_usage *usage)
{
        uint64_t words[sizeof(struct probe_memory_stat) / sizeof(uint64_t)];
        struct probe_memory_stat sum;
        int err;

        err = probe_percpu_sum(stats_fd, slot, sizeof(sum), words);
        if (err)
                return err;
        memcpy(&sum, words, sizeof(sum));
        usage->oom_kills += sum.oom_kills;
        usage->reclaim_ns += sum.reclaim_ns;
        usage->reclaim_count += sum.reclaim_count;
        usage->reclaim_pages += sum.reclaim_pages;
        usage->oom_events_lost += sum.oom_events_lost;
        return 0;
}

int probe_memory_consume(void *opaque, const uint64_t *ids, size_t n,
                         int (*fn)(const struct probe_oom_event *event, void *userdata),
                         void *userdata)
{
        struct memory_part *part = opaque;
        int r;

        part->ids = ids;
        part->n = n;
        part->fn = fn;
        part->userdata = userdata;
        r = ring_buffer__consume(part->events);
        part->fn = NULL;
        part->userdata = NULL;
        return r;
}

int probe_memory_fd(void *opaque)
{
        struct memory_part *part = opaque;

        return ring_buffer__epoll_fd(part->events);
}

static struct bpf_object *memory_object(void *opaque)
{
        struct memory_part *part = opaque;

        return part->skel->obj;
}

static void memory_close(void *opaque)
{
        struct memory_part *part = opaque;

        if (!part)
                return;
        ring_buffer__free(part->events);
        memory_bpf__destroy(part->skel);
        free(part);
}

const struct probe_part_ops probe_memory_ops = {
    .kind = PROBE_MEMORY,
    .stats = "memory_stats",
    .stat_size = sizeof(struct probe_memory_stat),
    .open = memory_open,
    .read = memory_read,
    .object = memory_object,
    .close = memory_close,
};
