#!/usr/bin/env python3
"""The same work as benches/criterion/benches/signal.rs, in scipy, on the same inputs.

5 markers x 100,000 samples (10 coordinates at 240 samples/s, the same deterministic motion and
noise: xorshift64 + Box-Muller with the same seed): Savitzky-Golay (window 21, order 5, value,
rate and acceleration, scipy.signal.savgol_filter) and scipy's automatic smoother
(scipy.interpolate.make_smoothing_spline, its smoothing chosen by generalised cross-validation:
the GCVSPL family's peer), value, rate and acceleration. Best of 3 wall times.

Run: benches/signal-scipy.sh (makes the venv), or python3 benches/signal_scipy.py.
"""
import math
import time

import numpy as np
import scipy
from scipy.interpolate import make_smoothing_spline
from scipy.signal import savgol_filter

N = 100_000
MASK = (1 << 64) - 1


def coordinates():
    t = np.arange(N) / 240.0
    w = 2 * math.pi * 2.33
    state = 0x9E3779B97F4A7C15

    def uniform():
        nonlocal state
        state ^= (state << 13) & MASK
        state ^= state >> 7
        state ^= (state << 17) & MASK
        return (state >> 11) / float(1 << 53)

    coords = []
    for c in range(10):
        a, ph = 0.02 + 0.005 * c, 0.3 * c
        noise = np.empty(N)
        for k in range(N):
            u1, u2 = max(uniform(), 1e-300), uniform()
            noise[k] = math.sqrt(-2.0 * math.log(u1)) * math.cos(2 * math.pi * u2)
        x = a * np.sin(w * t + ph) + 0.2 * a * np.cos(2 * w * t + 2 * ph) + 0.05 * a * np.sin(3 * w * t) + 1e-4 * noise
        coords.append(x)
    return t, coords


def best_of(f, runs=3):
    best = math.inf
    for _ in range(runs):
        s = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - s)
    return best


def main():
    t, coords = coordinates()
    dt = t[1] - t[0]

    def sg():
        for x in coords:
            for d in (0, 1, 2):
                savgol_filter(x, 21, 5, deriv=d, delta=dt)

    def gcv():
        for x in coords:
            s = make_smoothing_spline(t, x)
            s(t), s.derivative(1)(t), s.derivative(2)(t)

    print(f"scipy {scipy.__version__}, numpy {np.__version__}")
    print(f"savgol_filter 21/5, derivatives 0-2, 10 x {N}: {best_of(sg) * 1e3:.1f} ms")
    print(f"make_smoothing_spline (GCV), derivatives 0-2, 10 x {N}: {best_of(gcv, runs=1) * 1e3:.1f} ms (one run: minutes)")


if __name__ == "__main__":
    main()
