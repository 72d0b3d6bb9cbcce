//! The run's report page: one self-contained HTML file holding every figure of the run (inline
//! SVG, each with its caption and the table of its numbers), the notes of the stages (their
//! numbers in words and tables), the warnings, the inputs with their hashes and the parameters
//! of every stage (from the run's manifest).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use flexbench_contracts::manifest::Manifest;

use crate::{write_figure, write_plane_figure, Figure, PlaneFigure, ReportError};

/// Escape text for HTML (`&`, `<`, `>`, `"`).
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A piece of a note's paragraph: plain or bold text (escaped when the page is written).
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    /// Plain text.
    Text(String),
    /// Bold text (a key number).
    Bold(String),
    /// A link to a file of the run, relative to the page (the overlay video).
    Link {
        /// The words shown.
        text: String,
        /// Where it leads, relative to the report's folder.
        href: String,
    },
}

/// A block of a note: a paragraph, or a table (a header row and rows of cells, the first
/// column left-aligned by the page's style).
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A paragraph of spans.
    Paragraph(Vec<Span>),
    /// A table.
    Table {
        /// The column headings, with units.
        header: Vec<String>,
        /// The rows, one cell per heading.
        rows: Vec<Vec<String>>,
    },
}

/// A section of notes on the page: its title and its blocks, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// The section's title.
    pub section: String,
    /// Its paragraphs and tables.
    pub blocks: Vec<Block>,
}

impl Note {
    /// An empty section titled `section`.
    pub fn new(section: &str) -> Note {
        Note {
            section: section.into(),
            blocks: Vec::new(),
        }
    }

    /// The section with a paragraph of plain text.
    pub fn text(self, text: impl Into<String>) -> Note {
        self.paragraph(vec![Span::Text(text.into())])
    }

    /// The section with a paragraph of spans.
    pub fn paragraph(mut self, spans: Vec<Span>) -> Note {
        self.blocks.push(Block::Paragraph(spans));
        self
    }

    /// The section with a table.
    pub fn table(mut self, header: &[&str], rows: Vec<Vec<String>>) -> Note {
        self.blocks.push(Block::Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
        });
        self
    }

    /// The section's body as HTML, every text escaped.
    pub fn body_html(&self) -> String {
        let mut h = String::new();
        for b in &self.blocks {
            match b {
                Block::Paragraph(spans) => {
                    h.push_str("<p>");
                    for s in spans {
                        match s {
                            Span::Text(t) => h.push_str(&esc(t)),
                            Span::Bold(t) => {
                                let _ = write!(h, "<b>{}</b>", esc(t));
                            }
                            Span::Link { text, href } => {
                                let _ = write!(h, "<a href=\"{}\">{}</a>", esc(href), esc(text));
                            }
                        }
                    }
                    h.push_str("</p>");
                }
                Block::Table { header, rows } => {
                    h.push_str("<table><tr>");
                    for c in header {
                        let _ = write!(h, "<th>{}</th>", esc(c));
                    }
                    h.push_str("</tr>");
                    for r in rows {
                        h.push_str("<tr>");
                        for c in r {
                            let _ = write!(h, "<td>{}</td>", esc(c));
                        }
                        h.push_str("</tr>");
                    }
                    h.push_str("</table>");
                }
            }
        }
        h
    }
}

/// One figure on the page: the stage folder it is in (its name in the run), its stem (the SVG
/// is `<stem>.svg`, its numbers `<stem>.figure.csv`), its caption.
#[derive(Debug, Clone, PartialEq)]
pub struct PageFigure {
    /// The stage whose folder holds it.
    pub stage: &'static str,
    /// Its path without extension.
    pub stem: PathBuf,
    /// Its caption, in words.
    pub caption: String,
}

/// The mechanism as the page's first line names it.
#[derive(Debug, Clone, PartialEq)]
pub struct MechanismLine {
    /// The mechanism's name.
    pub name: String,
    /// Moving bodies.
    pub bodies: usize,
    /// Joints.
    pub joints: usize,
    /// Markers.
    pub markers: usize,
}

/// What a report page gathers while its figures are written: the files written, the figures to
/// show (with their captions) and the notes, in the page's order.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPage {
    out: PathBuf,
    /// The files written so far (figures, tables).
    pub files: Vec<PathBuf>,
    figures: Vec<PageFigure>,
    notes: Vec<Note>,
}

impl RunPage {
    /// An empty page whose own figures go into the folder `out` (the report stage's).
    pub fn new(out: &Path) -> RunPage {
        RunPage {
            out: out.to_path_buf(),
            files: Vec::new(),
            figures: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The folder of the page's own files.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// A plane figure of the page's own, written as `<stem>.png/.svg`, and shown with `caption`.
    pub fn plane(
        &mut self,
        fig: &PlaneFigure,
        stem: &str,
        caption: String,
    ) -> Result<(), ReportError> {
        self.files
            .extend(write_plane_figure(fig, &self.out.join(stem))?);
        self.show(stem, caption);
        Ok(())
    }

    /// A figure of panels of the page's own, written as `<stem>.png/.svg`, and shown with
    /// `caption`.
    pub fn figure(&mut self, fig: &Figure, stem: &str, caption: String) -> Result<(), ReportError> {
        self.files.extend(write_figure(fig, &self.out.join(stem))?);
        self.show(stem, caption);
        Ok(())
    }

    fn show(&mut self, stem: &str, caption: String) {
        self.figures.push(PageFigure {
            stage: "report",
            stem: self.out.join(stem),
            caption,
        });
    }

    /// A figure an earlier stage drew in `dir` (as `<stem>.svg`), shown when it is there.
    pub fn show_from(&mut self, stage: &'static str, dir: &Path, stem: &str, caption: &str) {
        if dir.join(format!("{stem}.svg")).exists() {
            self.figures.push(PageFigure {
                stage,
                stem: dir.join(stem),
                caption: caption.into(),
            });
        }
    }

    /// A section of notes.
    pub fn note(&mut self, note: Note) {
        self.notes.push(note);
    }

    /// The figures shown so far.
    pub fn figure_count(&self) -> usize {
        self.figures.len()
    }

    /// The page: title, mechanism and how to repeat the run, warnings, inputs, build and
    /// parameters (from `manifest`), the notes, then every figure inline. Errors when a figure's
    /// SVG cannot be read.
    pub fn html(
        &self,
        title: &str,
        mech: &MechanismLine,
        manifest: &Manifest,
        warnings: &[String],
    ) -> Result<String, ReportError> {
        let mut h = head(title);
        let _ = writeln!(h, "<p>Mechanism: {} ({} bodies, {} joints, {} markers). Repeat this run with <code>{}</code>; the manifest below fixes its inputs and build.</p>", esc(&mech.name), mech.bodies, mech.joints, mech.markers, esc(&manifest.repeat));
        if !warnings.is_empty() {
            h.push_str("<h2>Warnings</h2><ul>");
            for w in warnings {
                let _ = write!(h, "<li class=\"warn\">{}</li>", esc(w));
            }
            h.push_str("</ul>\n");
        }
        inputs(&mut h, manifest);
        for note in &self.notes {
            let _ = write!(h, "<h2>{}</h2>\n{}\n", esc(&note.section), note.body_html());
        }
        h.push_str("<h2>Figures</h2>\n");
        for (k, f) in self.figures.iter().enumerate() {
            figure(&mut h, k + 1, f)?;
        }
        // Lets a headless browser (and the test) see that every figure decoded and rendered.
        h.push_str("<script>window.addEventListener('load',function(){var im=document.images,ok=0;for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0)ok++;}document.body.setAttribute('data-figures',im.length);document.body.setAttribute('data-rendered',ok);});</script>\n");
        h.push_str("</body></html>\n");
        Ok(h)
    }
}

/// The page's head (title and style) and its heading.
fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}\
h1{{font-size:1.6em}}h2{{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}}\
table{{border-collapse:collapse;margin:.6em 0;font-size:.9em}}td,th{{border:1px solid #ccc;padding:.25em .5em;text-align:right}}\
th{{background:#f3f3f3}}td:first-child{{text-align:left}}figure{{margin:1.2em 0}}figure img{{width:100%;border:1px solid #ddd}}\
figcaption{{font-size:.9em;color:#333;margin-top:.3em}}code,pre{{font-size:.85em;background:#f7f7f7}}pre{{padding:.6em;overflow-x:auto}}\
.warn{{color:#a40}}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(title)
    )
}

/// The inputs' table, the build and seed, and the parameters of every stage.
fn inputs(h: &mut String, manifest: &Manifest) {
    h.push_str("<h2>Inputs</h2><table><tr><th>input</th><th>path</th><th>SHA-256</th></tr>");
    for (k, v) in &manifest.inputs {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(k),
            esc(&v.path),
            esc(&v.sha256)
        );
    }
    let _ = writeln!(
        h,
        "</table><p>flexbench {}, OpenCV {}; build <code>{}</code>; seed of the rendered recording: {}.</p>",
        esc(&manifest.flexbench),
        esc(&manifest.opencv),
        esc(&manifest.build),
        manifest.seed.map(|s| s.to_string()).unwrap_or_else(|| "none (not rendered)".into())
    );
    let params = serde_json::to_string_pretty(&manifest.parameters).unwrap_or_default();
    let _ = writeln!(
        h,
        "<details><summary>Parameters of every stage</summary><pre>{}</pre></details>",
        esc(&params)
    );
}

/// An SVG of `width` x `height` px that shows the PNG image `png` (base64 inside): a raster
/// (the contact sheet of video crops) shown on the page like every figure.
pub fn png_svg(png: &[u8], width: u32, height: u32) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(png);
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\"><image width=\"{width}\" height=\"{height}\" href=\"data:image/png;base64,{b64}\"/></svg>"
    )
}

/// Figure `n`: its SVG inline (base64), its caption and where its numbers are.
fn figure(h: &mut String, n: usize, f: &PageFigure) -> Result<(), ReportError> {
    let svg = f.stem.with_extension("svg");
    let bytes = std::fs::read(&svg).map_err(|e| ReportError::draw(&svg, e))?;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let table = f.stem.with_extension("figure.csv");
    let table_note = match table.file_name().filter(|_| table.exists()) {
        Some(name) => format!(
            " Numbers: <code>{}/{}</code>.",
            f.stage,
            esc(&name.to_string_lossy())
        ),
        None => String::new(),
    };
    let _ = writeln!(h, "<figure id=\"fig{n}\"><img alt=\"Figure {n}\" src=\"data:image/svg+xml;base64,{b64}\"><figcaption><b>Figure {n}.</b> {}{table_note}</figcaption></figure>", esc(&f.caption));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_escape_every_text_and_keep_their_order() {
        let note = Note::new("Peak <forces>")
            .paragraph(vec![
                Span::Text("largest ".into()),
                Span::Bold("14.3 m/s²".into()),
                Span::Text(" at \"M3\" & B".into()),
            ])
            .table(&["joint", "|F| (N)"], vec![vec!["C'".into(), "<1>".into()]]);
        assert_eq!(
            note.body_html(),
            "<p>largest <b>14.3 m/s²</b> at &quot;M3&quot; &amp; B</p><table><tr><th>joint</th><th>|F| (N)</th></tr><tr><td>C'</td><td>&lt;1&gt;</td></tr></table>"
        );
        assert_eq!(esc(&note.section), "Peak &lt;forces&gt;");
    }
}
