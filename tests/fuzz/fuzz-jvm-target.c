/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What executor rolling reads from /proc to choose the JVM that root signals
 * (measure/jvm-target.c): the Uid:/Gid: lines of /proc/PID/status and the command line of
 * /proc/PID/cmdline, which the job writes. Input: the first byte picks the parser, the rest
 * is the file's bytes.
 */
#include <assert.h>
#include <errno.h>

#include "fuzz.h"
#include "jvm-target.h"

#define ARGS_MAX 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        if (data[0] & 1) {
                uid_t uid[4] = {7, 7, 7, 7};
                gid_t gid[4] = {7, 7, 7, 7};
                int r = jvm_status_ids((const char *)data + 1, size - 1, uid, gid);

                assert(r == 0 || r == -EINVAL);
                if (r < 0)
                        assert(uid[0] == 7 && gid[3] == 7);
                else
                        (void)jvm_target_ids_ok(uid, gid, uid[1]);
        } else {
                char *buf = malloc(size), *argv[ARGS_MAX + 1];
                size_t n;

                if (!buf)
                        return 0;
                memcpy(buf, data + 1, size - 1);
                n = jvm_cmdline_split(buf, size - 1, argv, ARGS_MAX + 1);
                assert(n <= ARGS_MAX && argv[n] == NULL);
                for (size_t i = 0; i < n; i++)
                        assert(argv[i] >= buf && argv[i] < buf + size - 1 &&
                               argv[i] + strlen(argv[i]) < buf + size - 1);
                if (n > 0)
                        (void)policy_java_runs_executor((int)n, argv, false);
                free(buf);
        }
        return 0;
}
