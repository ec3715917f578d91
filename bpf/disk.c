/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loader of the disk probe (disk.bpf.c): block_io_start where the kernel has it (>= 6.5),
 * else block_rq_insert; block_rq_issue, block_rq_merge, block_rq_complete.
 */
#include "probe-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "disk.h"
/* the generated skeleton embeds the BPF object as one long string literal */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
#include "disk.skel.h"
#pragma GCC diagnostic pop

struct disk_part {
        struct disk_bpf *skel;
};

static int disk_open(const struct probe_config *cfg, void **ret, char *detail, size_t detail_size,
                     struct util_error *why)
{
        struct disk_part *part;
        struct disk_bpf *skel;
        bool io_start, insert, merge;
        int err;

        /* the request-only shapes (one argument) date from 5.11; complete adds error, bytes */
        if (probe_tracepoint_nargs(cfg->vmlinux, "block_rq_issue") != 1 ||
            probe_tracepoint_nargs(cfg->vmlinux, "block_rq_complete") != 3) {
                util_error_set(why, EOPNOTSUPP,
                               "the kernel has no block_rq_issue(rq)/block_rq_complete(rq, error, "
                               "nr_bytes) tracepoints (kernel < 5.11?)");
                return -EOPNOTSUPP;
        }
        io_start =
            probe_tracepoint_nargs(cfg->vmlinux, "block_io_start") == 1 && !cfg->disk_no_io_start;
        insert = !io_start && probe_tracepoint_nargs(cfg->vmlinux, "block_rq_insert") == 1;
        merge = probe_tracepoint_nargs(cfg->vmlinux, "block_rq_merge") == 1;

        part = calloc(1, sizeof(*part));
        if (!part)
                return -ENOMEM;
        skel = disk_bpf__open();
        if (!skel) {
                err = -errno;
                probe_format_failure(why, "open", err);
                free(part);
                return err;
        }
        skel->rodata->start_at_io_start = io_start;
        err = probe_share_maps(skel->obj, "disk_stats", cfg);
        if (err) {
                probe_format_failure(why, "maps", err);
                goto fail;
        }

        bpf_program__set_autoload(skel->progs.disk_io_start, io_start);
        bpf_program__set_autoload(skel->progs.disk_rq_insert, insert);
        bpf_program__set_autoload(skel->progs.disk_rq_merge, merge);
        if (io_start)
                probe_detail_add(detail, detail_size, "block_io_start");
        if (insert)
                probe_detail_add(detail, detail_size, "block_rq_insert");
        probe_detail_add(detail, detail_size, "block_rq_issue");
        if (merge)
                probe_detail_add(detail, detail_size, "block_rq_merge");
        probe_detail_add(detail, detail_size, "block_rq_complete");

        err = disk_bpf__load(skel);
        if (err) {
                probe_format_failure(why, "load", err);
                goto fail;
        }
        part->skel = skel;
        *ret = part;
        return 0;
fail:
        disk_bpf__destroy(skel);
        free(part);
        return err;
}

static int disk_read(int stats_fd, unsigned slot, struct probe_usage *usage)
{
        uint64_t words[sizeof(struct probe_disk_stat) / sizeof(uint64_t)];
        struct probe_disk_stat sum;
        int err;

        err = probe_percpu_sum(stats_fd, slot, sizeof(sum), words);
        if (err)
                return err;
        memcpy(&sum, words, sizeof(sum));
        usage->read_bytes += sum.read_bytes;
        usage->write_bytes += sum.write_bytes;
        usage->read_ops += sum.read_ops;
        usage->write_ops += sum.write_ops;
        for (size_t i = 0; i < PROBE_HIST_SLOTS; i++)
                usage->disk_lat_hist[i] += sum.lat_hist[i];
        usage->disk_requests_lost += sum.lost;
        return 0;
}

static struct bpf_object *disk_object(void *opaque)
{
        struct disk_part *part = opaque;

        return part->skel->obj;
}

static void disk_close(void *opaque)
{
        struct disk_part *part = opaque;

        if (!part)
                return;
        disk_bpf__destroy(part->skel);
        free(part);
}

const struct probe_part_ops probe_disk_ops = {
    .kind = PROBE_DISK,
    .stats = "disk_stats",
    .stat_size = sizeof(struct probe_disk_stat),
    .open = disk_open,
    .read = disk_read,
    .object = disk_object,
    .close = disk_close,
};
