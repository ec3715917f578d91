/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness: a run as one JSON object (tuner_run_from_json, tuner/tuner.c), the
 * reader of `sparkshim report --job --json` lines that bench/tune-offline and its
 * --after-gc readings take (bench/tune/data: a developer's files, not the user's; the harness
 * is there because the reader is a parser all the same). A document it accepts must come back
 * the same through tuner_run_to_json: written, read again and written again, byte for byte.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "tuner.h"

static char *dump(const struct tuner_run *run)
{
        json_t *doc = tuner_run_to_json(run);
        char *s = doc ? json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT) : NULL;

        json_decref(doc);
        return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct util_error err = {0};
        struct tuner_run run, again;
        json_t *doc, *back;
        char *first, *second;

        doc = json_loadb((const char *)data, size, 0, NULL);
        if (!doc)
                return 0;
        if (tuner_run_from_json(doc, &run, &err) < 0) {
                json_decref(doc);
                return 0;
        }
        json_decref(doc);
        first = dump(&run);
        if (!first)
                return 0; /* out of memory */
        back = json_loads(first, 0, NULL);
        if (!back || tuner_run_from_json(back, &again, &err) < 0)
                __builtin_trap(); /* it refused what it wrote */
        json_decref(back);
        second = dump(&again);
        if (second && strcmp(first, second) != 0)
                __builtin_trap(); /* not the same run */
        free(first);
        free(second);
        return 0;
}
