/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe.h over the three loaders: checks the arguments and the kernel's BTF, opens each
 * requested kind on its own (one that cannot load leaves the others working) and sums their
 * per-CPU counters on read.
 */
#include "probe-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "probe-limits.h"

_Static_assert(PROBE_LIMIT_CGROUPS == PROBE_CGROUPS_MAX, "probe-limits.h and probe.h disagree");
_Static_assert(PROBE_LIMIT_HIST == PROBE_HIST_SLOTS, "probe-limits.h and probe.h disagree");

#define VMLINUX_BTF       "/sys/kernel/btf/vmlinux"
#define PROBE_DETAIL_MAX  256
#define PROBE_KINDS_COUNT 3

static const struct probe_part_ops *const part_ops[PROBE_KINDS_COUNT] = {
    &probe_cpu_ops,
    &probe_memory_ops,
    &probe_disk_ops,
};

struct probe_kind_state {
        void *part; /* NULL when not attached */
        char detail[PROBE_DETAIL_MAX];
        char why[PROBE_ERROR_TEXT_MAX];
};

struct probe {
        uint64_t ids[PROBE_CGROUPS_MAX];
        size_t n;
        struct probe_kind_state kinds[PROBE_KINDS_COUNT];
};

/* ---- libbpf messages: kept for error texts, never printed (libraries do not log) */

static char libbpf_warning[PROBE_ERROR_TEXT_MAX];
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
        char line[PROBE_ERROR_TEXT_MAX];
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

void probe_format_failure(char *why, size_t size, const char *what, int err)
{
        if (libbpf_warning[0])
                snprintf(why, size, "%s: %s (libbpf: %s)", what, strerror(-err), libbpf_warning);
        else
                snprintf(why, size, "%s: %s", what, strerror(-err));
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

int probe_percpu_sum(const struct bpf_map *map, uint32_t key, size_t value_size, uint64_t *sum)
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
        err = bpf_map__lookup_elem(map, &key, sizeof(key), values, (size_t)ncpus * value_size, 0);
        if (err) {
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

/* ---- probe.h */

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

static void set_error(struct probe_error *err, int error, const char *text)
{
        if (!err)
                return;
        err->error = error;
        snprintf(err->text, sizeof(err->text), "%s", text);
}

static int check_ids(const uint64_t *cgroup_ids, size_t n, unsigned kinds, struct probe_error *err)
{
        char text[PROBE_ERROR_TEXT_MAX];

        if (!cgroup_ids || n == 0 || n > PROBE_CGROUPS_MAX) {
                snprintf(text, sizeof(text), "watch 1 to %d cgroups, not %zu", PROBE_CGROUPS_MAX,
                         cgroup_ids ? n : 0);
                set_error(err, -EINVAL, text);
                return -EINVAL;
        }
        if (kinds == 0 || (kinds & ~(unsigned)PROBE_ALL)) {
                snprintf(text, sizeof(text), "invalid probe kinds 0x%x", kinds);
                set_error(err, -EINVAL, text);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                if (cgroup_ids[i] == 0) {
                        set_error(err, -EINVAL, "cgroup id 0 is not a cgroup");
                        return -EINVAL;
                }
                for (size_t j = 0; j < i; j++) {
                        if (cgroup_ids[j] == cgroup_ids[i]) {
                                snprintf(text, sizeof(text), "cgroup id %llu given twice",
                                         (unsigned long long)cgroup_ids[i]);
                                set_error(err, -EINVAL, text);
                                return -EINVAL;
                        }
                }
        }
        return 0;
}

static void close_kinds(struct probe *p)
{
        for (int k = 0; k < PROBE_KINDS_COUNT; k++) {
                if (p->kinds[k].part)
                        part_ops[k]->close(p->kinds[k].part);
                p->kinds[k].part = NULL;
        }
}

struct probe *probe_open(const uint64_t *cgroup_ids, size_t n, unsigned kinds,
                         struct probe_error *err)
{
        struct probe_config cfg = {0};
        libbpf_print_fn_t previous_print;
        char text[PROBE_ERROR_TEXT_MAX];
        const char *variant;
        struct probe *p;
        struct btf *vmlinux;
        bool all_eperm = true;
        int r;

        r = check_ids(cgroup_ids, n, kinds, err);
        if (r < 0)
                return NULL;
        if (access(VMLINUX_BTF, R_OK) < 0) {
                r = -errno;
                snprintf(text, sizeof(text),
                         "no kernel BTF at " VMLINUX_BTF " (%s): CO-RE probes need "
                         "CONFIG_DEBUG_INFO_BTF",
                         strerror(-r));
                set_error(err, r == -EACCES ? -EPERM : -ENOENT, text);
                return NULL;
        }
        p = calloc(1, sizeof(*p));
        if (!p) {
                set_error(err, -ENOMEM, "out of memory");
                return NULL;
        }
        memcpy(p->ids, cgroup_ids, n * sizeof(*cgroup_ids));
        p->n = n;

        libbpf_warning[0] = '\0';
        previous_print = libbpf_set_print(capture_libbpf);
        vmlinux = btf__load_vmlinux_btf();
        if (!vmlinux) {
                r = -errno;
                probe_format_failure(text, sizeof(text), "reading " VMLINUX_BTF, r);
                set_error(err, r == -EACCES || r == -EPERM ? -EPERM : -ENOENT, text);
                libbpf_set_print(previous_print);
                free(p);
                return NULL;
        }

        cfg.ids = p->ids;
        cfg.n = n;
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

                if (!(kinds & part_ops[k]->kind)) {
                        snprintf(st->why, sizeof(st->why), "not requested");
                        continue;
                }
                libbpf_warning[0] = '\0';
                r = part_ops[k]->open(&cfg, &st->part, st->detail, sizeof(st->detail), st->why,
                                      sizeof(st->why));
                if (r < 0) {
                        st->part = NULL;
                        st->detail[0] = '\0';
                        if (r != -EPERM)
                                all_eperm = false;
                }
        }
        btf__free(vmlinux);
        libbpf_set_print(previous_print);

        if (probe_attached(p) == 0) {
                size_t len = 0;

                text[0] = '\0';
                for (int k = 0; k < PROBE_KINDS_COUNT && len < sizeof(text); k++) {
                        if (!(kinds & part_ops[k]->kind))
                                continue;
                        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s: %s",
                                                len ? "; " : "", probe_kind_name(part_ops[k]->kind),
                                                p->kinds[k].why);
                }
                if (all_eperm)
                        set_error(err, -EPERM, text);
                else
                        set_error(err, -EOPNOTSUPP, text);
                free(p);
                return NULL;
        }
        return p;
}

unsigned probe_attached(const struct probe *p)
{
        unsigned kinds = 0;

        if (!p)
                return 0;
        for (int k = 0; k < PROBE_KINDS_COUNT; k++)
                if (p->kinds[k].part)
                        kinds |= part_ops[k]->kind;
        return kinds;
}

const char *probe_missing_reason(const struct probe *p, enum probe_kind kind)
{
        int k = kind_index(kind);

        if (!p || k < 0 || p->kinds[k].part)
                return NULL;
        return p->kinds[k].why;
}

const char *probe_kind_detail(const struct probe *p, enum probe_kind kind)
{
        int k = kind_index(kind);

        if (!p || k < 0 || !p->kinds[k].part)
                return NULL;
        return p->kinds[k].detail;
}

int probe_read(struct probe *p, uint64_t cgroup_id, struct probe_usage *ret)
{
        struct probe_usage usage;
        size_t slot;
        int r;

        if (!p || !ret)
                return -EINVAL;
        for (slot = 0; slot < p->n; slot++)
                if (p->ids[slot] == cgroup_id)
                        break;
        if (slot == p->n)
                return -ENOENT;
        memset(&usage, 0, sizeof(usage));
        for (int k = 0; k < PROBE_KINDS_COUNT; k++) {
                if (!p->kinds[k].part)
                        continue;
                r = part_ops[k]->read(p->kinds[k].part, (unsigned)slot, &usage);
                if (r < 0)
                        return r;
        }
        *ret = usage;
        return 0;
}

int probe_consume_oom(struct probe *p,
                      int (*fn)(const struct probe_oom_event *event, void *userdata),
                      void *userdata)
{
        void *memory;

        if (!p || !fn)
                return -EINVAL;
        memory = p->kinds[kind_index(PROBE_MEMORY)].part;
        if (!memory)
                return -EOPNOTSUPP;
        return probe_memory_consume(memory, p->ids, p->n, fn, userdata);
}

int probe_oom_fd(const struct probe *p)
{
        void *memory;

        if (!p)
                return -EINVAL;
        memory = p->kinds[kind_index(PROBE_MEMORY)].part;
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
                struct bpf_program *prog;

                if (!p->kinds[k].part)
                        continue;
                bpf_object__for_each_program(prog, part_ops[k]->object(p->kinds[k].part))
                {
                        struct bpf_prog_info info;
                        __u32 len = sizeof(info);
                        int fd = bpf_program__fd(prog);

                        if (!bpf_program__autoload(prog) || fd < 0)
                                continue;
                        if (count < max) {
                                struct probe_program_stats *s = &ret[count];

                                memset(&info, 0, sizeof(info));
                                if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
                                        return -errno;
                                memset(s, 0, sizeof(*s));
                                snprintf(s->name, sizeof(s->name), "%s", info.name);
                                s->kind = part_ops[k]->kind;
                                s->id = info.id;
                                s->run_cnt = info.run_cnt;
                                s->run_time_ns = info.run_time_ns;
                        }
                        count++;
                }
        }
        return count > INT32_MAX ? INT32_MAX : (int)count;
}

void probe_close(struct probe *p)
{
        if (!p)
                return;
        close_kinds(p);
        free(p);
}
