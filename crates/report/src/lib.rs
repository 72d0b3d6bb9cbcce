//! Figures and pages of flexbench. Figures are drawn with plotters as PNG and SVG side by side,
//! with units on every axis and the DejaVu Sans font compiled in (no system fonts needed); each
//! file is written atomically, so a failed run never replaces an earlier figure with a broken
//! one. The run's report page ([`page`]) holds every figure inline with the run's numbers and
//! manifest; the batch summary ([`batch`]) is one row per recording, as CSV and HTML.

#![warn(missing_docs)]

pub mod batch;
mod forces;
pub mod page;
pub mod review;

pub use forces::forces_figure;

use std::path::{Path, PathBuf};
use std::sync::Once;

use flexbench_contracts::atomic::{write_with, AtomicError};
use plotters::coord::Shift;
use plotters::prelude::*;

pub use flexbench_contracts::Cause;

/// Errors of figure output.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum ReportError {
    /// Drawing or writing failed: which figure; the drawing library's (or the system's) own
    /// error is the cause.
    #[error("figure {path}: cannot be drawn and written")]
    Draw {
        path: String,
        #[source]
        source: Cause,
    },
    /// Nothing to draw.
    #[error("figure {path}: no finite data to draw")]
    Empty { path: String },
}

impl ReportError {
    /// The figure at `path` could not be drawn or written: `e` is why.
    pub fn draw(path: &Path, e: impl Into<Cause>) -> ReportError {
        ReportError::Draw {
            path: path.display().to_string(),
            source: e.into(),
        }
    }
}

static FONT: Once = Once::new();

fn register_font() {
    FONT.call_once(|| {
        // The font is compiled in; registering a valid TrueType file cannot fail.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            include_bytes!("../fonts/DejaVuSans.ttf"),
        );
    });
}

/// One curve: a label for the legend, abscissae and ordinates (None breaks the line).
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// Legend text.
    pub label: String,
    /// Abscissae, in the figure's x unit.
    pub x: Vec<f64>,
    /// Ordinates, in the panel's y unit; None (or NaN) is a gap.
    pub y: Vec<Option<f64>>,
    /// Half-width of an uncertainty band drawn shaded about the curve (e.g. 2 sigma), same
    /// unit; empty or None where there is none.
    pub band: Vec<Option<f64>>,
}

/// A panel: stacked vertically in a figure, sharing the x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Title of the panel.
    pub title: String,
    /// The y axis' label with its unit, e.g. "force (N)".
    pub y_label: String,
    /// Curves.
    pub curves: Vec<Curve>,
}

/// A figure of stacked panels over a common x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Caption at the top.
    pub caption: String,
    /// The x axis' label with its unit, e.g. "time t (s)".
    pub x_label: String,
    /// Panels, top to bottom.
    pub panels: Vec<Panel>,
}

const COLORS: [RGBColor; 6] = [
    RGBColor(0, 90, 181),
    RGBColor(220, 50, 32),
    RGBColor(30, 30, 30),
    RGBColor(0, 150, 80),
    RGBColor(150, 80, 190),
    RGBColor(230, 140, 0),
];

fn segments(c: &Curve) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for (x, y) in c.x.iter().zip(&c.y) {
        match y {
            Some(v) if v.is_finite() && x.is_finite() => cur.push((*x, *v)),
            _ => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn range(vals: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = vals
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        return None;
    }
    let pad = if hi > lo {
        0.05 * (hi - lo)
    } else {
        lo.abs().max(1.0) * 0.05
    };
    Some((lo - pad, hi + pad))
}

/// A chart over f64 ranges on both axes.
type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Polylines in one colour, with one legend entry for them all.
fn draw_labelled<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    lines: Vec<Vec<(f64, f64)>>,
    label: &str,
    color: RGBColor,
    width: u32,
) -> Result<(), Cause>
where
    DB::ErrorType: 'static,
{
    let mut first = true;
    for l in lines {
        let s = chart.draw_series(LineSeries::new(l, color.stroke_width(width)))?;
        if first {
            s.label(label.to_string()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(width))
            });
            first = false;
        }
    }
    Ok(())
}

/// The legend box, upper right.
fn draw_legend<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>) -> Result<(), Cause>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(Cause::from)
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), Cause>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let root = root.titled(&fig.caption, ("sans-serif", 22))?;
    let areas = root.split_evenly((fig.panels.len(), 1));
    let xr = range(
        fig.panels
            .iter()
            .flat_map(|p| p.curves.iter().flat_map(|c| c.x.iter().copied())),
    )
    .ok_or("no x data")?;
    for (area, panel) in areas.iter().zip(&fig.panels) {
        let yr = range(
            panel
                .curves
                .iter()
                .flat_map(|c| c.y.iter().filter_map(|v| *v)),
        )
        .unwrap_or((-1.0, 1.0));
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 17))
            .margin(8)
            .x_label_area_size(42)
            .y_label_area_size(70)
            .build_cartesian_2d(xr.0..xr.1, yr.0..yr.1)?;
        chart
            .configure_mesh()
            .x_desc(&fig.x_label)
            .y_desc(&panel.y_label)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 15))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        for (k, c) in panel.curves.iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            // The band first, under the curves: one polygon per run of samples that have one.
            let mut run: Vec<(f64, f64, f64)> = Vec::new();
            let flush = |run: &mut Vec<(f64, f64, f64)>,
                         chart: &mut ChartContext<'_, DB, _>|
             -> Result<(), Cause> {
                if run.len() >= 2 {
                    let mut pts: Vec<(f64, f64)> = run.iter().map(|p| (p.0, p.1 + p.2)).collect();
                    pts.extend(run.iter().rev().map(|p| (p.0, p.1 - p.2)));
                    chart.draw_series(std::iter::once(Polygon::new(
                        pts,
                        color.mix(0.18).filled(),
                    )))?;
                }
                run.clear();
                Ok(())
            };
            for i in 0..c.x.len() {
                match (
                    c.y.get(i).copied().flatten(),
                    c.band.get(i).copied().flatten(),
                ) {
                    (Some(y), Some(b)) if y.is_finite() && b.is_finite() => {
                        run.push((c.x[i], y, b))
                    }
                    _ => flush(&mut run, &mut chart)?,
                }
            }
            flush(&mut run, &mut chart)?;
            draw_labelled(&mut chart, segments(c), &c.label, color, 2)?;
        }
        draw_legend(&mut chart)?;
    }
    root.present().map_err(Cause::from)
}

/// The numbers behind a figure as a CSV table (long format: panel, curve, x, y, band), the x
/// and y units in the header's names.
pub fn figure_table(fig: &Figure) -> String {
    let mut out = Vec::new();
    // Writing into a vector cannot fail.
    let _ = write_figure_table(fig, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`figure_table`] written into `w` as it is made (a long recording's figure tables are tens
/// of megabytes: not held whole).
pub fn write_figure_table(fig: &Figure, w: &mut impl std::io::Write) -> std::io::Result<()> {
    writeln!(
        w,
        "panel,curve,x [{}],y,band_half_width",
        csv_field(&fig.x_label)
    )?;
    let finite = |v: Option<&Option<f64>>| v.copied().flatten().filter(|v| v.is_finite());
    for p in &fig.panels {
        let panel = csv_field(&format!("{} [{}]", p.title, p.y_label));
        for c in &p.curves {
            let label = csv_field(&c.label);
            for (i, x) in c.x.iter().enumerate() {
                write!(w, "{panel},{label},{x},")?;
                if let Some(y) = finite(c.y.get(i)) {
                    write!(w, "{y}")?;
                }
                w.write_all(b",")?;
                if let Some(b) = finite(c.band.get(i)) {
                    write!(w, "{b}")?;
                }
                w.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}

/// A number as the tables write it: shortest round-trip form.
fn num(v: f64) -> String {
    format!("{v}")
}

/// A CSV field, quoted when it holds a comma, a quote or a newline.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn write_text(path: &Path, text: &str) -> Result<(), ReportError> {
    flexbench_contracts::atomic::write_bytes(path, text.as_bytes())
        .map_err(|e| ReportError::draw(path, e))
}

/// Draw `fig` as `<stem>.png` (1400 px wide) and `<stem>.svg`, and write the numbers behind it
/// as `<stem>.figure.csv`; returns the PNG and SVG paths.
pub fn write_figure(fig: &Figure, stem: &Path) -> Result<[PathBuf; 2], ReportError> {
    register_font();
    let has_data = fig
        .panels
        .iter()
        .any(|p| p.curves.iter().any(|c| !segments(c).is_empty()));
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    if !has_data {
        return Err(ReportError::Empty {
            path: png.display().to_string(),
        });
    }
    let height = 120 + 330 * fig.panels.len() as u32;
    let map = |p: &Path, e: AtomicError<Cause>| match e {
        AtomicError::Fill(r) => ReportError::draw(p, r),
        AtomicError::Io(_, e) => ReportError::draw(p, e),
    };
    write_with(&png, |tmp| {
        draw(
            BitMapBackend::new(tmp, (1400, height)).into_drawing_area(),
            fig,
        )
    })
    .map_err(|e| map(&png, e))?;
    write_with(&svg, |tmp| {
        draw(
            SVGBackend::new(tmp, (1400, height)).into_drawing_area(),
            fig,
        )
    })
    .map_err(|e| map(&svg, e))?;
    let csv = stem.with_extension("figure.csv");
    write_with(&csv, |tmp| -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(std::fs::File::create(tmp)?);
        write_figure_table(fig, &mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    })
    .map_err(|e| match e {
        AtomicError::Fill(e) | AtomicError::Io(_, e) => ReportError::draw(&csv, e),
    })?;
    Ok([png, svg])
}

/// A path of a plane figure: its legend label and its points (x, y; a None breaks the line).
pub type LabelledPath = (String, Vec<Option<(f64, f64)>>);

/// A figure of a plane drawn with equal scales on both axes (trajectories in the bench frame,
/// points over an image): paths, and arrows for a vector field.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaneFigure {
    /// Caption at the top.
    pub caption: String,
    /// The x axis' label with its unit.
    pub x_label: String,
    /// The y axis' label with its unit.
    pub y_label: String,
    /// True when y grows downward (image rows).
    pub y_down: bool,
    /// Paths (a None breaks the line), each with a legend label.
    pub paths: Vec<LabelledPath>,
    /// Arrows: their groups' legend labels.
    pub arrow_groups: Vec<String>,
    /// Arrows: (group, x, y, vx, vy) with the vector in its own unit.
    pub arrows: Vec<(usize, f64, f64, f64, f64)>,
    /// Plot units per vector unit (e.g. m per m/s^2): an arrow is drawn `scale * (vx, vy)` long.
    pub scale: f64,
    /// The vector's unit, for the table (e.g. "m/s^2").
    pub vector_unit: String,
}

fn draw_plane<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    fig: &PlaneFigure,
    xr: (f64, f64),
    yr: (f64, f64),
) -> Result<(), Cause>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let root = root.titled(&fig.caption, ("sans-serif", 22))?;
    let sign = if fig.y_down { -1.0 } else { 1.0 };
    let (y0, y1) = if fig.y_down { (-yr.1, -yr.0) } else { yr };
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(76)
        .build_cartesian_2d(xr.0..xr.1, y0..y1)?;
    // Tick labels with as many decimals as a tenth of the range needs.
    let decimals = |lo: f64, hi: f64| {
        (-(((hi - lo) / 10.0).abs().max(1e-300)).log10().floor()).max(0.0) as usize
    };
    let dy = decimals(y0, y1);
    let dx = decimals(xr.0, xr.1);
    let yfmt = move |v: &f64| format!("{:.*}", dy, sign * *v + 0.0);
    let xfmt = move |v: &f64| format!("{:.*}", dx, *v);
    chart
        .configure_mesh()
        .x_desc(&fig.x_label)
        .y_desc(&fig.y_label)
        .y_label_formatter(&yfmt)
        .x_label_formatter(&xfmt)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    for (k, (label, pts)) in fig.paths.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let curve = Curve {
            label: label.clone(),
            x: pts
                .iter()
                .map(|p| p.map(|p| p.0).unwrap_or(f64::NAN))
                .collect(),
            y: pts.iter().map(|p| p.map(|p| sign * p.1)).collect(),
            band: Vec::new(),
        };
        draw_labelled(&mut chart, segments(&curve), label, color, 2)?;
    }
    for (g, label) in fig.arrow_groups.iter().enumerate() {
        let color = COLORS[(g + fig.paths.len()) % COLORS.len()];
        let mut lines = Vec::new();
        for &(_, x, y, vx, vy) in fig.arrows.iter().filter(|a| a.0 == g) {
            let (dx, dy) = (fig.scale * vx, sign * fig.scale * vy);
            let (x, y) = (x, sign * y);
            let len = dx.hypot(dy);
            if !(len.is_finite() && len > 0.0) {
                continue;
            }
            let (tx, ty) = (x + dx, y + dy);
            let head = 0.3 * len;
            let back = (-dx / len, -dy / len);
            let rot = |c: f64, s: f64| (back.0 * c - back.1 * s, back.0 * s + back.1 * c);
            let (a, b) = (rot(0.94, 0.34), rot(0.94, -0.34));
            lines.push(vec![(x, y), (tx, ty)]);
            lines.push(vec![
                (tx + head * a.0, ty + head * a.1),
                (tx, ty),
                (tx + head * b.0, ty + head * b.1),
            ]);
        }
        draw_labelled(&mut chart, lines, label, color, 1)?;
    }
    draw_legend(&mut chart)?;
    root.present().map_err(Cause::from)
}

/// The numbers behind a plane figure (CSV: kind, label, x, y, vx, vy).
pub fn plane_table(fig: &PlaneFigure) -> String {
    let mut s = format!(
        "kind,label,x [{}],y [{}],vx [{u}],vy [{u}]\n",
        csv_field(&fig.x_label),
        csv_field(&fig.y_label),
        u = csv_field(&fig.vector_unit)
    );
    for (label, pts) in &fig.paths {
        for p in pts {
            match p {
                Some((x, y)) => s.push_str(&format!(
                    "path,{},{},{},,\n",
                    csv_field(label),
                    num(*x),
                    num(*y)
                )),
                None => s.push_str(&format!("path,{},,,,\n", csv_field(label))),
            }
        }
    }
    for &(g, x, y, vx, vy) in &fig.arrows {
        s.push_str(&format!(
            "arrow,{},{},{},{},{}\n",
            csv_field(fig.arrow_groups.get(g).map(String::as_str).unwrap_or("")),
            num(x),
            num(y),
            num(vx),
            num(vy)
        ));
    }
    s
}

/// Draw a plane figure as `<stem>.png` and `<stem>.svg` with equal scales on both axes, and its
/// numbers as `<stem>.figure.csv`; returns the PNG and SVG paths.
pub fn write_plane_figure(fig: &PlaneFigure, stem: &Path) -> Result<[PathBuf; 2], ReportError> {
    register_font();
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    let mut xs: Vec<f64> = Vec::new();
    let mut ys: Vec<f64> = Vec::new();
    for (_, pts) in &fig.paths {
        for (x, y) in pts.iter().flatten() {
            xs.push(*x);
            ys.push(*y);
        }
    }
    for &(_, x, y, vx, vy) in &fig.arrows {
        xs.extend([x, x + fig.scale * vx]);
        ys.extend([y, y + fig.scale * vy]);
    }
    let (Some(mut xr), Some(mut yr)) = (range(xs.into_iter()), range(ys.into_iter())) else {
        return Err(ReportError::Empty {
            path: png.display().to_string(),
        });
    };
    // Equal scales: the plot area's aspect follows the data's, within limits, and the shorter
    // range is widened to keep one unit the same length on both axes.
    let width = 1400u32;
    let (plot_w, margins_h) = (width as f64 - 76.0 - 24.0, 46.0 + 24.0 + 40.0);
    let aspect = ((yr.1 - yr.0) / (xr.1 - xr.0)).clamp(0.3, 1.0);
    let plot_h = plot_w * aspect;
    let height = (plot_h + margins_h).round() as u32;
    let (sx, sy) = ((xr.1 - xr.0) / plot_w, (yr.1 - yr.0) / plot_h);
    if sx > sy {
        let c = 0.5 * (yr.0 + yr.1);
        let h = 0.5 * sx * plot_h;
        yr = (c - h, c + h);
    } else {
        let c = 0.5 * (xr.0 + xr.1);
        let w = 0.5 * sy * plot_w;
        xr = (c - w, c + w);
    }
    let map = |p: &Path, e: AtomicError<Cause>| match e {
        AtomicError::Fill(r) => ReportError::draw(p, r),
        AtomicError::Io(_, e) => ReportError::draw(p, e),
    };
    write_with(&png, |tmp| {
        draw_plane(
            BitMapBackend::new(tmp, (width, height)).into_drawing_area(),
            fig,
            xr,
            yr,
        )
    })
    .map_err(|e| map(&png, e))?;
    write_with(&svg, |tmp| {
        draw_plane(
            SVGBackend::new(tmp, (width, height)).into_drawing_area(),
            fig,
            xr,
            yr,
        )
    })
    .map_err(|e| map(&svg, e))?;
    write_text(&stem.with_extension("figure.csv"), &plane_table(fig))?;
    Ok([png, svg])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figure's table, cell by cell: names with a comma quoted, the units in the header,
    /// absent and non-finite values and bands left empty, numbers in their shortest form; the
    /// same bytes written to a file as made in memory.
    #[test]
    fn figure_table_cells() {
        let fig = Figure {
            caption: "c".into(),
            x_label: "time, t (s)".into(),
            panels: vec![Panel {
                title: "B".into(),
                y_label: "force (N)".into(),
                curves: vec![Curve {
                    label: "B_x, fitted".into(),
                    x: vec![0.0, 0.5, 1.25],
                    y: vec![Some(1.5), None, Some(f64::NAN)],
                    band: vec![Some(0.1), Some(f64::INFINITY)],
                }],
            }],
        };
        let text = figure_table(&fig);
        assert_eq!(
            text,
            "panel,curve,x [\"time, t (s)\"],y,band_half_width\n\
             B [force (N)],\"B_x, fitted\",0,1.5,0.1\n\
             B [force (N)],\"B_x, fitted\",0.5,,\n\
             B [force (N)],\"B_x, fitted\",1.25,,\n"
        );
        let dir = std::env::temp_dir().join(format!("flexbench-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_figure(&fig, &dir.join("f")).unwrap();
        let written = std::fs::read_to_string(dir.join("f.figure.csv")).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(written, text);
    }

    #[test]
    fn writes_png_and_svg_with_gaps() {
        let dir = std::env::temp_dir().join(format!("flexbench-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let x: Vec<f64> = (0..100).map(|k| k as f64 * 0.01).collect();
        let y: Vec<Option<f64>> = x
            .iter()
            .enumerate()
            .map(|(k, t)| {
                if (40..45).contains(&k) {
                    None
                } else {
                    Some(t.sin())
                }
            })
            .collect();
        let fig = Figure {
            caption: "test".into(),
            x_label: "time t (s)".into(),
            panels: vec![Panel {
                title: "p".into(),
                y_label: "force (N)".into(),
                curves: vec![Curve {
                    label: "sin".into(),
                    x,
                    y,
                    band: Vec::new(),
                }],
            }],
        };
        let [png, svg] = write_figure(&fig, &dir.join("fig")).unwrap();
        let png_bytes = std::fs::read(&png).unwrap();
        assert_eq!(&png_bytes[1..4], b"PNG");
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("force (N)") && text.contains("time t (s)"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
