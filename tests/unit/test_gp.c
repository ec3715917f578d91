/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gaussian-process regression (tuner/gp.h) against known values. The reference numbers were
 * computed independently with numpy/scipy (dense solves, not a Cholesky) by
 * tests/unit/gp_reference.py; its printed output is pasted below.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "gp.h"

#define TOL 1e-9

static void assert_close(double got, double want, double tol, const char *what)
{
        cr_assert(fabs(got - want) <= tol * fmax(1.0, fabs(want)), "%s: got %.15g, want %.15g",
                  what, got, want);
}

Test(gp, matern52_known_values)
{
        assert_close(tuner_gp_matern52(0), 1.0, TOL, "k(0)");
        assert_close(tuner_gp_matern52(0.5), 0.8286491424181255, TOL, "k(0.5)");
        assert_close(tuner_gp_matern52(1.3), 0.3674120411914809, TOL, "k(1.3)");
}

Test(gp, one_dimension_fixed_hyperparameters)
{
        const double x[] = {0.1, 0.4, 0.7, 0.9}, y[] = {1.0, 2.5, 0.3, -0.7};
        const double at[] = {0.25, 0.55, 1.0};
        const double mean[] = {1.9533475437831753, 1.6644866341671554, -0.6344033132557616};
        const double var[] = {0.1541457003653483, 0.1338661923406367, 0.2059316898889192};
        struct tuner_gp_hyper h = {
            .lengthscale = {0.3}, .signal_variance = 1.2, .noise_variance = 0.01};
        struct tuner_gp *gp = tuner_gp_new(1);
        struct util_error err = {0};

        cr_assert_not_null(gp);
        cr_assert_eq(tuner_gp_fit(gp, x, y, 4,
                                  &(struct tuner_gp_options){.standardise = true, .hyper = &h},
                                  &err),
                     0, "fit: %s", err.text);
        assert_close(tuner_gp_log_marginal_likelihood(gp), -5.682108785170712, TOL, "lml");
        for (int i = 0; i < 3; i++) {
                double m, v;
                cr_assert_eq(tuner_gp_predict(gp, &at[i], &m, &v), 0);
                assert_close(m, mean[i], TOL, "mean");
                assert_close(v, var[i], TOL, "variance");
        }
        cr_assert_eq(tuner_gp_jitter(gp), 0.0, "a well-conditioned fit needs no jitter");
        tuner_gp_free(gp);
}

Test(gp, two_dimensions_ard)
{
        const double x[] = {0.1, 0.2, 0.5, 0.9, 0.8, 0.4, 0.3, 0.6, 0.95, 0.05};
        const double y[] = {3.0, 1.0, 2.0, 0.5, 4.0};
        const double at[] = {0.4, 0.5, 0.0, 1.0};
        const double mean[] = {0.5328010591034504, 2.4029893613205218};
        const double var[] = {0.2985908669852516, 1.1625717453696125};
        struct tuner_gp_hyper h = {
            .lengthscale = {0.2, 0.8}, .signal_variance = 0.9, .noise_variance = 1e-3};
        struct tuner_gp *gp = tuner_gp_new(2);

        cr_assert_eq(tuner_gp_fit(gp, x, y, 5,
                                  &(struct tuner_gp_options){
                                      .kernel = TUNER_GP_ARD, .standardise = true, .hyper = &h},
                                  NULL),
                     0);
        assert_close(tuner_gp_log_marginal_likelihood(gp), -7.766632024538218, TOL, "lml");
        for (int i = 0; i < 2; i++) {
                double m, v;
                cr_assert_eq(tuner_gp_predict(gp, &at[2 * i], &m, &v), 0);
                assert_close(m, mean[i], TOL, "mean");
                assert_close(v, var[i], TOL, "variance");
        }
        tuner_gp_free(gp);
}

Test(gp, labels_without_standardisation)
{
        const double x[] = {0.2, 0.5, 0.8}, y[] = {-1, -1, 1}, at[] = {0.35, 0.7};
        const double mean[] = {-1.2303663975672845, 0.40366389587294776};
        const double var[] = {0.09690895106529174, 0.07834582995340833};
        struct tuner_gp_hyper h = {
            .lengthscale = {0.3}, .signal_variance = 1.0, .noise_variance = 0.01};
        struct tuner_gp *gp = tuner_gp_new(1);

        cr_assert_eq(tuner_gp_fit(gp, x, y, 3,
                                  &(struct tuner_gp_options){.standardise = false, .hyper = &h},
                                  NULL),
                     0);
        assert_close(tuner_gp_log_marginal_likelihood(gp), -4.529261372449323, TOL, "lml");
        for (int i = 0; i < 2; i++) {
                double m, v;
                cr_assert_eq(tuner_gp_predict(gp, &at[i], &m, &v), 0);
                assert_close(m, mean[i], TOL, "mean");
                assert_close(v, var[i], TOL, "variance");
        }
        tuner_gp_free(gp);
}

/* One point, by hand: mean = k(x*, x0) / (s2 + noise) y0, var = s2 - k^2 / (s2 + noise). */
Test(gp, one_point_by_hand)
{
        const double x = 0.5, y = 2.0, at = 0.6;
        struct tuner_gp_hyper h = {
            .lengthscale = {0.2}, .signal_variance = 1.0, .noise_variance = 0.1};
        struct tuner_gp *gp = tuner_gp_new(1);
        double k = tuner_gp_matern52(0.1 / 0.2), m, v;

        cr_assert_eq(tuner_gp_fit(gp, &x, &y, 1,
                                  &(struct tuner_gp_options){.standardise = false, .hyper = &h},
                                  NULL),
                     0);
        cr_assert_eq(tuner_gp_predict(gp, &at, &m, &v), 0);
        assert_close(m, k / 1.1 * 2.0, TOL, "mean");
        assert_close(v, 1.0 - k * k / 1.1, TOL, "variance");
        /* log N(2; 0, 1.1) */
        assert_close(tuner_gp_log_marginal_likelihood(gp),
                     -0.5 * 4.0 / 1.1 - 0.5 * log(1.1) - 0.5 * log(2 * M_PI), TOL, "lml");
        tuner_gp_free(gp);
}

/* The search's choice is at least as likely as any fixed grid point (s2 is profiled). */
Test(gp, hyperparameter_search_maximises_likelihood)
{
        double x[30], y[30];
        const double ls[] = {0.05, 0.1, 0.35, 1.0, 2.5}, noise[] = {1e-6, 1e-2, 1e-1};
        struct tuner_gp *gp = tuner_gp_new(1), *fixed = tuner_gp_new(1);
        struct tuner_gp_hyper chosen;
        double best;

        for (int i = 0; i < 30; i++) {
                x[i] = i / 29.0;
                y[i] = sin(6 * x[i]) + 0.05 * cos(37 * i);
        }
        cr_assert_eq(tuner_gp_fit(gp, x, y, 30, NULL, NULL), 0);
        best = tuner_gp_log_marginal_likelihood(gp);
        tuner_gp_hyper_get(gp, &chosen);
        cr_assert(chosen.lengthscale[0] >= 0.1 && chosen.lengthscale[0] <= 1.0,
                  "a smooth sine wants a middling lengthscale, got %g", chosen.lengthscale[0]);
        for (size_t a = 0; a < 5; a++)
                for (size_t b = 0; b < 3; b++) {
                        struct tuner_gp_hyper h = {.lengthscale = {ls[a]},
                                                   .signal_variance = 1.0,
                                                   .noise_variance = noise[b]};
                        cr_assert_eq(tuner_gp_fit(fixed, x, y, 30,
                                                  &(struct tuner_gp_options){.standardise = true,
                                                                             .hyper = &h},
                                                  NULL),
                                     0);
                        cr_assert(tuner_gp_log_marginal_likelihood(fixed) <= best + 1e-9,
                                  "l %g noise %g: lml %g above the search's %g", ls[a], noise[b],
                                  tuner_gp_log_marginal_likelihood(fixed), best);
                }
        /* and it interpolates the sine */
        {
                double m, v, at = 0.5;
                cr_assert_eq(tuner_gp_predict(gp, &at, &m, &v), 0);
                cr_assert(fabs(m - sin(3.0)) < 0.1, "mean %g at 0.5, sin 3 = %g", m, sin(3.0));
        }
        tuner_gp_free(gp);
        tuner_gp_free(fixed);
}

/* ARD finds that y depends on the first input only: the second lengthscale is longer. */
Test(gp, ard_search_finds_the_relevant_dimension)
{
        double x[2 * 40], y[40];
        struct tuner_gp *gp = tuner_gp_new(2);
        struct tuner_gp_hyper h;

        for (int i = 0; i < 40; i++) {
                x[2 * i] = (i % 8) / 7.0;
                x[2 * i + 1] = (i / 8) / 4.0;
                y[i] = sin(5 * x[2 * i]);
        }
        cr_assert_eq(
            tuner_gp_fit(gp, x, y, 40,
                         &(struct tuner_gp_options){.kernel = TUNER_GP_ARD, .standardise = true},
                         NULL),
            0);
        tuner_gp_hyper_get(gp, &h);
        cr_assert(h.lengthscale[1] > 2 * h.lengthscale[0], "lengthscales %g %g", h.lengthscale[0],
                  h.lengthscale[1]);
        tuner_gp_free(gp);
}

/* Duplicated inputs with no noise: singular; the jitter escalation rescues it. */
Test(gp, duplicates_need_jitter)
{
        const double x[] = {0.3, 0.3, 0.3, 0.7}, y[] = {1, 1, 1, 2};
        struct tuner_gp_hyper h = {
            .lengthscale = {0.5}, .signal_variance = 1.0, .noise_variance = 0};
        struct tuner_gp *gp = tuner_gp_new(1);
        struct util_error err = {0};
        double m, v, at = 0.3;

        cr_assert_eq(tuner_gp_fit(gp, x, y, 4,
                                  &(struct tuner_gp_options){.standardise = true, .hyper = &h},
                                  &err),
                     0, "fit: %s", err.text);
        cr_assert(tuner_gp_jitter(gp) > 0, "jitter %g", tuner_gp_jitter(gp));
        cr_assert_eq(tuner_gp_predict(gp, &at, &m, &v), 0);
        cr_assert(fabs(m - 1.0) < 1e-3, "mean %g at the repeated point", m);
        tuner_gp_free(gp);
}

Test(gp, hundreds_of_points)
{
        enum { N = 300 };
        static double x[3 * N], y[N];
        struct tuner_gp *gp = tuner_gp_new(3);
        double m, v, at[3] = {0.5, 0.5, 0.5};

        for (int i = 0; i < N; i++) {
                for (int k = 0; k < 3; k++)
                        x[3 * i + k] = fmod(0.1 + i * (0.618034 + 0.1 * k), 1.0);
                y[i] = x[3 * i] + 2 * x[3 * i + 1] * x[3 * i + 1] - x[3 * i + 2];
        }
        cr_assert_eq(tuner_gp_fit(gp, x, y, N, NULL, NULL), 0);
        cr_assert_eq(tuner_gp_predict(gp, at, &m, &v), 0);
        cr_assert(fabs(m - 0.5) < 0.05, "mean %g at the centre, want 0.5", m);
        cr_assert(v >= 0 && v < 0.01, "variance %g", v);
        tuner_gp_free(gp);
}

Test(gp, invalid_input)
{
        const double x[] = {0.5, 1.5}, y[] = {1, NAN}, finite[] = {1, 2};
        struct tuner_gp *gp = tuner_gp_new(1);
        struct util_error err = {0};
        double m, v;

        cr_assert_null(tuner_gp_new(0));
        cr_assert_null(tuner_gp_new(TUNER_GP_DIMS_MAX + 1));
        cr_assert_eq(tuner_gp_fit(gp, x, y, 0, NULL, &err), -EINVAL);
        cr_assert_eq(tuner_gp_fit(gp, x, finite, 2, NULL, &err), -EINVAL);
        cr_assert(strstr(err.text, "x[1][0] = 1.5"), "message: %s", err.text);
        cr_assert_eq(tuner_gp_fit(gp, x, y, 2, NULL, &err), -EINVAL);
        cr_assert(strstr(err.text, "finite"), "message: %s", err.text);
        cr_assert_eq(tuner_gp_predict(gp, x, &m, &v), -EINVAL, "no fit, no prediction");
        cr_assert(isnan(tuner_gp_log_marginal_likelihood(gp)));
        tuner_gp_free(gp);
        tuner_gp_free(NULL);
}
