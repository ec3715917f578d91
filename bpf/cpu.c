/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loader of the cpu probe (cpu.bpf.c, in its direct or portable build): sched_switch,
 * sched_wakeup, sched_wakeup_new.
 */
#include "probe-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "cpu.h"
/* the generated skeletons embed the BPF object as one long string literal */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
#include "cpu.skel.h"
#include "cpu-direct.skel.h"
#pragma GCC diagnostic pop

/*
 * Two builds of cpu.bpf.c: "direct" loads the fields of tasks other than current in place
 * (the bpf_rdonly_cast kfunc, kernels 6.2+), "portable" reads them with a helper call each.
 * Same maps and programs; these wrappers hide the skeleton types.
 */
struct cpu_variant {
        const char *name;
        void *(*open)(struct bpf_object **ret_obj);
        int (*load)(void *skel);
        void (*destroy)(void *skel);
};

#define CPU_VARIANT(type, label)                                                                   \
        static void *type##_open(struct bpf_object **ret_obj)                                      \
        {                                                                                          \
                struct type *skel = type##__open();                                                \
                if (skel)                                                                          \
                        *ret_obj = skel->obj;                                                      \
                return skel;                                                                       \
        }                                                                                          \
        static int type##_load(void *skel)                                                         \
        {                                                                                          \
                return type##__load(skel);                                                         \
        }                                                                                          \
        static void type##_destroy(void *skel)                                                     \
        {                                                                                          \
                type##__destroy(skel);                                                             \
        }                                                                                          \
        static const struct cpu_variant type##_variant = {                                         \
            .name = label,                                                                         \
            .open = type##_open,                                                                   \
            .load = type##_load,                                                                   \
            .destroy = type##_destroy,                                                             \
        }

CPU_VARIANT(cpu_bpf, "portable");
CPU_VARIANT(cpu_direct_bpf, "direct");

struct cpu_part {
        const struct cpu_variant *variant;
        void *skel;
        struct bpf_object *obj;
};

static void set_autoload(struct bpf_object *obj, const char *name, bool on)
{
        struct bpf_program *prog = bpf_object__find_program_by_name(obj, name);

        if (prog)
                bpf_program__set_autoload(prog, on);
}

static void cpu_close(void *opaque);

static int cpu_open(const struct probe_config *cfg, void **ret, char *detail, size_t detail_size,
                    struct util_error *why)
{
        struct cpu_part *part;
        int switch_args, err;

        switch_args = probe_tracepoint_nargs(cfg->vmlinux, "sched_switch");
        if (switch_args < 0) {
                util_error_set(why, EOPNOTSUPP, "the kernel has no sched_switch tracepoint");
                return -EOPNOTSUPP;
        }
        if (switch_args < 3) {
                util_error_set(why, EOPNOTSUPP, "sched_switch passes %d arguments, expected 3 or 4",
                               switch_args);
                return -EOPNOTSUPP;
        }

        part = calloc(1, sizeof(*part));
        if (!part)
                return -ENOMEM;
        part->variant = &cpu_bpf_variant;
        if (!cfg->portable &&
            btf__find_by_name_kind(cfg->vmlinux, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0)
                part->variant = &cpu_direct_bpf_variant;
        part->skel = part->variant->open(&part->obj);
        if (!part->skel) {
                err = -errno;
                probe_format_failure(why, "open", err);
                cpu_close(part);
                return err;
        }
        err = probe_share_maps(part->obj, "cpu_stats", cfg);
        if (err) {
                probe_format_failure(why, "maps", err);
                goto fail;
        }

        set_autoload(part->obj, "cpu_switch", switch_args >= 4);
        set_autoload(part->obj, "cpu_switch_nost", switch_args == 3);
        probe_detail_add(detail, detail_size,
                         switch_args >= 4 ? "sched_switch" : "sched_switch(prev->state)");
        if (probe_tracepoint_nargs(cfg->vmlinux, "sched_wakeup") == 1)
                probe_detail_add(detail, detail_size, "sched_wakeup");
        else
                set_autoload(part->obj, "cpu_wakeup", false);
        if (probe_tracepoint_nargs(cfg->vmlinux, "sched_wakeup_new") == 1)
                probe_detail_add(detail, detail_size, "sched_wakeup_new");
        else
                set_autoload(part->obj, "cpu_wakeup_new", false);
        if (!probe_has_member(cfg->vmlinux, "task_struct", "sched_info"))
                probe_detail_add(detail, detail_size, "no-sched_info(no run-queue wait)");
        probe_detail_add(detail, detail_size, part->variant->name);

        err = part->variant->load(part->skel);
        if (err) {
                probe_format_failure(why, "load", err);
                goto fail;
        }
        *ret = part;
        return 0;
fail:
        cpu_close(part);
        return err;
}

static int cpu_read(int stats_fd, unsigned slot, struct probe_usage *usage)
{
        uint64_t words[sizeof(struct probe_cpu_stat) / sizeof(uint64_t)];
        struct probe_cpu_stat sum;
        int err;

        err = probe_percpu_sum(stats_fd, slot, sizeof(sum), words);
        if (err)
                return err;
        memcpy(&sum, words, sizeof(sum));

        usage->oncpu_ns += sum.oncpu_ns;
        usage->runq_wait_ns += sum.runq_wait_ns;
        usage->runq_count += sum.runq_count;
        for (size_t i = 0; i < PROBE_HIST_SLOTS; i++)
                usage->runq_hist[i] += sum.runq_hist[i];
        usage->wakeups += sum.wakeups;
        usage->runq_preemptions += sum.preemptions;
        usage->runq_unseen += sum.unseen;
        return 0;
}

static struct bpf_object *cpu_object(void *opaque)
{
        struct cpu_part *part = opaque;

        return part->obj;
}

static void cpu_close(void *opaque)
{
        struct cpu_part *part = opaque;

        if (!part)
                return;
        if (part->skel)
                part->variant->destroy(part->skel);
        free(part);
}

const struct probe_part_ops probe_cpu_ops = {
    .kind = PROBE_CPU,
    .stats = "cpu_stats",
    .stat_size = sizeof(struct probe_cpu_stat),
    .open = cpu_open,
    .read = cpu_read,
    .object = cpu_object,
    .close = cpu_close,
};
