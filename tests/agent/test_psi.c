/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's memory PSI source (jvmagent/psi.c): the parser on fixed texts, and the source on
 * this machine's own pressure files (a trigger where the kernel grants one, the totals
 * otherwise; either way a quiet system does not fire). */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent-internal.h"
#include "psi.h"

Test(psi, parses_the_some_total)
{
        uint64_t us = 1;

        cr_expect_eq(jva_parse_psi_some_total("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                              "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                                              &us),
                     0);
        cr_expect_eq(us, 0);
        cr_expect_eq(jva_parse_psi_some_total("some avg10=1.50 avg60=0.20 avg300=0.04 "
                                              "total=123456789\nfull avg10=0.00 avg60=0.00 "
                                              "avg300=0.00 total=99\n",
                                              &us),
                     0);
        cr_expect_eq(us, 123456789);
}

Test(psi, refuses_other_texts)
{
        uint64_t us = 7;

        cr_expect_eq(jva_parse_psi_some_total("full avg10=0.00 total=5\n", &us), -ENOENT);
        cr_expect_eq(jva_parse_psi_some_total("some avg10=0.00 avg60=0.00\nfull total=5\n", &us),
                     -EINVAL);
        cr_expect_eq(jva_parse_psi_some_total("some total=\n", &us), -EINVAL);
        cr_expect_eq(jva_parse_psi_some_total("some total=12x\n", &us), -EINVAL);
        cr_expect_eq(jva_parse_psi_some_total("some total=99999999999999999999999\n", &us),
                     -EINVAL);
        cr_expect_eq(us, 7);
}

Test(psi, refuses_bad_rates)
{
        struct jva_psi psi;

        cr_expect_eq(jva_psi_open(&psi, NULL, 0, 1000000), -EINVAL);
        cr_expect_eq(jva_psi_open(&psi, NULL, 2000000, 1000000), -EINVAL);
        cr_expect_eq(jva_psi_open(&psi, "/nonexistent-cgroup", 100000, 1000000), -ENOENT);
}

Test(psi, watches_the_system)
{
        struct jva_psi psi;
        bool fired = true;
        int r;

        if (access("/proc/pressure/memory", R_OK) < 0)
                cr_skip_test("no /proc/pressure/memory (kernel without PSI, or psi=0)");
        /* a stall of the whole window: a quiet machine never gets there */
        r = jva_psi_open(&psi, NULL, 1000000, 1000000);
        cr_assert_eq(r, 0, "jva_psi_open: %s", strerror(-r));
        cr_log_info("%s: %s (stall %" PRIu64 " us / window %" PRIu64 " us; %s)", psi.path,
                    psi.trigger ? "kernel trigger" : "polling totals", psi.trigger_stall_us,
                    psi.trigger_window_us, psi.trigger ? "" : strerror(psi.trigger_error));
        usleep(200000);
        cr_expect_eq(jva_psi_poll(&psi, &fired), 0);
        cr_expect(!fired, "a quiet system reached a full stall");
        jva_psi_close(&psi);
        cr_expect_eq(jva_psi_poll(&psi, &fired), -EBADF);
}
