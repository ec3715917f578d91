/* SPDX-License-Identifier: Apache-2.0 */
/* The parts of probe.h that need no BPF: built with the probes and with the stub alike. */
#include "probe.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

const char *probe_kind_name(enum probe_kind kind)
{
        switch (kind) {
        case PROBE_CPU:
                return "cpu";
        case PROBE_MEMORY:
                return "memory";
        case PROBE_DISK:
                return "disk";
        default:
                return NULL;
        }
}

int probe_cgroup_id(const char *path, uint64_t *ret)
{
        struct statfs sfs;
        struct stat st;

        if (!path || !ret)
                return -EINVAL;
        if (stat(path, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (statfs(path, &sfs) < 0)
                return -errno;
        /* a v1 hierarchy's inode numbers are not what bpf_get_current_cgroup_id() returns */
        if (sfs.f_type != CGROUP2_SUPER_MAGIC)
                return -EMEDIUMTYPE;
        *ret = (uint64_t)st.st_ino;
        return 0;
}

uint64_t probe_hist_percentile_us(const uint64_t hist[PROBE_HIST_SLOTS], double percentile)
{
        uint64_t total = 0, target, seen = 0;

        for (size_t i = 0; i < PROBE_HIST_SLOTS; i++)
                total += hist[i];
        if (total == 0)
                return 0;
        if (!(percentile > 0)) /* also NaN */
                percentile = 0;
        if (percentile > 100)
                percentile = 100;
        target = (uint64_t)ceil(percentile / 100.0 * (double)total);
        if (target == 0)
                target = 1;
        for (size_t i = 0; i < PROBE_HIST_SLOTS; i++) {
                seen += hist[i];
                if (seen >= target)
                        return UINT64_C(1) << (i + 1);
        }
        return UINT64_C(1) << PROBE_HIST_SLOTS;
}
