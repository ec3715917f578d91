/* SPDX-License-Identifier: Apache-2.0 */
/*
 * measure/'s front door: what shim/ uses of it. The monitor of an executor run (monitor.h),
 * the JVM agent's statistics and the description of its injection (agent-stats.h), the
 * report's schema (report-schema.h) and the reading of report files for `sparkshim report`
 * (report-read.h). The other headers of measure/ are its own (and its tests').
 */
#pragma once

#include "agent-stats.h"
#include "monitor.h"
#include "report-read.h"
#include "report-schema.h"
