#!/usr/bin/env python3
"""What calling `process` from Python costs over the command line, on the same tracks.

    python_overhead.py FLEXBENCH SECTION TRACKS...

For each tracks file: the command `flexbench process --periodic --refine-horizontal` (the
pipeline file's defaults, which the package's `process` takes) by its process's wall time, and
`flexbench.process(...)` called in a Python session that has imported the package (as in a
notebook), its wall time including the tables read back as polars DataFrames; also the same as
a Python script started cold (`python -c`, the interpreter and polars' import included). Each
time the shortest of RUNS, the two sides alternated; the forces tables must be equal bit for bit.
Writes the benchmarks page's section (markdown) to SECTION.
"""
import os
import subprocess
import sys
import tempfile
import time

import polars as pl

import flexbench as fb

FLEXBENCH, SECTION, TRACKS = sys.argv[1], sys.argv[2], sys.argv[3:]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MECH = os.path.join(ROOT, "mechanisms", "wind-pump.toml")
RUNS = 5


def command(tracks, out):
    s = time.perf_counter()
    subprocess.run([FLEXBENCH, "process", "--tracks", tracks, "--mechanism", MECH, "--out", out,
                    "--periodic", "--refine-horizontal"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - s


def session(tracks, out):
    s = time.perf_counter()
    p = fb.process(tracks, mechanism=MECH, out=out)
    return time.perf_counter() - s, p


def script(tracks, out):
    code = f"import flexbench as fb; fb.process({tracks!r}, mechanism={MECH!r}, out={out!r})"
    s = time.perf_counter()
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True)
    return time.perf_counter() - s


def label(tracks):
    """The tracks file as the page names it: its path in the repository, else its last parts."""
    full = os.path.abspath(tracks)
    root = os.path.abspath(ROOT)
    if full.startswith(root + os.sep):
        return os.path.relpath(full, root)
    return os.path.join(*full.split(os.sep)[-4:])


rows = []
with tempfile.TemporaryDirectory() as tmp:
    import warnings
    warnings.simplefilter("ignore", fb.FlexbenchWarning)
    for k, tracks in enumerate(TRACKS):
        cli_out, py_out, cold_out = (os.path.join(tmp, f"{k}-{s}") for s in ("cli", "py", "cold"))
        session(tracks, py_out)  # warm: the file cache and the module's first call
        best = {"cli": float("inf"), "py": float("inf"), "cold": float("inf")}
        for _ in range(RUNS):
            best["cli"] = min(best["cli"], command(tracks, cli_out))
            secs, p = session(tracks, py_out)
            best["py"] = min(best["py"], secs)
            best["cold"] = min(best["cold"], script(tracks, cold_out))
        same = p.forces.equals(pl.read_parquet(os.path.join(cli_out, "forces.parquet")), null_equal=True)
        if not same:
            sys.exit(f"{tracks}: the package's forces differ from the command's")
        rows.append((label(tracks), p.summary["samples"], best["cli"], best["py"], best["cold"]))
        print(f"{tracks}: command {best['cli']:.3f} s, Python session {best['py']:.3f} s "
              f"({100 * (best['py'] / best['cli'] - 1):+.1f} %), Python script {best['cold']:.3f} s", flush=True)

lines = [
    "## The Python package against the command line",
    "",
    "`process` on the same tracks (the smoother with the periodic refit and the horizontal refined: the",
    "pipeline file's defaults), both release builds: the command `flexbench process` by its process's wall",
    "time, and `flexbench.process(...)` called in a Python session that has imported the package, the",
    "tables read back as polars DataFrames included; the script column is the same call started cold",
    "(`python -c`, the interpreter and the imports included). Shortest of "
    f"{RUNS} runs each, alternated; the forces tables equal bit for bit (benches/python_overhead.py).",
    "",
    "| tracks | samples | command | Python session | overhead | Python script, cold |",
    "|---|---|---|---|---|---|",
]
for name, n, c, p, cold in rows:
    lines.append(f"| {name} | {n} | {c:.3f} s | {p:.3f} s | **{100 * (p / c - 1):+.1f} %** | {cold:.3f} s |")
with open(SECTION, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {SECTION}")
