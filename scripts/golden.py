#!/usr/bin/env python3
"""Every golden file of the repository and the script that makes it, in one list.

    python3 scripts/golden.py            regenerate them all in place (`make golden`)
    python3 scripts/golden.py --check    make them again in a scratch copy of the repository's
                                         tracked files and compare with the committed ones
    --skip-slow                          leave out the generators marked slow (the flexible crank's
                                         40 s, the rotating beam's 3 min)

Needs numpy, scipy and pyarrow (`make golden` runs it in a venv with the versions pinned by
scripts/golden.sh). The committed files are compared with the remade ones file by file: equal
bytes, or, for text, the same words and numbers equal within the file's stated tolerance. The
tolerance is the last digits a different BLAS or CPU changes (1e-12 relative to the file's own
scale), wider only where the script itself stops at a tolerance: scipy's integration of the
flexible slider-crank (its rtol 1e-13 over 0.1 s of a stiff system, 1e-9 of the scale) and the
spline's GCV minimum (found by an optimiser to about 1e-7 of the smoothing parameter; the
values that follow it move by as much, 1e-6 of the scale).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (script, the files or folders it writes, relative tolerance, slow, stdout to this file)
GENERATORS = [
    ("scripts/make_andrews.py", ["tests/mechanisms/andrews-squeezer.toml",
                                 "tests/mechanisms/andrews-squeezer.reference.json"], 1e-12, False, None),
    ("scripts/make_bad_input.py", ["tests/bad-input"], 0.0, False, None),
    ("scripts/make_butterworth_reference.py", ["tests/golden/butterworth_reference.json"], 1e-12, False, None),
    ("scripts/make_savgol_reference.py", ["tests/golden/savgol_reference.json"], 0.0, False, None),
    ("scripts/make_spline_reference.py", ["tests/golden/spline_reference.json"], 1e-6, False, None),
    ("scripts/make_pyarrow_tracks.py", ["tests/golden/tracks-pyarrow.parquet"], 0.0, False, None),
    ("scripts/make_pendulum_reference.py", ["recordings/dfki-pendulum/tracks",
                                            "recordings/dfki-pendulum/by-hand"], 1e-12, False, None),
    ("scripts/make_flexible_crank.py", ["tests/mechanisms/flexible-slider-crank.toml",
                                        "tests/mechanisms/flexible-slider-crank-corrected.toml",
                                        "tests/mechanisms/flexible-slider-crank.reference.json"], 1e-9, True, None),
    ("scripts/rotating_beam_reference.py", ["tests/golden/rotating_beam.json"], 1e-9, True,
     "tests/golden/rotating_beam.json"),
]

NUMBER = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def run(root, script, stdout_to):
    """Run one generator with its folder `root` as the repository."""
    cmd = [sys.executable, os.path.join(root, script)]
    if stdout_to is None:
        subprocess.run(cmd, check=True, cwd=root, stdout=subprocess.DEVNULL)
        return
    with open(os.path.join(root, stdout_to), "w") as f:
        subprocess.run(cmd, check=True, cwd=root, stdout=f)


def files_of(root, outputs):
    """The files under each output (a file, or a folder's files), relative to root."""
    out = []
    for o in outputs:
        p = os.path.join(root, o)
        if os.path.isdir(p):
            for d, _, names in os.walk(p):
                out += [os.path.relpath(os.path.join(d, n), root) for n in names]
        else:
            out.append(o)
    return sorted(out)


def same(committed, made, rtol):
    """None when the two files agree (bytes, or words and numbers within rtol of the file's
    scale), else why not."""
    with open(committed, "rb") as f:
        a = f.read()
    with open(made, "rb") as f:
        b = f.read()
    if a == b:
        return None
    if rtol == 0.0:
        return "the bytes differ"
    try:
        ta, tb = a.decode(), b.decode()
    except UnicodeDecodeError:
        return "the bytes differ (a binary file)"
    if NUMBER.sub("#", ta) != NUMBER.sub("#", tb):
        return "the words differ, not only the numbers"
    na = [float(x) for x in NUMBER.findall(ta)]
    nb = [float(x) for x in NUMBER.findall(tb)]
    scale = max((abs(x) for x in na), default=0.0)
    worst = max((abs(x - y) for x, y in zip(na, nb)), default=0.0)
    if worst > rtol * scale:
        return f"numbers differ by up to {worst:.3g}, beyond {rtol:g} of the file's scale {scale:.3g}"
    return None


def tracked_copy():
    """A scratch copy of the repository's tracked files (the generators' inputs)."""
    scratch = tempfile.mkdtemp(prefix="flexbench-golden-")
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for n in filter(None, names):
        src = os.path.join(ROOT, n)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(scratch, n)), exist_ok=True)
            shutil.copy2(src, os.path.join(scratch, n))
    return scratch


def check(skip_slow):
    """Remake every golden file in a scratch copy; the list of disagreements."""
    scratch = tracked_copy()
    problems = []
    try:
        for script, outputs, rtol, slow, stdout_to in GENERATORS:
            if slow and skip_slow:
                print(f"{script}: slow, left out (--skip-slow)", flush=True)
                continue
            start = time.time()
            run(scratch, script, stdout_to)
            committed = files_of(ROOT, outputs)
            made = files_of(scratch, outputs)
            if committed != made:
                problems.append(f"{script}: writes {sorted(set(made) ^ set(committed))} "
                                "which the repository has not, or the other way round")
            for rel in sorted(set(committed) & set(made)):
                why = same(os.path.join(ROOT, rel), os.path.join(scratch, rel), rtol)
                if why:
                    problems.append(f"{rel} ({script}): {why}; run `make golden` and commit")
            print(f"{script}: {len(made)} files compared in {time.time() - start:.1f} s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--skip-slow", action="store_true")
    args = ap.parse_args()
    if args.check:
        problems = check(args.skip_slow)
        for p in problems:
            print(f"golden: {p}", file=sys.stderr)
        sys.exit(1 if problems else 0)
    for script, _outputs, _rtol, slow, stdout_to in GENERATORS:
        if slow and args.skip_slow:
            continue
        print(f"{script}", flush=True)
        run(ROOT, script, stdout_to)


if __name__ == "__main__":
    main()
