/* SPDX-License-Identifier: Apache-2.0 */
/* `sparkshim ingest` (sparkshim-tune(1)). */
#include "cli.h"

int tuner_cli_ingest(int argc, char **argv)
{
        log_error("ingest: not built yet");
        return SHIM_EXIT_INTERNAL;
}
