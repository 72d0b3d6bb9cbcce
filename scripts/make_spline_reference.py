#!/usr/bin/env python3
"""References for flexbench's smoothing spline (crates/signal/src/spline.rs): scipy for the cubic,
an exact dense solve of the normal equations for the quintic.

The test signal: 120 samples at 240 samples/s of a crank-like motion (2.33 Hz, seven harmonics)
with 1 mm of Gaussian noise from a seeded generator.

1. Cubic (m = 2): `scipy.interpolate.make_smoothing_spline(t, y, lam)` minimises
   sum (y - f)^2 + lam integral f''^2, flexbench's problem with p = lam: the fitted values and
   first and second derivatives at the samples for two given lam. For GCV the dense solve below
   with m = 2 is the reference: scipy's own choice (lam=None) minimises GCV by Brent's method on
   lam in (0, n) on a linear scale, which stops early when the optimum is tiny (time in
   seconds); its lam (recovered by matching its fit) and GCV value are recorded beside.
2. Quintic (m = 3), written out here independently of flexbench's banded algorithm: the B-spline
   design matrix of order 6 on the samples as knots (`BSpline.design_matrix`), the penalty
   integral B_j''' B_l''' by Gauss-Legendre with 3 points per interval (exact), the dense system
   (B^T B + p Omega) c = B^T y solved by `numpy.linalg.solve`, tr A = tr((B^T B + p Omega)^-1
   B^T B) by the dense inverse. At two given p: values and derivatives 1 to 3, RSS and tr A. By
   GCV (also for m = 2): the p minimising (RSS/n) / (1 - tr A/n)^2 found by `scipy.optimize.minimize_scalar`
   (bounded, on log10 p, from the best of a quarter-decade grid), its values and tr A.

Run: <python with numpy and scipy> scripts/make_spline_reference.py
(writes tests/golden/spline_reference.json; `make bench`'s venv has both:
~/.cache/flexbench/venv/bin/python).
"""
import json
import os

import numpy as np
import scipy
from reference_signal import crank_signal
from scipy.interpolate import BSpline, make_smoothing_spline
from scipy.optimize import minimize_scalar

FS = 240.0
N = 120


def signal():
    return crank_signal(N, FS, 20261126)


def cubic_cases(t, y):
    out = []
    for lam in [1e-9, 1e-7]:
        s = make_smoothing_spline(t, y, lam=lam)
        out.append({"lam": lam, "value": s(t).tolist(), "rate": s(t, 1).tolist(),
                    "accel": s(t, 2).tolist()})
    return out


def gcv_minimum(q):
    """The p minimising the dense GCV: a quarter-decade grid (where tr A lies between 1 % of the
    samples above the penalty's null space and 99 % of the samples, away from the
    interpolation's 0/0), then bounded Brent on log10 p."""
    n = len(q.t)
    grid = [g for g in np.arange(-24.0, 0.0, 0.25)
            if q.m + 0.01 * n <= q.fit(10.0 ** g)[2] <= 0.99 * n]
    values = [q.gcv(g) for g in grid]
    best = int(np.argmin(values))
    assert 0 < best < len(grid) - 1, "the GCV minimum lies inside the grid"
    res = minimize_scalar(q.gcv, bounds=(grid[best - 1], grid[best + 1]), method="bounded",
                          options={"xatol": 1e-10})
    return 10.0 ** res.x


def scipy_gcv_choice(t, y):
    """scipy's own GCV choice of lam (its private minimiser, Brent on lam in (0, n) on a linear
    scale), for the record: with time in seconds the optimum is tiny and it stops early."""
    # make_smoothing_spline(lam=None) calls _compute_optimal_gcv_parameter; recover lam by
    # matching its fit against the dense fits (the spline is unique per lam).
    s = make_smoothing_spline(t, y)
    q = Quintic(t, y, m=2)
    target = s(t)
    res = minimize_scalar(lambda lp: float(np.sum((q.B @ q.fit(10.0 ** lp)[0] - target) ** 2)),
                          bounds=(-14, 0), method="bounded", options={"xatol": 1e-12})
    return 10.0 ** res.x


class Quintic:
    def __init__(self, t, y, m=3):
        k = 2 * m - 1
        self.t, self.y, self.k, self.m = t, y, k, m
        self.knots = np.concatenate([[t[0]] * k, t, [t[-1]] * k])
        self.nb = len(self.knots) - k - 1
        self.B = BSpline.design_matrix(t, self.knots, k).toarray()
        xg, wg = np.polynomial.legendre.leggauss(m)
        xs, ws = [], []
        for a, b in zip(t[:-1], t[1:]):
            xs.extend(a + 0.5 * (b - a) * (xg + 1))
            ws.extend(0.5 * (b - a) * wg)
        xs, ws = np.array(xs), np.array(ws)
        D = np.empty((len(xs), self.nb))
        for j in range(self.nb):
            c = np.zeros(self.nb)
            c[j] = 1.0
            D[:, j] = BSpline(self.knots, c, k).derivative(m)(xs)
        self.Omega = D.T @ (ws[:, None] * D)
        self.G = self.B.T @ self.B
        self.bty = self.B.T @ y

    def fit(self, p):
        M = self.G + p * self.Omega
        c = np.linalg.solve(M, self.bty)
        rss = float(np.sum((self.y - self.B @ c) ** 2))
        tr = float(np.trace(np.linalg.inv(M) @ self.G))
        return c, rss, tr

    def gcv(self, log_p):
        _, rss, tr = self.fit(10.0 ** log_p)
        n = len(self.t)
        return (rss / n) / (1 - tr / n) ** 2

    def record(self, p):
        c, rss, tr = self.fit(p)
        s = BSpline(self.knots, c, self.k)
        return {"p": p, "rss": rss, "trace": tr, "value": s(self.t).tolist(),
                "rate": s(self.t, 1).tolist(), "accel": s(self.t, 2).tolist(),
                "jerk": s(self.t, 3).tolist()}


def main():
    t, y = signal()
    q = Quintic(t, y)
    p_gcv = gcv_minimum(q)
    cubic = Quintic(t, y, m=2)
    p_cubic = gcv_minimum(cubic)
    lam_scipy = scipy_gcv_choice(t, y)
    out = {
        "source": "scripts/make_spline_reference.py, scipy " + scipy.__version__,
        "fs": FS,
        "y": y.tolist(),
        "cubic": cubic_cases(t, y),
        "quintic": [q.record(1e-14), q.record(1e-12)],
        "quintic_gcv": q.record(p_gcv),
        "cubic_gcv": cubic.record(p_cubic),
        "scipy_cubic_gcv": {"lam": lam_scipy, "gcv": cubic.gcv(np.log10(lam_scipy))},
    }
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "spline_reference.json")
    with open(path, "w") as f:
        json.dump(out, f)
    print(f"wrote {path}: quintic GCV p = {p_gcv:.6e}, tr A = {out['quintic_gcv']['trace']:.4f}; "
          f"cubic GCV p = {p_cubic:.6e} (GCV {cubic.gcv(np.log10(p_cubic)):.6e}), scipy's choice "
          f"{lam_scipy:.6e} (GCV {out['scipy_cubic_gcv']['gcv']:.6e})")


if __name__ == "__main__":
    main()
