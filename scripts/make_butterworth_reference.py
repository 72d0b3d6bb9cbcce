#!/usr/bin/env python3
"""scipy references for flexbench's zero-lag Butterworth filter (crates/signal/src/butterworth.rs).

A fixed test signal (a crank-like motion at 2.33 Hz with seven harmonics, plus 1 mm of
Gaussian noise from a seeded generator, 240 samples/s) is filtered by scipy as a lab would:

1. Filtering: for each case (order N, zero-lag cutoff fc, padding P), the single pass's
   cutoff raised by Winter's correction for the double pass (tan(pi f_d / fs) = tan(pi fc / fs)
   / C, C = (2^(1/2) - 1)^(1/(2N))), `scipy.signal.butter(N, f_d / (fs / 2), output='sos')` run
   by `sosfiltfilt(sos, x, padtype='odd', padlen=P)`; for N = 2 also `butter(N, ..., 'ba')` run by
   `filtfilt(b, a, x, padtype='odd', padlen=P)`, the form most labs use.
2. Cutoff selection: the RMS residual and the residuals' Durbin-Watson statistic over the grid
   of cutoffs flexbench tests (200 from 0.45 fs / 200 to 0.45 fs, each padded by one period of
   its cutoff, at least 3 (N + 1) samples), and the cutoffs chosen by Winter's residual analysis
   (line fitted by least squares from fs / 8 to fs / 4, the first cutoff where the residual
   falls to its intercept, linear between grid points) and by the Durbin-Watson criterion (the
   first cutoff where the statistic reaches 2), computed here independently with numpy.

Run: <python with numpy and scipy> scripts/make_butterworth_reference.py
(writes tests/golden/butterworth_reference.json; `make bench`'s venv has both:
~/.cache/flexbench/venv/bin/python).
"""
import json
import math
import os

import numpy as np
import scipy
from reference_signal import crank_signal
from scipy.signal import butter, filtfilt, sosfiltfilt

FS = 240.0
N_SAMPLES = 240


def signal():
    return crank_signal(N_SAMPLES, FS, 20261125)


def pass_wn(order, fc):
    c = (math.sqrt(2.0) - 1.0) ** (1.0 / (2.0 * order))
    fd = FS / math.pi * math.atan(math.tan(math.pi * fc / FS) / c)
    return fd / (FS / 2)


def padding(order, fc, n):
    return min(max(math.ceil(FS / fc), 3 * (order + 1)), n - 1)


def residual_grid(x, order):
    rows = []
    for j in range(1, 201):
        fc = 0.45 * FS * j / 200
        sos = butter(order, pass_wn(order, fc), output="sos")
        r = x - sosfiltfilt(sos, x, padtype="odd", padlen=padding(order, fc, len(x)))
        rows.append((fc, math.sqrt(np.mean(r * r)), float(np.sum(np.diff(r) ** 2) / np.sum(r * r))))
    return rows


def crossing(grid, f):
    for k, g in enumerate(grid):
        if f(g) <= 0:
            if k == 0:
                return g[0]
            a, b = f(grid[k - 1]), f(g)
            return grid[k - 1][0] + (g[0] - grid[k - 1][0]) * a / (a - b)
    return None


def main():
    t, x = signal()
    cases = []
    for order, fc, pad in [(2, 6.0, 9), (2, 20.0, 24), (1, 10.0, 30), (3, 15.0, 30),
                           (4, 8.0, 60), (6, 30.0, 50)]:
        wn = pass_wn(order, fc)
        sos = butter(order, wn, output="sos")
        case = {"order": order, "cutoff_hz": fc, "padlen": pad, "pass_wn": wn,
                "sosfiltfilt": sosfiltfilt(sos, x, padtype="odd", padlen=pad).tolist()}
        if order == 2:
            b, a = butter(order, wn)
            case["filtfilt"] = filtfilt(b, a, x, padtype="odd", padlen=pad).tolist()
        cases.append(case)
    grid = residual_grid(x, 2)
    band = [(g[0], g[1]) for g in grid if FS / 8 <= g[0] <= FS / 4]
    slope, intercept = np.polyfit([p[0] for p in band], [p[1] for p in band], 1)
    selection = {
        "order": 2,
        "grid": grid,
        "noise_intercept": float(intercept),
        "residual_cutoff_hz": crossing(grid, lambda g: g[1] - intercept),
        "durbin_watson_cutoff_hz": crossing(grid, lambda g: 2.0 - g[2]),
    }
    out = {
        "source": "scripts/make_butterworth_reference.py, scipy " + scipy.__version__,
        "fs": FS,
        "x": x.tolist(),
        "cases": cases,
        "selection": selection,
    }
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "butterworth_reference.json")
    with open(path, "w") as f:
        json.dump(out, f)
    print(f"wrote {path}: residual analysis {selection['residual_cutoff_hz']:.3f} Hz, "
          f"Durbin-Watson {selection['durbin_watson_cutoff_hz']:.3f} Hz")


if __name__ == "__main__":
    main()
