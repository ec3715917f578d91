/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Taskstats netlink messages as collect_taskstats_drain_exits() walks a received buffer:
 * every message through parse_task_record() (the attributes of a TASKSTATS_CMD_NEW reply,
 * AGGR_PID -> PID + STATS of any length) and into the totals. taskstats.c is included so
 * that its static parser is reachable. Input: the bytes recv() returned.
 */
#include "../../measure/taskstats.c"

#include <assert.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct collect_taskstats_totals totals = {0};
        unsigned char *buffer;
        int len;

        if (size > EXIT_BUFFER_SIZE)
                return 0;
        /* exactly the received length, so that a read past it is caught */
        buffer = malloc(size ? size : 1);
        if (!buffer)
                return 0;
        memcpy(buffer, data, size);
        len = (int)size;
        for (struct nlmsghdr *nlh = (struct nlmsghdr *)buffer; nlmsg_ok(nlh, len);
             nlh = nlmsg_next(nlh, &len)) {
                struct record rec;
                int r = parse_task_record(nlh, &rec);

                assert(r == 0 || r == 1 || r == -EBADMSG);
                if (r > 0) {
                        add_record(&totals, &rec.stats);
                }
        }
        free(buffer);
        return 0;
}
