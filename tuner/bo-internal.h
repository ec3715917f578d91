/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of stage 2 share and nobody else needs: the genetic algorithm (ga.c), the
 * BO over points (bo.c) and the mapping from runs (bo-runs.c).
 */
#pragma once

static inline double clamp(double v, double lo, double hi)
{
        return v < lo ? lo : v > hi ? hi : v;
}
