/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Between probe.c and the per-kind loaders cpu.c, memory.c and disk.c. Each loader owns one
 * skeleton: open -> set rodata (kernel variant), the set's watched map and the size of its
 * counters (probe_share_maps), autoload per the kernel's BTF -> load. probe.c attaches the
 * loaded programs (and pins them, for the node's set); read sums a kind's per-CPU counter
 * map, by fd, into a struct probe_usage.
 */
#pragma once

#include "probe.h"

#include <linux/types.h>
#include <stdarg.h>

#include "probe-limits.h"

struct bpf_link;
struct bpf_object;
struct btf;

#define PROBE_KINDS_COUNT  3
#define PROBE_DETAIL_MAX   256
#define PROBE_PROGRAMS_MAX 16 /* programs of one kind */

struct probe_config {
        int watched_fd;            /* the set's `watched` hash map (probe-limits.h) */
        int filter_fd;             /* and the filter in front of it */
        uint32_t slots;            /* counter slots: the max_entries of the *_stats maps */
        bool node;                 /* the node's set (node.c): nobody reads the OOM ring buffer */
        const struct btf *vmlinux; /* the running kernel's BTF */
        /* test hooks (environment, see probe.c): run the older kernels' code paths here */
        bool oom_by_pid;       /* handle mark_victim as the mark_victim(pid) shape */
        bool disk_no_io_start; /* attribute at block_rq_insert/issue as before 6.5 */
        bool portable;         /* read other tasks with helper calls, as before 6.2 */
};

struct probe_part_ops {
        enum probe_kind kind;
        const char *stats; /* the name of its per-CPU counter array, indexed by slot */
        size_t stat_size;  /* the size of one slot's value on one CPU */
        /*
         * Open and load (probe.c attaches the programs left to autoload). Returns 0 and *ret,
         * with what it hooks in detail; or -errno with a one-line reason in why (-EOPNOTSUPP:
         * this kernel lacks what it needs).
         */
        int (*open)(const struct probe_config *cfg, void **ret, char *detail, size_t detail_size,
                    struct util_error *why);
        /* Add the counters of slot in the counter map stats_fd to *usage. */
        int (*read)(int stats_fd, unsigned slot, struct probe_usage *usage);
        struct bpf_object *(*object)(void *part);
        void (*close)(void *part);
};

/*
 * Before load: make obj's `watched` and `filter` maps the set's (cfg->watched_fd,
 * cfg->filter_fd) and size its counter map `stats` to cfg->slots.
 */
int probe_share_maps(struct bpf_object *obj, const char *stats, const struct probe_config *cfg);

extern const struct probe_part_ops probe_cpu_ops;
extern const struct probe_part_ops probe_memory_ops;
extern const struct probe_part_ops probe_disk_ops;

/* The kinds in the order of struct probe's kinds[]: cpu, memory, disk. */
extern const struct probe_part_ops *const probe_parts[PROBE_KINDS_COUNT];

struct probe_kind_state {
        void *part;   /* the object, when this process loaded the programs; else NULL */
        int stats_fd; /* its counter map; -1 when the kind is not attached */
        struct bpf_link *links[PROBE_PROGRAMS_MAX]; /* this process's attachments */
        uint32_t prog_ids[PROBE_PROGRAMS_MAX];      /* the attached programs */
        size_t nprogs;
        char detail[PROBE_DETAIL_MAX];
        struct util_error why; /* why the kind is not attached */
};

/*
 * A set of programs and what this process watches with it. A set of its own (probe_open):
 * slot i watches ids[i], the programs live as long as p. The node's set (probe_open_node,
 * node.c): one cgroup, ids[0] at node_watch.slot, the programs pinned under node_dir.
 */
struct probe {
        uint64_t ids[PROBE_CGROUPS_MAX];
        size_t n;
        int watched_fd;
        int filter_fd;
        struct probe_kind_state kinds[PROBE_KINDS_COUNT];
        bool node;
        struct probe_watch node_watch; /* the entry this process registered */
        int node_root_fd;              /* the pin root (its lock) */
        char node_dir[PROBE_PATH_MAX]; /* root/<build id> */
};

/* A struct probe with no fd open and nothing attached. */
struct probe *probe_alloc(void);

/*
 * Open, load and attach the requested kinds into p (its watched_fd set), their counter maps
 * sized to slots. A kind that cannot load leaves its reason in its why and the others
 * working. Returns how many kinds attached; with none, err says why (-EPERM when every
 * kind was refused for lack of privilege, else -EOPNOTSUPP).
 */
int probe_load_kinds(struct probe *p, unsigned kinds, uint32_t slots, struct util_error *err);

/*
 * Create the watched map (max_entries cgroups) and its filter into p. Returns 0 or -errno
 * with err set.
 */
int probe_create_watch_maps(struct probe *p, uint32_t max_entries, struct util_error *err);

/* Rebuild the filter from the watched map (after every change to it). Returns 0 or -errno. */
int probe_filter_rebuild(int watched_fd, int filter_fd);

/* Detach what this process attached and close every fd of p; p stays allocated. */
void probe_release(struct probe *p);

/* node.c: unregister p's cgroup from the node's set (and unpin it when p was the last). */
void probe_node_leave(struct probe *p);

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
 * Sum the per-CPU values of key in the per-CPU array map_fd of u64-only structs of
 * value_size bytes into sum (value_size / 8 words, zeroed first).
 */
int probe_percpu_sum(int map_fd, uint32_t key, size_t value_size, uint64_t *sum);

/* The first libbpf warning since the capture started (probe_open), "" when none. */
const char *probe_libbpf_warning(void);

/* snprintf into why: "<what>: <strerror(-err)>[ (libbpf: <first warning>)]". */
int probe_format_failure(struct util_error *why, const char *what, int err);

/* Append " word" to a detail string (truncating). */
void probe_detail_add(char *detail, size_t size, const char *word);
