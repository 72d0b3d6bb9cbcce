#!/usr/bin/env python3
"""Coverage of the forces' 2-sigma bands over many renderings (issue 41, item 3).

Each rendering draws, from stated distributions:
  - the bench's uncertain parameters (the rocker's mass, inertia and centroid, the weight, the
    crank's inertia; the spring and the slide's friction, which change the motion), rendered
    with the drawn values and processed with the shipped file carrying the same distributions
    as its [tolerances];
  - the camera's pose (its aim, tilt and roll) and the rendering's noise seed, the calibration
    then made from the rendered board views as a user's would be;
  - the image noise (grey levels) by its seed.
Each is run by `flexbench run` (calibrate, track, process) and the share of the samples where
the true force at B and C' (x and y) lies within the processed 2-sigma band is counted, per
rendering and over all. The shares of the band (tracks' noise, tolerances) are in each
process record.

Each run's process stage calibrates the tracks' share of the bands by REPLICATES replicates of
the rendering (`[process] calibrate_bands`; 0: the smoother's conservative bands), and carries
the calibration's frame uncertainty (its `bench_frame_covariance`) into the bands.

With --identify, each run also identifies k, mw and Fr (`[identify]`, the bootstrap's 10
replicates) and processes again with the identified file, which carries the estimates' standard
deviations (with the bench frame's share and the held numbers' share: m3, J3 and J1 stay at the
shipped values, off by their drawn errors) beside the held numbers' tolerances; the coverage is
then the process-identified stage's, and each estimate's error over its standard deviation
against the drawn value is reported too.

Usage: scripts/coverage_study.py FLEXBENCH_BINARY OUT_DIR [N] [JOBS] [REPLICATES] [--identify]
Writes OUT_DIR/coverage.json and prints a table. Deterministic for a given N (seeds 1..N).
"""

import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "mechanisms/wind-pump.toml"
CAMERA = ROOT / "recordings/default/camera.toml"

# Stated distributions: (key in the file, its line in the shipped file, nominal, relative sigma
# or absolute sigma, whether the processing's tolerances state it).
PARAMETERS = [
    ("mw", "mw = 1.5 ", 1.5, ("rel", 0.05), True),
    ("m3", "m3 = 0.8 ", 0.8, ("rel", 0.03), True),
    ("J3", "J3 = 0.004 ", 0.004, ("rel", 0.10), True),
    ("J1", "J1 = 0.05 ", 0.05, ("rel", 0.10), True),
    ("k", "k = 20000.0 ", 20000.0, ("rel", 0.05), False),
    ("Fr", "Fr = 5.0 ", 5.0, ("rel", 0.20), False),
]


def tolerances_table():
    lines = ["", "[tolerances]"]
    for key, _, _, (kind, s), stated in PARAMETERS:
        if stated:
            lines.append(f'{key} = "{100 * s:g}%"' if kind == "rel" else f"{key} = {s}")
    return "\n".join(lines) + "\n"


def drawn_file(rng, out: Path):
    text = SHIPPED.read_text()
    drawn = {}
    for key, line, nominal, (kind, s), _ in PARAMETERS:
        sigma = s * nominal if kind == "rel" else s
        v = nominal + sigma * rng.standard_normal()
        assert line in text, line
        text = text.replace(line, f"{key} = {v!r} ")
        drawn[key] = v
    out.write_text(text)
    return drawn


def drawn_camera(rng, seed: int, out: Path):
    text = CAMERA.read_text()
    look = [0.2 + 0.005 * rng.standard_normal(), -0.05 + 0.005 * rng.standard_normal()]
    tilt = [4.0 + rng.standard_normal(), -3.0 + rng.standard_normal()]
    roll = 1.5 + 0.5 * rng.standard_normal()
    text = text.replace("look_at = [0.2, -0.05]", f"look_at = [{look[0]!r}, {look[1]!r}]")
    text = text.replace("tilt_deg = [4.0, -3.0]", f"tilt_deg = [{tilt[0]!r}, {tilt[1]!r}]")
    text = text.replace("roll_deg = 1.5", f"roll_deg = {roll!r}")
    text = text.replace("seed = 1", f"seed = {seed}")
    out.write_text(text)


def run(binary: str, args, log: Path):
    with open(log, "a") as f:
        r = subprocess.run([binary, *map(str, args)], stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise RuntimeError(f"{args[0]} failed, see {log}")


def read_csv(path: Path):
    import csv

    with open(path) as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) if r[k] not in ("", "NaN") else np.nan for r in rows]) for k in rows[0]}


IDENTIFIED = ("k", "mw", "Fr")


def estimates_z(record_path: Path, drawn):
    """Each identified number's (estimate - drawn) / sigma, from the run's identify record."""
    record = json.loads(record_path.read_text())
    return {
        e["key"]: (e["value"] - drawn[e["key"]]) / e["sigma"]
        for e in record["identification"]["estimates"]
        if e["key"] in drawn and e.get("sigma")
    }


def one(binary: str, out: Path, seed: int, replicates: int = 8, identify: bool = False):
    d = out / f"r{seed:03d}"
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    drawn = drawn_file(rng, d / "drawn.toml")
    drawn_camera(rng, seed, d / "camera.toml")
    processing = d / "processing.toml"
    processing.write_text(SHIPPED.read_text() + tolerances_table())
    log = d / "log.txt"
    if not (d / "rec/truth/forces.csv").exists():
        run(binary, ["render", "--mechanism", d / "drawn.toml", "--camera", d / "camera.toml", "--out", d / "rec"], log)
    (d / "pipeline.toml").write_text(
        f'[run]\nmechanism = "{processing}"\nrecording = "{d / "rec"}"\nout = "{d / "out"}"\n'
        '[calibrate]\nboard = "9x6"\nsquare = 0.03\n[overlay]\nenabled = false\n'
        f"[process]\ncalibrate_bands = {replicates}\n"
        + (f"[identify]\nenabled = true\nfree = {json.dumps(list(IDENTIFIED))}\n" if identify else "")
    )
    run(binary, ["run", d / "pipeline.toml"], log)
    truth = read_csv(d / "rec/truth/forces.csv")
    stage = "process-identified" if identify else "process"
    got = read_csv(d / "out" / stage / "forces.csv")
    inside, n = 0, 0
    z = []
    for c in ("B_x", "B_y", "C_x", "C_y"):
        g = np.interp(truth["t"], got["t"], got[c], left=np.nan, right=np.nan)
        s = np.interp(truth["t"], got["t"], got[c + "_sigma"], left=np.nan, right=np.nan)
        ok = np.isfinite(g) & np.isfinite(s) & (s > 0)
        e = (g[ok] - truth[c][ok]) / s[ok]
        inside += int(np.sum(np.abs(e) <= 2.0))
        n += int(ok.sum())
        z.extend(e.tolist())
    summary = json.loads((d / "out" / stage / "summary.json").read_text())
    shares = {b["force"]: b for b in summary.get("band_shares", []) if b["force"] in ("B_x", "B_y", "C_x", "C_y")}
    return {
        "seed": seed,
        "drawn": drawn,
        "coverage": inside / max(n, 1),
        "samples": n,
        "z_rms": float(np.sqrt(np.mean(np.square(z)))) if z else math.nan,
        "shares": shares,
        "estimates_z": estimates_z(d / "out/identify/identify.json", drawn) if identify else None,
    }


def main():
    identify = "--identify" in sys.argv
    argv = [a for a in sys.argv if a != "--identify"]
    binary, out = argv[1], Path(argv[2])
    n = int(argv[3]) if len(argv) > 3 else 50
    jobs = int(argv[4]) if len(argv) > 4 else 2
    replicates = int(argv[5]) if len(argv) > 5 else 8
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda s: one(binary, out, s, replicates, identify), range(1, n + 1)))
    inside = sum(r["coverage"] * r["samples"] for r in results)
    total = sum(r["samples"] for r in results)
    cov = np.array([r["coverage"] for r in results])
    report = {
        "renderings": n,
        "coverage": inside / total,
        "coverage_per_rendering": {"min": float(cov.min()), "median": float(np.median(cov)), "max": float(cov.max())},
        "z_rms": float(np.sqrt(np.mean([r["z_rms"] ** 2 for r in results]))),
        "results": results,
    }
    (out / "coverage.json").write_text(json.dumps(report, indent=1, sort_keys=True))
    for r in results:
        z = r["estimates_z"]
        said = "" if z is None else ", estimates " + ", ".join(f"{k} {v:+.2f} sigma" for k, v in z.items())
        print(f"seed {r['seed']:3d}: coverage {100 * r['coverage']:5.1f} %, z RMS {r['z_rms']:.2f}{said}")
    if identify:
        zs = np.array([[r["estimates_z"][k] for k in IDENTIFIED] for r in results])
        report["estimates"] = {
            k: {"within_2_sigma": int(np.sum(np.abs(zs[:, i]) <= 2)), "mean_z": float(zs[:, i].mean()),
                "rms_z": float(np.sqrt(np.mean(zs[:, i] ** 2)))}
            for i, k in enumerate(IDENTIFIED)
        }
        (out / "coverage.json").write_text(json.dumps(report, indent=1, sort_keys=True))
        for k, v in report["estimates"].items():
            print(f"{k}: {v['within_2_sigma']} of {n} within 2 sigma of the drawn value, mean z {v['mean_z']:+.2f}, RMS {v['rms_z']:.2f}")
    print(f"{n} renderings: 2-sigma bands at B and C' hold {100 * report['coverage']:.1f} % of the truth "
          f"(per rendering {100 * cov.min():.1f} to {100 * cov.max():.1f} %, median {100 * np.median(cov):.1f} %); z RMS {report['z_rms']:.2f}")


if __name__ == "__main__":
    main()
