/* SPDX-License-Identifier: Apache-2.0 */
/* `sparkshim tune` and `sparkshim report --job` (sparkshim-tune(1)). */
#include "cli.h"

int tuner_cli_tune(int argc, char **argv)
{
        log_error("tune: not built yet");
        return SHIM_EXIT_INTERNAL;
}

int tuner_cli_report(int argc, char **argv)
{
        log_error("report --job: not built yet");
        return SHIM_EXIT_INTERNAL;
}
