/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe.h over the three loaders: checks the arguments and the kernel's BTF, opens each
 * requested kind on its own (one that cannot load leaves the others working) and sums their
 * per-CPU counters on read.
 */
#include "probe-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "probe-limits.h"

_Static_assert(PROBE_LIMIT_CGROUPS == PROBE_NODE_MAX, "probe-limits.h and probe.h disagree");
_Static_assert(PROBE_CGROUPS_MAX <= PROBE_NODE_MAX, "a set of its own watches fewer");
_Static_assert(PROBE_LIMIT_HIST == PROBE_HIST_SLOTS, "probe-limits.h and probe.h disagree");

#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"

const struct probe_part_ops *const probe_parts[PROBE_KINDS_COUNT] = {
    &probe_cpu_ops,
    &probe_memory_ops,
    &probe_disk_ops,
};

/* ---- libbpf messages: kept for error texts, never printed (libraries do not log) */

static char libbpf_warning[UTIL_ERROR_TEXT_MAX];
static bool test_hooks;

void probe_set_test_hooks(bool on)
{
        test_hooks = on;
}

/* A test variable (probe_set_test_hooks), NULL when the hooks are off. */
static const char *test_variable(const char *name)
{
        return test_hooks ? getenv(name) : NULL;
}

static int capture_libbpf(enum libbpf_print_level level, const char *format, va_list args)
    __attribute__((format(printf, 2, 0)));

static int capture_libbpf(enum libbpf_print_level level, const char *format, va_list args)
{
        char line[UTIL_ERROR_TEXT_MAX];
        size_t len;

        /* SPARKSHIM_PROBE_DEBUG=1: all of libbpf's output, verifier logs included, on stderr */
        if (test_variable("SPARKSHIM_PROBE_DEBUG")) {
                va_list copy;

                va_copy(copy, args);
                vfprintf(stderr, format, copy);
                va_end(copy);
        }
        if (level != LIBBPF_WARN || libbpf_warning[0])
                return 0;
        vsnprintf(line, sizeof(line), format, args);
        /* only the first line: a verifier log follows its one-line summary */
        len = strcspn(line, "\n");
        line[len] = '\0';
        if (len > 0)
                snprintf(libbpf_warning, sizeof(libbpf_warning), "%s",
                         strncmp(line, "libbpf: ", 8) == 0 ? line + 8 : line);
        return 0;
}

const char *probe_libbpf_warning(void)
{
        return libbpf_warning;
}

int probe_format_failure(struct util_error *why, const char *what, int err)
{
        if (libbpf_warning[0])
                return util_error_set(why, err, "%s: %s (libbpf: %s)", what, strerror(-err),
                                      libbpf_warning);
        return util_error_set(why, err, "%s: %s", what, strerror(-err));
}

void probe_detail_add(char *detail, size_t size, const char *word)
{
        size_t len = strnlen(detail, size);

        if (len + 1 >= size)
                return;
        snprintf(detail + len, size - len, "%s%s", len ? " " : "", word);
}

/* ---- kernel BTF */

int probe_tracepoint_nargs(const struct btf *vmlinux, const char *name)
{
        char typedef_name[128];
        const struct btf_type *t;
        int id;

        if (snprintf(typedef_name, sizeof(typedef_name), "btf_trace_%s", name) >=
            (int)sizeof(typedef_name))
                return -EINVAL;
        id = btf__find_by_name_kind(vmlinux, typedef_name, BTF_KIND_TYPEDEF);
        if (id < 0)
                return -ENOENT;
        /* typedef void (*btf_trace_<name>)(void *__data, <tracepoint arguments>) */
        t = btf__type_by_id(vmlinux, (__u32)id);
        if (t)
                t = btf__type_by_id(vmlinux, t->type);
        if (!t || !btf_is_ptr(t))
                return -EINVAL;
        t = btf__type_by_id(vmlinux, t->type);
        if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
                return -EINVAL;
        return btf_vlen(t) - 1;
}

bool probe_has_member(const struct btf *vmlinux, const char *type, const char *member)
{
        int id = btf__find_by_name_kind(vmlinux, type, BTF_KIND_STRUCT);
        const struct btf_type *t = id > 0 ? btf__type_by_id(vmlinux, (__u32)id) : NULL;
        const struct btf_member *m;

        if (!t)
                return false;
        m = btf_members(t);
        for (unsigned i = 0; i < btf_vlen(t); i++, m++) {
                const char *name = btf__name_by_offset(vmlinux, m->name_off);

                if (name && strcmp(name, member) == 0)
                        return true;
        }
        return false;
}

int probe_percpu_sum(int map_fd, uint32_t key, size_t value_size, uint64_t *sum)
{
        size_t words = value_size / sizeof(uint64_t);
        int ncpus = libbpf_num_possible_cpus();
        uint64_t *values;
        int err;

        if (ncpus <= 0)
                return ncpus < 0 ? ncpus : -EINVAL;
        values = calloc((size_t)ncpus, value_size);
        if (!values)
                return -ENOMEM;
        if (bpf_map_lookup_elem(map_fd, &key, values) < 0) {
                err = -errno;
                free(values);
                return err;
        }
        memset(sum, 0, value_size);
        for (int cpu = 0; cpu < ncpus; cpu++)
                for (size_t w = 0; w < words; w++)
                        sum[w] += values[(size_t)cpu * words + w];
        free(values);
        return 0;
}

/* ---- sets */

static int kind_index(enum probe_kind kind)
{
        switch (kind) {
        case PROBE_CPU:
                return 0;
        case PROBE_MEMORY:
                return 1;
        case PROBE_DISK:
                return 2;
        default:
                return -1;
        }
}

struct probe *probe_alloc(void)
{
        struct probe *p = calloc(1, sizeof(*p));

        if (!p)
                return NULL;
        p->watched_fd = -1;
        p->filter_fd = -1;
        p->node_root_fd = -1;
        for (int k = 0; k < PROBE_KINDS_COUNT; k++)
                p->kinds[k].stats_fd = -1;
        return p;
}

int probe_share_maps(struct bpf_object *obj, const char *stats, const struct probe_config *cfg)
{
        struct bpf_map *watched = bpf_object__find_map_by_name(obj, "watched");
        struct bpf_map *filter = bpf_object__find_map_by_name(obj, "filter");
        struct bpf_map *counters = bpf_object__find_map_by_name(obj, stats);
        int err;

        if (!watched || !filter || !counters)
                return -ENOENT;
        err = bpf_map__reuse_fd(watched, cfg->watched_fd);
        if (!err)
                err = bpf_map__reuse_fd(filter, cfg->filter_fd);
        if (err)
                return err;
        return bpf_map__set_max_entries(counters, cfg->slots);
}

int probe_create_watch_maps(struct probe *p, uint32_t max_entries, struct util_error *err)
{
        int r;

        p->watched_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "watched", sizeof(uint64_t),
                                       sizeof(struct probe_watch), max_entries, NULL);
        if (p->watched_fd >= 0)
                p->filter_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "filter", sizeof(uint32_t),
                                              sizeof(struct probe_filter), 1, NULL);
        if (p->watched_fd < 0 || p->filter_fd < 0) {
                r = -errno;
                util_error_set(err, r == -EPERM || r == -EACCES ? -EPERM : r,
                               "creating the map of watched cgroups: %s", strerror(-r));
                return r == -EACCES ? -EPERM : r;
        }
        return 0;
}

int probe_filter_rebuild(int watched_fd, int filter_fd)
{
        struct probe_filter *f = calloc(1, sizeof(*f));
        uint64_t key, next, *prev = NULL;
        uint32_t zero = 0;
        int r = 0;

        if (!f)
                return -ENOMEM;
        while (bpf_map_get_next_key(watched_fd, prev, &next) == 0) {
                uint8_t *c = &f->count[probe_filter_index(next)];

                if (*c < UINT8_MAX)
                        (*c)++;
                key = next;
                prev = &key;
        }
        if (bpf_map_update_elem(filter_fd, &zero, f, BPF_ANY) < 0)
                r = -errno;
        free(f);
        return r;
}

static void release_kind(struct probe_kind_state *st, const struct probe_part_ops *ops)
{
        for (size_t i = 0; i < st->nprogs; i++)
                bpf_link__destroy(st->links[i]); /* a pinned link stays attached */
        memset(st->links, 0, sizeof(st->links));
        st->nprogs = 0;
        if (st->part)
                ops->close(st->part);
        st->part = NULL;
        if (st->stats_fd >= 0)
                close(st->stats_fd);
        st->stats_fd = -1;
}

/* Attach every program of a loaded kind left to autoload; note their ids and the counters. */
static int attach_kind(struct probe_kind_state *st, const struct probe_part_ops *ops)
{
        struct bpf_object *obj = ops->object(st->part);
        struct bpf_program *prog;
        struct bpf_map *stats;
        int err;

        bpf_object__for_each_program(prog, obj)
        {
                struct bpf_prog_info info;
                __u32 len = sizeof(info);
                struct bpf_link *link;

                if (!bpf_program__autoload(prog))
                        continue;
                if (st->nprogs == PROBE_PROGRAMS_MAX) {
                        return util_error_set(&st->why, E2BIG, "more than %d programs",
                                              PROBE_PROGRAMS_MAX);
                }
                link = bpf_program__attach(prog);
                if (!link) {
                        err = -errno;
                        probe_format_failure(&st->why, "attach", err);
                        return err;
                }
                st->links[st->nprogs++] = link; /* release_kind destroys it from here on */
                memset(&info, 0, sizeof(info));
                if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) < 0) {
                        err = -errno;
                        probe_format_failure(&st->why, "program info", err);
                        return err;
                }
                st->prog_ids[st->nprogs - 1] = info.id;
        }
        stats = bpf_object__find_map_by_name(obj, ops->stats);
        if (!stats || bpf_map__fd(stats) < 0) {
                probe_format_failure(&st->why, "find maps", -ENOENT);
                return -ENOENT;
        }
        /* owned by p, whether the object or a pin holds the map */
        st->stats_fd = fcntl(bpf_map__fd(stats), F_DUPFD_CLOEXEC, 3);
        if (st->stats_fd < 0) {
                err = -errno;
                probe_format_failure(&st->why, "dup", err);
                return err;
        }
        return 0;
}

int probe_load_kinds(struct probe *p, unsigned kinds, uint32_t slots, struct util_error *err)
{
        struct probe_config cfg = {0};
        libbpf_print_fn_t previous_print;
        char text[UTIL_ERROR_TEXT_MAX];
        struct btf *vmlinux;
        const char *variant;
        bool all_eperm = true;
        int r, attached = 0;
        size_t len = 0;

        if (access(VMLINUX_BTF, R_OK) < 0) {
                r = -errno;
                util_error_set(err, r == -EACCES ? -EPERM : -ENOENT,
                               "no kernel BTF at " VMLINUX_BTF " (%s): CO-RE probes need "
                               "CONFIG_DEBUG_INFO_BTF",
                               strerror(-r));
                return r == -EACCES ? -EPERM : -ENOENT;
        }
        libbpf_warning[0] = '\0';
        previous_print = libbpf_set_print(capture_libbpf);
        vmlinux = btf__load_vmlinux_btf();
        if (!vmlinux) {
                r = -errno;
                probe_format_failure(err, "reading " VMLINUX_BTF, r);
                r = r == -EACCES || r == -EPERM ? -EPERM : -ENOENT;
                if (err)
                        err->error = -r;
                libbpf_set_print(previous_print);
                return r;
        }

        cfg.watched_fd = p->watched_fd;
        cfg.filter_fd = p->filter_fd;
        cfg.node = p->node;
        cfg.slots = slots;
        cfg.vmlinux = vmlinux;
        /*
         * Test hooks: run the code paths of older kernels on a newer one (tests/bpf and
         * tests/vm/cases/85-bpf.sh). Not an interface: docs/probes.md.
         */
        variant = test_variable("SPARKSHIM_PROBE_OOM_VARIANT");
        cfg.oom_by_pid = variant && strcmp(variant, "pid") == 0;
        variant = test_variable("SPARKSHIM_PROBE_DISK_VARIANT");
        cfg.disk_no_io_start = variant && strcmp(variant, "insert") == 0;
        variant = test_variable("SPARKSHIM_PROBE_CPU_VARIANT");
        cfg.portable = variant && strcmp(variant, "portable") == 0;

        for (int k = 0; k < PROBE_KINDS_COUNT; k++) {
                struct probe_kind_state *st = &p->kinds[k];

                if (!(kinds & probe_parts[k]->kind)) {
                        util_error_set(&st->why, ENOENT, "not requested");
                        continue;
                }
                libbpf_warning[0] = '\0';
                r = probe_parts[k]->open(&cfg, &st->part, st->detail, sizeof(st->detail), &st->why);
                if (r < 0)
                        st->part = NULL; /* a loader that fails frees what it opened */
                else
                        r = attach_kind(st, probe_parts[k]);
                if (r < 0) {
                        if (r != -EPERM)
                                all_eperm = false;
                        release_kind(st, probe_parts[k]);
                        st->detail[0] = '\0';
                        continue;
                }
                attached++;
        }
        btf__free(vmlinux);
        libbpf_set_print(previous_print);
        if (attached > 0)
                return attached;

        text[0] = '\0';
        for (int k = 0; k < PROBE_KINDS_COUNT && len < sizeof(text); k++) {
                if (!(kinds & probe_parts[k]->kind))
                        continue;
                len +=
                    (size_t)snprintf(text + len, sizeof(text) - len, "%s%s: %s", len ? "; " : "",
                                     probe_kind_name(probe_parts[k]->kind), p->kinds[k].why.text);
        }
        util_error_set(err, all_eperm ? -EPERM : -EOPNOTSUPP, "%s", text);
        return all_eperm ? -EPERM : -EOPNOTSUPP;
}

void probe_release(struct probe *p)
{
        for (int k = 0; k < PROBE_KINDS_COUNT; k++)
                release_kind(&p->kinds[k], probe_parts[k]);
        if (p->watched_fd >= 0)
                close(p->watched_fd);
        p->watched_fd = -1;
        if (p->filter_fd >= 0)
                close(p->filter_fd);
        p->filter_fd = -1;
        if (p->node_root_fd >= 0)
                close(p->node_root_fd);
        p->node_root_fd = -1;
}

/* ---- probe.h */

static int check_ids(const uint64_t *cgroup_ids, size_t n, unsigned kinds, struct util_error *err)
{
        if (!cgroup_ids || n == 0 || n > PROBE_CGROUPS_MAX) {
                util_error_set(err, -EINVAL, "watch 1 to %d cgroups, not %zu", PROBE_CGROUPS_MAX,
                               cgroup_ids ? n : 0);
                return -EINVAL;
        }
        if (kinds == 0 || (kinds & ~(unsigned)PROBE_ALL)) {
                util_error_set(err, -EINVAL, "invalid probe kinds 0x%x", kinds);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                if (cgroup_ids[i] == 0) {
                        util_error_set(err, -EINVAL, "cgroup id 0 is not a cgroup");
                        return -EINVAL;
                }
                for (size_t j = 0; j < i; j++) {
                        if (cgroup_ids[j] == cgroup_ids[i]) {
                                util_error_set(err, -EINVAL, "cgroup id %llu given twice",
                                               (unsigned long long)cgroup_ids[i]);
                                return -EINVAL;
                        }
                }
        }
        return 0;
}

struct probe *probe_open(const uint64_t *cgroup_ids, size_t n, unsigned kinds,
                         struct util_error *err)
{
        struct timespec now;
        struct probe *p;
        int r;

        r = check_ids(cgroup_ids, n, kinds, err);
        if (r < 0)
                return NULL;
        p = probe_alloc();
        if (!p) {
                util_error_set(err, -ENOMEM, "out of memory");
                return NULL;
        }
        memcpy(p->ids, cgroup_ids, n * sizeof(*cgroup_ids));
        p->n = n;
        if (probe_create_watch_maps(p, (uint32_t)n, err) < 0)
                goto fail;
        clock_gettime(CLOCK_MONOTONIC, &now);
        for (size_t i = 0; i < n; i++) {
                struct probe_watch w = {
                    .slot = (uint32_t)i,
                    .start_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec,
                };

                if (bpf_map_update_elem(p->watched_fd, &p->ids[i], &w, BPF_NOEXIST) < 0) {
                        r = -errno;
                        util_error_set(err, r, "watching cgroup %llu: %s",
                                       (unsigned long long)p->ids[i], strerror(-r));
                        goto fail;
                }
        }
        r = probe_filter_rebuild(p->watched_fd, p->filter_fd);
        if (r < 0) {
                util_error_set(err, r, "filling the filter of watched cgroups: %s", strerror(-r));
                goto fail;
        }
        if (probe_load_kinds(p, kinds, (uint32_t)n, err) < 0)
                goto fail;
        return p;
fail:
        probe_release(p);
        free(p);
        return NULL;
}

unsigned probe_attached(const struct probe *p)
{
        unsigned kinds = 0;

        if (!p)
                return 0;
        for (int k = 0; k < PROBE_KINDS_COUNT; k++)
                if (p->kinds[k].stats_fd >= 0)
                        kinds |= probe_parts[k]->kind;
        return kinds;
}

const char *probe_missing_reason(const struct probe *p, enum probe_kind kind)
{
        int k = kind_index(kind);

        if (!p || k < 0 || p->kinds[k].stats_fd >= 0)
                return NULL;
        return p->kinds[k].why.text;
}

const char *probe_kind_detail(const struct probe *p, enum probe_kind kind)
{
        int k = kind_index(kind);

        if (!p || k < 0 || p->kinds[k].stats_fd < 0)
                return NULL;
        return p->kinds[k].detail;
}

bool probe_is_node(const struct probe *p)
{
        return p && p->node;
}

int probe_read(struct probe *p, uint64_t cgroup_id, struct probe_usage *ret)
{
        struct probe_usage usage;
        uint32_t slot;
        size_t i;
        int r;

        if (!p || !ret)
                return -EINVAL;
        for (i = 0; i < p->n; i++)
                if (p->ids[i] == cgroup_id)
                        break;
        if (i == p->n)
                return -ENOENT;
        slot = p->node ? p->node_watch.slot : (uint32_t)i;
        if (p->node) {
                /* still ours? an entry removed under us would have its slot given away */
                struct probe_watch w;

                if (bpf_map_lookup_elem(p->watched_fd, &cgroup_id, &w) < 0 ||
                    w.slot != p->node_watch.slot || w.owner_pid != p->node_watch.owner_pid ||
                    w.owner_start != p->node_watch.owner_start)
                        return -ENOENT;
        }
        memset(&usage, 0, sizeof(usage));
        for (int k = 0; k < PROBE_KINDS_COUNT; k++) {
                if (p->kinds[k].stats_fd < 0)
                        continue;
                r = probe_parts[k]->read(p->kinds[k].stats_fd, slot, &usage);
                if (r < 0)
                        return r;
        }
        *ret = usage;
        return 0;
}

/* The OOM ring buffer is read by the process that loaded the memory kind, for itself. */
static void *own_memory_part(const struct probe *p)
{
        return p->node ? NULL : p->kinds[kind_index(PROBE_MEMORY)].part;
}

int probe_consume_oom(struct probe *p,
                      int (*fn)(const struct probe_oom_event *event, void *userdata),
                      void *userdata)
{
        void *memory;

        if (!p || !fn)
                return -EINVAL;
        memory = own_memory_part(p);
        if (!memory)
                return -EOPNOTSUPP;
        return probe_memory_consume(memory, p->ids, p->n, fn, userdata);
}

int probe_oom_fd(const struct probe *p)
{
        void *memory;

        if (!p)
                return -EINVAL;
        memory = own_memory_part(p);
        if (!memory)
                return -EOPNOTSUPP;
        return probe_memory_fd(memory);
}

int probe_program_stats(const struct probe *p, struct probe_program_stats *ret, size_t max)
{
        size_t count = 0;

        if (!p || (!ret && max > 0))
                return -EINVAL;
        for (int k = 0; k < PROBE_KINDS_COUNT; k++) {
                const struct probe_kind_state *st = &p->kinds[k];

                for (size_t i = 0; i < st->nprogs; i++, count++) {
                        struct probe_program_stats *s = &ret[count];
                        struct bpf_prog_info info;
                        __u32 len = sizeof(info);
                        int fd, r;

                        if (count >= max)
                                continue;
                        fd = bpf_prog_get_fd_by_id(st->prog_ids[i]);
                        if (fd < 0)
                                return -errno;
                        memset(&info, 0, sizeof(info));
                        r = bpf_obj_get_info_by_fd(fd, &info, &len) < 0 ? -errno : 0;
                        close(fd);
                        if (r < 0)
                                return r;
                        memset(s, 0, sizeof(*s));
                        snprintf(s->name, sizeof(s->name), "%s", info.name);
                        s->kind = probe_parts[k]->kind;
                        s->id = info.id;
                        s->run_cnt = info.run_cnt;
                        s->run_time_ns = info.run_time_ns;
                }
        }
        return count > INT32_MAX ? INT32_MAX : (int)count;
}

void probe_close(struct probe *p)
{
        if (!p)
                return;
        if (p->node)
                probe_node_leave(p);
        probe_release(p);
        free(p);
}
