/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A recommendation as the Spark properties that carry it, as `sparkshim tune` prints them and
 * `sparkshim tune-service` publishes them: sizes in whole MiB, rounded towards the inside of
 * the bounds; what sparkshim takes as an executor input (the CPU request, the overhead for
 * sparkshim, the burst ratio, the agent's fraction) only when the policy's overrides let
 * users set it (else the next executor would be refused). Every key and value is one
 * policy_published_check() allows.
 */
#pragma once

#include <stddef.h>

#include "tuner.h"

#define TUNER_PROPERTIES_MAX 16

struct tuner_property {
        const char *key;
        char value[64];
        enum tuner_param_index param;
};

size_t tuner_properties(const struct tuner_params *p, const struct tuner_bounds *b,
                        unsigned overrides, struct tuner_property out[TUNER_PROPERTIES_MAX]);
