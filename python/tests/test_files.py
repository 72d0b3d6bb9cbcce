"""The files users open, read by the tools they open them with: the report stage's results.mat
by scipy.io.loadmat and results.xlsx by openpyxl hold the same numbers as the run's CSV tables
and JSON summaries, with each column's unit.

Run by `make test` (scripts/python-tests.sh) in its own venv; FLEXBENCH_BIN names the binary.
"""
import csv
import json
import math
import os
import pathlib
import subprocess

import numpy as np
import openpyxl
import pytest
import scipy.io

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("FLEXBENCH_BIN", str(pathlib.Path.home() / ".cache/flexbench/target/debug/flexbench"))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The chain on the shipped recording's truth tracks (no video: quick), default methods."""
    work = tmp_path_factory.mktemp("run")
    pipeline = work / "pipeline.toml"
    pipeline.write_text(
        f'[run]\nmechanism = "{ROOT / "mechanisms/wind-pump.toml"}"\nout = "{work / "out"}"\n\n'
        f'[inputs]\ntracks = "{ROOT / "recordings/default/truth/tracks.csv"}"\n\n'
        '[process]\nrefine_horizontal = false\n\n'
        '[report]\ncsv_units = true\n'
    )
    subprocess.run([BIN, "run", str(pipeline)], check=True, capture_output=True)
    return work / "out"


def read_csv(path):
    with open(path) as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    return {k: [r[i] for r in rows] for i, k in enumerate(header)}


def same_column(mat_values, csv_values):
    """Numbers equal bit for bit (the CSV's shortest round-trip text), gaps as NaN; text equal."""
    mat_values = np.atleast_1d(mat_values)
    assert len(mat_values) == len(csv_values)
    if not csv_values:
        return
    try:
        want = np.array([float(v) if v != "" else math.nan for v in csv_values])
    except ValueError:
        assert [str(v) for v in mat_values] == csv_values
        return
    got = np.asarray(mat_values, dtype=float)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


def test_mat_holds_every_table_and_summary(run):
    mat = scipy.io.loadmat(run / "report/results.mat", simplify_cells=True)
    names = [k for k in mat if not k.startswith("__")]
    stages = ["track", "smooth", "process", "fem", "compare", "report"]
    assert sorted({n.split("_")[0] for n in names}, key=stages.index) == stages
    checked = 0
    for stage in stages:
        folder = run / stage
        for csv_path in sorted(folder.glob("*.csv")):
            stem = csv_path.name[: -len(".csv")]
            if stem.endswith(".figure"):
                continue
            table = mat[f"{stage}_{stem}".replace(".", "_")]
            columns = read_csv(csv_path)
            for name, values in columns.items():
                same_column(table[name], values)
                unit = table["units"][name]
                assert isinstance(unit, str) or np.size(unit) == 0, (stem, name)  # "" for text
                checked += 1
        for json_path in folder.glob("*.json"):
            if json_path.name == "stage.json":
                continue
            summary = json.loads(json_path.read_text())
            field = f"{stage}_{json_path.name[: -len('.json')]}".replace(".", "_")
            assert set(mat[field]) >= {k for k in summary if k.isidentifier()}
    assert checked > 100
    assert mat["process_forces"]["units"]["B_x"] == "N"
    assert mat["process_markers"]["units"]["ax"] == "m/s^2"
    assert mat["track_tracks"]["units"]["u"] == "px"
    process = json.loads((run / "process/summary.json").read_text())
    assert mat["process_summary"]["samples"] == process["samples"]
    assert mat["process_summary"]["fit"]["rms"] == process["fit"]["rms"]


def test_workbook_holds_the_main_tables_with_units(run):
    book = openpyxl.load_workbook(run / "report/results.xlsx", read_only=True)
    assert book.sheetnames == ["markers", "bodies", "forces", "modal", "comparison"]
    for sheet, path in [("markers", "process/markers.csv"), ("forces", "process/forces.csv"),
                        ("modal", "fem/modal.csv"), ("comparison", "compare/comparison.csv")]:
        rows = list(book[sheet].iter_rows(values_only=True))
        columns = read_csv(run / path)
        assert list(rows[0]) == list(columns)
        units = dict(zip(rows[0], rows[1]))
        for k, name in enumerate(rows[0]):
            same_column([r[k] if r[k] is not None else ("" if isinstance(columns[name][0], str) and not _numeric(columns[name]) else math.nan)
                         for r in rows[2:]], columns[name])
        if sheet == "forces":
            assert units["t"] == "s" and units["B_x"] == "N" and units["motor_torque"] == "N m"


def _numeric(values):
    try:
        [float(v) for v in values if v != ""]
        return True
    except ValueError:
        return False


def test_csv_with_units_rows(run):
    """[report] csv_units: every table again as report/tables/<stage>_<table>.csv, the names,
    then each column's unit, then the same values as the stage's own CSV."""
    written = sorted((run / "report/tables").glob("*.csv"))
    assert len(written) >= 10
    for path in written:
        stage, stem = path.name[: -len(".csv")].split("_", 1)
        with open(path) as f:
            reader = csv.reader(f)
            names, units = next(reader), next(reader)
            rows = list(reader)
        original = read_csv(run / stage / f"{stem}.csv")
        assert names == list(original)
        assert "?" not in units, (path.name, dict(zip(names, units)))
        for k, name in enumerate(names):
            cells = [r[k] for r in rows]
            if _numeric(original[name]):
                cells = [float(c) if c != "" else math.nan for c in cells]
            same_column(cells, original[name])
        if path.name == "process_forces.csv":
            unit = dict(zip(names, units))
            assert unit["t"] == "s" and unit["B_x"] == "N" and unit["motor_torque"] == "N m"
