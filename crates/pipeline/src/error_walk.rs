//! The errors' causes walked: every variant of the errors that carry a foreign error (the
//! system's, OpenCV's, polars', the TOML parser's, the drawing library's, another stage's)
//! keeps it as its source, and each message of the chain is printed once (no message holds
//! its cause's words, which the command line and Python print on the next line).
//!
//! The variants are classified by exhaustive matches (no `_` arm): a variant added to one of
//! these errors does not compile here until it is said to keep a cause or not, and each one
//! said to keep a cause must be met by a real failure below.

use std::collections::BTreeSet;
use std::error::Error;
use std::path::{Path, PathBuf};

use flexbench_report::ReportError;
use flexbench_tables::TableError;
use flexbench_vision::VisionError;

use crate::PipelineError;

/// The name of a variant that keeps a foreign cause, None for one that does not (its words are
/// its own, or it is another error shown as it is).
fn pipeline_cause(e: &PipelineError) -> Option<&'static str> {
    use PipelineError as P;
    match e {
        P::Io(_) => Some("PipelineError::Io"),
        P::Toml { .. } => Some("PipelineError::Toml"),
        P::Read { .. } => Some("PipelineError::Read"),
        P::FemStep { .. } => Some("PipelineError::FemStep"),
        // Another crate's error, shown as it is (transparent: its own causes follow it).
        P::Mechanism(_)
        | P::Kinematics(_)
        | P::Table(_)
        | P::Contract(_)
        | P::Signal(_)
        | P::Report(_)
        | P::Vision(_)
        | P::Fem(_)
        | P::Flexible(_)
        | P::Render(_)
        | P::Compare(_)
        | P::Identify(_) => None,
        P::Input(_) => None,
    }
}

/// As [`pipeline_cause`], for the tables' errors.
fn table_cause(e: &TableError) -> Option<&'static str> {
    use TableError as T;
    match e {
        T::Io(_) => Some("TableError::Io"),
        T::Format { .. } => Some("TableError::Format"),
        T::Cast { .. } => Some("TableError::Cast"),
        T::Contract { .. } => Some("TableError::Contract"),
        T::NotFound { .. }
        | T::Extension { .. }
        | T::Column { .. }
        | T::Wide { .. }
        | T::Unit { .. }
        | T::Export(_)
        | T::Tracks(_) => None,
    }
}

/// As [`pipeline_cause`], for the camera's and the video's errors.
fn vision_cause(e: &VisionError) -> Option<&'static str> {
    use VisionError as V;
    match e {
        V::OpenCv { .. } => Some("VisionError::OpenCv"),
        V::Io(_) => Some("VisionError::Io"),
        V::CalibrationFile { .. } | V::Calibration(_) | V::Video { .. } | V::Tracking { .. } => {
            None
        }
    }
}

/// As [`pipeline_cause`], for the mechanism files' errors.
fn mechanism_cause(e: &flexbench_mechanism::MechanismError) -> Option<&'static str> {
    use flexbench_mechanism::MechanismError as M;
    match e {
        M::Unreadable { .. } => Some("MechanismError::Unreadable"),
        M::Unwritable { .. } => Some("MechanismError::Unwritable"),
        M::File { .. } | M::Key { .. } | M::Assembly(_) | M::Model(_) | M::Simulation { .. } => {
            None
        }
    }
}

/// As [`pipeline_cause`], for the figures' errors.
fn report_cause(e: &ReportError) -> Option<&'static str> {
    match e {
        ReportError::Draw { .. } => Some("ReportError::Draw"),
        ReportError::Empty { .. } => None,
    }
}

/// As [`pipeline_cause`], for the kinematics' errors.
fn kinematics_cause(e: &flexbench_kinematics::KinematicsError) -> Option<&'static str> {
    use flexbench_kinematics::KinematicsError as K;
    match e {
        K::Differentiate { .. } => Some("KinematicsError::Differentiate"),
        K::Fit(_) | K::Mechanism(_) => None,
    }
}

/// As [`pipeline_cause`], for the coupled simulation's errors.
fn flexible_cause(e: &flexbench_flexible::FlexError) -> Option<&'static str> {
    use flexbench_flexible::FlexError as F;
    match e {
        F::Fem { .. } => Some("FlexError::Fem"),
        F::Mechanism(_) => Some("FlexError::Mechanism"),
        F::Step { .. } => Some("FlexError::Step"),
        F::Model(_) | F::TooStiff { .. } | F::Toggle { .. } | F::Simulation { .. } => None,
    }
}

/// As [`pipeline_cause`], for the render's errors.
fn render_cause(e: &flexbench_render::RenderError) -> Option<&'static str> {
    use flexbench_render::RenderError as R;
    match e {
        R::Io(_) => Some("RenderError::Io"),
        R::Toml { .. } => Some("RenderError::Toml"),
        R::Random(_) => Some("RenderError::Random"),
        R::Spec(_) | R::Vision(_) | R::Mechanism(_) | R::Contract(_) | R::Table(_) => None,
    }
}

/// As [`pipeline_cause`], for the identification's errors.
fn identify_cause(e: &flexbench_identify::IdentifyError) -> Option<&'static str> {
    use flexbench_identify::IdentifyError as I;
    match e {
        I::LowPass { .. } => Some("IdentifyError::LowPass"),
        I::Mechanism(_) | I::NotFree { .. } | I::Input(_) | I::NothingDetermined(_) => None,
    }
}

/// `e` keeps a cause, and no message of its chain holds the words of the one after it.
fn printed_once(name: &str, e: &(dyn Error + 'static)) {
    let c = flexbench_contracts::causes(e);
    assert!(c.len() >= 2, "{name} kept no cause: {c:?}");
    for pair in c.windows(2) {
        let cause = pair[1].trim();
        assert!(
            !cause.is_empty() && !pair[0].contains(cause),
            "{name} prints its cause twice: {c:?}"
        );
    }
}

/// A scratch folder with a regular file in it, under which nothing can be made.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a folder").expect("a scratch file");
    (dir, file)
}

/// A Parquet table whose column holds lists (a file no flexbench stage writes) read as numbers:
/// polars' refusal to cast it.
fn list_column_read_as_numbers(dir: &Path) -> TableError {
    use polars::prelude::*;
    let lists = Series::new(
        "x".into(),
        [
            Series::new("".into(), [1.0, 2.0]),
            Series::new("".into(), [3.0]),
        ],
    );
    let df = DataFrame::new(2, vec![lists.into()]).expect("a frame of lists");
    flexbench_tables::opt_f64(&df, &dir.join("lists.parquet"), "x").unwrap_err()
}

/// One real failure of each kind of the numerical stages' errors that keep a cause: the
/// kinematics', the identification's and the coupled simulation's.
fn stage_failures(dir: &Path) -> Vec<(String, Box<dyn Error>)> {
    let mut out: Vec<(String, Box<dyn Error>)> = Vec::new();
    // The signal stage's refusals, as the kinematics and the identification meet them: a
    // Savitzky-Golay window shorter than its order, a low-pass above the Nyquist frequency.
    let e = flexbench_kinematics::KinematicsError::Differentiate {
        coordinate: "crank angle".into(),
        source: flexbench_signal::savgol::SavGol::new(3, 4).unwrap_err(),
    };
    let name = kinematics_cause(&e).unwrap_or("KinematicsError (own words)");
    out.push((name.into(), Box::new(e)));
    let e = flexbench_identify::IdentifyError::LowPass {
        hz: 80.0,
        source: flexbench_signal::butterworth::Design::new(2, 80.0, 100.0).unwrap_err(),
    };
    let name = identify_cause(&e).unwrap_or("IdentifyError (own words)");
    out.push((name.into(), Box::new(e)));
    // The coupled simulation's failures keep the FEM's or the mechanism's refusal: a beam of
    // no length, and a mechanism file that is not there.
    let steel = flexbench_fem::element::Section {
        young: 210e9,
        density: 7850.0,
        area: 1.5e-4,
        inertia: 4.5e-10,
    };
    let fem = flexbench_fem::Lever::new(0.0, steel).unwrap_err();
    let absent = || flexbench_mechanism::file::load(&dir.join("none.toml")).unwrap_err();
    for e in [
        flexbench_flexible::FlexError::Fem {
            body: "lever".into(),
            source: fem,
        },
        flexbench_flexible::FlexError::Mechanism(absent()),
        flexbench_flexible::FlexError::Step {
            t: 0.25,
            source: absent(),
        },
    ] {
        let name = flexible_cause(&e).unwrap_or("FlexError (own words)");
        out.push((name.into(), Box::new(e)));
    }
    out
}

/// The render's failures that keep a cause: a camera file not there, one that is not TOML, and
/// OpenCV's refusal (met here as a ragged matrix's; the seeding itself does not fail).
fn render_failures(dir: &Path, bad_toml: &Path) -> Vec<(String, Box<dyn Error>)> {
    use flexbench_render::{RenderError, RenderSpec};
    let cv = opencv::core::Mat::from_slice_2d::<f64>(&[vec![1.0], vec![1.0, 2.0]]).unwrap_err();
    let errors = [
        RenderSpec::load(&dir.join("none.toml")).unwrap_err(),
        RenderSpec::load(bad_toml).unwrap_err(),
        RenderError::Random(cv),
    ];
    let named = |e: RenderError| -> (String, Box<dyn Error>) {
        let name = render_cause(&e).unwrap_or("RenderError (own words)");
        (name.into(), Box::new(e))
    };
    errors.into_iter().map(named).collect()
}

/// One real failure of each kind: the error, and its variant's name if it keeps a cause.
fn failures(dir: &Path, file: &Path) -> Vec<(String, Box<dyn Error>)> {
    let mut out: Vec<(String, Box<dyn Error>)> = Vec::new();
    let mut pipeline = |e: PipelineError| {
        let name = pipeline_cause(&e).unwrap_or("PipelineError (own words)");
        out.push((name.into(), Box::new(e)));
    };
    pipeline(crate::ensure_dir(&file.join("out")).unwrap_err());
    let bad_toml = dir.join("bad.toml");
    std::fs::write(&bad_toml, "[run]\nmechanizm = 1\n").expect("a scratch file");
    pipeline(crate::run::PipelineFile::load(&bad_toml).unwrap_err());
    pipeline(crate::run::PipelineFile::load(&dir.join("none.toml")).unwrap_err());
    pipeline(PipelineError::FemStep {
        context: "the lever's modes at sample 3".into(),
        source: flexbench_fem::FemError::Model("young = -1".into()),
    });
    let mut table = |e: TableError| {
        let name = table_cause(&e).unwrap_or("TableError (own words)");
        out.push((name.into(), Box::new(e)));
    };
    let t = flexbench_contracts::Table::new("t");
    table(flexbench_tables::write_table(&t, &file.join("x"), "t").unwrap_err());
    let damaged = dir.join("damaged.parquet");
    std::fs::write(&damaged, b"PAR1 not a parquet file PAR1").expect("a scratch file");
    table(flexbench_tables::read_frame(&damaged).unwrap_err());
    let nan = dir.join("nan.csv");
    std::fs::write(&nan, "frame,t,marker,x,y\n0,0.0,M1,nan,0.1\n").expect("a scratch file");
    table(flexbench_tables::read_tracks(&nan).unwrap_err());
    table(list_column_read_as_numbers(dir));
    let mut vision = |e: VisionError| {
        let name = vision_cause(&e).unwrap_or("VisionError (own words)");
        out.push((name.into(), Box::new(e)));
    };
    vision(flexbench_vision::calibrate::image_files(&dir.join("no-views")).unwrap_err());
    let cv = opencv::core::Mat::from_slice_2d::<f64>(&[vec![1.0], vec![1.0, 2.0]]).unwrap_err();
    vision(VisionError::OpenCv {
        context: "a ragged matrix".into(),
        source: cv,
    });
    let fig = flexbench_report::Figure {
        caption: "c".into(),
        x_label: "time t (s)".into(),
        panels: vec![flexbench_report::Panel {
            title: "B".into(),
            y_label: "force (N)".into(),
            curves: vec![flexbench_report::Curve {
                label: "B_x".into(),
                x: vec![0.0, 1.0],
                y: vec![Some(1.0), Some(2.0)],
                band: Vec::new(),
            }],
        }],
    };
    // The TOML writer's refusal of a document that is not a table.
    let unwritable = flexbench_mechanism::MechanismError::Unwritable {
        path: "identified.toml".into(),
        source: flexbench_contracts::SharedCause::new(toml::to_string(&1.5).unwrap_err()),
    };
    for e in [
        flexbench_mechanism::file::load(&dir.join("none.toml")).unwrap_err(),
        flexbench_mechanism::file::load(&bad_toml).unwrap_err(),
        unwritable,
    ] {
        let name = mechanism_cause(&e).unwrap_or("MechanismError (own words)");
        out.push((name.into(), Box::new(e)));
    }
    out.extend(stage_failures(dir));
    out.extend(render_failures(dir, &bad_toml));
    let e = flexbench_report::write_figure(&fig, &file.join("fig")).unwrap_err();
    let name = report_cause(&e).unwrap_or("ReportError (own words)");
    out.push((name.into(), Box::new(e)));
    out
}

#[test]
fn every_foreign_error_is_kept_as_a_source_and_printed_once() {
    let (dir, file) = scratch();
    let met: BTreeSet<String> = failures(dir.path(), &file)
        .into_iter()
        .map(|(name, e)| {
            assert!(!name.contains("own words"), "{name}: {e}");
            printed_once(&name, e.as_ref());
            name
        })
        .collect();
    // The names the matches above give, read from this file: each must be met.
    let classified: BTreeSet<String> = include_str!("error_walk.rs")
        .split("=> Some(\"")
        .skip(1)
        .filter_map(|s| s.split('"').next().map(String::from))
        .collect();
    assert!(classified.len() >= 9, "{classified:?}");
    assert_eq!(
        met, classified,
        "every variant that keeps a cause, met by a real failure"
    );
}

/// The command line's message of a failure keeps the system's words (they moved from the
/// error's own message to its cause, printed on the next line).
#[test]
fn the_systems_words_are_still_printed() {
    let (_dir, file) = scratch();
    let e = crate::ensure_dir(&file.join("out")).unwrap_err();
    let c = flexbench_contracts::causes(&e);
    assert!(c[0].ends_with("cannot create the output directory; choose a writable --out"));
    assert!(c[1].contains("Not a directory"), "{c:?}");
}
