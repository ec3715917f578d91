/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Between probe.c and the per-kind loaders cpu.c, memory.c and disk.c. Each loader owns one
 * skeleton: open -> set rodata (watched ids, kernel variant) and autoload per the kernel's
 * BTF -> load -> attach; read sums its per-CPU maps into a struct probe_usage.
 */
#pragma once

#include "probe.h"

#include <stdarg.h>

struct bpf_map;
struct bpf_object;
struct btf;

struct probe_config {
        const uint64_t *ids; /* watched cgroup ids; slot i is ids[i] */
        size_t n;
        const struct btf *vmlinux; /* the running kernel's BTF */
        /* test hooks (environment, see probe.c): run the older kernels' code paths here */
        bool oom_by_pid;       /* handle mark_victim as the mark_victim(pid) shape */
        bool disk_no_io_start; /* attribute at block_rq_insert/issue as before 6.5 */
        bool portable;         /* read other tasks with helper calls, as before 6.2 */
};

struct probe_part_ops {
        enum probe_kind kind;
        /*
         * Open, load and attach. Returns 0 and *ret, with what it hooks in detail; or -errno
         * with a one-line reason in why (-EOPNOTSUPP: this kernel lacks what it needs).
         */
        int (*open)(const struct probe_config *cfg, void **ret, char *detail, size_t detail_size,
                    char *why, size_t why_size);
        /* Add the counters of slot to *usage. */
        int (*read)(void *part, unsigned slot, struct probe_usage *usage);
        struct bpf_object *(*object)(void *part);
        void (*close)(void *part);
};

extern const struct probe_part_ops probe_cpu_ops;
extern const struct probe_part_ops probe_memory_ops;
extern const struct probe_part_ops probe_disk_ops;

/* memory.c: the OOM ring buffer */
int probe_memory_consume(void *part, const uint64_t *ids, size_t n,
                         int (*fn)(const struct probe_oom_event *event, void *userdata),
                         void *userdata);
int probe_memory_fd(void *part);

/*
 * The number of arguments the kernel's tracepoint `name` passes to a raw tracepoint program
 * (its btf_trace_<name> prototype without the leading __data), -ENOENT when the kernel has
 * no such tracepoint, -EINVAL when its BTF does not have the expected shape.
 */
int probe_tracepoint_nargs(const struct btf *vmlinux, const char *name);

/* True when the kernel's struct `type` has a member `member` (not looking into anonymous
 * members). */
bool probe_has_member(const struct btf *vmlinux, const char *type, const char *member);

/*
 * Sum the per-CPU values of key in a per-CPU array of u64-only structs of value_size bytes
 * into sum (value_size / 8 words, zeroed first).
 */
int probe_percpu_sum(const struct bpf_map *map, uint32_t key, size_t value_size, uint64_t *sum);

/* The first libbpf warning since the capture started (probe_open), "" when none. */
const char *probe_libbpf_warning(void);

/* snprintf into why: "<what>: <strerror(-err)>[ (libbpf: <first warning>)]". */
void probe_format_failure(char *why, size_t size, const char *what, int err);

/* Append " word" to a detail string (truncating). */
void probe_detail_add(char *detail, size_t size, const char *word);
