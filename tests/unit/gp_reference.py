#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reference values for tests/unit/test_gp.c and test_bo.c, computed independently of
tuner/gp.c with numpy and scipy (dense solves, scipy.stats.norm). Run once by hand:

    python3 -m venv /var/tmp/venv && /var/tmp/venv/bin/pip install numpy scipy
    /var/tmp/venv/bin/python tests/unit/gp_reference.py

and paste the printed numbers into the tests; the tests do not need Python."""
import numpy as np
from scipy.stats import norm


def matern52(r):
    s = np.sqrt(5.0) * r
    return (1.0 + s + s * s / 3.0) * np.exp(-s)


def kernel(a, b, ls, s2):
    d = (a[:, None, :] - b[None, :, :]) / np.asarray(ls)
    return s2 * matern52(np.sqrt((d * d).sum(-1)))


def gp(x, y, ls, s2, noise, xs, standardise=True):
    x, xs, y = np.asarray(x, float), np.asarray(xs, float), np.asarray(y, float)
    mu, sd = (y.mean(), y.std()) if standardise else (0.0, 1.0)  # population sd, ddof 0
    ys = (y - mu) / sd
    n = len(y)
    K = kernel(x, x, ls, s2) + noise * np.eye(n)
    Kinv_y = np.linalg.solve(K, ys)
    _, logdet = np.linalg.slogdet(K)
    lml = -0.5 * ys @ Kinv_y - 0.5 * logdet - 0.5 * n * np.log(2 * np.pi)
    ks = kernel(xs, x, ls, s2)
    mean = mu + sd * (ks @ Kinv_y)
    var = sd * sd * (s2 - np.einsum("ij,ji->i", ks, np.linalg.solve(K, ks.T)))
    return mean, var, lml


def show(name, mean, var, lml):
    print(f"/* {name} */")
    print("lml", repr(float(lml)))
    for m, v in zip(mean, var):
        print("  mean", repr(float(m)), "var", repr(float(v)))


print("matern52(0.5)", repr(float(matern52(0.5))), "matern52(1.3)", repr(float(matern52(1.3))))

# 1-D, standardised outputs, shared lengthscale
show("1d", *gp([[0.1], [0.4], [0.7], [0.9]], [1.0, 2.5, 0.3, -0.7], [0.3], 1.2, 0.01,
               [[0.25], [0.55], [1.0]]))

# 2-D ARD, standardised outputs
x2 = [[0.1, 0.2], [0.5, 0.9], [0.8, 0.4], [0.3, 0.6], [0.95, 0.05]]
y2 = [3.0, 1.0, 2.0, 0.5, 4.0]
show("2d ard", *gp(x2, y2, [0.2, 0.8], 0.9, 1e-3, [[0.4, 0.5], [0.0, 1.0]]))

# labels, no standardisation (the failure model's form)
show("labels", *gp([[0.2], [0.5], [0.8]], [-1.0, -1.0, 1.0], [0.3], 1.0, 0.01, [[0.35], [0.7]],
                   standardise=False))

# Expected Improvement for minimisation, xi = 0
for mean, sd, best in [(1.0, 0.5, 1.2), (0.0, 1.0, 0.0), (2.0, 0.3, 1.0), (-1.0, 2.0, 0.5)]:
    z = (best - mean) / sd
    ei = (best - mean) * norm.cdf(z) + sd * norm.pdf(z)
    print("ei", mean, sd, best, repr(float(ei)))
