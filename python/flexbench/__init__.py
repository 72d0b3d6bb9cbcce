"""flexbench from Python: the wind-pump lever bench's stages, their results as polars DataFrames.

Each function runs the same code as the ``flexbench`` command of the same name (the native
module ``flexbench._native`` links the pipeline's Rust crates), reads the same files with the
same checks, and writes the same tables; the tables come back as polars DataFrames, the stage's
record (``summary.json``) as a dict. A stage's settings are the pipeline file's keys of its
table (``[smooth]``, ``[process]``, ``[fem]``) given as keyword arguments, with the pipeline
file's defaults (pipelines/default.toml documents every key)::

    import flexbench as fb
    tracks = fb.read_tracks("recordings/default/truth/tracks.csv")
    p = fb.process(tracks, mechanism="mechanisms/wind-pump.toml")   # the smoother, forces with bands
    p.forces.select("t", "B_x", "B_x_sigma")
    modes = fb.fem(p, mechanism="mechanisms/wind-pump.toml", elements=10)
    run = fb.run("pipelines/default.toml")                          # the whole chain, as `flexbench run`

Bad input raises a :class:`FlexbenchError` subclass whose message is the command line's (the
context, then each cause on a line "  caused by: ..."); a stage's warnings are issued as
:class:`FlexbenchWarning`. Units are SI and the bench frame throughout (m, s, N, N m, rad).
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import polars as pl

from . import _native
from ._native import (
    CompareError,
    ContractError,
    FemError,
    FlexbenchError,
    IdentifyError,
    InputError,
    KinematicsError,
    MechanismError,
    OutputError,
    ReportError,
    SignalError,
    TableError,
    VisionError,
)

__version__: str = _native.__version__

__all__ = [
    "read_tracks",
    "smooth",
    "process",
    "fem",
    "compare",
    "identify",
    "simulate",
    "check",
    "run",
    "run_batch",
    "Smoothed",
    "Processed",
    "FemResult",
    "Compared",
    "Identified",
    "Simulated",
    "RunResult",
    "BatchResult",
    "StageOutcome",
    "FlexbenchWarning",
    "FlexbenchError",
    "InputError",
    "TableError",
    "ContractError",
    "MechanismError",
    "KinematicsError",
    "SignalError",
    "VisionError",
    "FemError",
    "CompareError",
    "IdentifyError",
    "ReportError",
    "OutputError",
]

#: A path given as text or as a path object.
PathLike = Union[str, "os.PathLike[str]"]
#: A table given as a file (CSV or Parquet) or as a polars DataFrame.
TableLike = Union[PathLike, pl.DataFrame]

_DTYPES = {"f64": pl.Float64, "opt_f64": pl.Float64, "i64": pl.Int64, "str": pl.Utf8}


class FlexbenchWarning(UserWarning):
    """A stage's warning: it went on, but what it says should be read (a toggle position, a
    fit that disagrees, a cutoff chosen at the edge of its range...)."""


def _frame(columns: Sequence[tuple]) -> pl.DataFrame:
    """A DataFrame of the native module's columns (name, kind, values), gaps as nulls."""
    return pl.DataFrame(
        [pl.Series(name, values, dtype=_DTYPES[kind]) for name, kind, values in columns]
    )


def _fspath(path: Optional[PathLike]) -> Optional[str]:
    """A path argument as the native module takes it (None stays None)."""
    return os.fspath(path) if path is not None else None


def _warn(messages: Sequence[str], stacklevel: int = 3) -> None:
    """Issue a stage's warnings at the user's call (`stacklevel`: 3 from a public function,
    4 from a helper it calls)."""
    for w in messages:
        warnings.warn(w, FlexbenchWarning, stacklevel=stacklevel)


def _settings(table: str, keys: Dict[str, Any]) -> str:
    """The stage's settings as the JSON object the native module reads with the pipeline file's
    own type (an unknown key or name is refused there, by name)."""
    try:
        return json.dumps(keys, allow_nan=False, default=_plain)
    except ValueError as e:
        raise InputError(f"[{table}] settings: {e}: give finite numbers") from None


def _plain(value: Any) -> Any:
    """Paths and other sequences as JSON knows them (``noise_band_hz=(30.0, 60.0)``)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{value!r} is not a setting's value (a number, a name or a list)")


class _Scratch:
    """Where a call writes: the ``out`` folder given, else a temporary folder kept as long as
    the result that holds it (so that a result can be handed to the next stage). DataFrames
    given as inputs are written to Parquet in a temporary folder of their own."""

    def __init__(self, out: Optional[PathLike]):
        self._inputs: Optional[tempfile.TemporaryDirectory] = None
        if out is None:
            self.keep: Optional[tempfile.TemporaryDirectory] = tempfile.TemporaryDirectory(
                prefix="flexbench-"
            )
            self.out = Path(self.keep.name)
        else:
            self.keep = None
            self.out = Path(out)

    def table(self, value: TableLike, stem: str) -> Path:
        """A table argument as a file the stage reads."""
        if isinstance(value, pl.DataFrame):
            if self._inputs is None:
                self._inputs = tempfile.TemporaryDirectory(prefix="flexbench-input-")
            # Named so that a message about it says where the table came from.
            path = Path(self._inputs.name) / f"{stem}-dataframe.parquet"
            value.write_parquet(path)
            return path
        if isinstance(value, (str, os.PathLike)):
            return Path(value)
        raise TypeError(
            f"{stem}: give a file's path or a polars DataFrame, not {type(value).__name__}"
        )

    def optional(self, value: Optional[TableLike], stem: str) -> Optional[str]:
        """An optional table argument as the file the stage reads, or None."""
        return os.fspath(self.table(value, stem)) if value is not None else None

    def done(self) -> None:
        """Let the inputs' temporary copies go."""
        if self._inputs is not None:
            self._inputs.cleanup()
            self._inputs = None


def _tables(files: Sequence[Path]) -> Dict[str, pl.DataFrame]:
    """Every Parquet table written, by its file's stem."""
    return {Path(f).stem: pl.read_parquet(f) for f in files if str(f).endswith(".parquet")}


def _summary(path: Path) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_tracks(
    path: PathLike,
    *,
    unit: Optional[str] = None,
    fps: Optional[float] = None,
    markers: Optional[Sequence[str]] = None,
    calibration: Optional[PathLike] = None,
) -> pl.DataFrame:
    """A tracks table, checked as every stage checks it: flexbench's long format (frame, t,
    marker, u, v, x, y; x and y in m, bench frame; CSV or Parquet), or a wide table from
    another tool (``<marker>_x``, ``<marker>_y``, NaN for gaps) in ``unit`` (m, mm, cm, in, or px
    mapped through ``calibration``'s bench plane) at ``fps`` frames/s when it has no time
    column, its markers renamed ``markers`` in column order. Returns frame, t (s), marker,
    u, v (px), x, y (m, bench frame), sigma_px; gaps are nulls."""
    columns = _native.read_tracks(
        os.fspath(path),
        unit=unit,
        fps=fps,
        markers=list(markers) if markers is not None else None,
        calibration=_fspath(calibration),
    )
    return _frame(columns)


@dataclass
class Smoothed:
    """The signal stage's result: each marker's kinematics with its standard deviations."""

    #: The folder written (temporary unless ``out`` was given).
    out: Path
    #: t (s), marker, x, y (m), vx, vy (m/s), ax, ay (m/s^2), their ``*_sigma`` and provenance.
    markers: pl.DataFrame
    #: The stage's record (the method's parameters per coordinate...), as written beside it.
    summary: Dict[str, Any]
    #: The markers as one rigid body: the reference point's kinematics, omega, epsilon (when
    #: asked with ``rigid_field=True`` or a mechanism).
    rigid: Optional[pl.DataFrame]
    #: The markers' motion the rigid body does not explain (the elastic part).
    rigid_residual: Optional[pl.DataFrame]
    #: The files written.
    files: List[Path]
    _keep: Any = field(default=None, repr=False)


def smooth(
    tracks: TableLike,
    *,
    out: Optional[PathLike] = None,
    mechanism: Optional[PathLike] = None,
    **settings: Any,
) -> Smoothed:
    """``flexbench smooth``: every marker of ``tracks`` smoothed and differentiated. Settings are
    the ``[smooth]`` keys: ``method`` ("rts", the default; "savgol", "butterworth", "spline"),
    ``unit`` of x and y ("m"...), ``window``, ``order``, ``noise_m``, ``cutoff_hz``,
    ``cutoff_by``, ``spline_degree``, ``rigid_field``... ``out``: the folder written
    (``markers.parquet``, ``markers.csv``, ``markers.summary.json``, as every stage's ``out`` and
    the run's smooth folder; a ``.csv`` or ``.parquet`` path names the table itself, as on the
    command line); default: a temporary folder. ``mechanism``: the markers' layout on their
    body for the rigid field."""
    text = _settings("smooth", settings)
    scratch = _Scratch(out)
    try:
        path = scratch.table(tracks, "tracks")
        files = _native.smooth(
            os.fspath(path),
            os.fspath(scratch.out),
            text,
            mechanism=_fspath(mechanism),
        )
    finally:
        scratch.done()
    files = [Path(f) for f in files]
    summary = next(f for f in files if f.name.endswith(".summary.json"))
    stem = summary.with_name(summary.name[: -len(".summary.json")])
    parquet = stem.with_suffix(".parquet")
    markers = pl.read_parquet(parquet)
    extra = {
        k: pl.read_parquet(p)
        for k, p in (
            ("rigid", Path(f"{stem}.rigid.parquet")),
            ("rigid_residual", Path(f"{stem}.rigid_residual.parquet")),
        )
        if p in files
    }
    return Smoothed(
        out=parquet.parent,
        markers=markers,
        summary=_summary(Path(f"{stem}.summary.json")),
        rigid=extra.get("rigid"),
        rigid_residual=extra.get("rigid_residual"),
        files=files,
        _keep=scratch.keep,
    )


@dataclass
class Processed:
    """The process stage's result: the mechanism's kinematics and the liaison forces."""

    #: The folder written (temporary unless ``out`` was given).
    out: Path
    #: Each marker's kinematics: t, marker, x, y, vx, vy, ax, ay (SI, bench frame), sigmas.
    markers: pl.DataFrame
    #: Each body's kinematics: t, body, x, y (m), phi (rad), vx, vy, omega, ax, ay, epsilon.
    bodies: pl.DataFrame
    #: The liaison forces (N, force of a joint's first body on its second, bench frame), the
    #: motor torque (N m), the pump force (N), the slide's normal force and moment, with their
    #: ``*_sigma`` columns (the bands: one standard deviation).
    forces: pl.DataFrame
    #: Fitted minus measured marker positions, per sample and marker (m).
    fit_residuals: pl.DataFrame
    #: The samples that failed the fitted mechanism's residual test (None when none did).
    fit_flags: Optional[pl.DataFrame]
    #: The stage's record (``summary.json``): the fit, the method's choices, the toggles...
    summary: Dict[str, Any]
    #: The stage's warnings (also issued as :class:`FlexbenchWarning`).
    warnings: List[str]
    #: The files written.
    files: List[Path]
    _keep: Any = field(default=None, repr=False)

    def band(self, column: str, k: float = 2.0) -> pl.DataFrame:
        """A force's band: t, the value, and value -/+ ``k`` standard deviations (the smoother's
        forces carry their standard deviations; the filters' do not)."""
        if f"{column}_sigma" not in self.forces.columns:
            raise InputError(
                f"the forces table has no {column}_sigma: bands come with the smoother "
                '(method = "smoother", the default), not with the filters'
            )
        sigma = pl.col(f"{column}_sigma")
        return self.forces.select(
            "t",
            pl.col(column),
            (pl.col(column) - k * sigma).alias("lower"),
            (pl.col(column) + k * sigma).alias("upper"),
        )


def process(
    tracks: TableLike,
    *,
    mechanism: PathLike,
    out: Optional[PathLike] = None,
    flags: Optional[TableLike] = None,
    calibration: Optional[PathLike] = None,
    **settings: Any,
) -> Processed:
    """``flexbench process``: ``tracks`` (a file or a DataFrame of the tracks contract) into the
    markers', bodies' and liaison forces' tables with their bands, for the ``mechanism`` file.
    Settings are the ``[process]`` keys, with the pipeline file's and the command line's
    defaults: ``method`` ("smoother": the Kalman smoother on the driving coordinates; "savgol",
    "butterworth", "spline"), ``periodic`` and ``refine_horizontal`` ("auto": where the
    mechanism has what they assume; "on", "off", or True, False), ``window``, ``order``, ``edges``,
    ``filter_order``, ``cutoff_hz``, ``cutoff_by``, ``spline_degree``, ``noise_m``,
    ``max_condition``, ``keep_flagged``, ``false_alarm``, ``stabilise`` (every marker measured
    against the markers held at ground pins, for a camera that moved), ``peak_locking`` (the
    tracker's pull towards the pixels' centres, measured from the fit's residuals: "auto", the
    default, takes it out where significant and fits again; "on" always; "off" reports it and
    warns where significant), ``calibrate_bands``
    (replicates of the recording simulated and processed to calibrate the tracks' share of the
    forces' bands; 0, the default: the smoother's bands, conservative). ``flags``: the track
    stage's flags table, its samples left out as gaps. ``calibration``: the calibration the
    tracks were made with (calibration.yaml), its bench frame's covariance carried to the
    forces' bands (as ``flexbench process --calibration``). ``out``: the folder to write
    (default: temporary)."""
    text = _settings("process", settings)
    scratch = _Scratch(out)
    try:
        files, warned = _native.process(
            os.fspath(scratch.table(tracks, "tracks")),
            os.fspath(mechanism),
            os.fspath(scratch.out),
            text,
            flags=scratch.optional(flags, "flags"),
            calibration=None if calibration is None else os.fspath(calibration),
        )
    finally:
        scratch.done()
    _warn(warned)
    files = [Path(f) for f in files]
    tables = _tables(files)
    return Processed(
        out=scratch.out,
        markers=tables["markers"],
        bodies=tables["bodies"],
        forces=tables["forces"],
        fit_residuals=tables["fit_residuals"],
        fit_flags=tables.get("fit_flags"),
        summary=_summary(scratch.out / _native.SUMMARY),
        warnings=list(warned),
        files=files,
        _keep=scratch.keep,
    )


@dataclass
class _Written:
    """A stage's folder and what it holds: every table as a DataFrame, its record, its warnings."""

    #: The folder written (temporary unless ``out`` was given).
    out: Path
    #: Every table written, by name (its file's stem).
    tables: Dict[str, pl.DataFrame]
    #: The stage's record (``summary.json``).
    summary: Dict[str, Any]
    #: The stage's warnings (also issued as :class:`FlexbenchWarning`).
    warnings: List[str]
    #: The files written (tables, figures as PNG and SVG, the record).
    files: List[Path]
    _keep: Any = field(default=None, repr=False)


def _written(cls, scratch: "_Scratch", files: Sequence[str], warned: Sequence[str]):
    """The result of a stage that wrote `files` into the scratch's folder, its warnings issued."""
    _warn(warned, stacklevel=4)
    paths = [Path(f) for f in files]
    return cls(
        out=scratch.out,
        tables=_tables(paths),
        summary=_summary(scratch.out / _native.SUMMARY),
        warnings=list(warned),
        files=paths,
        _keep=scratch.keep,
    )


class FemResult(_Written):
    """The elastic lever along the motion: ``tables`` holds ``modal`` (the modes at every
    sample) and ``deflection`` (the forced response) when computed."""

    @property
    def modal(self) -> pl.DataFrame:
        """The modal table: t (s), mode, the followed modes' frequencies (Hz) of the symmetric
        and the full (gyroscopic) problem, damping ratio, MAC with the previous sample."""
        return self.tables["modal"]

    @property
    def deflection(self) -> Optional[pl.DataFrame]:
        """The forced response: the lever's deflection at the markers (m), against the measured
        one when the fit residuals were given (None for the modes only)."""
        return self.tables.get("deflection")


def fem(
    kinematics: Union[Processed, TableLike],
    *,
    mechanism: PathLike,
    forces: Optional[TableLike] = None,
    measured: Optional[TableLike] = None,
    out: Optional[PathLike] = None,
    **settings: Any,
) -> FemResult:
    """``flexbench fem``: the elastic lever's modes along the motion and its forced response.
    ``kinematics``: a :class:`Processed` result (its bodies, forces and fit residuals are used),
    or a bodies table with ``forces`` (and optionally the ``measured`` fit residuals). Settings
    are the ``[fem]`` keys: ``elements`` (10), ``element`` ("quintic" or "frame"), ``supports``
    ("pinned", "clamped-free", "free-free"), ``modes`` (6), ``damping``, ``response``, ``step``."""
    text = _settings("fem", settings)
    if isinstance(kinematics, Processed):
        bodies, forces = (Path(_native.processed_table(kinematics.out, t)) for t in ("bodies", "forces"))
        if measured is None and settings.get("response", True):
            # The measured deflection, compared with the forced response (as a run does).
            measured = Path(_native.processed_table(kinematics.out, "fit_residuals"))
    else:
        bodies = kinematics
        if forces is None:
            raise InputError("fem: give the forces table of the same run (forces=...) with a bodies table, or a process() result")
    scratch = _Scratch(out)
    try:
        files, warned = _native.fem(
            os.fspath(scratch.table(bodies, "bodies")),
            os.fspath(scratch.table(forces, "forces")),
            os.fspath(mechanism),
            os.fspath(scratch.out),
            text,
            measured=scratch.optional(measured, "fit_residuals"),
        )
    finally:
        scratch.done()
    return _written(FemResult, scratch, files, warned)


@dataclass
class Compared:
    """``flexbench compare``: ``tables`` holds ``comparison`` (against the bench simulated by its
    crank, where the mechanism has one) and ``measured_comparison`` and ``measured_series``
    (against the rig's measured table, when given); ``summary`` and ``measured`` are their
    records (None when not made)."""

    out: Path
    tables: Dict[str, pl.DataFrame]
    summary: Optional[Dict[str, Any]]
    measured: Optional[Dict[str, Any]]
    warnings: List[str]
    files: List[Path]
    _keep: Any = None


def compare(
    processed: Union[Processed, PathLike],
    *,
    mechanism: PathLike,
    measured: Optional[TableLike] = None,
    out: Optional[PathLike] = None,
    **settings: Any,
) -> Compared:
    """``flexbench compare``: a processed run (a :class:`Processed` result or its folder) against
    the bench simulated by its crank (where the mechanism has one) and against the rig's
    ``measured`` table on its own clock (a file or a DataFrame: a time column and columns named
    after the forces table's). Settings are the ``[compare]`` keys: ``harmonics`` (20),
    ``measured_columns`` ({"torque": "motor_torque"}), ``measured_time``, ``measured_offset_s``,
    ``measured_cutoff_hz``, ``max_lag_s`` (0.25)."""
    text = _settings("compare", settings)
    folder = processed.out if isinstance(processed, Processed) else Path(processed)
    scratch = _Scratch(out)
    try:
        files, warned = _native.compare(
            os.fspath(folder),
            os.fspath(mechanism),
            os.fspath(scratch.out),
            text,
            measured=scratch.optional(measured, "measured"),
        )
    finally:
        scratch.done()
    _warn(warned, stacklevel=3)
    paths = [Path(f) for f in files]
    record = lambda name: _summary(scratch.out / name) if (scratch.out / name).exists() else None
    return Compared(
        out=scratch.out,
        tables=_tables(paths),
        summary=record(_native.SUMMARY),
        measured=record(_native.MEASURED_RECORD),
        warnings=list(warned),
        files=paths,
        _keep=scratch.keep,
    )


@dataclass
class Identified:
    """``flexbench identify``: ``record`` is ``identify.json`` (the estimates with their standard
    deviations and what the recording does not determine, the equations' fits, each body's
    inertial parameters about its origin, the forces' sensitivities); ``tables`` holds
    ``sensitivities``; ``mechanism`` is the file written with the identified values."""

    out: Path
    record: Dict[str, Any]
    tables: Dict[str, pl.DataFrame]
    mechanism: Path
    warnings: List[str]
    files: List[Path]
    _keep: Any = None


def identify(
    processed: Union[Processed, PathLike],
    *,
    mechanism: PathLike,
    free: Sequence[str],
    measured: Optional[TableLike] = None,
    out: Optional[PathLike] = None,
    **settings: Any,
) -> Identified:
    """``flexbench identify``: the mechanism file's ``free`` numbers (by key: ``"k"``,
    ``"mw"``, ``"joints.axle.friction.viscous"``) identified from a processed run (a
    :class:`Processed` result or its folder, processed with ``mechanism``), each actuator's
    solved force held against its law and the rig's ``measured`` table (a file or a DataFrame)
    against the solved forces. Settings are the command line's: ``free_offset`` (True),
    ``cutoff_hz`` (20, or a quarter of the sampling rate), ``unfiltered`` (False),
    ``measured_columns`` ({"torque": "motor_torque"}), ``measured_time``,
    ``measured_offset_s``, ``measured_cutoff_hz``, ``bootstrap`` (10 replicates where the
    mechanism has a motor-driven crank and no measured table is given, none otherwise; 0: none)
    and ``seed`` (1). When the identified values ask the periodic refit for other harmonics than
    the processing used, the run's tracks are processed again with them and identified again.
    The standard deviations carry the bootstrap's spread, the bench frame's share when the
    recording was processed with the calibration's covariance (``record["frame"]``) and the
    file's ``[tolerances]`` on the numbers held (``record["held"]``). The given file is never
    changed."""
    text = _settings("identify", {"free": list(free), **settings})
    folder = processed.out if isinstance(processed, Processed) else Path(processed)
    scratch = _Scratch(out)
    try:
        files, warned = _native.identify(
            os.fspath(folder),
            os.fspath(mechanism),
            os.fspath(scratch.out),
            text,
            measured=scratch.optional(measured, "measured"),
        )
    finally:
        scratch.done()
    _warn(warned, stacklevel=3)
    paths = [Path(f) for f in files]
    return Identified(
        out=scratch.out,
        record=_summary(scratch.out / _native.IDENTIFY_RECORD),
        tables=_tables(paths),
        mechanism=next(p for p in paths if p.name.endswith(".identified.toml")),
        warnings=list(warned),
        files=paths,
        _keep=scratch.keep,
    )


class Simulated(_Written):
    """A mechanism's simulated ground truth (forward dynamics with Lagrange multipliers):
    ``tables`` holds tracks, markers, bodies and forces; ``summary`` the integrator's record
    (steps, drift, energy balance)."""


def simulate(
    mechanism: PathLike,
    *,
    duration: float = 2.0,
    rate: float = 1000.0,
    settle: float = 3.0,
    rtol: float = 1e-10,
    out: Optional[PathLike] = None,
) -> Simulated:
    """``flexbench simulate``: the mechanism's motion recorded for ``duration`` s at ``rate`` Hz
    after ``settle`` s, its tracks, markers, bodies and forces (the truth to check against)."""
    scratch = _Scratch(out)
    files = _native.simulate(
        os.fspath(mechanism),
        os.fspath(scratch.out),
        duration=duration,
        rate=rate,
        settle=settle,
        rtol=rtol,
    )
    return _written(Simulated, scratch, files, [])


def check(mechanism: PathLike) -> Dict[str, Any]:
    """``flexbench check``: a mechanism file parsed, validated and assembled over a whole crank
    turn. Returns its name, bodies (name, mass kg, inertia kg m^2, centroid m), joints, degrees of
    freedom, markers, the force elements (each a line naming its kind, whether the inverse
    dynamics solves for it and its law: friction, joint actuators), the forces table's columns and
    the worst condition number over the turn."""
    return json.loads(_native.check(os.fspath(mechanism)))


@dataclass
class StageOutcome:
    """How a stage of a run ended."""

    #: The stage's name (calibrate, track, smooth, process, overlay, fem, compare, report).
    name: str
    #: False when its inputs and settings were unchanged and its results kept.
    ran: bool
    #: Wall time, s.
    seconds: float
    #: Its folder.
    folder: Path


@dataclass
class RunResult:
    """One recording's run of the whole chain."""

    #: The recording's name.
    name: str
    #: The run's folder (a folder per stage, manifest.json, report/).
    out: Path
    #: The report page (HTML).
    report: Path
    #: The run's manifest: inputs with their hashes, parameters, stages.
    manifest: Dict[str, Any]
    #: How each stage ended.
    stages: List[StageOutcome]
    #: The run's warnings (also issued as :class:`FlexbenchWarning`).
    warnings: List[str]

    def table(self, stage: str, name: str) -> pl.DataFrame:
        """A stage's table, e.g. ``table("process", "forces")``."""
        folder = {s.name: s.folder for s in self.stages}.get(stage, self.out / stage)
        path = Path(folder) / f"{name}.parquet"
        if not path.exists():
            have = sorted(p.stem for p in Path(folder).glob("*.parquet"))
            raise InputError(f"{path}: the {stage} stage wrote no table '{name}' (it wrote: {', '.join(have) or 'none'})")
        return pl.read_parquet(path)


def _run_result(outcome: tuple) -> RunResult:
    name, out, report, manifest, stages, warned = outcome
    return RunResult(
        name=name,
        out=Path(out),
        report=Path(report),
        manifest=_summary(Path(manifest)),
        stages=[StageOutcome(n, ran, secs, Path(d)) for n, ran, secs, d in stages],
        warnings=list(warned),
    )


def run(pipeline: PathLike, *, out: Optional[PathLike] = None) -> RunResult:
    """``flexbench run``: the pipeline file's chain (calibrate -> track -> smooth -> process ->
    overlay -> fem -> compare -> report) on its recording (``[run] recording``); a stage whose
    inputs and settings are unchanged is kept. ``out`` overrides ``[run] out``. A pipeline file
    that names a batch (``[run] recordings``) is :func:`run_batch`'s."""
    _folder, outcome = _native.run(os.fspath(pipeline), out=_fspath(out))
    result = _run_result(outcome)
    _warn(result.warnings)
    return result


@dataclass
class BatchResult:
    """A batch's runs: one per recording folder, and the batch summary."""

    #: The batch's folder (a folder per recording, the batch summary).
    out: Path
    #: Per recording folder (as found), its run or the error it failed with (the batch goes on).
    runs: Dict[str, Union[RunResult, FlexbenchError]]
    #: The batch summary (``batch-summary.csv``): a row per recording, its key numbers or error.
    summary: pl.DataFrame
    #: The batch summary's files (CSV, HTML, JSON).
    files: List[Path]


def _run_folder(pipeline: str, folder: str, out: str) -> tuple:
    """One recording of a batch, as an executor's worker runs it (a module-level function, so
    that a process or a cluster's worker can import it by name): the command line's run of the
    folder, or its error's message."""
    return _native.run_folder(pipeline, folder, out)


def _handed_out(executor: Any, pipeline: PathLike, out: Optional[PathLike], recordings: List[str]):
    """A batch's recordings run by ``executor`` (``submit`` and futures, as
    :class:`concurrent.futures.Executor`), one task per recording, then the command line's batch
    summary written here. Paths are made absolute: a worker's folder is not this one's."""
    folders, out_dir = _native.batch_plan(os.fspath(pipeline), out=_fspath(out), recordings=recordings)
    where = os.path.abspath(os.fspath(out_dir))
    pipeline = os.path.abspath(os.fspath(pipeline))
    futures = [executor.submit(_run_folder, pipeline, os.path.abspath(f), where) for f in folders]
    runs = []
    for folder, future in zip(folders, futures):
        try:
            _, outcome, error = future.result()
        except Exception as e:  # the worker's own failure: this recording fails, the batch goes on
            outcome, error = None, f"{type(e).__name__}: {e}"
        runs.append((folder, outcome, error))
    return runs, _native.batch_summary(where, runs), where


def run_batch(
    pipeline: PathLike,
    recordings: Optional[Sequence[PathLike]] = None,
    *,
    out: Optional[PathLike] = None,
    jobs: Optional[int] = None,
    executor: Optional[Any] = None,
) -> BatchResult:
    """``flexbench run`` on a batch: the pipeline file's chain on each recording folder of
    ``recordings`` (a recording folder, or a folder of them; default: ``[run] recordings``),
    each into ``out/<folder's name>``; a failed recording is reported and the others go on.
    Without ``executor``, ``jobs`` recordings at once on this process's threads (default:
    ``[run] jobs``, else the cores), as the command line. With a
    :class:`concurrent.futures.Executor` (a process pool, or ``dask.distributed``'s
    ``Client.get_executor()`` for a lab's archive on a cluster), one task per recording on its
    workers, which must see the same files at the same paths. Either way the tables and the batch
    summary are the command line's."""
    folders = [os.fspath(r) for r in recordings or []]
    if executor is None:
        runs, files = _native.run_batch(os.fspath(pipeline), out=_fspath(out), recordings=folders, jobs=jobs)
        where = Path(files[0]).parent
    elif jobs is not None:
        raise InputError(
            f"run_batch(jobs={jobs}, executor=...): with an executor its workers set how many "
            "recordings run at once; give jobs= or executor=, not both"
        )
    else:
        runs, files, where = _handed_out(executor, pipeline, out, folders)
    results: Dict[str, Union[RunResult, FlexbenchError]] = {}
    for folder, outcome, error in runs:
        if outcome is None:
            results[os.fspath(folder)] = FlexbenchError(error)
            continue
        result = _run_result(outcome)
        _warn([f"{result.name}: {w}" for w in result.warnings])
        results[os.fspath(folder)] = result
    files = [Path(f) for f in files]
    summary = pl.read_csv(next(f for f in files if f.suffix == ".csv"))
    return BatchResult(out=Path(where), runs=results, summary=summary, files=files)


def _with_settings(func: Any, table: str) -> None:
    """Give ``func`` (a stage's function taking ``**settings``) the stage's settings as
    keyword-only parameters with their defaults, read from the pipeline file's ``[table]``
    section's own type (``_native.settings_defaults``), so that ``help()`` and ``inspect``
    show every key the stage takes and the value it runs with when the key is left out. The
    call itself is unchanged: the keys given are read by the same type, the others default."""
    import inspect

    defaults = json.loads(_native.settings_defaults(table))
    sig = inspect.signature(func)
    fixed = [p for p in sig.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
    taken = {p.name for p in fixed}
    keys = [
        inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v)
        for k, v in defaults.items()
        if k not in taken
    ]
    func.__signature__ = sig.replace(parameters=fixed + keys)
    listed = ", ".join(f"``{k}={v!r}``" for k, v in defaults.items() if k not in taken)
    func.__doc__ = (
        f"{func.__doc__}\n\n    Settings (the pipeline file's ``[{table}]`` keys) and their defaults: "
        f"{listed}. None: chosen by the stage (from the data, or left out)."
    )


for _func, _table in (
    (smooth, "smooth"),
    (process, "process"),
    (fem, "fem"),
    (compare, "compare"),
    (identify, "identify"),
):
    _with_settings(_func, _table)
del _func, _table
