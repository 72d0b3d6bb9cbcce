#!/usr/bin/env python3
"""The fem benchmark's scipy peer: the lever's modes over one crank turn (1000 samples, 10 quintic
elements, 51 free degrees of freedom) by scipy.linalg.eigh (symmetric problem K phi = lambda M phi)
and scipy.linalg.eig (full problem: the state matrix [[0, I], [-M^-1 (K + eps S), -M^-1 2 omega S]]),
timed on the very matrices flexbench solved (written by benches/criterion/examples/fem_export.rs),
and flexbench's frequencies checked against scipy's.

Run: bash benches/fem-scipy.sh (builds the export, makes a venv with numpy and scipy)."""
import json
import os
import sys
import time

import numpy as np
import scipy.linalg as la

d = sys.argv[1]
meta = json.load(open(os.path.join(d, "meta.json")))
s, n = meta["samples"], meta["n"]
read = lambda name, shape: np.fromfile(os.path.join(d, name), dtype="<f8").reshape(shape)
m = read("m.f64", (n, n))
k = read("k.f64", (s, n, n))
gy = read("gyroscopic.f64", (s, n, n))
sk = read("skew.f64", (s, n, n))
f_sym = read("freq_symmetric.f64", (s, 6))
f_full = read("freq_full.f64", (s, 6))
z_full = read("zeta_full.f64", (s, 6))

t0 = time.perf_counter()
sym = [la.eigh(k[i], m, eigvals_only=True) for i in range(s)]
t_sym = time.perf_counter() - t0

minv = la.inv(m)
t0 = time.perf_counter()
full = []
for i in range(s):
    a = np.block([[np.zeros((n, n)), np.eye(n)], [-minv @ (k[i] + sk[i]), -minv @ gy[i]]])
    full.append(la.eigvals(a))
t_full = time.perf_counter() - t0

ref_sym = np.array([np.sqrt(np.abs(e[:6])) / (2 * np.pi) for e in sym])
err_sym = np.max(np.abs(f_sym / ref_sym - 1))
ref_full, ref_zeta = [], []
for mu in full:
    mu = mu[mu.imag > 0]
    mu = mu[np.argsort(np.abs(mu))][:6]
    ref_full.append(np.abs(mu) / (2 * np.pi))
    ref_zeta.append(-mu.real / np.abs(mu))
ref_full, ref_zeta = np.array(ref_full), np.array(ref_zeta)
err_full = np.nanmax(np.abs(f_full / ref_full - 1))
err_zeta = np.nanmax(np.abs(z_full - ref_zeta))
print(f"{s} samples, {n} degrees of freedom (10 quintic elements), one crank turn of the simulated bench")
print(f"  symmetric problem: scipy eigh {t_sym:.3f} s; flexbench {meta['flexbench_symmetric_s']:.3f} s (release, one run; criterion: make bench)")
print(f"  full problem:      scipy eig on the {2 * n}x{2 * n} state matrix {t_full:.3f} s; flexbench symmetric + full (6 modes) {meta['flexbench_full_s']:.3f} s")
print(f"  flexbench against scipy: symmetric frequencies 1-6 within {err_sym:.1e} relative; full frequencies within {err_full:.1e}; damping ratios within {err_zeta:.1e} (largest |zeta| scipy {np.nanmax(np.abs(ref_zeta)):.1e})")
