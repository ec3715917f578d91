/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The random stream (rng.h): xoshiro256** (Blackman and Vigna), its state seeded by
 * splitmix64, uniform doubles of 53 bits and normal draws by Box-Muller.
 */
#include <math.h>

#include "rng.h"
#include "util.h"

static uint64_t splitmix64(uint64_t *state)
{
        uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
        return (x << k) | (x >> (64 - k));
}

void tuner_rng_seed(struct tuner_rng *rng, uint64_t seed)
{
        uint64_t state = seed;

        for (size_t i = 0; i < ELEMENTSOF(rng->s); i++)
                rng->s[i] = splitmix64(&state);
}

uint64_t tuner_rng_next(struct tuner_rng *rng)
{
        uint64_t *s = rng->s;
        uint64_t result = rotl(s[1] * 5, 7) * 9;
        uint64_t t = s[1] << 17;

        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
}

double tuner_rng_uniform(struct tuner_rng *rng)
{
        return (double)(tuner_rng_next(rng) >> 11) * 0x1.0p-53;
}

double tuner_rng_normal(struct tuner_rng *rng)
{
        double u1 = 1.0 - tuner_rng_uniform(rng); /* (0,1]: log is finite */
        double u2 = tuner_rng_uniform(rng);

        return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
