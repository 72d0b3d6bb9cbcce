#!/usr/bin/env python3
"""Reference frequencies of a uniform cantilever rotating about its root (hub radius 0), for the
fem stage's check of a prescribed rigid motion (crates/fem/tests/rotating_beam.rs).

Flapwise bending (out of the plane of rotation, or in the plane without the centrifugal
softening):
    v'''' - (n v')' = mu^2 v  on  0 <= xi <= 1,   n(xi) = eta^2 (1 - xi^2) / 2,
clamped at the root (v = v' = 0), free at the tip (v'' = 0 and v''' - n v' = 0, n(1) = 0),
mu = omega L^2 sqrt(rho A / EI), eta = Omega L^2 sqrt(rho A / EI). The in-plane (chordwise)
frequencies of the same beam, with the centrifugal softening, are sqrt(mu^2 - eta^2).

Solved by shooting: the two solutions with v = v' = 0 at the root and (v'', v''') = (1, 0) and
(0, 1) integrated to the tip by scipy.integrate.solve_ivp (DOP853, rtol 1e-13, atol 1e-13),
the tip conditions' 2 x 2 determinant's sign changes bracketed on a fine grid of mu and refined
by scipy.optimize.brentq (xtol 1e-14). The same at rtol 1e-11 gives the accuracy column.
At eta = 0 the roots are the classical (beta L)^2 = 3.5160, 22.0345, 61.6972, 120.9019.

Run: python3 scripts/rotating_beam_reference.py > tests/golden/rotating_beam.json
"""
import json

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq


def tip_determinant(mu, eta, rtol):
    def rhs(xi, y):
        v, v1, v2, v3 = y
        n, dn = eta**2 * (1 - xi**2) / 2, -(eta**2) * xi
        # v'''' = mu^2 v + (n v')' = mu^2 v + n' v' + n v''
        return [v1, v2, v3, mu**2 * v + dn * v1 + n * v2]

    tips = []
    for y0 in ([0, 0, 1, 0], [0, 0, 0, 1]):
        s = solve_ivp(rhs, (0, 1), y0, method="DOP853", rtol=rtol, atol=rtol)
        v, v1, v2, v3 = s.y[:, -1]
        tips.append((v2, v3))  # n(1) = 0: v''(1) = 0, v'''(1) = 0
    return tips[0][0] * tips[1][1] - tips[0][1] * tips[1][0]


def frequencies(eta, rtol, modes=4):
    grid = np.linspace(0.5, 160, 1600)
    f = [tip_determinant(m, eta, rtol) for m in grid]
    roots = []
    for a, b, fa, fb in zip(grid, grid[1:], f, f[1:]):
        if fa * fb < 0:
            roots.append(brentq(tip_determinant, a, b, args=(eta, rtol), xtol=1e-14, rtol=1e-15))
        if len(roots) == modes:
            break
    return np.array(roots)


out = {"equation": "v'''' - (n v')' = mu^2 v, n = eta^2 (1 - xi^2) / 2, clamped-free; chordwise sqrt(mu^2 - eta^2)", "rows": []}
for eta in [0, 1, 2, 3, 4, 6, 8, 12]:
    a, b = frequencies(eta, 1e-13), frequencies(eta, 1e-11)
    out["rows"].append({"eta": eta, "mu": [float(v) for v in a], "accuracy": float(np.max(np.abs(a - b) / a))})
print(json.dumps(out, indent=1))
