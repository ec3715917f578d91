/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SigCgt reading of /proc/<pid>/status (measure/rolling.c): root reads the executor's
 * status file, whose Name: line is the job's choice. Input: the file's bytes.
 */
#include <assert.h>
#include <errno.h>
#include <signal.h>

#include "fuzz.h"
#include "rolling.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint64_t mask = 0x5a5a;
        int r = rolling_status_sigcgt((const char *)data, size, &mask);

        assert(r == 0 || r == -EINVAL);
        if (r < 0)
                assert(mask == 0x5a5a);
        else
                assert(rolling_sigpwr_from_mask(mask, SIGPWR) != ROLLING_SIGPWR_UNKNOWN);
        return 0;
}
