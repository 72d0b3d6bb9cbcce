#!/usr/bin/env python3
"""Write the Andrews squeezing mechanism (Hairer & Wanner, Solving ODE II, sec. VII.7; the
"Test Set for IVP Solvers", problem 'andrews') as a flexbench mechanism file in the general form,
and its published reference solution at t = 0.03 s.

The test set writes the mechanism in relative angles (beta, Theta, gamma, Phi, delta, Omega,
epsilon); flexbench uses absolute coordinates. The bodies, their local frames and the map back
to the test set's angles (used by tests/published_benchmark.rs):

  body k1: origin O, angle beta;             point P12 = (rr, 0), centroid (ra, 0)
  body k2: origin P12, angle beta+Theta+pi;  F = (d, 0), centroid (da, 0)
  body k3: origin B, angle gamma;            F = (0, -ss), D = (sd, -sc), centroid (sa, sb)
  body k5: origin A, angle delta;            P45 = (zt, 0), centroid (ta, tb)
  body k4: origin P45, angle Phi+delta-pi/2; F = (e, 0), centroid (e-ea, 0)
  body k7: origin A, angle epsilon;          P67 = (0, -u), centroid (ua, ub)
  body k6: origin P67, angle Omega+epsilon;  F = (zf, 0), centroid (zf-fa, 0)

The bodies k1, k3, k5, k7 turn about fixed pivots and there is no gravity, so only the distance
of their centroids from the pivot enters the dynamics (m1 ra^2 + I1 etc. in the test set's mass
matrix): the direction chosen here does not change the motion. The spring (c0, l0) joins D to
the ground point C; the constant torque mom drives k1.

Run: python3 scripts/make_andrews.py  (writes tests/mechanisms/andrews-squeezer.toml and
tests/mechanisms/andrews-squeezer.reference.json)
"""
import json
import math
import os

P = dict(m1=.04325, m2=.00365, m3=.02373, m4=.00706, m5=.07050, m6=.00706, m7=.05498,
         xa=-.06934, ya=-.00227, xb=-0.03635, yb=.03273, xc=.014, yc=.072, c0=4530,
         i1=2.194e-6, i2=4.410e-7, i3=5.255e-6, i4=5.667e-7, i5=1.169e-5, i6=5.667e-7, i7=1.912e-5,
         d=28e-3, da=115e-4, e=2e-2, ea=1421e-5, rr=7e-3, ra=92e-5, l0=7785e-5,
         ss=35e-3, sa=1874e-5, sb=1043e-5, sc=18e-3, sd=2e-2, ta=2308e-5, tb=916e-5,
         u=4e-2, ua=1228e-5, ub=449e-5, zf=2e-2, zt=4e-2, fa=1421e-5, mom=33e-3)
# Consistent initial values (test set, y(1..7)); velocities are zero.
Y0 = dict(beta=-0.0617138900142764496358948458001, Theta=0.0,
          gamma=0.455279819163070380255912382449, Phi=0.222668390165885884674473185609,
          delta=0.487364979543842550225598953530, Omega=-0.222668390165885884674473185609,
          epsilon=1.23054744454982119249735015568)
# Reference solution at t = 0.03 s (test set, andsoln, PSIDE with tolerances 1e-14).
REF = dict(beta=0.1581077119629904e+2, Theta=-0.1575637105984298e+2,
           gamma=0.4082224013073101e-1, Phi=-0.5347301163226948e+0,
           delta=0.5244099658805304e+0, Omega=0.5347301163226948e+0,
           epsilon=0.1048080741042263e+1)


def e2(a):
    return (math.cos(a), math.sin(a))


def main():
    p, y = P, Y0
    b, th, g, ph, de, om, ep = (y[k] for k in ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon"))
    o1 = (0.0, 0.0)
    o2 = (p["rr"] * math.cos(b), p["rr"] * math.sin(b))
    o3 = (p["xb"], p["yb"])
    o5 = (p["xa"], p["ya"])
    o4 = (p["xa"] + p["zt"] * math.cos(de), p["ya"] + p["zt"] * math.sin(de))
    o7 = (p["xa"], p["ya"])
    o6 = (p["xa"] + p["u"] * math.sin(ep), p["ya"] - p["u"] * math.cos(ep))
    bodies = [
        ("k1", p["m1"], p["i1"], (p["ra"], 0.0), {"O": (0.0, 0.0), "P12": (p["rr"], 0.0)}, o1, b),
        ("k2", p["m2"], p["i2"], (p["da"], 0.0), {"P12": (0.0, 0.0), "F": (p["d"], 0.0)}, o2, b + th + math.pi),
        ("k3", p["m3"], p["i3"], (p["sa"], p["sb"]), {"B": (0.0, 0.0), "F": (0.0, -p["ss"]), "D": (p["sd"], -p["sc"])}, o3, g),
        ("k4", p["m4"], p["i4"], (p["e"] - p["ea"], 0.0), {"P45": (0.0, 0.0), "F": (p["e"], 0.0)}, o4, ph + de - math.pi / 2),
        ("k5", p["m5"], p["i5"], (p["ta"], p["tb"]), {"A": (0.0, 0.0), "P45": (p["zt"], 0.0)}, o5, de),
        ("k6", p["m6"], p["i6"], (p["zf"] - p["fa"], 0.0), {"P67": (0.0, 0.0), "F": (p["zf"], 0.0)}, o6, om + ep),
        ("k7", p["m7"], p["i7"], (p["ua"], p["ub"]), {"A": (0.0, 0.0), "P67": (0.0, -p["u"])}, o7, ep),
    ]
    out = []
    w = out.append
    w("# Andrews' squeezing mechanism (Hairer & Wanner, Solving ODE II, sec. VII.7; Test Set for")
    w("# IVP Solvers, problem 'andrews'), written by scripts/make_andrews.py: do not edit by hand.")
    w("# A published multibody benchmark: 7 bodies, a spring, a constant driving torque, no gravity.")
    w('name = "Andrews squeezing mechanism"')
    w("gravity = [0.0, 0.0]")
    w(f'ground = {{ O = [0.0, 0.0], B = [{p["xb"]!r}, {p["yb"]!r}], A = [{p["xa"]!r}, {p["ya"]!r}], C = [{p["xc"]!r}, {p["yc"]!r}] }}')
    for name, m, i, c, pts, o, a in bodies:
        w("")
        w("[[bodies]]")
        w(f'name = "{name}"')
        w(f"mass = {m!r}")
        w(f"inertia = {i!r}")
        w(f"centroid = [{c[0]!r}, {c[1]!r}]")
        w("points = { " + ", ".join(f"{k} = [{v[0]!r}, {v[1]!r}]" for k, v in pts.items()) + " }")
        w(f"pose = [{o[0]!r}, {o[1]!r}, {a!r}]")
    joints = [("O", "ground:O", "k1:O"), ("P12", "k1:P12", "k2:P12"), ("B", "ground:B", "k3:B"),
              ("A5", "ground:A", "k5:A"), ("A7", "ground:A", "k7:A"), ("P45", "k5:P45", "k4:P45"),
              ("P67", "k7:P67", "k6:P67"), ("F3", "k2:F", "k3:F"), ("F4", "k2:F", "k4:F"), ("F6", "k2:F", "k6:F")]
    for name, a, b_ in joints:
        w("")
        w("[[joints]]")
        w(f'name = "{name}"')
        w('type = "revolute"')
        w(f'first = "{a}"')
        w(f'second = "{b_}"')
    w("")
    w("[[forces]]")
    w('name = "spring"')
    w('type = "spring"')
    w('first = "k3:D"')
    w('second = "ground:C"')
    w(f'k = {float(p["c0"])!r}')
    w(f'rest = {p["l0"]!r}')
    w("")
    w("[[forces]]")
    w('name = "drive_torque"')
    w('type = "torque"')
    w('body = "k1"')
    w(f'torque = {p["mom"]!r}')
    w("actuator = true")
    w("")
    w("[[drivers]]")
    w('name = "crank angle beta"')
    w('body = "k1"')
    w('coordinate = "angle"')
    w(f"value = {b!r}")
    w("rate = 0.0")
    here = os.path.dirname(os.path.abspath(__file__))
    dest = os.path.join(here, "..", "tests", "mechanisms")
    with open(os.path.join(dest, "andrews-squeezer.toml"), "w") as f:
        f.write("\n".join(out) + "\n")
    with open(os.path.join(dest, "andrews-squeezer.reference.json"), "w") as f:
        json.dump({"source": "Test Set for IVP Solvers, problem andrews (andsoln), PSIDE rtol = atol = 1e-14",
                   "t": 0.03, "initial": Y0, "reference": REF}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
