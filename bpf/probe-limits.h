// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Sizes shared by the BPF programs and their loaders. The BPF side cannot include probe.h
 * (libc headers clash with vmlinux.h), so probe.c checks at compile time that these equal
 * PROBE_CGROUPS_MAX and PROBE_HIST_SLOTS.
 */
#pragma once

#define PROBE_LIMIT_CGROUPS 16
#define PROBE_LIMIT_HIST    32
