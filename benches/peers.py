#!/usr/bin/env python3
"""`make bench`: flexbench against the tools its users have today, on the same inputs, as ratios.

Run by benches/peers.sh, which builds flexbench (release), makes the venv (numpy, scipy,
opencv-python-headless) and the 10 s recording, and runs the flexbench side of the kernels
(benches/criterion/examples/peers.rs, which writes the inputs and its results into WORK).

    peers.py WORK FLEXBENCH VIDEO10 TRUTH10 VIDEO100 OUT_MD CALSET

Every time is the shortest of several wall times, taken the same way on both sides (a kernel in
its own language's clock, a command line by its process's wall time). Kernels run on one thread
on both sides (OPENBLAS_NUM_THREADS=1 and friends are set by peers.sh; flexbench's kernels are
single-threaded); whole programs run as users run them. Every peer's numbers are checked
against flexbench's: a benchmark of two programs that disagree would mean nothing.
"""
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np
import scipy
import scipy.linalg as la
from scipy.signal import savgol_filter

WORK, FLEXBENCH, VIDEO, TRUTH, VIDEO100, OUT, CALSET = sys.argv[1:8]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
meta = json.load(open(os.path.join(WORK, "meta.json")))


def read(name, shape):
    return np.fromfile(os.path.join(WORK, name), dtype="<f8").reshape(shape)


def best(f, runs):
    """Shortest wall time of `runs` calls of f (s), and the last result."""
    b, out = float("inf"), None
    for _ in range(runs):
        s = time.perf_counter()
        out = f()
        b = min(b, time.perf_counter() - s)
    return b, out


def best_cmd(args, runs):
    """Shortest wall time of `runs` runs of a command (s); it must succeed."""
    b = float("inf")
    for _ in range(runs):
        s = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        b = min(b, time.perf_counter() - s)
    return b


rows = []  # workload, flexbench s, peer, peer s, agreement


def row(workload, fb, peer, ps, agree):
    rows.append((workload, fb, peer, ps, agree))
    print(f"{workload}: flexbench {fb * 1e3:.1f} ms, {peer} {ps * 1e3:.1f} ms, ratio {ps / fb:.2f}; {agree}", flush=True)


# 1. Savitzky-Golay, window 21, order 5, derivatives 0-2, 10 coordinates x 100,000 samples.
n, c = meta["sg_samples"], meta["sg_coordinates"]
t = read("sg_t.f64", (n,))
x = read("sg_x.f64", (c, n))
dt = t[1] - t[0]
ps, sp = best(lambda: [[savgol_filter(xi, 21, 5, deriv=d, delta=dt) for d in (0, 1, 2)] for xi in x], 5)
fb = [read(f"sg_{k}.f64", (c, n)) for k in ("value", "rate", "accel")]
rel = max(np.max(np.abs(np.array([s[d] for s in sp]) - fb[d])) / np.max(np.abs(fb[d])) for d in range(3))
inner = max(np.max(np.abs(np.array([s[d] for s in sp])[:, 10:-10] - fb[d][:, 10:-10])) / np.max(np.abs(fb[d])) for d in range(3))
row(f"Savitzky-Golay 21/5, derivatives 0-2, {c} x {n:,} samples", meta["sg_s"], "scipy.signal.savgol_filter", ps,
    f"same values within {inner:.0e} of the peak inside, {rel:.0e} at the ends (scipy mode 'interp')")

# 2. Inverse dynamics: the bench's linear system per sample, 100,000 samples.
k, turns, m = meta["id_turn"], meta["id_turns"], meta["id_n"]
a = np.ascontiguousarray(np.tile(read("id_a.f64", (k, m, m)), (turns, 1, 1)))
b = np.ascontiguousarray(np.tile(read("id_b.f64", (k, m)), (turns, 1)))[..., None]
xs = read("id_x.f64", (k, m))
ps, sol = best(lambda: np.linalg.solve(a, b), 5)
err = np.max(np.abs(sol[:k, :, 0] - xs)) / np.max(np.abs(xs))
row(f"Inverse dynamics, LU solve of {turns * k:,} systems ({m} unknowns)", meta["id_solve_s"], "numpy.linalg.solve (batched)", ps,
    f"same forces within {err:.0e} of the peak")


pg, _ = best(lambda: (np.linalg.cond(a, 1), np.linalg.solve(a, b)), 3)
row(f"Inverse dynamics whole: each system built from the motion, its 1-norm condition number, solved; {turns * k:,} samples", meta["id_full_s"],
    "numpy.linalg.cond(A, 1) + solve (batched, the systems given)", pg, "the same solve as above; flexbench's time includes building the systems")

# 3. Modal analysis along a cycle: 1000 samples, the lever's 51 free degrees of freedom.
s_, nf = meta["fem_samples"], meta["fem_n"]
mm = read("fem_m.f64", (nf, nf))
kk = read("fem_k.f64", (s_, nf, nf))
gy = read("fem_gyroscopic.f64", (s_, nf, nf))
sk = read("fem_skew.f64", (s_, nf, nf))
low = meta["fem_lowest"]
f_sym = read("fem_freq_symmetric.f64", (s_, low))
f_full = read("fem_freq_full.f64", (s_, 6))
ps, sym = best(lambda: [la.eigh(kk[i], mm) for i in range(s_)], 3)
ref = np.array([np.sqrt(np.abs(e[0][:low])) / (2 * np.pi) for e in sym])
agree = f"frequencies 1-{low} within {np.max(np.abs(f_sym / ref - 1)):.0e} relative"
row(f"Modes along a crank turn: the lowest {low} of K phi = lambda M phi (the pipeline's: twice the 6 followed), "
    f"{s_} matrices of {nf} dof, values and shapes", meta["fem_eigh_s"],
    "scipy.linalg.eigh(K, M) (LAPACK, every mode)", ps, agree)
pl, sub = best(lambda: [la.eigh(kk[i], mm, subset_by_index=[0, low - 1]) for i in range(s_)], 3)
ref_sub = np.array([np.sqrt(np.abs(e[0])) / (2 * np.pi) for e in sub])
row(f"The same lowest {low}", meta["fem_eigh_s"],
    f"scipy.linalg.eigh(K, M, subset_by_index=[0, {low - 1}]) (LAPACK dsygvx)", pl,
    f"frequencies 1-{low} within {np.max(np.abs(f_sym / ref_sub - 1)):.0e} relative")
row(f"The same with each instant's matrices built from the motion", meta["fem_symmetric_s"],
    "scipy.linalg.eigh(K, M) (the matrices given, every mode)", ps, agree)
minv = la.inv(mm)


def full():
    z, i_ = np.zeros((nf, nf)), np.eye(nf)
    return [la.eigvals(np.block([[z, i_], [-minv @ (kk[i] + sk[i]), -minv @ gy[i]]])) for i in range(s_)]


pf, mus = best(full, 3)
ref, ref_zeta = [], []
for mu in mus:
    mu = mu[mu.imag > 0]
    mu = mu[np.argsort(np.abs(mu))][:6]
    ref.append(np.abs(mu) / (2 * np.pi))
    ref_zeta.append(-mu.real / np.abs(mu))
z_full = read("fem_zeta_full.f64", (s_, 6))
row(f"Modes along a crank turn, full (gyroscopic, 6 modes), {s_} samples", meta["fem_full_s"],
    f"scipy.linalg.eig on the {2 * nf}x{2 * nf} state matrix", pf,
    f"frequencies within {np.nanmax(np.abs(f_full / np.array(ref) - 1)):.0e} relative, damping ratios within "
    f"{np.nanmax(np.abs(z_full - np.array(ref_zeta))):.0e}; flexbench's time includes the symmetric problem")

# 4. Decoding and tracking the 10 s recording against a Python + OpenCV peer (benches/video_peer.py),
# both timed as the commands a user runs (each process's wall time: start-up, imports, the loop);
# the peer's loops are also timed inside this warm Python process (cv2 imported, no start-up),
# which the table gives beside the ratio.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from video_peer import centroid_tracker, decode  # noqa: E402

PEER = os.path.join(ROOT, "benches", "video_peer.py")
cap = cv2.VideoCapture(VIDEO)
frames = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
cap.release()

pd_warm, nd = best(lambda: decode(VIDEO), 3)
assert nd == frames, f"decoded {nd} of {frames} frames"
pd = best_cmd([sys.executable, PEER, "decode", VIDEO], 3)
fd = best_cmd([FLEXBENCH, "probe", "--video", VIDEO], 3)
row(f"Decoding the 10 s recording ({frames} frames, 640x480 H.264)", fd, "Python cv2.VideoCapture read loop (a process)", pd,
    f"same frame count; both processes' wall time (flexbench's start-up included); the peer's loop alone in a warm "
    f"process {pd_warm * 1e3:.0f} ms, {pd_warm / fd:.2f} times flexbench's whole process")

cal = os.path.join(os.path.dirname(TRUTH), "camera.yaml")
tmp = tempfile.mkdtemp()
ft = best_cmd([FLEXBENCH, "track", "--video", VIDEO, "--calibration", cal, "--out", os.path.join(tmp, "tracks.parquet")], 3)
pt_warm, _ = best(lambda: centroid_tracker(VIDEO), 3)
peer_tracks = os.path.join(tmp, "peer-tracks.json")
pt = best_cmd([sys.executable, PEER, "track", VIDEO, peer_tracks], 3)
tracked = json.load(open(peer_tracks))

# Accuracy of both against the rendering's truth (pixel positions).
import csv

truth = {}
for r in csv.DictReader(open(TRUTH)):
    if r["u"]:
        truth[(int(r["frame"]), r["marker"])] = (float(r["u"]), float(r["v"]))
mine = {}
for r in csv.DictReader(open(os.path.join(tmp, "tracks.csv"))):
    if r["u"]:
        mine[(int(r["frame"]), r["marker"])] = (float(r["u"]), float(r["v"]))
names = sorted({k[1] for k in truth})


def rms(found):
    e = [np.hypot(found[key][0] - truth[key][0], found[key][1] - truth[key][1]) for key in truth if key in found]
    wrong = sum(1 for x in e if x > 5)
    e = [x for x in e if x <= 5]
    return np.sqrt(np.mean(np.square(e))), len(e), wrong


peer = {(f, names[i]): tuple(p) for f, cur in enumerate(tracked) for i, p in enumerate(cur) if p is not None}
fr, fn_, fw = rms(mine)
pr, pn, pw = rms(peer)
row(f"Tracking the 10 s recording (5 markers, {frames} frames)", ft, "Python + OpenCV centroid tracker (a process)", pt,
    f"flexbench {fr:.3f} px RMS from the truth ({fn_} positions, {fw} wrong by over 5 px); the peer {pr:.3f} px ({pn}, {pw} wrong); "
    f"the peer's loop alone in a warm process {pt_warm:.2f} s, {pt_warm / ft:.2f} times flexbench's whole process")

# 4b. The overlay video of the 10 s recording (markers, gaps, flags drawn) against decoding and
# encoding the same frames alone (`flexbench overlay --plain`): the drawing's cost.
ov = [FLEXBENCH, "overlay", "--video", VIDEO, "--calibration", cal, "--tracks", os.path.join(tmp, "tracks.parquet"),
      "--flags", os.path.join(tmp, "flags.parquet"), "--mechanism", os.path.join(ROOT, "mechanisms", "wind-pump.toml")]
fo = best_cmd(ov + ["--out", os.path.join(tmp, "overlay")], 3)
fp = best_cmd(ov + ["--out", os.path.join(tmp, "plain"), "--plain"], 3)
row(f"Overlay video of the 10 s recording ({frames} frames drawn, H.264)", fo,
    "the same frames decoded and encoded alone (`flexbench overlay --plain`)", fp,
    "every frame written; the drawing's share (markers, names, flags; no fitted mechanism here) is "
    + (f"{1 - fp / fo:.0%} of the overlay's time" if fo > fp else "within the runs' spread (the plain run took as long)"))

# 4c. Calibration on 15 views of 1280 x 720, 5 of them with the board leaving the image: flexbench
# (findChessboardCornersSB, views in parallel) against OpenCV-Python's classic pipeline, both
# checked against the rendering camera.
def truth_camera(path):
    fs = cv2.FileStorage(path, cv2.FILE_STORAGE_READ)
    k = fs.getNode("camera_matrix").mat()
    return {"fx": k[0, 0], "fy": k[1, 1], "cx": k[0, 2], "cy": k[1, 2]}


calviews, caltruth = os.path.join(CALSET, "views"), truth_camera(os.path.join(CALSET, "truth", "camera.yaml"))
fc = best_cmd([FLEXBENCH, "calibrate", "--views", calviews, "--board", "10x7", "--square", "0.025",
               "--out", os.path.join(tmp, "cal-bench.yaml")], 3)
mine_cal = truth_camera(os.path.join(tmp, "cal-bench.yaml"))
peer_json = os.path.join(tmp, "cal-peer.json")
pc = best_cmd([sys.executable, os.path.join(ROOT, "benches", "calibrate_peer.py"), calviews, "10", "7", "0.025", peer_json], 3)
peer_cal = json.load(open(peer_json))
worst = lambda c: max(abs(c[n] - caltruth[n]) / caltruth[n] for n in ("fx", "fy", "cx", "cy"))
row(f"Calibrating from 15 views (1280x720, 10 x 7 board, 5 leaving the image)", fc,
    "OpenCV-Python: findChessboardCorners + cornerSubPix + calibrateCamera", pc,
    f"both find the 10 whole boards ({len(peer_cal['found'])} for the peer); fx, fy, cx, cy within "
    f"{100 * worst(mine_cal):.2f} % of the rendering camera (the peer {100 * worst(peer_cal):.2f} %)")

# 5. The whole demo from nothing against decoding its video alone.
demo_out = os.path.join(tmp, "demo")
s = time.perf_counter()
subprocess.run([FLEXBENCH, "run", os.path.join(ROOT, "pipelines", "default.toml"), "--out", demo_out], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
fdemo = time.perf_counter() - s
fdec = best_cmd([FLEXBENCH, "probe", "--video", os.path.join(ROOT, "recordings", "default", "video.mp4")], 3)
whole = ("The whole demo from nothing (`flexbench run pipelines/default.toml`: calibrate, track, smooth, process, fem, "
         "compare, report)", fdemo, "decoding its video alone (`flexbench probe`)", fdec)
print(f"whole demo {fdemo:.1f} s, decoding alone {fdec:.2f} s, ratio {fdemo / fdec:.0f}", flush=True)

# 6. Long recordings: peak memory (resident set) of decoding and tracking 10 s and 100 s.


def peak_rss(args):
    """Run a command; its wall time (s) and peak resident memory (MB) by GNU time's %M. (Not this
    process's wait4: a child forked from this large Python process starts its count at the
    parent's size, so it would report the peers' arrays.)"""
    s = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    return time.perf_counter() - s, int(p.stderr.strip().split("\n")[-1]) / 1024


memory = []
for label, video in (("10 s", VIDEO), ("100 s", VIDEO100)):
    cal = os.path.join(os.path.dirname(video), "truth", "camera.yaml")
    cap = cv2.VideoCapture(video)
    nframes = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    cap.release()
    _, probe_mb = peak_rss([FLEXBENCH, "probe", "--video", video])
    wall, track_mb = peak_rss([FLEXBENCH, "track", "--video", video, "--calibration", cal, "--out", os.path.join(tmp, f"long-{label[:-2]}.parquet")])
    memory.append((label, nframes, os.path.getsize(video) / 1e6, probe_mb, track_mb, wall))
    print(f"{label}: {nframes} frames, probe {probe_mb:.0f} MB, track {track_mb:.0f} MB peak resident, track {wall:.1f} s", flush=True)

# The table, with the machine.


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


cpu = sh("lscpu | sed -n 's/^Model name: *//p' | head -1")
mem = sh("free -g | awk '/^Mem:/ {print $2}'")
blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {}).get("name", "?")
fb_version = sh(f"{FLEXBENCH} --version")
lines = [
    "# Benchmarks: flexbench against its peers",
    "",
    "Written by `make bench` (benches/peers.sh, benches/peers.py, benches/criterion/examples/peers.rs);",
    "do not edit by hand. Each time is the shortest of 3-5 wall times taken the same way on both sides;",
    "**ratio = peer's time / flexbench's time** (above 1: flexbench is faster). Kernels run on one",
    "thread on both sides (OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1, MKL_NUM_THREADS=1); commands run as users run",
    "them. Every peer's results are checked against flexbench's (last column).",
    "",
    "## Machine",
    "",
    f"- CPU: {cpu}, {os.cpu_count()} cores; memory {mem} GB",
    f"- {platform.platform()}",
    f"- {fb_version} (release build), {sh('rustc --version')}, Debian's OpenCV {sh('pkg-config --modversion opencv4') or '?'}",
    f"- peers: Python {platform.python_version()}, numpy {np.__version__} ({blas}), scipy {scipy.__version__}, opencv-python-headless {cv2.__version__}",
    "",
    "## Results",
    "",
    "| workload | flexbench | peer | peer's time | ratio | agreement |",
    "|---|---|---|---|---|---|",
]


def fmt(s):
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


for w, fb, peer, ps, agree in rows:
    lines.append(f"| {w} | {fmt(fb)} | {peer} | {fmt(ps)} | **{ps / fb:.2f}** | {agree} |")
lines += [
    "",
    f"{whole[0]}: {fmt(whole[1])}, against {whole[2]}: {fmt(whole[3])}, **{whole[1] / whole[3]:.0f} times** decoding.",
    "",
]
lines += [
    "## Long recordings: peak memory",
    "",
    "Peak resident memory (the kernel's `ru_maxrss` for the process) of decoding alone (`flexbench probe`) and of",
    "tracking (`flexbench track`: decode, detect, identify, write the tables) on the same bench rendered for 10 s and",
    "100 s at 240 frames/s. Frames are decoded and tracked one at a time; nothing holds the whole video.",
    "",
    "| recording | frames | file (MB) | probe peak (MB) | track peak (MB) | track wall time (s) |",
    "|---|---|---|---|---|---|",
]
for label, nframes, size, probe_mb, track_mb, wall in memory:
    lines.append(f"| {label} | {nframes} | {size:.1f} | {probe_mb:.0f} | {track_mb:.0f} | {wall:.1f} |")
lines.append("")
python_section = os.path.join(WORK, "python.section")
if os.path.exists(python_section):
    lines += open(python_section).read().rstrip().split("\n") + [""]
profiles = os.path.join(WORK, "profiles.section")
if os.path.exists(profiles):
    lines += open(profiles).read().rstrip().split("\n") + [""]
notes = os.path.join(ROOT, "benches", "peers-notes.md")
if os.path.exists(notes):
    lines += open(notes).read().rstrip().split("\n") + [""]
os.makedirs(os.path.dirname(OUT), exist_ok=True)
part = OUT + ".partial"
with open(part, "w") as f:
    f.write("\n".join(lines))
os.replace(part, OUT)
print(f"wrote {OUT}")
