"""The test signal of the signal references (make_butterworth_reference.py,
make_spline_reference.py): a crank-like motion at 2.33 Hz with seven harmonics, plus 1 mm of
Gaussian noise from a seeded generator."""
import numpy as np


def crank_signal(n, fs, seed):
    """n samples at fs samples/s: (times, values)."""
    t = np.arange(n) / fs
    f0 = 2.33
    amps = [0.12, 0.03, 0.012, 0.006, 0.003, 0.0015, 0.0008]
    x = sum(a * np.sin(2 * np.pi * (h + 1) * f0 * t + 0.7 * h) for h, a in enumerate(amps))
    rng = np.random.default_rng(seed)
    return t, x + 1e-3 * rng.standard_normal(n)
