/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report's schema, sparkshim.report/v1 (docs/sparkshim-report.5.md): its name, which the
 * monitor writes into every report, and the check of a document against it, which a reader
 * of report files (untrusted: written by any number of runs) applies to every line first.
 */
#pragma once

#include <jansson.h>

#include "error.h"

#define REPORT_SCHEMA "sparkshim.report/v1"

/* Validate a report document: schema, kind, every required field present with its type. */
int shim_report_validate(json_t *doc, struct util_error *err);
