#!/usr/bin/env python3
"""The real pendulum's tracks and its by-hand reference (recordings/dfki-pendulum, BSD-3).

For each shipped run of DFKI's torque-limited simple pendulum (runs/<run>.csv: time, the
encoder's angle q, the motor's velocity estimate, the torque from the motor's current), writes

- tracks/<run>.csv: the encoder angle as the track of a marker "mass" 0.5 m from the axle
  (x = 0.5 sin q, y = -0.5 cos q, bench metres; q = 0 hanging down), the tracks contract's
  columns frame, t, marker, x, y: what a user gives `flexbench process` with pendulum.toml;
- by-hand/<run>.csv: what a careful user computes by hand with scipy (the reference of
  tests/pendulum_real.rs and docs/real-data.md): the angle through a fourth-order zero-lag
  Butterworth filter at 10 Hz (second-order butter run forwards and backwards by filtfilt, on the
  run's mean step), central differences (numpy.gradient on the sample times) for the rate and
  the acceleration; the measured torque filtered the same way; the identified model's rigid part
  J q'' + m cx g sin q (tau_model), and the part of the measured torque a rigid model can explain,
  the filtered torque less the identified viscous and Coulomb friction (at the by-hand rate) and
  the offset (tau_rigid_measured);
- by-hand/summary.json: per run, the samples, the mean step and its jitter, the encoder's step,
  and the by-hand RMS of tau_model - tau_rigid_measured.

The identified model (identified_model.txt, the lab's own):
    tau = J q'' + m cx g sin(q) + Fv q' + Fc atan(100 q') + offset

Run: python3 scripts/make_pendulum_reference.py   (needs numpy and scipy; byte-identical output
for the pinned versions of scripts/python-tests.sh)
"""
import json
import os

import numpy as np
from scipy.signal import butter, filtfilt

J, MCX, FV, FC, OFFSET, G = 6.259e-2, 1.022e-1, 4.707e-2, 1.839e-1, -7.586e-2, 9.81
RADIUS = 0.5
CUTOFF_HZ = 10.0
RUNS = ["ddp_swingup", "energy_shaping_swingup"]


def by_hand(t, q, tau):
    h = float(np.mean(np.diff(t)))
    b, a = butter(2, CUTOFF_HZ, fs=1.0 / h)
    qf, tf = filtfilt(b, a, q), filtfilt(b, a, tau)
    qd = np.gradient(qf, t)
    qdd = np.gradient(qd, t)
    model = J * qdd + MCX * G * np.sin(qf)
    rigid = tf - OFFSET - FV * qd - FC * np.arctan(100.0 * qd)
    return h, qf, qd, qdd, tf, model, rigid


def write_csv(path, header, columns, formats):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for row in zip(*columns):
            f.write(",".join(fmt(v) for fmt, v in zip(formats, row)) + "\n")


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "recordings", "dfki-pendulum")
    os.makedirs(os.path.join(root, "tracks"), exist_ok=True)
    os.makedirs(os.path.join(root, "by-hand"), exist_ok=True)
    summary = {}
    real = lambda v: repr(float(v))
    for run in RUNS:
        d = np.loadtxt(os.path.join(root, "runs", run + ".csv"), delimiter=",", skiprows=1)
        t, q, _, tau = d.T
        n = len(t)
        write_csv(
            os.path.join(root, "tracks", run + ".csv"),
            ["frame", "t", "marker", "x", "y"],
            [range(n), t, ["mass"] * n, RADIUS * np.sin(q), -RADIUS * np.cos(q)],
            [str, real, str, real, real],
        )
        h, qf, qd, qdd, tf, model, rigid = by_hand(t, q, tau)
        write_csv(
            os.path.join(root, "by-hand", run + ".csv"),
            ["t", "q", "omega", "epsilon", "tau_filtered", "tau_model", "tau_rigid_measured"],
            [t, qf, qd, qdd, tf, model, rigid],
            [real] * 7,
        )
        dt = np.diff(t)
        steps = np.diff(np.unique(q))
        summary[run] = {
            "samples": n,
            "mean_step_s": h,
            "step_jitter_max": float(np.max(np.abs(dt - h)) / h),
            "encoder_step_rad": float(np.min(steps)),
            "rms_model_minus_rigid_measured_nm": float(np.sqrt(np.mean((model - rigid) ** 2))),
            "peak_rigid_measured_nm": float(np.max(np.abs(rigid))),
        }
    summary["method"] = (
        f"scipy {__import__('scipy').__version__}: butter(2, {CUTOFF_HZ} Hz) by filtfilt on the angle and the "
        "torque, numpy.gradient twice on the sample times"
    )
    with open(os.path.join(root, "by-hand", "summary.json"), "w") as f:
        json.dump(summary, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
