#!/usr/bin/env python3
"""Regenerate the bad-input corpus under tests/bad-input/ from the shipped data.

Each case is an input file (or folder) and a line of tests/bad-input/cases.toml: the flexbench
command to run on it and the words its error message must contain (the problem and the fix).
`{root}` in a text input or a command stands for the repository, `{file}` for the case's input,
`{out}` for a scratch folder. Run from anywhere: python3 scripts/make_bad_input.py
"""
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "bad-input")
MECH = "{root}/mechanisms/wind-pump.toml"
VIDEO = "{root}/recordings/default/video.mp4"
CAL = "{root}/calibration/default.yaml"

cases = []


def put(rel, data):
    path = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path, mode) as f:
        f.write(data)
    return rel


def case(name, rel, command, expect):
    cases.append((name, rel, command, expect))


def read(rel, mode="r"):
    with open(os.path.join(ROOT, rel), mode) as f:
        return f.read()


# --- tracks tables (the signal stage reads any; process also checks the markers) -----------
SMOOTH = ["smooth", "--tracks", "{file}", "--out", "{out}/markers.csv"]
PROCESS = ["process", "--tracks", "{file}", "--mechanism", MECH, "--out", "{out}/p"]
lines = read("recordings/default/truth/tracks.csv").splitlines()
head, body = lines[0], lines[1:]
good = "\n".join([head] + body[:200]) + "\n"
case("tracks: empty file", put("tracks/empty.csv", ""), SMOOTH, ["empty.csv"])
case("tracks: header only", put("tracks/header-only.csv", head + "\n"), SMOOTH, ["header-only.csv", "no rows with a position"])
case("tracks: no x column", put("tracks/no-x.csv", good.replace(",x,", ",xx,", 1)), SMOOTH, ["'x'", "columns"])
case("tracks: text in x", put("tracks/text-in-x.csv", good.replace(body[3], ",".join(body[3].split(",")[:5] + ["abc"] + body[3].split(",")[6:]), 1)), SMOOTH, ["'abc' is not a number", "row"])
case("tracks: NaN in x", put("tracks/nan-x.csv", good.replace(body[7], ",".join(body[7].split(",")[:5] + ["NaN"] + body[7].split(",")[6:]), 1)), SMOOTH, ["'x' is NaN", "not a finite number", "gap"])
case("tracks: infinite y", put("tracks/inf-y.csv", good.replace(body[9], ",".join(body[9].split(",")[:6] + ["inf"] + body[9].split(",")[7:]), 1)), SMOOTH, ["'y' is inf", "not a finite number"])
swapped = [head] + body[:200]
swapped[11], swapped[21] = swapped[21], swapped[11]
case("tracks: time not increasing", put("tracks/unsorted.csv", "\n".join(swapped) + "\n"), SMOOTH, ["times must increase", "sort"])
case("tracks: duplicated frame", put("tracks/duplicate.csv", "\n".join([head] + body[:200] + [body[199]]) + "\n"), SMOOTH, ["frame", "twice"])
case("tracks: x without y", put("tracks/half.csv", good.replace(body[5], ",".join(body[5].split(",")[:6] + [""] + body[5].split(",")[7:]), 1)), SMOOTH, ["'y' is empty", "both coordinates"])
case("tracks: fractional frame", put("tracks/fractional-frame.csv", good.replace(body[10], "2.5" + body[10][1:], 1)), SMOOTH, ["2.5", "whole frame number"])
case("tracks: not UTF-8", put("tracks/latin1.csv", (head + "\n").encode() + b"0,0.0,M\xe91,1,2,0.1,0.2,\n"), SMOOTH, ["latin1.csv"])
case("tracks: short row", put("tracks/short-row.csv", good + "40,0.1667,M1,3\n"), SMOOTH, ["short-row.csv"])
case("tracks: a position of 1e300 m", put("tracks/huge.csv", good.replace(body[2], ",".join(body[2].split(",")[:5] + ["1e300"] + body[2].split(",")[6:]), 1)), SMOOTH, ["1e300", "check the column and the unit"])
four = [head] + [l for l in body[:200] if ",M5," not in l]
case("tracks: four markers for a five-marker bench", put("tracks/four-markers.csv", "\n".join(four) + "\n"), PROCESS, ["M5", "marker"])
case("tracks: one frame", put("tracks/one-frame.csv", "\n".join([head] + body[:5]) + "\n"), SMOOTH, ["frame", "too short"])
case("tracks: no marker column", put("tracks/no-marker.csv", good.replace(",marker,", ",name,", 1)), SMOOTH, ["'marker'"])
case("tracks: absurd unit", put("tracks/good.csv", good), SMOOTH + ["--unit", "furlong"], ["furlong", "m, mm, cm"])
case("tracks: unknown extension", put("tracks/tracks.xlsx", good), SMOOTH, ["xlsx", "csv", "parquet"])
pq = read("recordings/default/truth/tracks.parquet", "rb")
case("tracks: truncated Parquet", put("tracks/truncated.parquet", pq[: len(pq) // 2]), SMOOTH, ["truncated.parquet", "Parquet"])
case("tracks: text named .parquet", put("tracks/text.parquet", good), SMOOTH, ["text.parquet", "Parquet"])
case("tracks: empty Parquet", put("tracks/empty.parquet", b""), SMOOTH, ["empty.parquet"])
case("tracks: file missing", "tracks/absent.csv", SMOOTH, ["absent.csv", "no such file"])

# --- mechanism files ---------------------------------------------------------------------
CHECK = ["check", "--mechanism", "{file}"]
bench = read("mechanisms/wind-pump.toml")
case("mechanism: empty", put("mechanism/empty.toml", ""), CHECK, ["empty.toml"])
case("mechanism: truncated", put("mechanism/truncated.toml", bench[: len(bench) // 2]), CHECK, ["truncated.toml"])
case("mechanism: not UTF-8", put("mechanism/latin1.toml", b"name = \"\xe9olienne\"\n"), CHECK, ["latin1.toml", "UTF-8"])


def edit(key, value):
    out = []
    done = False
    for l in bench.splitlines():
        if not done and l.split("=")[0].strip() == key:
            out.append(f"{key} = {value}")
            done = True
        else:
            out.append(l)
    assert done, key
    return "\n".join(out) + "\n"


case("mechanism: NaN mass", put("mechanism/nan-mass.toml", edit("m1", "nan")), CHECK, ["m1", "nan"])
case("mechanism: infinite length", put("mechanism/inf-length.toml", edit("l2", "inf")), CHECK, ["l2", "inf"])
case("mechanism: length of 1e300 m", put("mechanism/huge-length.toml", edit("l2", "1e300")), CHECK, ["l2", "1e300", "check the unit"])
case("mechanism: mass as text", put("mechanism/text-mass.toml", edit("m1", "\"heavy\"")), CHECK, ["m1"])
case("mechanism: negative stiffness", put("mechanism/negative-spring.toml", edit("k", "-100.0")), CHECK, ["k"])

# Elastic bodies (docs/flexible.md): the slider-crank's rod made an elastic beam.
SIMULATE = ["simulate", "--mechanism", "{file}", "--duration", "0.01", "--settle", "0", "--out", "{out}/s"]
crank = read("mechanisms/slider-crank.toml")
ROD_POSE = "pose = [0.05, 0.0, 0.0]\n"
assert ROD_POSE in crank


def elastic_rod(table, text=crank):
    return text.replace(ROD_POSE, ROD_POSE + "\n[bodies.elastic]\n" + table, 1)


BEAM = 'kind = "beam"\nelements = 4\nfrom = "A"\nto = "P"\nsection = { width = 0.01, height = 0.01 }\n'
MAT = 'material = { young = 2.1e11, density = 7850.0 }\n'
case("mechanism: elastic beam without material", put("mechanism/elastic-no-material.toml", elastic_rod(BEAM)), CHECK,
     ["elastic.material", "missing", "young", "density"])
case("mechanism: elastic beam without section", put("mechanism/elastic-no-section.toml",
     elastic_rod('kind = "beam"\nelements = 4\nfrom = "A"\nto = "P"\n' + MAT)), CHECK, ["elastic.section", "missing", "area"])
case("mechanism: joint point off the elastic beam", put("mechanism/elastic-point-off-axis.toml",
     elastic_rod(BEAM + MAT, crank.replace("M = [0.1, 0.0]", "M = [0.1, 0.02]"))), SIMULATE,
     ["point 'M'", "off the beam's axis", "move the point"])
case("mechanism: force element on an elastic body", put("mechanism/elastic-spring-on-beam.toml", elastic_rod(BEAM + MAT)), SIMULATE,
     ["rod_spring", "elastic body 'rod'", "rigid body"])
case("mechanism: elastic beam of zero elements", put("mechanism/elastic-zero-elements.toml", edit("l2", "0.45") + "elastic = { elements = 0 }\n"),
     CHECK, ["elements", "1 or more"])

case("mechanism: elastic beam with an unknown reduction", put("mechanism/elastic-unknown-reduction.toml",
     elastic_rod(BEAM + MAT + 'modes = 2\nreduction = "guyan"\n')), CHECK, ["reduction", "'guyan'", "craig-bampton"])
ELASTIC_BENCH = read("mechanisms/wind-pump-elastic.toml")
REDUCED = 'elastic = { elements = 8, element = "frame", modes = 4, damping_beta = 9.2e-5 }'
assert REDUCED in ELASTIC_BENCH
case("mechanism: elastic lever too stiff for the explicit step", put("mechanism/elastic-unstable-step.toml",
     ELASTIC_BENCH.replace(REDUCED, 'elastic = { elements = 40, element = "frame", damping_beta = 9.2e-5 }')),
     ["simulate", "--mechanism", "{file}", "--duration", "1", "--settle", "3", "--out", "{out}/s"],
     ["elastic body 'lever'", "steps below", "modes = 4", "young in Pa"])

# Joint friction (crates/mechanism/src/friction.rs): on the slider-crank's joint A.
JOINT_A = 'first = "crank:A"\nsecond = "rod:A"\n'
assert JOINT_A in crank
SPRING = 'name = "rod_spring"\ntype = "spring"\nfirst = "rod:M"\nsecond = "ground:S"\nk = 250.0\nc = 1.5\nrest = 0.1\n'
assert SPRING in crank


def friction_at_a(table, text=crank):
    return text.replace(JOINT_A, JOINT_A + "friction = " + table + "\n", 1)


case("mechanism: joint friction with a Coulomb term and no sharpness", put("mechanism/friction-no-sharpness.toml",
     friction_at_a("{ viscous = 0.01, coulomb = 0.2 }")), CHECK, ["joints[1] (A).friction.sharpness", "Coulomb", "atan(k w)"])
case("mechanism: negative joint friction", put("mechanism/friction-negative.toml",
     friction_at_a("{ viscous = -0.01 }")), CHECK, ["joints[1] (A).friction.viscous", "-0.01", "0 or more"])
case("mechanism: joint friction of an unknown kind", put("mechanism/friction-unknown-key.toml",
     friction_at_a("{ stiction = 0.3 }")), CHECK, ["stiction", "viscous"])
# A joint's actuator (crates/mechanism/src/actuator.rs): a revolute joint's takes rpm, not m/s;
# a second actuator on a one-degree-of-freedom linkage leaves the inverse dynamics not square.
case("mechanism: a revolute joint's actuator with a slide's reference speed", put("mechanism/actuator-speed-on-revolute.toml",
     friction_at_a("{ viscous = 0.01 }").replace(JOINT_A, JOINT_A + "actuator = { km = 1.0, speed_ref = 0.2 }\n", 1)), CHECK,
     ["joints[1] (A).actuator.speed_ref", "omega_ref_rpm"])
case("mechanism: a second actuator on a one-degree-of-freedom linkage", put("mechanism/actuator-one-too-many.toml",
     crank.replace(JOINT_A, JOINT_A + "actuator = { km = 1.0 }\n", 1)), CHECK,
     ["1 degree(s) of freedom", "motor_torque, A_torque", "take `actuator` off"])
# A joint of an elastic body cannot carry the rigid model's friction law (the rod's spring taken
# off, so that the friction is what is refused).
no_spring = crank.replace("[[forces]]\n" + SPRING, "", 1)
case("mechanism: joint friction at an elastic body's joint", put("mechanism/friction-on-elastic-joint.toml",
     elastic_rod(BEAM + MAT, friction_at_a("{ viscous = 0.01 }", no_spring))), SIMULATE,
     ["A_friction", "elastic body 'rod'", "rigid body"])

# --- pipeline files ----------------------------------------------------------------------
RUN = ["run", "{file}", "--out", "{out}/run"]
head_run = f'[run]\nmechanism = "{MECH}"\nrecording = "{{root}}/recordings/default"\n[calibrate]\nsquare = 0.03\n'
case("pipeline: empty", put("pipeline/empty.toml", ""), RUN, ["[run] mechanism is missing"])
case("pipeline: unknown table", put("pipeline/unknown-table.toml", head_run + "[femm]\nmodes = 4\n"), RUN, ["femm"])
case("pipeline: wrong type", put("pipeline/wrong-type.toml", head_run + "[fem]\nelements = \"ten\"\n"), RUN, ["elements", "expected usize"])
case("pipeline: not UTF-8", put("pipeline/latin1.toml", b"[run]\nmechanism = \"\xe9.toml\"\n"), RUN, ["latin1.toml", "UTF-8"])
case("pipeline: recording folder missing", put("pipeline/no-recording.toml", f'[run]\nmechanism = "{MECH}"\nrecording = "{{root}}/recordings/absent"\n'), RUN, ["absent", "does not exist"])
case("pipeline: output cannot be written", put("pipeline/proc-out.toml", head_run.replace("[calibrate]", 'out = "/proc/flexbench-out"\n[calibrate]')), ["run", "{file}"], ["/proc/flexbench-out", "writable"])
case("pipeline: NaN square", put("pipeline/nan-square.toml", head_run.replace("square = 0.03", "square = nan")), RUN, ["square", "positive"])
case("pipeline: negative frame rate", put("pipeline/negative-fps.toml", f'[run]\nmechanism = "{MECH}"\n[inputs]\ntracks = "{{root}}/tests/bad-input/pipeline/wide.csv"\ntracks_unit = "mm"\ntracks_fps = -240.0\n'), RUN, ["tracks_fps", "positive"])
put("pipeline/wide.csv", "M1_x,M1_y\n1,2\n3,4\n")
case("pipeline: wide CSV in an absurd unit", put("pipeline/furlong.toml", f'[run]\nmechanism = "{MECH}"\n[inputs]\ntracks = "{{root}}/tests/bad-input/pipeline/wide.csv"\ntracks_unit = "furlong"\ntracks_fps = 240.0\n'), RUN, ["furlong", "mm"])
case("pipeline: camera from the motion of a tracks table", put("pipeline/from-motion-table.toml", f'[run]\nmechanism = "{MECH}"\n[inputs]\ntracks = "{{root}}/tests/bad-input/pipeline/wide.csv"\ntracks_unit = "mm"\ntracks_fps = 240.0\n[calibrate]\nfrom_motion = true\n'), RUN, ["from_motion", "video"])

# --- calibration files (read by track) -------------------------------------------------------
TRACK = ["track", "--video", VIDEO, "--calibration", "{file}", "--out", "{out}/tracks.csv"]
cal = read("calibration/default.yaml")
case("calibration: empty", put("calibration/empty.yaml", ""), TRACK, ["empty.yaml"])
case("calibration: truncated", put("calibration/truncated.yaml", cal[: len(cal) // 3]), TRACK, ["truncated.yaml"])
case("calibration: no camera matrix", put("calibration/no-camera-matrix.yaml", cal.replace("camera_matrix:", "camera_matrx:")), TRACK, ["camera_matrix"])
case("calibration: NaN focal length", put("calibration/nan-fx.yaml", cal.replace("6.9979351068688823e+02", ".nan", 1)), TRACK, ["camera_matrix", "NaN", "not a finite number", "calibrate again"])
no_plane = "\n".join(l for l in cal.split("bench_homography")[0].splitlines()) + "\n"
case("calibration: no bench plane", put("calibration/no-plane.yaml", no_plane), TRACK, ["bench plane", "--plane-view"])

# --- videos ----------------------------------------------------------------------------------
TRACKV = ["track", "--video", "{file}", "--calibration", CAL, "--out", "{out}/tracks.csv"]
video = read("recordings/default/video.mp4", "rb")
case("video: empty file", put("video/empty.mp4", b""), TRACKV, ["empty.mp4", "cannot be decoded"])
case("video: text", put("video/text.mp4", b"not a video\n"), TRACKV, ["text.mp4", "cannot be decoded"])
case("video: truncated", put("video/truncated.mp4", video[:20000]), TRACKV, ["truncated.mp4"])
case("video: missing", "video/absent.mp4", TRACKV, ["absent.mp4", "no such file"])
os.makedirs(os.path.join(OUT, "video", "a-folder.mp4"), exist_ok=True)
put("video/a-folder.mp4/.keep", "")
case("video: a folder", "video/a-folder.mp4", TRACKV, ["a-folder.mp4", "folder"])

# --- a sticker's hue from one click ------------------------------------------------------------
case("hue: a click outside the frame", "hue/none", ["probe", "--video", VIDEO, "--hue-at", "5000,10"], ["(5000, 10)", "outside the 640 x 480 frame"])
case("hue: a frame the video lacks", "hue/none", ["probe", "--video", VIDEO, "--hue-at", "100,100", "--frame", "99999"], ["no frame 99999", "give a frame the video has"])
case("hue: no coloured pixel", "hue/none", ["probe", "--video", VIDEO, "--hue-at", "100,100"], ["no coloured pixel", "click the middle of the sticker"])

# --- render's camera files ------------------------------------------------------------------
RENDER = ["render", "--mechanism", MECH, "--camera", "{file}", "--out", "{out}/r"]
camera = read("recordings/default/camera.toml")
case("camera: a bit rate with a lossless codec", put("camera/bitrate-ffv1.toml", camera.replace('codec = "h264"', 'codec = "ffv1"\nbitrate_mbps = 18.0', 1)), RENDER, ["bitrate_mbps", "h264", "Mbit/s"])
case("camera: a negative bit rate", put("camera/bitrate-negative.toml", camera.replace('codec = "h264"', 'codec = "h264"\nbitrate_mbps = -2.0', 1)), RENDER, ["bitrate_mbps", "-2", "more than 0"])
case("camera: a readout longer than a frame", put("camera/readout-long.toml", camera.replace("blur_samples = 7", "blur_samples = 7\nreadout = 0.005", 1)), RENDER, ["readout", "shorter than a frame"])

# --- chessboard folders ------------------------------------------------------------------------
CALIB = ["calibrate", "--views", "{file}", "--board", "9x6", "--square", "0.03", "--out", "{out}/cal.yaml"]
put("views/empty/.keep", "")
case("views: no image", "views/empty", CALIB, ["no image files"])
put("views/not-images/view00.png", "this is text\n")
put("views/not-images/view01.png", "neither\n")
case("views: files that are not images", "views/not-images", CALIB, ["cannot be read as an image"])
os.makedirs(os.path.join(OUT, "views", "two-views"), exist_ok=True)
for v in ["view00.png", "view01.png"]:
    shutil.copy(os.path.join(ROOT, "recordings/default/views", v), os.path.join(OUT, "views", "two-views", v))
case("views: two views", "views/two-views", CALIB, ["only 2 usable view", "at least 3"])
case("views: folder missing", "views/absent", CALIB, ["absent", "--views"])
case("views: no square", "views/two-views", ["calibrate", "--views", "{file}", "--out", "{out}/cal.yaml"], ["[calibrate] square (--square) is missing"])
case("views: a ChArUco board without its markers' side", "views/two-views", ["calibrate", "--views", "{file}", "--square", "0.03", "--charuco", "7x5", "--dictionary", "4x4_50", "--out", "{out}/cal.yaml"], ["--marker"])
case("calibrate: neither views nor a nominal camera", "views/two-views", ["calibrate", "--square", "0.03", "--out", "{out}/cal.yaml"], ["--views", "--nominal-camera"])
case("views: wrong board", "views/two-views", ["calibrate", "--views", "{file}", "--board", "9by6", "--square", "0.03", "--out", "{out}/cal.yaml"], ["9by6", "COLSxROWS"])

# --- output paths -------------------------------------------------------------------------------
case("output: under a file", put("output/a-file", "x\n"), ["process", "--tracks", "{root}/recordings/default/truth/tracks.csv", "--mechanism", MECH, "--out", "{file}/sub"], ["a-file", "cannot create"])
case("compare: no harmonic", put("compare/processed/README", "A processed folder with nothing in it: the settings are refused before it is read.\n").rsplit("/", 1)[0],
     ["compare", "--processed", "{file}", "--mechanism", MECH, "--harmonics", "0", "--out", "{out}/compare"], ["harmonics = 0", "at least one harmonic"])
case("process: the bands' calibration with another method than the smoother", "output/a-file", ["process", "--tracks", "{root}/recordings/default/truth/tracks.csv", "--mechanism", MECH, "--savgol", "--calibrate-bands", "4", "--out", "{out}/p"], ["[process] calibrate_bands is a setting of method = \"smoother\"", "\"savgol\""])


# --- regressions found by fuzzing (scripts/fuzz.sh): the inputs live in tests/bad-input/fuzz/,
# kept as found (this script does not write them) ---------------------------------------------
FUZZ = [
    # polars panicked in its worker threads decoding this damaged file (in the fuzzing process,
    # after other inputs at the same path); every polars read is guarded now.
    ("fuzz: damaged Parquet (polars panicked)", "fuzz/tracks-parquet-1.parquet", SMOOTH, ["tracks-parquet-1.parquet", "not a readable Parquet table"]),
    # `rows: data3` made OpenCV try to allocate 51 GB; matrix sizes are checked first now.
    ("fuzz: damaged matrix size in a calibration", "fuzz/calibration-yaml-1.yaml", TRACK, ["rows: data3", "not a matrix size", "calibrate again"]),
    # OpenCV's YAML parser spun for minutes on this one (binary bytes in it).
    # A footer declaring a list longer than the file made polars-parquet ask for 123 GB and abort;
    # the footer's declared lengths are checked before polars reads it now.
    ("fuzz: Parquet footer declaring 123 GB", "fuzz/tracks-parquet-2.parquet", SMOOTH, ["tracks-parquet-2.parquet", "footer", "declares", "check that the file is complete"]),
    # FFmpeg takes these 11 bytes for one frame of 60880 x 4107 px: 1.8 GB and 7 s to decode;
    # frame sizes beyond any camera are refused when the video is opened now.
    ("fuzz: 11 bytes declaring a 250 Mpx frame", "fuzz/video-1.mp4", TRACKV, ["video-1.mp4", "60880 x 4107", "beyond any camera", "export the recording again"]),
    ("fuzz: binary bytes in a calibration", "fuzz/calibration-yaml-2.yaml", TRACK, ["calibration-yaml-2.yaml", "not UTF-8 text", "calibrate again"]),
]
for name, rel, command, expect in FUZZ:
    assert os.path.exists(os.path.join(OUT, rel)), rel
    case(name, rel, command, expect)


def q(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


with open(os.path.join(OUT, "cases.toml"), "w") as f:
    f.write("# The bad-input corpus: generated by scripts/make_bad_input.py (do not edit by hand).\n")
    f.write("# Each case: flexbench run on the input must exit non-zero, without a panic, with every\n")
    f.write("# word of `expect` in its message.\n")
    for name, rel, command, expect in cases:
        f.write("\n[[case]]\n")
        f.write(f"name = {q(name)}\n")
        f.write(f"input = {q(rel)}\n")
        f.write("command = [" + ", ".join(q(c) for c in command) + "]\n")
        f.write("expect = [" + ", ".join(q(e) for e in expect) + "]\n")
print(f"{len(cases)} cases in {OUT}")
