#!/usr/bin/env python3
"""Write Simeon's flexible slider-crank (B. Simeon, "Modelling a flexible slider crank mechanism
by a mixed system of DAEs and PDEs", Math. Modelling of Systems 2, 1996; the Test Set for IVP
Solvers, problem 'crank') as a flexbench mechanism file, with the test set's published reference
solution at t = 0.1 s and a converged solution of the test set's own equations by scipy.

The test set writes the mechanism in its own coordinates: the crank angle phi1 = 150 t
(prescribed), the rod's angle phi2, the slider's x3, and the rod's four elastic coordinates q1..q4
(two lateral sine modes sin(pi xi), sin(2 pi xi), and a quadratic axial ansatz: q3 at the rod's
middle, q4 at its end, xi = x / l2). Its matrices are given in closed form (FACM = rho b h l2,
FACK = E b h / l2, FACB = b h l2, pi = 3.1415927 as printed there). flexbench's file reproduces
that discretization as a `reduced` elastic body whose floating frame has its origin at B (the
crank pin) and its x axis through C (the slider pin), so that

  phi2 = the rod's frame angle, x3 = the slider's x, q1..q4 = the rod's elastic coordinates.

The test set's axial mass block is FACM [[8, 1], [1, 2]]; the quadratic ansatz integrates to
FACM [[8, 1], [1, 2]] / 15. The file reproduces the published numbers (the reference solution
was computed with them); `--corrected` writes the integrated ones instead, for comparison.

The reference: the test set's current reference at t = 0.1 s (`cranksoln` in its crank source,
MEBDFI at ATOL = RTOL = 1e-14; positions and rates), for its INIT values (9 digits). The older
SOLN of its 2000 MEBDFI driver is kept beside it (`reference_2000`): its axial coordinates q3, q4
are off by 2.1e-6 and 3.6e-6 relative, its q3', q4' by 8e-4 and 6e-4. The
scipy solution: the test set's equations (index 1: accelerations and multipliers from the
augmented system, as flexbench integrates them) from INIT made consistent the way flexbench
assembles a mechanism (phi1, q, q' as given; phi2, x3 and their rates from the constraints), by
DOP853 at rtol = 1e-13, atol = 1e-16: the peer flexbench's solution is compared to digit by digit.

Run: python3 scripts/make_flexible_crank.py   (needs numpy and scipy; writes
tests/mechanisms/flexible-slider-crank.toml and tests/mechanisms/flexible-slider-crank.reference.json)
"""
import json
import os
import sys

import numpy as np
from scipy.integrate import solve_ivp

M1, M2, M3 = 0.36, 0.151104, 0.075552
L1, L2 = 0.15, 0.30
J1, J2 = 0.002727, 0.0045339259
PI = 3.1415927
EE, BB, HH, RHO, OMEGA = 0.20e12, 0.0080, 0.0080, 7870.0, 150.0
FACM, FACK, FACB = RHO * BB * HH * L2, EE * BB * HH / L2, BB * HH * L2
# INIT of the test set: phi1, phi2, x3, q1..q4, then their rates.
INIT = [0.0, 0.0, .450016933, 0.0, 0.0, .103339863e-04, .169327969e-04,
        .150000000e+03, -.749957670e+02, -.268938672e-05, .444896105e+00, .463434311e-02,
        -.178591076e-05, -.268938672e-05]
# The older SOLN of the test set's 2000 MEBDFI driver at t = 0.1 s (the same 14 components).
SOLN_2000 = [1.500000000000000e+01, -3.311734987910881e-01, 1.697373326718410e-01,
        1.893192460247178e-04, 2.375751865617931e-05, -5.323907988763734e-06,
        -8.363283141616840e-06, 1.500000000000000e+02, 6.025346682645789e+01,
        -8.753116989887888e+00, -3.005536801092212e-02, -5.500488291932075e-03,
        4.978243404809343e-04, 1.104933470696396e-03]
# The test set's current reference at t = 0.1 s (cranksoln, MEBDFI at ATOL = RTOL = 1e-14).
SOLN = [1.500000000000000e+01, -3.3117349882562602e-01, 1.6973733284278600e-01,
        1.8931928996135090e-04, 2.3757512498791740e-05, -5.3238967705697024e-06,
        -8.3633132791121290e-06, 1.500000000000000e+02, 6.0253467551383693e+01,
        -8.7531163266705274e+00, -3.0055414002897379e-02, -5.5004318125716958e-03,
        4.9741117342669890e-04, 1.1055600036266450e-03]
NAMES = ["phi1", "phi2", "x3", "q1", "q2", "q3", "q4"]
RATES = [n + "'" for n in NAMES]


def matrices(corrected):
    s = 1.0 / 15.0 if corrected else 1.0
    mq = np.zeros((4, 4))
    mq[0, 0] = mq[1, 1] = FACM * 0.5
    mq[2, 2], mq[2, 3], mq[3, 2], mq[3, 3] = FACM * 8 * s, FACM * s, FACM * s, FACM * 2 * s
    kq = np.zeros((4, 4))
    kq[0, 0] = FACK * PI**4 / 24 * (HH / L2)**2
    kq[1, 1] = FACK * PI**4 * 2 / 3 * (HH / L2)**2
    kq[2, 2], kq[2, 3], kq[3, 2], kq[3, 3] = FACK * 16 / 3, -FACK * 8 / 3, -FACK * 8 / 3, FACK * 7 / 3
    bq = np.zeros((4, 4))
    bq[0, 2] = -FACB * 16 / PI**3
    bq[0, 3] = FACB * (8 / PI**3 - 1 / PI)
    bq[1, 3] = FACB * 0.5 / PI
    bq[2:, :2] = -bq[:2, 2:].T
    c1 = np.array([0, 0, FACB * 2 / 3, FACB / 6])
    c2 = np.array([FACB * 2 / PI, 0, 0, 0])
    c12 = np.array([0, 0, L2 * FACB / 3, L2 * FACB / 6])
    c21 = np.array([L2 * FACB / PI, -L2 * FACB * 0.5 / PI, 0, 0])
    return mq, kq, bq, c1, c2, c12, c21


def test_set_rhs(corrected):
    """The test set's equations of motion (index 1) in its own coordinates."""
    mq, kq, bq, c1, c2, c12, c21 = matrices(corrected)

    def parts(x):
        p1, p2 = x[0], x[1]
        q, v, qd = x[3:7], x[7:10], x[10:14]
        cs1, cs2, sn1, sn2 = np.cos(p1), np.cos(p2), np.sin(p1), np.sin(p2)
        c12p, s12 = np.cos(p1 - p2), np.sin(p1 - p2)
        am = np.zeros((7, 7))
        am[0, 0] = J1 + M2 * L1 * L1
        am[0, 1] = .5 * L1 * L2 * M2 * c12p + RHO * L1 * (s12 * c2 @ q + c12p * c1 @ q)
        am[1, 1] = J2 + q @ mq @ q + 2 * RHO * c12 @ q
        am[2, 2] = M3
        am[0, 3:] = RHO * L1 * (-s12 * c1 + c12p * c2)
        am[1, 3:] = RHO * c21 + RHO * (q @ bq)
        am[3:, 3:] = mq
        am = np.triu(am) + np.triu(am, 1).T
        gp = np.zeros((3, 7))
        gp[0, :2] = [L1 * cs1, (L2 + q[3]) * cs2]
        gp[1, :3] = [L1 * sn1, (L2 + q[3]) * sn2, 1.0]
        gp[2, 0] = 1.0
        gp[0, 6], gp[1, 6] = sn2, -cs2
        w1, w2 = v[0], v[1]
        f = np.zeros(7)
        f[0] = (-.5 * L1 * L2 * M2 * w2 * w2 * s12 + RHO * L1 * w2 * w2 * (-s12 * c1 @ q + c12p * c2 @ q)
                - 2 * RHO * L1 * w2 * (c12p * c1 @ qd + s12 * c2 @ qd))
        f[1] = (.5 * L1 * L2 * M2 * w1 * w1 * s12 + RHO * L1 * w1 * w1 * (s12 * c1 @ q - c12p * c2 @ q)
                - 2 * RHO * w2 * c12 @ qd - 2 * w2 * qd @ mq @ q - RHO * qd @ bq @ qd)
        f[3:] = (w2 * w2 * mq @ q + RHO * (w2 * w2 * c12 + L1 * w1 * w1 * (c12p * c1 + s12 * c2)
                                           + 2 * w2 * bq @ qd) - kq @ q)
        alc = np.array([-L1 * sn1 * w1 * w1 - (L2 + q[3]) * sn2 * w2 * w2 + 2 * w2 * cs2 * qd[3],
                        L1 * cs1 * w1 * w1 + (L2 + q[3]) * cs2 * w2 * w2 + 2 * w2 * sn2 * qd[3], 0.0])
        return am, gp, f, alc

    def rhs(_t, x):
        am, gp, f, alc = parts(x)
        a = np.zeros((10, 10))
        a[:7, :7], a[:7, 7:], a[7:, :7] = am, gp.T, gp
        sol = np.linalg.solve(a, np.concatenate([f, -alc]))
        return np.concatenate([x[7:14], sol[:7]])

    return rhs, parts


def consistent(x, parts):
    """INIT made consistent as flexbench assembles: x3 and the rates of phi2 and x3 from the
    constraints, phi1, q and q' as given."""
    x = np.array(x, dtype=float)
    x[2] = L1 * np.cos(x[0]) + (L2 + x[6]) * np.cos(x[1])
    _, gp, _, _ = parts(x)
    x[8] = -(gp[0, 0] * x[7] + gp[0, 6] * x[13]) / gp[0, 1]
    x[9] = -(gp[1, 0] * x[7] + gp[1, 1] * x[8] + gp[1, 6] * x[13])
    return x


def toml_matrix(m):
    return "[" + ", ".join("[" + ", ".join(repr(float(v)) for v in row) + "]" for row in m) + "]"


def write_file(corrected, path):
    mq, kq, bq, c1, c2, c12, c21 = matrices(corrected)
    out = []
    w = out.append
    w("# Simeon's flexible slider-crank (Math. Modelling of Systems 2, 1996; Test Set for IVP Solvers,")
    w("# problem 'crank'), written by scripts/make_flexible_crank.py: do not edit by hand.")
    w("# Crank AB driven at 150 rad/s (prescribed), elastic connecting rod BC (steel, 8 x 8 mm,")
    w("# 0.3 m: two lateral sine modes and a quadratic axial ansatz, the test set's matrices),")
    w("# slider C on the X axis. No gravity, no damping.")
    if corrected:
        w("# This variant: the axial mass block integrated from the ansatz (FACM [[8,1],[1,2]] / 15).")
    w('name = "flexible slider-crank (Simeon)"')
    w("gravity = [0.0, 0.0]")
    w("ground = { A = [0.0, 0.0] }")
    w("")
    w("[[bodies]]")
    w('name = "crank"')
    w(f"mass = {M1!r}")
    w(f"inertia = {J1 - M1 * (L1 / 2) ** 2!r}  # J1 = {J1} kg m^2 about A")
    w(f"centroid = [{L1 / 2!r}, 0.0]")
    w(f"points = {{ A = [0.0, 0.0], B = [{L1!r}, 0.0] }}")
    w("pose = [0.0, 0.0, 0.0]")
    w("")
    w("[[bodies]]")
    w('name = "rod"')
    w(f"mass = {M2!r}")
    w(f"inertia = {J2 - M2 * (L2 / 2) ** 2!r}  # J2 = {J2} kg m^2 about B")
    w(f"centroid = [{L2 / 2!r}, 0.0]")
    w(f"points = {{ B = [0.0, 0.0], C = [{L2!r}, 0.0] }}")
    w(f"pose = [{L1!r}, 0.0, 0.0]")
    w("")
    w("[bodies.elastic]")
    w('kind = "reduced"')
    w(f"mass = {toml_matrix(mq)}")
    w(f"stiffness = {toml_matrix(kq)}")
    w(f"gyroscopic = {toml_matrix(RHO * bq)}")
    w(f"static_moment = {toml_matrix(RHO * np.vstack([c1, c2]))}")
    w(f"axial_moment = {toml_matrix([RHO * c12])[1:-1]}")
    w(f"cross_moment = {toml_matrix([RHO * c21])[1:-1]}")
    w("shapes = { C = [[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]] }")
    w(f"initial = [{', '.join(repr(v) for v in INIT[3:7])}]")
    w(f"initial_rate = [{', '.join(repr(v) for v in INIT[10:14])}]")
    w("")
    w("[[bodies]]")
    w('name = "slider"')
    w(f"mass = {M3!r}")
    w("inertia = 0.0")
    w("points = { C = [0.0, 0.0] }")
    w(f"pose = [{L1 + L2!r}, 0.0, 0.0]")
    for name, a, b in [("A", "ground:A", "crank:A"), ("B", "crank:B", "rod:B"), ("C", "rod:C", "slider:C")]:
        w("")
        w("[[joints]]")
        w(f'name = "{name}"')
        w('type = "revolute"')
        w(f'first = "{a}"')
        w(f'second = "{b}"')
    w("")
    w("[[joints]]")
    w('name = "slide"')
    w('type = "slide"')
    w('point = "slider:C"')
    w("origin = [0.0, 0.0]")
    w("angle = 0.0")
    w("")
    w("# The motor: an actuator of the inverse dynamics; in the simulation the prescribed crank")
    w("# angle's constraint supplies the torque (this element's own torque is zero).")
    w("[[forces]]")
    w('name = "motor_torque"')
    w('type = "torque"')
    w('body = "crank"')
    w("torque = 0.0")
    w("actuator = true")
    w("")
    w("[[drivers]]")
    w('name = "crank angle"')
    w('body = "crank"')
    w('coordinate = "angle"')
    w("value = 0.0")
    w(f"rate = {OMEGA!r}")
    w("prescribed = true")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dest = os.path.join(here, "..", "tests", "mechanisms")
    write_file(False, os.path.join(dest, "flexible-slider-crank.toml"))
    write_file(True, os.path.join(dest, "flexible-slider-crank-corrected.toml"))
    peers = {}
    for corrected in (False, True):
        rhs, parts = test_set_rhs(corrected)
        x0 = consistent(INIT, parts)
        sol = solve_ivp(rhs, (0.0, 0.1), x0, method="DOP853", rtol=1e-13, atol=1e-16)
        peers["corrected" if corrected else "published"] = dict(zip(NAMES + RATES, sol.y[:, -1].tolist()))
    ref = {
        "source": "Test Set for IVP Solvers, problem crank (Simeon 1996): INIT, and the current "
        "reference cranksoln (MEBDFI, ATOL = RTOL = 1e-14)",
        "t": 0.1,
        "names": NAMES + RATES,
        "reference": dict(zip(NAMES + RATES, SOLN)),
        "reference_2000": dict(zip(NAMES + RATES, SOLN_2000)),
        "scipy": peers["published"],
        "scipy_corrected_mass": peers["corrected"],
        "scipy_method": f"solve_ivp DOP853 rtol=1e-13 atol=1e-16, scipy {__import__('scipy').__version__}",
    }
    with open(os.path.join(dest, "flexible-slider-crank.reference.json"), "w") as f:
        json.dump(ref, f, indent=2)
        f.write("\n")
    for k in ("published", "corrected"):
        rel = {n: abs(peers[k][n] - ref["reference"][n]) / abs(ref["reference"][n]) for n in NAMES[1:] + RATES[1:]}
        print(k, {n: f"{v:.2e}" for n, v in rel.items()}, file=sys.stderr)


if __name__ == "__main__":
    main()
