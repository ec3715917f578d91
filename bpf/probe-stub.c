/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe.h for builds without BPF (no clang, bpftool, libbpf or kernel BTF at build time):
 * nothing attaches and callers fall back to their file and netlink collectors.
 * SPARKSHIM_PROBE_STUB_REASON is set by bpf/meson.build.
 */
#include "probe.h"
#include "probe-config.h"

#include <errno.h>
#include <stdio.h>

#ifndef SPARKSHIM_PROBE_STUB_REASON
#define SPARKSHIM_PROBE_STUB_REASON "unknown"
#endif

void probe_set_test_hooks(bool on)
{
}

static struct probe *fail(struct util_error *err)
{
        util_error_set(err, EOPNOTSUPP, "built without BPF: %s", SPARKSHIM_PROBE_STUB_REASON);
        return NULL;
}

struct probe *probe_open(const uint64_t *cgroup_ids, size_t n, unsigned kinds,
                         struct util_error *err)
{
        return fail(err);
}

unsigned probe_attached(const struct probe *p)
{
        return 0;
}

const char *probe_missing_reason(const struct probe *p, enum probe_kind kind)
{
        return "built without BPF: " SPARKSHIM_PROBE_STUB_REASON;
}

const char *probe_kind_detail(const struct probe *p, enum probe_kind kind)
{
        return NULL;
}

int probe_read(struct probe *p, uint64_t cgroup_id, struct probe_usage *ret)
{
        return -EOPNOTSUPP;
}

int probe_consume_oom(struct probe *p,
                      int (*fn)(const struct probe_oom_event *event, void *userdata),
                      void *userdata)
{
        return -EOPNOTSUPP;
}

int probe_oom_fd(const struct probe *p)
{
        return -EOPNOTSUPP;
}

int probe_program_stats(const struct probe *p, struct probe_program_stats *ret, size_t max)
{
        return -EOPNOTSUPP;
}

struct probe *probe_open_node(const char *root, uint64_t cgroup_id, struct util_error *err)
{
        (void)root;
        (void)cgroup_id;
        return fail(err);
}

bool probe_is_node(const struct probe *p)
{
        (void)p;
        return false;
}

int probe_node_list(const char *root, struct probe_node_entry *ret, size_t max,
                    struct util_error *err)
{
        (void)root;
        (void)ret;
        (void)max;
        (void)err;
        return 0;
}

void probe_close(struct probe *p)
{
}
