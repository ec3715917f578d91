/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tuner's random stream: xoshiro256** seeded through splitmix64 (rng.c), as sqlite keeps
 * its PRNG in one file of its own. The genetic algorithm (ga.h) draws from it, and so does the
 * offline benchmark (bench/tuneoffline.c). Deterministic given the seed; a struct tuner_rng
 * is the whole state (no globals), one per thread.
 */
#pragma once

#include <stdint.h>

struct tuner_rng {
        uint64_t s[4];
};

void tuner_rng_seed(struct tuner_rng *rng, uint64_t seed);
uint64_t tuner_rng_next(struct tuner_rng *rng);
double tuner_rng_uniform(struct tuner_rng *rng); /* [0,1), 53 bits */
double tuner_rng_normal(struct tuner_rng *rng);  /* N(0,1), Box-Muller */
