#!/usr/bin/env python3
"""Exact Savitzky-Golay references for flexbench's signal stage, in rational arithmetic.

1. Coefficients: for window w = 2m + 1, polynomial order p, derivative d and evaluation position
   j (0..w-1, j = m the centre), the weights h with x^(d)(j - m) = sum_i h_i x_i of the
   least-squares polynomial on the abscissae i - m (sample interval 1), computed exactly with
   fractions (normal equations solved by Gaussian elimination on rationals).
2. Filter outputs: a fixed integer test signal filtered in each of scipy's five edge modes
   (interp, mirror, nearest, constant with cval 0, wrap), exactly, following scipy's definitions
   (savgol_filter: interp fits the edge windows; the others convolve the centred weights with the
   signal extended as scipy.ndimage does).

The values are written as decimal strings of 21 significant digits, so the golden file is exact
to far below the 1e-12 relative tolerance of the tests.

Run: python3 scripts/make_savgol_reference.py  (writes tests/golden/savgol_reference.json)
If scipy is importable, the script also reports how far scipy's savgol_coeffs and
savgol_filter are from the exact values (informational: scipy drifts at high order).
"""
from fractions import Fraction
from decimal import Decimal, getcontext
import json
import os

getcontext().prec = 21


def weights(w, p, d, j):
    m = w // 2
    xs = [Fraction(i - m) for i in range(w)]
    # Normal matrix G = A^T A ((p+1) x (p+1)) and right-hand sides A^T (one column per sample).
    g = [[sum(x ** (a + b) for x in xs) for b in range(p + 1)] for a in range(p + 1)]
    rhs = [[x ** a for x in xs] for a in range(p + 1)]
    n = p + 1
    # Gauss-Jordan on [G | rhs].
    aug = [g[r][:] + rhs[r][:] for r in range(n)]
    for c in range(n):
        piv = next(r for r in range(c, n) if aug[r][c] != 0)
        aug[c], aug[piv] = aug[piv], aug[c]
        inv = 1 / aug[c][c]
        aug[c] = [v * inv for v in aug[c]]
        for r in range(n):
            if r != c and aug[r][c] != 0:
                f = aug[r][c]
                aug[r] = [vr - f * vc for vr, vc in zip(aug[r], aug[c])]
    coef = [row[n:] for row in aug]  # (p+1) x w: polynomial coefficients per sample
    x0 = Fraction(j - m)
    out = []
    for i in range(w):
        s = Fraction(0)
        for k in range(d, p + 1):
            falling = 1
            for r in range(d):
                falling *= k - r
            s += coef[k][i] * falling * x0 ** (k - d)
        out.append(s)
    return out


def dec(f):
    return str(Decimal(f.numerator) / Decimal(f.denominator))


def extended(x, i, mode):
    n = len(x)
    if 0 <= i < n:
        return x[i]
    if mode == "mirror":
        period = 2 * (n - 1)
        k = i % period
        return x[k] if k < n else x[period - k]
    if mode == "nearest":
        return x[0] if i < 0 else x[n - 1]
    if mode == "constant":
        return Fraction(0)
    if mode == "wrap":
        return x[i % n]
    raise ValueError(mode)


def filtered(x, w, p, d, mode):
    n = len(x)
    m = w // 2
    centre = weights(w, p, d, m)
    out = []
    if mode == "interp":
        edge = {j: weights(w, p, d, j) for j in range(w)}
        for i in range(n):
            if i < m:
                h, start = edge[i], 0
            elif i >= n - m:
                h, start = edge[i - (n - w)], n - w
            else:
                h, start = centre, i - m
            out.append(sum(hk * x[start + k] for k, hk in enumerate(h)))
        return out
    for i in range(n):
        out.append(sum(hk * extended(x, i - m + k, mode) for k, hk in enumerate(centre)))
    return out


def main():
    cases = []
    for w in (5, 9, 21, 41, 61):
        m = w // 2
        for p in (2, 3, 5, 7):
            if p >= w:
                continue
            for d in (0, 1, 2):
                for j in sorted({0, m // 2, m}):
                    cases.append({"window": w, "order": p, "deriv": d, "pos": j, "weights": [dec(v) for v in weights(w, p, d, j)]})
    # A test signal with structure at every scale: integers, so the reference is exact.
    signal = [((7 * i * i) % 23) - 11 + (i // 5) * 3 for i in range(50)]
    xs = [Fraction(v) for v in signal]
    filters = []
    for w, p in ((5, 2), (11, 3), (21, 5), (41, 7)):
        for d in (0, 1, 2):
            for mode in ("interp", "mirror", "nearest", "constant", "wrap"):
                filters.append({"window": w, "order": p, "deriv": d, "mode": mode, "output": [dec(v) for v in filtered(xs, w, p, d, mode)]})
    here = os.path.dirname(os.path.abspath(__file__))
    dest = os.path.join(here, "..", "tests", "golden", "savgol_reference.json")
    with open(dest, "w") as f:
        json.dump({"source": "scripts/make_savgol_reference.py (exact rational arithmetic)", "signal": signal, "coefficients": cases, "filters": filters}, f, indent=0)
        f.write("\n")
    try:
        import numpy as np
        from scipy.signal import savgol_coeffs, savgol_filter
    except ImportError:
        return
    worst_c = 0.0
    for c in cases:
        if c["pos"] != c["window"] // 2:
            continue
        exact = np.array([float(v) for v in c["weights"]])
        sc = savgol_coeffs(c["window"], c["order"], deriv=c["deriv"], use="dot")
        worst_c = max(worst_c, float(np.max(np.abs(sc - exact)) / np.max(np.abs(exact))))
    worst_f = {}
    for fl in filters:
        exact = np.array([float(v) for v in fl["output"]])
        out = savgol_filter(np.array(signal, dtype=float), fl["window"], fl["order"], deriv=fl["deriv"], mode=fl["mode"])
        rel = float(np.max(np.abs(out - exact)) / np.max(np.abs(exact)))
        worst_f[fl["mode"]] = max(worst_f.get(fl["mode"], 0.0), rel)
    print(f"scipy savgol_coeffs vs exact, worst relative: {worst_c:.2e}")
    for k, v in worst_f.items():
        print(f"scipy savgol_filter mode {k} vs exact, worst relative: {v:.2e}")


if __name__ == "__main__":
    main()
