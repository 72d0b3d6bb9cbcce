//! Figures of flexbench, drawn with plotters as PNG and SVG side by side, with units on every
//! axis and the DejaVu Sans font compiled in (no system fonts needed). Each file is written
//! atomically, so a failed run never replaces an earlier figure with a broken one.

#![warn(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Once;

use flexbench_contracts::atomic::{write_with, AtomicError};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Errors of figure output.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // the fields are named in each variant's message
pub enum ReportError {
    /// Drawing or writing failed.
    #[error("figure {path}: {reason}")]
    Draw { path: String, reason: String },
    /// Nothing to draw.
    #[error("figure {path}: no finite data to draw")]
    Empty { path: String },
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
    let (lo, hi) = vals.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        return None;
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { lo.abs().max(1.0) * 0.05 };
    Some((lo - pad, hi + pad))
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root.titled(&fig.caption, ("sans-serif", 22)).map_err(|e| e.to_string())?;
    let areas = root.split_evenly((fig.panels.len(), 1));
    let xr = range(fig.panels.iter().flat_map(|p| p.curves.iter().flat_map(|c| c.x.iter().copied()))).ok_or("no x data")?;
    for (area, panel) in areas.iter().zip(&fig.panels) {
        let yr = range(panel.curves.iter().flat_map(|c| c.y.iter().filter_map(|v| *v))).unwrap_or((-1.0, 1.0));
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 17))
            .margin(8)
            .x_label_area_size(42)
            .y_label_area_size(70)
            .build_cartesian_2d(xr.0..xr.1, yr.0..yr.1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(&fig.x_label)
            .y_desc(&panel.y_label)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 15))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| e.to_string())?;
        for (k, c) in panel.curves.iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            // The band first, under the curves: one polygon per run of samples that have one.
            let mut run: Vec<(f64, f64, f64)> = Vec::new();
            let flush = |run: &mut Vec<(f64, f64, f64)>, chart: &mut ChartContext<'_, DB, _>| -> Result<(), String> {
                if run.len() >= 2 {
                    let mut pts: Vec<(f64, f64)> = run.iter().map(|p| (p.0, p.1 + p.2)).collect();
                    pts.extend(run.iter().rev().map(|p| (p.0, p.1 - p.2)));
                    chart.draw_series(std::iter::once(Polygon::new(pts, color.mix(0.18).filled()))).map_err(|e| e.to_string())?;
                }
                run.clear();
                Ok(())
            };
            for i in 0..c.x.len() {
                match (c.y.get(i).copied().flatten(), c.band.get(i).copied().flatten()) {
                    (Some(y), Some(b)) if y.is_finite() && b.is_finite() => run.push((c.x[i], y, b)),
                    _ => flush(&mut run, &mut chart)?,
                }
            }
            flush(&mut run, &mut chart)?;
            let mut first = true;
            for seg in segments(c) {
                let s = chart.draw_series(LineSeries::new(seg, color.stroke_width(2))).map_err(|e| e.to_string())?;
                if first {
                    s.label(c.label.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                    first = false;
                }
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// Draw `fig` as `<stem>.png` (1400 px wide) and `<stem>.svg`; returns both paths.
pub fn write_figure(fig: &Figure, stem: &Path) -> Result<[PathBuf; 2], ReportError> {
    register_font();
    let has_data = fig.panels.iter().any(|p| p.curves.iter().any(|c| !segments(c).is_empty()));
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    if !has_data {
        return Err(ReportError::Empty { path: png.display().to_string() });
    }
    let height = 120 + 330 * fig.panels.len() as u32;
    let err = |p: &Path, reason: String| ReportError::Draw { path: p.display().to_string(), reason };
    let map = |p: &Path, e: AtomicError<String>| match e {
        AtomicError::Fill(r) => err(p, r),
        AtomicError::Io(_, e) => err(p, e.to_string()),
    };
    write_with(&png, |tmp| draw(BitMapBackend::new(tmp, (1400, height)).into_drawing_area(), fig)).map_err(|e| map(&png, e))?;
    write_with(&svg, |tmp| draw(SVGBackend::new(tmp, (1400, height)).into_drawing_area(), fig)).map_err(|e| map(&svg, e))?;
    Ok([png, svg])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_png_and_svg_with_gaps() {
        let dir = std::env::temp_dir().join(format!("flexbench-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let x: Vec<f64> = (0..100).map(|k| k as f64 * 0.01).collect();
        let y: Vec<Option<f64>> = x.iter().enumerate().map(|(k, t)| if (40..45).contains(&k) { None } else { Some(t.sin()) }).collect();
        let fig = Figure {
            caption: "test".into(),
            x_label: "time t (s)".into(),
            panels: vec![Panel { title: "p".into(), y_label: "force (N)".into(), curves: vec![Curve { label: "sin".into(), x, y, band: Vec::new() }] }],
        };
        let [png, svg] = write_figure(&fig, &dir.join("fig")).unwrap();
        let png_bytes = std::fs::read(&png).unwrap();
        assert_eq!(&png_bytes[1..4], b"PNG");
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("force (N)") && text.contains("time t (s)"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
