/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loader of the cpu probe (cpu.bpf.c): sched_switch, sched_wakeup, sched_wakeup_new,
 * sched_process_free.
 */
#include "probe-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cpu.h"
/* the generated skeleton embeds the BPF object as one long string literal */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
#include "cpu.skel.h"
#pragma GCC diagnostic pop

struct cpu_part {
        struct cpu_bpf *skel;
};

static int cpu_open(const struct probe_config *cfg, void **ret, char *detail, size_t detail_size,
                    char *why, size_t why_size)
{
        struct cpu_part *part;
        struct cpu_bpf *skel;
        int switch_args, err;

        switch_args = probe_tracepoint_nargs(cfg->vmlinux, "sched_switch");
        if (switch_args < 0) {
                snprintf(why, why_size, "the kernel has no sched_switch tracepoint");
                return -EOPNOTSUPP;
        }
        if (switch_args < 3) {
                snprintf(why, why_size, "sched_switch passes %d arguments, expected 3 or 4",
                         switch_args);
                return -EOPNOTSUPP;
        }

        part = calloc(1, sizeof(*part));
        if (!part)
                return -ENOMEM;
        skel = cpu_bpf__open();
        if (!skel) {
                err = -errno;
                probe_format_failure(why, why_size, "open", err);
                free(part);
                return err;
        }
        for (size_t i = 0; i < cfg->n; i++)
                skel->rodata->watched_ids[i] = cfg->ids[i];
        skel->rodata->nwatched = (__u32)cfg->n;

        bpf_program__set_autoload(skel->progs.cpu_switch, switch_args >= 4);
        bpf_program__set_autoload(skel->progs.cpu_switch_nost, switch_args == 3);
        probe_detail_add(detail, detail_size,
                         switch_args >= 4 ? "sched_switch" : "sched_switch(prev->state)");
        if (probe_tracepoint_nargs(cfg->vmlinux, "sched_wakeup") == 1)
                probe_detail_add(detail, detail_size, "sched_wakeup");
        else
                bpf_program__set_autoload(skel->progs.cpu_wakeup, false);
        if (probe_tracepoint_nargs(cfg->vmlinux, "sched_wakeup_new") == 1)
                probe_detail_add(detail, detail_size, "sched_wakeup_new");
        else
                bpf_program__set_autoload(skel->progs.cpu_wakeup_new, false);
        /* without it, entries of exited tasks stay until the map is full */
        if (probe_tracepoint_nargs(cfg->vmlinux, "sched_process_free") == 1)
                probe_detail_add(detail, detail_size, "sched_process_free");
        else
                bpf_program__set_autoload(skel->progs.cpu_task_free, false);

        err = cpu_bpf__load(skel);
        if (err) {
                probe_format_failure(why, why_size, "load", err);
                goto fail;
        }
        err = cpu_bpf__attach(skel);
        if (err) {
                probe_format_failure(why, why_size, "attach", err);
                goto fail;
        }
        part->skel = skel;
        *ret = part;
        return 0;
fail:
        cpu_bpf__destroy(skel);
        free(part);
        return err;
}

/* Queue starts still waiting for their task to run, for one slot (entries with ts != 0). */
static int count_pending(const struct bpf_map *map, unsigned slot, uint64_t *ret)
{
        __u64 key, next;
        struct probe_runq_start start;
        uint64_t pending = 0;
        void *prev = NULL;
        int err;

        for (;;) {
                err = bpf_map__get_next_key(map, prev, &next, sizeof(next));
                if (err == -ENOENT)
                        break;
                if (err)
                        return err;
                key = next;
                prev = &key;
                /* deleted between the two calls: it was consumed, not pending */
                if (bpf_map__lookup_elem(map, &key, sizeof(key), &start, sizeof(start), 0))
                        continue;
                if (start.ts && start.slot == slot)
                        pending++;
        }
        *ret = pending;
        return 0;
}

static int cpu_read(void *opaque, unsigned slot, struct probe_usage *usage)
{
        struct cpu_part *part = opaque;
        uint64_t words[sizeof(struct probe_cpu_stat) / sizeof(uint64_t)];
        struct probe_cpu_stat sum;
        uint64_t pending;
        int err;

        err = probe_percpu_sum(part->skel->maps.cpu_stats, slot, sizeof(sum), words);
        if (err)
                return err;
        memcpy(&sum, words, sizeof(sum));
        err = count_pending(part->skel->maps.runq_start, slot, &pending);
        if (err)
                return err;

        usage->oncpu_ns += sum.oncpu_ns;
        usage->runq_wait_ns += sum.runq_wait_ns;
        usage->runq_count += sum.runq_count;
        for (size_t i = 0; i < PROBE_HIST_SLOTS; i++)
                usage->runq_hist[i] += sum.runq_hist[i];
        usage->wakeups += sum.wakeups;
        usage->runq_preemptions += sum.preemptions;
        usage->runq_discarded += sum.discarded;
        usage->runq_pending += pending;
        return 0;
}

static struct bpf_object *cpu_object(void *opaque)
{
        struct cpu_part *part = opaque;

        return part->skel->obj;
}

static void cpu_close(void *opaque)
{
        struct cpu_part *part = opaque;

        if (!part)
                return;
        cpu_bpf__destroy(part->skel);
        free(part);
}

const struct probe_part_ops probe_cpu_ops = {
    .kind = PROBE_CPU,
    .open = cpu_open,
    .read = cpu_read,
    .object = cpu_object,
    .close = cpu_close,
};
