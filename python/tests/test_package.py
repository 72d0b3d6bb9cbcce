"""The flexbench Python package (installed by `pip install .` into the test venv by
scripts/python-tests.sh): each function gives what the command of the same name gives, on the
same inputs, bit for bit; DataFrames in and out; bad input raises the command line's message
as a Python exception of its stage's class.

FLEXBENCH_BIN names the command line built from the same sources.
"""
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib
import warnings

import polars as pl
import pytest

import flexbench as fb

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("FLEXBENCH_BIN", str(pathlib.Path.home() / ".cache/flexbench/target/debug/flexbench"))
MECH = ROOT / "mechanisms/wind-pump.toml"
TRUTH = ROOT / "recordings/default/truth"


def cli(*args, cwd=None):
    """The command line on the same inputs; its completed process."""
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def same_frames(a: pl.DataFrame, b: pl.DataFrame):
    """Equal names, types and values, bit for bit (nulls in the same places)."""
    assert a.columns == b.columns
    assert a.dtypes == b.dtypes
    assert a.equals(b, null_equal=True), "values differ"


@pytest.fixture(scope="module")
def processed(tmp_path_factory):
    """The shipped recording's truth tracks processed by Python and by the command line, each
    with its defaults (the same: the smoother; the periodic refit and the horizontal's
    refinement "auto", which the bench's crank and its two holds on the ground switch on)."""
    work = tmp_path_factory.mktemp("process")
    p = fb.process(TRUTH / "tracks.csv", mechanism=MECH, out=work / "py")
    c = cli("process", "--tracks", TRUTH / "tracks.csv", "--mechanism", MECH, "--out",
            work / "cli")
    assert c.returncode == 0, c.stderr
    return p, work / "cli"


def test_version_and_exceptions_are_there():
    assert fb.__version__.count(".") == 2
    for cls in (fb.InputError, fb.TableError, fb.ContractError, fb.MechanismError,
                fb.KinematicsError, fb.SignalError, fb.FemError, fb.OutputError):
        assert issubclass(cls, fb.FlexbenchError) and issubclass(cls, Exception)
        assert cls.__module__ == "flexbench"


def test_exceptions_are_pythons_own_too(tmp_path):
    """Bad input is a ValueError, an output that cannot be written an OSError, each still a
    FlexbenchError of its stage's class, with the command line's message."""
    for cls in (fb.InputError, fb.TableError, fb.ContractError, fb.MechanismError):
        assert issubclass(cls, ValueError) and not issubclass(cls, OSError)
    assert issubclass(fb.OutputError, OSError) and not issubclass(fb.OutputError, ValueError)
    for cls in (fb.KinematicsError, fb.SignalError, fb.FemError):
        assert not issubclass(cls, (ValueError, OSError))
    with pytest.raises(ValueError, match="false_alarm"):
        fb.process(TRUTH / "tracks.csv", mechanism=MECH, false_alarm=2)
    with pytest.raises(ValueError, match="nan-mass.toml") as refused:
        fb.check(ROOT / "tests/bad-input/mechanism/nan-mass.toml")
    assert isinstance(refused.value, fb.MechanismError)
    with pytest.raises(ValueError, match="'abc' is not a number") as refused:
        fb.read_tracks(ROOT / "tests/bad-input/tracks/text-in-x.csv")
    assert isinstance(refused.value, fb.TableError)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(OSError, match="cannot create the output directory") as refused:
        fb.process(TRUTH / "tracks.csv", mechanism=MECH, out=blocker / "out")
    assert isinstance(refused.value, fb.OutputError)


def test_help_lists_every_setting_with_its_default():
    """`help()` shows each stage's settings with the defaults the stage runs with, read from the
    pipeline file's section of that stage (every key of it, nothing else)."""
    import inspect
    import pydoc
    text = pydoc.render_doc(fb.process, renderer=pydoc.plaintext)
    for shown in ("max_condition=100000000.0", "periodic='auto'", "calibrate_bands=0",
                  "false_alarm=1e-06", "method='smoother'", "noise_m=None", "stabilise=False"):
        assert shown in text, shown
    params = inspect.signature(fb.process).parameters
    assert len([p for p in params.values() if p.kind == p.KEYWORD_ONLY]) == 4 + 18
    fem = inspect.signature(fb.fem).parameters
    assert fem["elements"].default == 10 and fem["response"].default is True
    assert inspect.signature(fb.compare).parameters["harmonics"].default == 20
    assert inspect.signature(fb.identify).parameters["seed"].default == 1
    assert "rigid_field" in inspect.signature(fb.smooth).parameters
    # The signature is the call's: a key of it is accepted, one outside it refused by name.
    with pytest.raises(fb.InputError, match="unknown field `max_conditon`"):
        fb.process(TRUTH / "tracks.csv", mechanism=MECH, max_conditon=2.0)


def test_read_tracks_is_the_checked_contract():
    t = fb.read_tracks(TRUTH / "tracks.csv")
    assert t.columns == ["frame", "t", "marker", "u", "v", "x", "y", "sigma_px"]
    assert t.schema["frame"] == pl.Int64 and t.schema["marker"] == pl.Utf8
    raw = pl.read_csv(TRUTH / "tracks.csv")
    assert t.height == raw.height
    assert sorted(t["marker"].unique()) == ["M1", "M2", "M3", "M4", "M5"]
    # The same numbers as the file: the contract reader changes no value.
    for c in ("t", "x", "y"):
        assert (t[c] == raw[c].cast(pl.Float64)).all()


def test_read_tracks_wide_in_mm(tmp_path):
    """A wide table from another tool (DLTdv, Tracker): markers as column pairs in mm, no time
    column; read at its frame rate, in metres, names given."""
    t = fb.read_tracks(TRUTH / "tracks.csv")
    wide = t.pivot(on="marker", index="frame", values=["x", "y"]).sort("frame")
    names = ["M1", "M2", "M3", "M4", "M5"]
    cols = {}
    for k, m in enumerate(names):
        cols[f"P{k}_x"] = wide[f"x_{m}"] * 1000.0
        cols[f"P{k}_y"] = wide[f"y_{m}"] * 1000.0
    path = tmp_path / "wide.csv"
    pl.DataFrame(cols).write_csv(path)
    fps = 1.0 / float(t["t"].unique().sort().diff().median())
    back = fb.read_tracks(path, unit="mm", fps=fps, markers=names)
    assert back.height == t.height
    joined = back.join(t, on=["frame", "marker"], suffix="_truth")
    err = (joined["x"] - joined["x_truth"]).abs().max()
    assert err < 1e-12, f"x off by {err} m after mm and back"
    # Its time: the frame rate's grid from 0 (the truth's starts at its first sample).
    t0 = float(t["t"].min())
    assert (joined["t"] - (joined["t_truth"] - t0)).abs().max() < 1e-9


def test_process_is_the_command_line_bit_for_bit(processed):
    p, cli_out = processed
    for name in ("markers", "bodies", "forces", "fit_residuals"):
        same_frames(getattr(p, name), pl.read_parquet(cli_out / f"{name}.parquet"))
    assert p.summary["job"] == "process"
    assert (p.out / "forces.png").exists() and (p.out / "forces.svg").exists()


def test_joint_friction_through_the_package(tmp_path):
    """The real pendulum's encoder angle with the rig's identified joint friction in its file
    (recordings/dfki-pendulum/pendulum-friction.toml): Python's process is the command line's,
    bit for bit, and its motor torque exceeds the frictionless file's by the friction's work
    against the motion (positive power: friction always opposes the rotation)."""
    rig = ROOT / "recordings/dfki-pendulum"
    tracks = rig / "tracks/ddp_swingup.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fb.FlexbenchWarning)
        p = fb.process(tracks, mechanism=rig / "pendulum-friction.toml", out=tmp_path / "py")
        bare = fb.process(tracks, mechanism=rig / "pendulum.toml")
    c = cli("process", "--tracks", tracks, "--mechanism", rig / "pendulum-friction.toml", "--out",
            tmp_path / "cli")
    assert c.returncode == 0, c.stderr
    same_frames(p.forces, pl.read_parquet(tmp_path / "cli" / "forces.parquet"))
    omega = p.bodies.filter(pl.col("body") == "pendulum")["omega"]
    friction = p.forces["motor_torque"] - bare.forces["motor_torque"]
    power = (friction * omega).to_numpy()
    assert (power >= -1e-9).all() and power.max() > 0.1


def test_stabilise_through_the_package(tmp_path):
    """The real pendulum's video (recordings/dfki-pendulum/videos/rvDIST35.mp4) tracked by the
    command line, then processed measured against the hub (the camera drifted): Python's
    ``stabilise=True`` is the command line's ``--stabilise``, bit for bit, and says what it
    removed."""
    rig = ROOT / "recordings/dfki-pendulum"
    cal, tracks = tmp_path / "cal.yaml", tmp_path / "tracks.csv"
    c = cli("calibrate", "--nominal-camera", "1280x720", "--points",
            rig / "videos/rvDIST35.points.toml", "--out", cal)
    assert c.returncode == 0, c.stderr
    c = cli("track", "--video", rig / "videos/rvDIST35.mp4", "--calibration", cal, "--mechanism",
            rig / "pendulum-video.toml", "--threshold", "60", "--min-area", "500",
            "--max-area", "12000", "--out", tracks)
    assert c.returncode == 0, c.stderr
    mech = rig / "pendulum-video.toml"
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", fb.FlexbenchWarning)
        p = fb.process(tracks, mechanism=mech, stabilise=True, out=tmp_path / "py")
    assert any("measured against hub" in str(w.message) for w in said)
    assert p.summary["stabilised"]["markers"] == ["hub"]
    c = cli("process", "--tracks", tracks, "--mechanism", mech, "--stabilise", "--out",
            tmp_path / "cli")
    assert c.returncode == 0, c.stderr
    same_frames(p.forces, pl.read_parquet(tmp_path / "cli" / "forces.parquet"))


def test_joint_actuators_through_the_package(tmp_path):
    """A jack on a slide and a cylinder between two bodies (tests/mechanisms/jack-and-cylinder.toml):
    check states each force element as the command line does, simulate and process give the
    actuators' columns, and Python's process is the command line's, bit for bit, its jack's
    force within 0.5 % of the simulation's peak."""
    mech = ROOT / "tests/mechanisms/jack-and-cylinder.toml"
    d = fb.check(mech)
    assert "rail_force: slide actuator (N along its line), actuator" in " ".join(d["forces"])
    assert d["force_columns"] == ["O_x", "O_y", "cylinder", "rail_force", "rail_normal", "rail_moment"]
    said = cli("check", "--mechanism", mech)
    assert said.returncode == 0, said.stderr
    for line in d["forces"]:
        assert f"  force {line}\n" in said.stdout, line
    sim = fb.simulate(mech, duration=0.6, rate=1000.0, settle=0.0, out=tmp_path / "sim")
    p = fb.process(tmp_path / "sim" / "tracks.csv", mechanism=mech, out=tmp_path / "py")
    c = cli("process", "--tracks", tmp_path / "sim" / "tracks.csv", "--mechanism", mech, "--out", tmp_path / "cli")
    assert c.returncode == 0, c.stderr
    same_frames(p.forces, pl.read_parquet(tmp_path / "cli" / "forces.parquet"))
    truth = sim.tables["forces"]["rail_force"].to_numpy()
    err = p.forces["rail_force"].to_numpy() - truth
    assert math.sqrt(float((err ** 2).mean())) < 0.005 * abs(truth).max()


def test_compare_with_a_measured_torque(tmp_path):
    """The real pendulum's measured torque: Python's compare is the command line's, bit for bit
    (the same job), with the measured table given as a file or as a DataFrame; a table whose
    columns name no joint is refused by name, as on the command line."""
    rig = ROOT / "recordings/dfki-pendulum"
    mech = rig / "pendulum-friction.toml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fb.FlexbenchWarning)
        p = fb.process(rig / "tracks/ddp_swingup.csv", mechanism=mech, out=tmp_path / "p")
        keys = dict(measured_columns={"torque": "motor_torque"}, measured_cutoff_hz=10.0)
        c = fb.compare(p, mechanism=mech, measured=rig / "runs/ddp_swingup.csv", **keys)
        frame = pl.read_csv(rig / "runs/ddp_swingup.csv")
        d = fb.compare(tmp_path / "p", mechanism=mech, measured=frame, **keys)
    assert c.summary is None, "no crank: no simulated comparison"
    cmd = cli("compare", "--processed", tmp_path / "p", "--mechanism", mech, "--measured", rig / "runs/ddp_swingup.csv",
              "--measured-column", "torque=motor_torque", "--measured-cutoff", "10", "--out", tmp_path / "cli")
    assert cmd.returncode == 0, cmd.stderr
    by_cli = json.loads((tmp_path / "cli" / "measured.json").read_text())
    assert c.measured["quantities"] == by_cli["quantities"] == d.measured["quantities"]
    same_frames(c.tables["measured_comparison"], pl.read_parquet(tmp_path / "cli" / "measured_comparison.parquet"))
    with pytest.raises(fb.InputError, match="no column names a joint"):
        fb.compare(p, mechanism=mech, measured=frame.rename({"torque": "current"}))


def test_identify_the_pendulum_as_the_command_line(tmp_path):
    """The real pendulum's inertia, gravity moment and axle friction from its DDP run's torque:
    Python's identify is the command line's, bit for bit (the same job and settings' type);
    the given file is left as it was; a number the file does not have is refused by name with
    IdentifyError, as on the command line. The rig's weighed mass held with a tolerance of
    5 g: its share of the centroid's and the inertia's standard deviations is what holding the
    gravity moment m c and the inertia about the axle J + m c^2 gives, c sigma_m / m and
    c^2 sigma_m at the identified c (to 1 %), the friction's none."""
    rig = ROOT / "recordings/dfki-pendulum"
    mech = tmp_path / "pendulum-friction.toml"
    mech.write_text((rig / "pendulum-friction.toml").read_text() + '\n[tolerances]\n"bodies.pendulum.mass" = 0.005\n')
    before = mech.read_bytes()
    free = ["bodies.pendulum.inertia", "bodies.pendulum.centroid[0]",
            "joints.axle.friction.viscous", "joints.axle.friction.coulomb"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fb.FlexbenchWarning)
        p = fb.process(rig / "tracks/ddp_swingup.csv", mechanism=mech, out=tmp_path / "p")
        i = fb.identify(p, mechanism=mech, free=free, measured=rig / "runs/ddp_swingup.csv",
                        measured_columns={"torque": "motor_torque"}, out=tmp_path / "py")
    cmd = cli("identify", "--processed", tmp_path / "p", "--mechanism", mech, "--free", ",".join(free),
              "--measured", rig / "runs/ddp_swingup.csv", "--measured-column", "torque=motor_torque",
              "--out", tmp_path / "cli")
    assert cmd.returncode == 0, cmd.stderr
    by_cli = json.loads((tmp_path / "cli" / "identify.json").read_text())
    assert i.record["identification"]["estimates"] == by_cli["identification"]["estimates"]
    assert i.record["held"] == by_cli["held"]
    assert [n["key"] for n in i.record["held"]["numbers"]] == ["bodies.pendulum.mass"]
    share = {e["key"]: e["sigma"] for e in i.record["held"]["estimates"]}
    m = 0.676
    c = next(e["value"] for e in i.record["identification"]["estimates"] if e["key"] == "bodies.pendulum.centroid[0]")
    assert share["bodies.pendulum.centroid[0]"] == pytest.approx(c * 0.005 / m, rel=0.01)
    assert share["bodies.pendulum.inertia"] == pytest.approx(c * c * 0.005, rel=0.01)
    for k in ("joints.axle.friction.viscous", "joints.axle.friction.coulomb"):
        sigma = next(e["sigma"] for e in i.record["identification"]["estimates"] if e["key"] == k)
        assert share[k] < 1e-6 * sigma, (k, share[k], sigma)
    assert i.mechanism.read_text().split("\n", 1)[1] == (tmp_path / "cli" / "pendulum-friction.identified.toml").read_text().split("\n", 1)[1]
    same_frames(i.tables["sensitivities"], pl.read_parquet(tmp_path / "cli" / "sensitivities.parquet"))
    assert mech.read_bytes() == before
    with pytest.raises(fb.IdentifyError, match="no such number"):
        fb.identify(p, mechanism=mech, free=["bodies.pendulum.stiffness"])


def test_process_forces_against_the_truth(processed):
    """The liaison forces at B and C' from the truth tracks within 1 % RMS of their peak of the
    simulation's (the stage's own tests bound it tighter per method; here: the right tables,
    columns and units come through)."""
    p, _ = processed
    truth = pl.read_parquet(TRUTH / "forces.parquet")
    joined = p.forces.join(truth, on="t", suffix="_truth")
    assert joined.height > 0.9 * p.forces.height
    inner = joined.filter((pl.col("t") > joined["t"].min() + 0.05) & (pl.col("t") < joined["t"].max() - 0.05))
    for c in ("B_x", "B_y", "C_x", "C_y"):
        e = (inner[c] - inner[f"{c}_truth"]).drop_nulls()
        rms = math.sqrt(float((e * e).mean()))
        peak = float(inner[f"{c}_truth"].abs().max())
        assert rms < 0.01 * peak, f"{c}: RMS error {rms:.3f} N of a {peak:.1f} N peak"


def test_process_bands(processed):
    p, _ = processed
    band = p.band("B_x")
    assert band.columns == ["t", "B_x", "lower", "upper"]
    sigma = p.forces["B_x_sigma"].drop_nulls()
    assert sigma.len() > 0 and (sigma > 0).all()
    ok = band.drop_nulls()
    assert ((ok["lower"] < ok["B_x"]) & (ok["B_x"] < ok["upper"])).all()
    with pytest.raises(fb.InputError, match="bands come with the smoother"):
        fb.process(TRUTH / "tracks.csv", mechanism=MECH, method="savgol").band("B_x")


def test_process_bands_calibrated_and_the_frame_as_the_command_line(tmp_path):
    """``calibration=`` (the bench frame's covariance into the bands) and
    ``calibrate_bands=2`` (the tracks' share scaled by two replicates of the recording) are the
    command line's ``--calibration`` and ``--calibrate-bands 2``, bit for bit; both shares are
    in the record."""
    cal = tmp_path / "calibration.yaml"
    rec = ROOT / "recordings/default"
    c = cli("calibrate", "--views", rec / "views", "--board", "9x6", "--square", "0.03",
            "--plane-view", rec / "plane-view.png", "--clicks", rec / "clicks.toml", "--out", cal)
    assert c.returncode == 0, c.stderr
    tracks = TRUTH / "tracks.csv"
    p = fb.process(tracks, mechanism=MECH, calibration=cal, calibrate_bands=2, out=tmp_path / "py")
    c = cli("process", "--tracks", tracks, "--mechanism", MECH, "--calibration", cal,
            "--calibrate-bands", "2", "--out", tmp_path / "cli")
    assert c.returncode == 0, c.stderr
    same_frames(p.forces, pl.read_parquet(tmp_path / "cli" / "forces.parquet"))
    assert p.summary["tracks_scale"]["replicates"] == 2
    shares = {b["force"]: b for b in p.summary["band_shares"]}
    assert shares["B_x"]["calibration"] > 0 and shares["B_x"]["tracks"] > 0


def test_process_peak_locking_as_the_command_line(tmp_path):
    """``peak_locking`` is the command line's ``--peak-locking``, bit for bit: the shipped
    video's tracks (rendered with a centroid's pull towards the pixels) are corrected by
    default and the record says so; ``"off"`` leaves it in with a warning."""
    rec = ROOT / "recordings/default"
    tracks = tmp_path / "tracks.csv"
    c = cli("track", "--video", rec / "video.mp4", "--calibration", rec / "truth/camera.yaml",
            "--mechanism", MECH, "--out", tracks)
    assert c.returncode == 0, c.stderr
    p = fb.process(tracks, mechanism=MECH, out=tmp_path / "py")
    c = cli("process", "--tracks", tracks, "--mechanism", MECH, "--out", tmp_path / "cli")
    assert c.returncode == 0, c.stderr
    same_frames(p.forces, pl.read_parquet(tmp_path / "cli" / "forces.parquet"))
    assert p.summary["peak_locking"]["corrected"] is True
    with pytest.warns(fb.FlexbenchWarning, match='peak_locking="auto"'):
        left = fb.process(tracks, mechanism=MECH, peak_locking="off", out=tmp_path / "off")
    c = cli("process", "--tracks", tracks, "--mechanism", MECH, "--peak-locking", "off",
            "--out", tmp_path / "cli-off")
    assert c.returncode == 0 and "peak locking" in c.stderr, c.stderr
    same_frames(left.forces, pl.read_parquet(tmp_path / "cli-off" / "forces.parquet"))
    assert left.summary["peak_locking"]["corrected"] is False
    assert left.summary["peak_locking"]["estimate"]["p_value"] < 1e-6


def test_process_takes_a_dataframe(processed):
    """A DataFrame of tracks gives the same forces as the file it was read from."""
    p, _ = processed
    from_frame = fb.process(fb.read_tracks(TRUTH / "tracks.csv"), mechanism=MECH)
    same_frames(from_frame.forces, p.forces)
    # Without out, a temporary folder that lives as long as the result.
    assert from_frame.out.exists() and from_frame.out != p.out


def test_a_bad_dataframe_is_refused_by_name():
    """A DataFrame goes through the same checks as a file: a NaN where a position should be."""
    t = fb.read_tracks(TRUTH / "tracks.csv")
    bad = t.with_columns(pl.when(pl.col("frame") == 7).then(float("nan")).otherwise(pl.col("x")).alias("x"))
    with pytest.raises(fb.TableError, match=r"(?s)tracks-dataframe\.parquet.*'x' is NaN"):
        fb.smooth(bad)
    with pytest.raises(TypeError, match="polars DataFrame"):
        fb.process([1, 2, 3], mechanism=MECH)


def test_smooth_is_the_command_line(tmp_path):
    """`out` is a folder, as every stage's: the command line's files in it, byte for byte; a
    table's path names the table itself in both."""
    s = fb.smooth(TRUTH / "tracks.csv", method="savgol", window=21, order=5, out=tmp_path / "py")
    c = cli("smooth", "--tracks", TRUTH / "tracks.csv", "--method", "savgol", "--window", "21",
            "--order", "5", "--out", tmp_path / "cli")
    assert c.returncode == 0, c.stderr
    assert s.out == tmp_path / "py"
    assert sorted(p.name for p in s.files) == ["markers.csv", "markers.parquet", "markers.summary.json"]
    for name in ("markers.csv", "markers.parquet"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    same_frames(s.markers, pl.read_parquet(tmp_path / "cli" / "markers.parquet"))
    named = fb.smooth(TRUTH / "tracks.csv", method="savgol", out=tmp_path / "named" / "sg.csv")
    assert sorted(p.name for p in named.files) == ["sg.csv", "sg.parquet", "sg.summary.json"]
    same_frames(named.markers, s.markers)
    assert s.summary["method"].startswith("Savitzky-Golay") or "savgol" in str(s.summary).lower()
    assert s.rigid is None


def test_smooth_rigid_field_with_the_mechanism():
    s = fb.smooth(TRUTH / "tracks.csv", mechanism=MECH)
    assert s.rigid is not None and s.rigid_residual is not None
    assert {"omega", "epsilon"} <= set(s.rigid.columns)
    assert {"x_sigma", "ax_sigma"} <= set(s.markers.columns)


def test_fem_is_the_command_line(processed, tmp_path):
    p, cli_out = processed
    f = fb.fem(p, mechanism=MECH, elements=4, modes=3, response=False, out=tmp_path / "py")
    c = cli("fem", "--kinematics", cli_out / "bodies.parquet", "--forces", cli_out / "forces.parquet",
            "--mechanism", MECH, "--elements", "4", "--modes", "3", "--no-response",
            "--out", tmp_path / "cli")
    assert c.returncode == 0, c.stderr
    same_frames(f.modal, pl.read_parquet(tmp_path / "cli" / "modal.parquet"))
    assert sorted(f.modal["mode"].unique()) == [1, 2, 3]
    assert f.summary["modes"] == 3 and f.deflection is None


def test_fem_takes_tables(processed):
    p, _ = processed
    f = fb.fem(p.bodies, forces=p.forces, mechanism=MECH, elements=4, modes=2, response=False)
    g = fb.fem(p, mechanism=MECH, elements=4, modes=2, response=False)
    same_frames(f.modal, g.modal)
    with pytest.raises(fb.InputError, match="forces"):
        fb.fem(p.bodies, mechanism=MECH)


def test_simulate_and_check():
    d = fb.check(MECH)
    assert d["dof"] == 2 and d["markers"] == ["M1", "M2", "M3", "M4", "M5"]
    assert "B_x" in d["force_columns"] and d["worst_condition"] > 1
    s = fb.simulate(MECH, duration=0.2, rate=500, settle=0.5)
    assert set(s.tables) >= {"tracks", "markers", "bodies", "forces"}
    assert s.tables["forces"].height == 101  # 0.2 s at 500 Hz, both ends
    assert s.summary["integrator"]["energy_error_relative"] < 1e-9


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The shipped pipeline file's chain (the video, calibration, tracking ... report) run by
    Python, and again: the second run keeps every stage."""
    out = tmp_path_factory.mktemp("run") / "demo"
    first = fb.run(ROOT / "pipelines/default.toml", out=out)
    second = fb.run(ROOT / "pipelines/default.toml", out=out)
    return first, second


def test_run_the_shipped_pipeline(runs):
    first, second = runs
    assert first.report.exists() and first.report.suffix == ".html"
    names = [s.name for s in first.stages]
    assert names[:4] == ["calibrate", "track", "smooth", "process"] and "report" in names
    assert all(s.ran for s in first.stages)
    assert not any(s.ran for s in second.stages)
    assert first.manifest["stages"] and first.manifest["inputs"]
    forces = first.table("process", "forces")
    same_frames(forces, pl.read_parquet(first.out / "process" / "forces.parquet"))
    with pytest.raises(fb.InputError, match="wrote no table 'nope'"):
        first.table("process", "nope")


def test_one_default_for_the_three_ways_in(processed, tmp_path):
    """The same tracks through `flexbench process` without flags, `flexbench.process()` without
    settings and a pipeline file's process stage without a [process] table: the same forces
    table, byte for byte (one default, which the bench's crank switches on)."""
    p, cli_out = processed
    rec = tmp_path / "rec"
    rec.mkdir()
    shutil.copy(TRUTH / "tracks.csv", rec / "tracks.csv")
    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_text(f'[run]\nmechanism = "{MECH}"\nrecording = "{rec}"\n\n'
                        '[overlay]\nenabled = false\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fb.FlexbenchWarning)
        r = fb.run(pipeline, out=tmp_path / "out")
    run_forces = (r.out / "process" / "forces.csv").read_bytes()
    assert (cli_out / "forces.csv").read_bytes() == run_forces
    assert (p.out / "forces.csv").read_bytes() == run_forces
    summary = json.loads((r.out / "process" / "summary.json").read_text())
    assert summary["periodic"] is not None and summary["horizontal_correction_rad"] is not None


def _batch(tmp_path):
    """A batch of one good recording (tracks only) and one broken one, and its pipeline file."""
    good = tmp_path / "recs" / "good"
    bad = tmp_path / "recs" / "bad"
    good.mkdir(parents=True)
    bad.mkdir()
    shutil.copy(TRUTH / "tracks.csv", good / "tracks.csv")
    (bad / "tracks.csv").write_text("frame,t,marker,x,y\n0,0.0,M1,abc,0.1\n")
    pipeline = tmp_path / "batch.toml"
    pipeline.write_text(f'[run]\nmechanism = "{MECH}"\n\n[process]\nrefine_horizontal = false\n'
                        '[overlay]\nenabled = false\n')
    return pipeline, good, bad


def _same_batch(a: pathlib.Path, b: pathlib.Path):
    """Two batch folders hold the same tables and the same summary, byte for byte."""
    tables = sorted(p.relative_to(a) for p in a.rglob("*") if p.suffix in (".csv", ".parquet"))
    assert "batch-summary.csv" in map(str, tables) and len(tables) > 10
    assert tables == sorted(p.relative_to(b) for p in b.rglob("*") if p.suffix in (".csv", ".parquet"))
    for t in tables:
        assert (a / t).read_bytes() == (b / t).read_bytes(), t


def test_run_a_batch(tmp_path):
    """A batch of one good recording and one broken one: the good one's run, the broken one's
    error, and the summary, as the command line's batch reports them; `run` refuses a batch."""
    pipeline, good, bad = _batch(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fb.FlexbenchWarning)
        batch = fb.run_batch(pipeline, [tmp_path / "recs"], out=tmp_path / "out", jobs=2)
    assert set(batch.runs) == {str(good), str(bad)}
    assert isinstance(batch.runs[str(good)], fb.RunResult)
    assert isinstance(batch.runs[str(bad)], fb.FlexbenchError)
    assert "'abc' is not a number" in str(batch.runs[str(bad)])
    assert batch.summary["status"].to_list() == ["failed", "ok"]
    ran = cli("run", pipeline, "--recordings", tmp_path / "recs", "--out", tmp_path / "cli", "--jobs", "2")
    assert ran.returncode != 0 and "1 of 2 recordings failed" in ran.stderr, ran.stderr
    _same_batch(tmp_path / "cli", batch.out)
    batch_file = tmp_path / "named.toml"
    batch_file.write_text(pipeline.read_text().replace("[run]\n", f'[run]\nrecordings = ["{tmp_path / "recs"}"]\n'))
    with pytest.raises(fb.InputError, match=r"names a batch; run it with flexbench.run_batch"):
        fb.run(batch_file, out=tmp_path / "one")
    with pytest.raises(fb.InputError, match="no batch to run"):
        fb.run_batch(pipeline, out=tmp_path / "none")


def test_run_a_batch_on_a_dask_cluster(tmp_path):
    """The same batch handed out by `run_batch(executor=...)` to a dask.distributed local cluster
    (two worker processes): the command line's tables and summary, byte for byte."""
    from dask import distributed
    pipeline, good, bad = _batch(tmp_path)
    ran = cli("run", pipeline, "--recordings", tmp_path / "recs", "--out", tmp_path / "cli")
    assert ran.returncode != 0 and "'abc' is not a number" in ran.stderr
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fb.FlexbenchWarning)
            batch = fb.run_batch(pipeline, [tmp_path / "recs"], out=tmp_path / "dask",
                                 executor=client.get_executor())
        ran_on = set(client.run(os.getpid).values())
    assert os.getpid() not in ran_on and len(ran_on) == 2
    assert isinstance(batch.runs[str(good)], fb.RunResult)
    assert "'abc' is not a number" in str(batch.runs[str(bad)])
    _same_batch(tmp_path / "cli", batch.out)
    with pytest.raises(fb.InputError, match="give jobs= or executor="):
        fb.run_batch(pipeline, [tmp_path / "recs"], jobs=2, executor=client)


def test_settings_refused_by_name():
    with pytest.raises(fb.InputError, match="unknown field `windw`"):
        fb.process(TRUTH / "tracks.csv", mechanism=MECH, windw=21)
    with pytest.raises(fb.InputError, match="smoother"):
        fb.process(TRUTH / "tracks.csv", mechanism=MECH, method="kalman")
    with pytest.raises(fb.InputError, match=r"false_alarm = 2: give a probability"):
        fb.process(TRUTH / "tracks.csv", mechanism=MECH, false_alarm=2)
    with pytest.raises(fb.InputError, match="finite"):
        fb.process(TRUTH / "tracks.csv", mechanism=MECH, noise_m=float("nan"), method="spline")
    with pytest.raises(fb.InputError, match="elements = 0"):
        fb.fem(TRUTH / "bodies.parquet", forces=TRUTH / "forces.parquet", mechanism=MECH, elements=0)
    with pytest.raises(fb.InputError, match="furlong"):
        fb.smooth(TRUTH / "tracks.csv", unit="furlong")


def test_errors_are_typed():
    with pytest.raises(fb.MechanismError, match="nan-mass.toml"):
        fb.check(ROOT / "tests/bad-input/mechanism/nan-mass.toml")
    with pytest.raises(fb.TableError, match="'abc' is not a number"):
        fb.read_tracks(ROOT / "tests/bad-input/tracks/text-in-x.csv")
    with pytest.raises(fb.TableError, match="times must increase"):
        fb.read_tracks(ROOT / "tests/bad-input/tracks/unsorted.csv")


# The bad-input corpus's cases whose command the package has, as Python calls.
def _python_call(command, out):
    """The package's call of a corpus case's command line: its inputs, and for ``process`` its
    settings (and ``compare``'s) as keyword arguments (an option's value as a number where it
    reads as one; the method's shorthand flags as ``method``)."""
    name, args = command[0], command[1:]
    opts = {}
    positional = []
    k = 0
    while k < len(args):
        a = args[k]
        if a.startswith("--") and (k + 1 == len(args) or args[k + 1].startswith("--")):
            opts[a[2:].replace("-", "_")] = True
            k += 1
        elif a.startswith("--"):
            opts[a[2:].replace("-", "_")] = args[k + 1]
            k += 2
        else:
            positional.append(a)
            k += 1
    if name == "smooth":
        return lambda: fb.smooth(opts.pop("tracks"), out=opts.pop("out"), **opts)
    if name == "process":
        inputs = {key: opts.pop(key) for key in ("tracks", "mechanism", "out")}
        for method in ("smoother", "savgol", "butterworth", "spline"):
            if opts.pop(method, False):
                opts["method"] = method
        settings = {key: _number(v) for key, v in opts.items()}
        return lambda: fb.process(inputs["tracks"], mechanism=inputs["mechanism"], out=inputs["out"], **settings)
    if name == "compare":
        inputs = {key: opts.pop(key) for key in ("processed", "mechanism", "out")}
        settings = {key: _number(v) for key, v in opts.items()}
        return lambda: fb.compare(inputs["processed"], mechanism=inputs["mechanism"], out=inputs["out"], **settings)
    if name == "check":
        return lambda: fb.check(opts["mechanism"])
    if name == "run":
        return lambda: fb.run(positional[0], out=opts.get("out"))
    return None


def _number(value):
    """An option's value as Python would give it: an integer or a float where it reads as one."""
    if isinstance(value, bool):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except (TypeError, ValueError):
            pass
    return value


def _corpus():
    with open(ROOT / "tests/bad-input/cases.toml", "rb") as f:
        return tomllib.load(f)["case"]


@pytest.mark.parametrize("case", [c for c in _corpus() if c["command"][0] in ("smooth", "process", "compare", "check", "run")],
                         ids=lambda c: c["name"])
def test_bad_input_same_message_as_the_command_line(case, tmp_path):
    """Every case of the bad-input corpus the package can run: the exception's message is the
    command line's (after its "error: "), word for word, and holds the case's expected words."""
    corpus = ROOT / "tests/bad-input"
    inp = corpus / case["input"]
    if inp.is_file():
        try:
            text = inp.read_text()
        except UnicodeDecodeError:
            text = ""
        if "{root}" in text:
            copy = tmp_path / inp.name
            copy.write_text(text.replace("{root}", str(ROOT)))
            inp = copy
    fill = lambda a: a.replace("{file}", str(inp)).replace("{root}", str(ROOT)).replace("{out}", str(tmp_path))
    command = [fill(a) for a in case["command"]]
    c = cli(*command, cwd=tmp_path)
    assert c.returncode != 0
    lines = [l for l in c.stderr.splitlines() if not l.startswith("warning:")]
    start = next(i for i, l in enumerate(lines) if l.startswith("error: "))
    cli_message = "\n".join(lines[start:])[len("error: "):]
    call = _python_call(command, tmp_path)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fb.FlexbenchWarning)
            with pytest.raises(fb.FlexbenchError) as raised:
                call()
    finally:
        os.chdir(cwd)
    message = str(raised.value)
    for word in case["expect"]:
        assert word in message, f"{word!r} not in {message!r}"
    if "furlong" in case["command"]:
        return  # the command line's parser refuses the option itself, in its own words
    # A damaged Parquet file's reason is the Parquet reader's own, and it varies from run to run
    # of the same command (polars reads the column chunks on several threads: whichever fails
    # first speaks); flexbench's words before it are compared.
    # The reader's words are the last cause of the chain.
    damaged = re.compile(r"(not a readable Parquet table;[^\n]*\n  caused by: ).*", re.S)
    mask = lambda m: damaged.sub(r"\1...", m)
    assert mask(message) == mask(cli_message)


def _figure_rows(path):
    import csv
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def test_example_draws_the_forces_figure(tmp_path):
    """docs/forces_figure.py from a tracks file: PNG and SVG written, and every point it drew
    is the process stage's own forces figure's (docs: the same panels, curves, times, values and
    2-sigma half-widths; the magnitudes within 1e-14, two hypot implementations)."""
    keep = tmp_path / "process"
    r = subprocess.run([sys.executable, str(ROOT / "docs/forces_figure.py"), str(TRUTH / "tracks.csv"),
                        "--mechanism", str(MECH), "--out", str(tmp_path / "forces.png"), "--keep", str(keep)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    png = (tmp_path / "forces.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert (tmp_path / "forces.svg").read_text().lstrip().startswith("<?xml")
    head, ours = _figure_rows(tmp_path / "forces.figure.csv")
    head_rs, theirs = _figure_rows(keep / "forces.figure.csv")
    assert head == head_rs
    assert len(ours) == len(theirs) > 0
    for a, b in zip(ours, theirs):
        assert a[:2] == b[:2]
        for u, v in zip(a[2:], b[2:]):
            assert (u == "") == (v == "")
            if u:
                assert math.isclose(float(u), float(v), rel_tol=1e-14, abs_tol=0.0), (a, b)


def test_example_reports_bad_input(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "docs/forces_figure.py"),
                        str(ROOT / "tests/bad-input/tracks/nan-x.csv"), "--mechanism", str(MECH),
                        "--out", str(tmp_path / "f.png")], capture_output=True, text=True)
    assert r.returncode == 1
    assert "'x' is NaN" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "f.png").exists()
