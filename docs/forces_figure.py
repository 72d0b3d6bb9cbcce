"""The forces figure of `flexbench process`, drawn in Python from a tracks file.

The liaison forces at B (of the crank on the lever) and at C' (of the rocker on the lever),
their components in the bench frame with the 2-sigma bands of the smoother and their
magnitudes, against time: the figure the process stage writes as forces.png, made here with
the flexbench Python package and matplotlib so that a report's figure can be restyled.

    pip install '.[figures]'        # the package and matplotlib, from the repository's root
    python docs/forces_figure.py recordings/default/truth/tracks.csv \
        --mechanism mechanisms/wind-pump.toml --out forces.png

Writes forces.png and forces.svg, and forces.figure.csv: every point drawn (panel, curve, time,
value, band half-width), in the layout of the process stage's own forces.figure.csv, so the two
can be compared number for number.
"""

import argparse
import csv
import math
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

import flexbench as fb  # noqa: E402

PANELS = [
    ("B", "B: force of the crank on the lever"),
    ("C", "C': force of the rocker on the lever"),
]
Y_LABEL = "force (N), bench frame"
COLORS = ["#1560bd", "#d62d20", "black"]  # the process stage's: x, y, magnitude
X_LABEL = "time t (s)"


def curves(forces, joint):
    """The panel's curves: the components with their 2-sigma half-widths, and the magnitude."""
    t = forces["t"].to_list()
    x, y = forces[f"{joint}_x"].to_list(), forces[f"{joint}_y"].to_list()
    out = []
    for name, values in ((f"{joint}_x", x), (f"{joint}_y", y)):
        sigma = forces[f"{name}_sigma"].to_list() if f"{name}_sigma" in forces.columns else None
        band = [2.0 * s if s is not None else None for s in sigma] if sigma else None
        out.append((name, values, band))
    magnitude = [math.hypot(a, b) if a is not None and b is not None else None for a, b in zip(x, y)]
    out.append((f"|{joint}|", magnitude, None))
    return t, out


def draw(forces, caption, stem):
    """The figure as PNG and SVG, and its numbers as CSV, at `stem`."""
    fig, axes = plt.subplots(len(PANELS), 1, sharex=True, figsize=(9, 7), constrained_layout=True)
    rows = []
    for ax, (joint, title) in zip(axes, PANELS):
        t, panel = curves(forces, joint)
        for (name, values, band), color in zip(panel, COLORS):
            y = [v if v is not None else math.nan for v in values]
            line, = ax.plot(t, y, label=name, linewidth=1.2, color=color)
            if band is not None:
                lo = [v - b if v is not None and b is not None else math.nan for v, b in zip(values, band)]
                hi = [v + b if v is not None and b is not None else math.nan for v, b in zip(values, band)]
                ax.fill_between(t, lo, hi, color=line.get_color(), alpha=0.25, linewidth=0)
            for k, v in enumerate(values):
                b = band[k] if band is not None else None
                rows.append((f"{title} [{Y_LABEL}]", name, t[k], v, b))
        ax.set_title(title)
        ax.set_ylabel(Y_LABEL)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel(X_LABEL)
    fig.suptitle(caption, fontsize="medium")
    for ext in ("png", "svg"):
        fig.savefig(f"{stem}.{ext}", dpi=150)
    plt.close(fig)
    with open(f"{stem}.figure.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["panel", "curve", f"x [{X_LABEL}]", "y", "band_half_width"])
        for panel, curve, x, y, b in rows:
            w.writerow([panel, curve, repr(x), "" if y is None else repr(y), "" if b is None else repr(b)])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tracks", help="tracks table (CSV or Parquet: frame, t, marker, x, y in m)")
    ap.add_argument("--mechanism", required=True, help="mechanism file (TOML)")
    ap.add_argument("--out", default="forces.png", help="the figure (PNG; SVG and CSV beside it)")
    ap.add_argument("--method", default=None, help="kinematics: smoother (default), savgol, butterworth, spline")
    ap.add_argument("--keep", default=None, help="also keep the process stage's tables in this folder")
    args = ap.parse_args(argv)
    settings = {"method": args.method} if args.method else {}
    try:
        p = fb.process(args.tracks, mechanism=args.mechanism, out=args.keep, **settings)
    except fb.FlexbenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    stem = str(pathlib.Path(args.out).with_suffix(""))
    bands = "B_x_sigma" in p.forces.columns
    caption = (
        f"{p.summary['mechanism']}: liaison forces from {pathlib.Path(args.tracks).name}"
        + (" (bands: 2 sigma of the smoother)" if bands else " (no bands: a filter's forces)")
    )
    draw(p.forces, caption, stem)
    print(f"wrote {stem}.png, {stem}.svg and {stem}.figure.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
