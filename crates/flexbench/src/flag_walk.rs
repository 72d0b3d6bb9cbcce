//! One verb, one behaviour: every option of a stage's command walked against the pipeline
//! file's section of that stage. Each option given on the command line must write the same
//! section as its key in the file (so that the one conversion, `config`, accepts or refuses
//! both alike), must change the section (an option read and ignored fails), and every key of
//! the section must be reachable from the command line. The section's keys are read from
//! serde's own refusal of an unknown key, so a key added to a section without its option, or
//! an option added without its case here, fails the walk.

use std::collections::BTreeSet;
use std::fmt::Debug;

use clap::{Args, FromArgMatches};
use serde::de::DeserializeOwned;

/// One option's case: the command line's words (the option and its value) and the same
/// setting as the pipeline file's TOML line(s) of the section.
pub struct Case {
    /// The option's words, e.g. `["--window", "9"]`.
    pub cli: &'static [&'static str],
    /// The same in the section's TOML, e.g. `window = 9`.
    pub toml: &'static str,
}

/// The options that name the stage's inputs and outputs (not settings), with a value each.
pub struct Inputs(pub &'static [(&'static str, &'static str)]);

/// The keys a `deny_unknown_fields` section has (the pipeline crate's reading of serde's
/// refusal of an unknown key).
fn section_keys<S: DeserializeOwned>() -> BTreeSet<String> {
    flexbench_pipeline::pipeline_file::section_keys::<S>()
        .into_iter()
        .collect()
}

/// Parse a command's arguments (the inputs, then `words`) into its argument struct.
fn parse<A: Args + FromArgMatches>(inputs: &Inputs, words: &[&str]) -> Result<A, String> {
    let cmd = A::augment_args(clap::Command::new("stage").no_binary_name(true));
    let mut argv: Vec<String> = Vec::new();
    for (flag, value) in inputs.0 {
        argv.push(format!("--{flag}"));
        argv.push(value.to_string());
    }
    argv.extend(words.iter().map(|w| w.to_string()));
    let matches = cmd.try_get_matches_from(argv).map_err(|e| e.to_string())?;
    A::from_arg_matches(&matches).map_err(|e| e.to_string())
}

/// Walk every option of `A` (the command's arguments) against the section `S`: see the
/// module's comment. `section` is the command's own conversion of its flags into the section;
/// `defaults` the options that write the default on purpose (`--smoother`).
pub fn walk<A, S>(inputs: Inputs, cases: &[Case], defaults: &[&str], section: impl Fn(&A) -> S)
where
    A: Args + FromArgMatches,
    S: DeserializeOwned + Default + PartialEq + Debug,
{
    let base = Base {
        inputs,
        toml: "",
        elsewhere: &[],
        run_only: &[],
    };
    walk_on(base, cases, defaults, section)
}

/// A command's required words that are also keys of its section (`identify --free k` is
/// `free = ["k"]`): the inputs given with every case, and the same keys in TOML.
pub struct Base {
    /// The options given with every case.
    pub inputs: Inputs,
    /// The section's keys those options write.
    pub toml: &'static str,
    /// The options naming another mode's inputs, not given in the walk (`calibrate --views`
    /// beside `--from-motion TRACKS`): neither settings nor given with every case.
    pub elsewhere: &'static [&'static str],
    /// The section's keys that only a run reads (`[overlay] enabled`: whether the run has the
    /// stage at all), which the stage's own command has no option for.
    pub run_only: &'static [&'static str],
}

/// [`walk`] over a base: every case adds its option to the base's words and its key to the
/// base's TOML; the no-option section is the base's.
pub fn walk_on<A, S>(base: Base, cases: &[Case], defaults: &[&str], section: impl Fn(&A) -> S)
where
    A: Args + FromArgMatches,
    S: DeserializeOwned + Default + PartialEq + Debug,
{
    let inputs = &base.inputs;
    let cmd = A::augment_args(clap::Command::new("stage"));
    let options: BTreeSet<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .filter(|long| !inputs.0.iter().any(|(i, _)| i == long))
        .filter(|long| !base.elsewhere.contains(&long.as_str()))
        .collect();
    let covered: BTreeSet<String> = cases
        .iter()
        .map(|c| c.cli[0].trim_start_matches("--").to_string())
        .collect();
    assert_eq!(
        options, covered,
        "every option of the command has its case, and no more"
    );
    let read = |text: &str| -> S {
        toml::from_str(text).unwrap_or_else(|e| panic!("the file's `{text}`: {e}"))
    };
    let baseline = read(base.toml);
    if base.toml.is_empty() {
        assert_eq!(baseline, S::default(), "an empty section is the default");
    }
    let plain = parse::<A>(inputs, &[]).unwrap_or_else(|e| panic!("the inputs alone: {e}"));
    assert_eq!(
        section(&plain),
        baseline,
        "no option: the pipeline file's defaults"
    );
    let mut reached: BTreeSet<String> = toml::from_str::<toml::Table>(base.toml)
        .expect("a TOML table")
        .keys()
        .cloned()
        .collect();
    for case in cases {
        let args = parse::<A>(inputs, case.cli).unwrap_or_else(|e| panic!("{:?}: {e}", case.cli));
        let file = read(&format!("{}\n{}", base.toml, case.toml));
        assert_eq!(
            section(&args),
            file,
            "{:?} writes what `{}` does",
            case.cli,
            case.toml
        );
        let is_default = file == baseline;
        assert!(
            !is_default || defaults.contains(&case.cli[0]),
            "{:?} changes nothing",
            case.cli
        );
        let table: toml::Table = toml::from_str(case.toml).expect("a TOML table");
        reached.extend(table.keys().cloned());
    }
    reached.extend(base.run_only.iter().map(|k| k.to_string()));
    assert_eq!(
        reached,
        section_keys::<S>(),
        "every key of the section has its option"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexbench_pipeline::pipeline_file::ProcessSection;

    /// `flexbench process` against `[process]`.
    #[test]
    fn process_options_are_the_sections_keys() {
        let inputs = Inputs(&[
            ("tracks", "t.csv"),
            ("mechanism", "m.toml"),
            ("out", "out"),
            ("flags", "flags.csv"),
            ("calibration", "c.yaml"),
        ]);
        let cases = [
            Case {
                cli: &["--method", "butterworth"],
                toml: "method = \"butterworth\"",
            },
            Case {
                cli: &["--smoother"],
                toml: "method = \"smoother\"",
            },
            Case {
                cli: &["--savgol"],
                toml: "method = \"savgol\"",
            },
            Case {
                cli: &["--butterworth"],
                toml: "method = \"butterworth\"",
            },
            Case {
                cli: &["--spline"],
                toml: "method = \"spline\"",
            },
            Case {
                cli: &["--window", "9"],
                toml: "window = 9",
            },
            Case {
                cli: &["--order", "3"],
                toml: "order = 3",
            },
            Case {
                cli: &["--edges", "mirror"],
                toml: "edges = \"mirror\"",
            },
            Case {
                cli: &["--filter-order", "3"],
                toml: "filter_order = 3",
            },
            Case {
                cli: &["--cutoff-hz", "6.5"],
                toml: "cutoff_hz = 6.5",
            },
            Case {
                cli: &["--cutoff-by", "durbin-watson"],
                toml: "cutoff_by = \"durbin-watson\"",
            },
            Case {
                cli: &["--noise-band-hz", "20,50"],
                toml: "noise_band_hz = [20.0, 50.0]",
            },
            Case {
                cli: &["--spline-degree", "3"],
                toml: "spline_degree = 3",
            },
            Case {
                cli: &["--noise-m", "1e-4"],
                toml: "noise_m = 1e-4",
            },
            Case {
                cli: &["--periodic", "off"],
                toml: "periodic = \"off\"",
            },
            Case {
                cli: &["--refine-horizontal", "on"],
                toml: "refine_horizontal = true",
            },
            Case {
                cli: &["--peak-locking", "off"],
                toml: "peak_locking = \"off\"",
            },
            Case {
                cli: &["--max-condition", "0.5"],
                toml: "max_condition = 0.5",
            },
            Case {
                cli: &["--keep-flagged"],
                toml: "keep_flagged = true",
            },
            Case {
                cli: &["--false-alarm", "1e-3"],
                toml: "false_alarm = 1e-3",
            },
            Case {
                cli: &["--stabilise"],
                toml: "stabilise = true",
            },
            Case {
                cli: &["--calibrate-bands", "4"],
                toml: "calibrate_bands = 4",
            },
        ];
        walk(
            inputs,
            &cases,
            &["--smoother"],
            crate::process::ProcessArgs::section,
        );
    }

    /// `flexbench smooth` against `[smooth]`.
    #[test]
    fn smooth_options_are_the_sections_keys() {
        let inputs = Inputs(&[
            ("tracks", "t.csv"),
            ("out", "m.csv"),
            ("pipeline", "p.toml"),
            ("mechanism", "m.toml"),
        ]);
        let cases = [
            Case {
                cli: &["--method", "butterworth"],
                toml: "method = \"butterworth\"",
            },
            Case {
                cli: &["--unit", "mm"],
                toml: "unit = \"mm\"",
            },
            Case {
                cli: &["--window", "9"],
                toml: "window = 9",
            },
            Case {
                cli: &["--order", "3"],
                toml: "order = 3",
            },
            Case {
                cli: &["--noise-m", "1e-4"],
                toml: "noise_m = 1e-4",
            },
            Case {
                cli: &["--snap-density", "200"],
                toml: "snap_density = 200.0",
            },
            Case {
                cli: &["--frequency-hz", "1.5"],
                toml: "frequency_hz = 1.5",
            },
            Case {
                cli: &["--harmonics", "0"],
                toml: "harmonics = 0",
            },
            Case {
                cli: &["--filter-order", "3"],
                toml: "filter_order = 3",
            },
            Case {
                cli: &["--cutoff-hz", "6.5"],
                toml: "cutoff_hz = 6.5",
            },
            Case {
                cli: &["--cutoff-by", "durbin-watson"],
                toml: "cutoff_by = \"durbin-watson\"",
            },
            Case {
                cli: &["--noise-band-hz", "20,50"],
                toml: "noise_band_hz = [20.0, 50.0]",
            },
            Case {
                cli: &["--spline-degree", "3"],
                toml: "spline_degree = 3",
            },
            Case {
                cli: &["--rigid-field"],
                toml: "rigid_field = true",
            },
        ];
        walk(inputs, &cases, &[], crate::smooth::SmoothArgs::settings);
    }

    /// The measured table's options, shared by `compare` and `identify` (`MeasuredArgs`) and
    /// read into the same keys by both.
    const MEASURED: [Case; 4] = [
        Case {
            cli: &["--measured-column", "torque=motor_torque"],
            toml: "measured_columns = { torque = \"motor_torque\" }",
        },
        Case {
            cli: &["--measured-time", "time"],
            toml: "measured_time = \"time\"",
        },
        Case {
            cli: &["--measured-offset", "-0.25"],
            toml: "measured_offset_s = -0.25",
        },
        Case {
            cli: &["--measured-cutoff", "10"],
            toml: "measured_cutoff_hz = 10.0",
        },
    ];

    /// `flexbench compare` against `[compare]` (`--measured`, the table, is `[inputs]`'s).
    #[test]
    fn compare_options_are_the_sections_keys() {
        let inputs = Inputs(&[
            ("processed", "process"),
            ("mechanism", "m.toml"),
            ("measured", "rig.csv"),
            ("out", "out"),
        ]);
        let own = [
            Case {
                cli: &["--harmonics", "12"],
                toml: "harmonics = 12",
            },
            Case {
                cli: &["--max-lag", "0.1"],
                toml: "max_lag_s = 0.1",
            },
        ];
        let cases: Vec<Case> = own.into_iter().chain(MEASURED).collect();
        let section = |a: &crate::compare::CompareArgs| a.section().expect("the section");
        walk(inputs, &cases, &[], section);
    }

    /// `flexbench calibrate` against `[calibrate]`: the views, clicked pixels, points, video
    /// and the tracks of `--from-motion` (with its start and mechanism) are `[inputs]`'s.
    #[test]
    fn calibrate_options_are_the_sections_keys() {
        let base = Base {
            inputs: Inputs(&[("out", "c.yaml")]),
            toml: "",
            elsewhere: &[
                "views",
                "plane-view",
                "origin",
                "horizontal",
                "clicks",
                "points",
                "video",
                "start",
                "mechanism",
            ],
            run_only: &[],
        };
        let cases = [
            Case {
                cli: &["--board", "7x5"],
                toml: "board = \"7x5\"",
            },
            Case {
                cli: &["--square", "0.03"],
                toml: "square = 0.03",
            },
            Case {
                cli: &["--detector", "classic"],
                toml: "detector = \"classic\"",
            },
            Case {
                cli: &["--subpix-window", "5"],
                toml: "subpix_window = 5",
            },
            Case {
                cli: &[
                    "--charuco",
                    "7x5",
                    "--marker",
                    "0.02",
                    "--dictionary",
                    "4x4_50",
                ],
                toml: "charuco = \"7x5\"\nmarker = 0.02\ndictionary = \"4x4_50\"",
            },
            Case {
                cli: &["--marker", "0.02"],
                toml: "marker = 0.02",
            },
            Case {
                cli: &["--dictionary", "6x6_250"],
                toml: "dictionary = \"6x6_250\"",
            },
            Case {
                cli: &["--nominal-camera", "640x480", "--points", "p.toml"],
                toml: "nominal_camera = \"640x480\"",
            },
            Case {
                cli: &[
                    "--focal-px",
                    "900",
                    "--nominal-camera",
                    "640x480",
                    "--points",
                    "p.toml",
                ],
                toml: "focal_px = 900.0\nnominal_camera = \"640x480\"",
            },
            Case {
                cli: &[
                    "--distortion",
                    "-0.1,0.02",
                    "--nominal-camera",
                    "640x480",
                    "--points",
                    "p",
                ],
                toml: "distortion = [-0.1, 0.02, 0.0, 0.0, 0.0]\nnominal_camera = \"640x480\"",
            },
            Case {
                cli: &[
                    "--from-motion",
                    "t.csv",
                    "--start",
                    "s.yaml",
                    "--mechanism",
                    "m.toml",
                ],
                toml: "from_motion = true",
            },
        ];
        let section = |a: &crate::calibrate::CalibrateArgs| a.section().expect("the section");
        walk_on(base, &cases, &[], section);
        for refused in [
            &[
                "--from-motion",
                "t.csv",
                "--start",
                "s",
                "--mechanism",
                "m",
                "--square",
                "0.03",
            ][..],
            &[
                "--nominal-camera",
                "640x480",
                "--points",
                "p",
                "--board",
                "7x5",
            ],
        ] {
            let inputs = Inputs(&[("out", "c.yaml")]);
            let e = parse::<crate::calibrate::CalibrateArgs>(&inputs, refused).err();
            assert!(e.is_some(), "{refused:?}: a setting the mode does not use");
        }
    }

    /// `flexbench overlay` against `[overlay]`: the video, calibration, tracks, flags, process
    /// folder and mechanism are the run's inputs.
    #[test]
    fn overlay_options_are_the_sections_keys() {
        let base = Base {
            inputs: Inputs(&[
                ("video", "v.mp4"),
                ("calibration", "c.yaml"),
                ("tracks", "t.parquet"),
                ("flags", "f.parquet"),
                ("processed", "process"),
                ("mechanism", "m.toml"),
                ("out", "overlay"),
            ]),
            toml: "",
            elsewhere: &[],
            run_only: &["enabled"],
        };
        let cases = [Case {
            cli: &["--plain"],
            toml: "plain = true",
        }];
        walk_on(base, &cases, &[], crate::overlay::OverlayArgs::section);
    }

    /// `flexbench track` against `[track]` (the corrections and templates files are
    /// `[inputs]`'s).
    #[test]
    fn track_options_are_the_sections_keys() {
        let inputs = Inputs(&[
            ("video", "v.mp4"),
            ("calibration", "c.yaml"),
            ("out", "t.csv"),
            ("mechanism", "m.toml"),
            ("corrections", "corrections.toml"),
            ("templates", "templates.toml"),
        ]);
        let cases = [
            Case {
                cli: &["--markers", "B1, B2"],
                toml: "markers = [\"B1\", \"B2\"]",
            },
            Case {
                cli: &["--threshold", "60"],
                toml: "threshold = 60.0",
            },
            Case {
                cli: &["--min-area", "500"],
                toml: "min_area = 500.0",
            },
            Case {
                cli: &["--max-area", "9000"],
                toml: "max_area = 9000.0",
            },
            Case {
                cli: &["--estimate-depth"],
                toml: "estimate_depth = true",
            },
            Case {
                cli: &["--readout", "0.0035"],
                toml: "readout_s = 0.0035",
            },
            Case {
                cli: &["--estimate-readout"],
                toml: "estimate_readout = true",
            },
            Case {
                cli: &["--false-alarm", "1e-3"],
                toml: "false_alarm = 1e-3",
            },
            Case {
                cli: &["--frame-rate", "30"],
                toml: "frame_rate = 30.0",
            },
            Case {
                cli: &["--capture-rate", "240"],
                toml: "capture_rate = 240.0",
            },
        ];
        walk(inputs, &cases, &[], crate::track::TrackArgs::section);
        let args: crate::track::TrackArgs = parse(
            &Inputs(&[("video", "v"), ("calibration", "c"), ("out", "o")]),
            &["--min-area", "50", "--max-area", "40"],
        )
        .expect("parsed");
        let err = args
            .section()
            .config(None, None, None)
            .expect_err("refused");
        assert!(
            err.to_string()
                .contains("[track] min_area (--min-area) = 50"),
            "{err}"
        );
    }

    /// `flexbench identify` against the identify job's settings (the Python package's keyword
    /// arguments; the pipeline file's `[identify]` and `[compare]`'s `measured_*` keys make the
    /// same type).
    #[test]
    fn identify_options_are_the_jobs_settings() {
        use flexbench_pipeline::identify::IdentifySpec;
        let inputs = Inputs(&[
            ("processed", "process"),
            ("mechanism", "m.toml"),
            ("measured", "rig.csv"),
            ("out", "out"),
            ("free", "k,mw"),
        ]);
        let own = [
            Case {
                cli: &["--no-offset"],
                toml: "free_offset = false",
            },
            Case {
                cli: &["--cutoff", "5"],
                toml: "cutoff_hz = 5.0",
            },
            Case {
                cli: &["--unfiltered"],
                toml: "unfiltered = true",
            },
            Case {
                cli: &["--bootstrap", "0"],
                toml: "bootstrap = 0",
            },
            Case {
                cli: &["--seed", "7"],
                toml: "seed = 7",
            },
        ];
        let cases: Vec<Case> = own.into_iter().chain(MEASURED).collect();
        let base = Base {
            inputs,
            toml: "free = [\"k\", \"mw\"]",
            elsewhere: &[],
            run_only: &[],
        };
        let spec = |a: &crate::identify::IdentifyArgs| -> IdentifySpec {
            crate::identify::spec(a).expect("the settings")
        };
        walk_on(base, &cases, &[], spec);
        let refused: crate::identify::IdentifyArgs = parse(
            &Inputs(&[
                ("processed", "p"),
                ("mechanism", "m"),
                ("out", "o"),
                ("free", "k"),
            ]),
            &["--cutoff", "0"],
        )
        .expect("parsed");
        let err = crate::identify::spec(&refused)
            .expect("read")
            .check()
            .expect_err("refused");
        assert!(
            err.to_string()
                .contains("[identify] cutoff_hz = 0 (--cutoff)"),
            "{err}"
        );
    }

    /// `flexbench fem` against `[fem]`.
    #[test]
    fn fem_options_are_the_sections_keys() {
        let inputs = Inputs(&[
            ("kinematics", "bodies.csv"),
            ("forces", "forces.csv"),
            ("mechanism", "m.toml"),
            ("measured", "fit_residuals.csv"),
            ("out", "out"),
        ]);
        let cases = [
            Case {
                cli: &["--elements", "12"],
                toml: "elements = 12",
            },
            Case {
                cli: &["--element", "frame"],
                toml: "element = \"frame\"",
            },
            Case {
                cli: &["--supports", "free-free"],
                toml: "supports = \"free-free\"",
            },
            Case {
                cli: &["--modes", "4"],
                toml: "modes = 4",
            },
            Case {
                cli: &["--damping", "0.05"],
                toml: "damping = 0.05",
            },
            Case {
                cli: &["--step", "1e-4"],
                toml: "step = 1e-4",
            },
            Case {
                cli: &["--no-response"],
                toml: "response = false",
            },
        ];
        walk(inputs, &cases, &[], crate::fem::FemArgs::section);
        let args: crate::fem::FemArgs = parse(
            &Inputs(&[
                ("kinematics", "k"),
                ("forces", "f"),
                ("mechanism", "m"),
                ("out", "o"),
            ]),
            &["--elements", "0"],
        )
        .expect("parsed");
        let err = args
            .section()
            .config(None)
            .expect_err("refused")
            .to_string();
        assert!(err.contains("[fem] elements = 0"), "{err}");
    }

    /// The same section refused alike from the command line and the file: the command's
    /// `--max-condition 0.5` (accepted before) and a key of another method.
    #[test]
    fn process_refusals_are_the_files() {
        let inputs = Inputs(&[("tracks", "t"), ("mechanism", "m"), ("out", "o")]);
        for (cli, key) in [
            (&["--max-condition", "0.5"][..], "max_condition"),
            (&["--false-alarm", "0.7"][..], "false_alarm"),
            (&["--cutoff-hz", "6"][..], "cutoff_hz"),
            (&["--savgol", "--periodic"][..], "periodic"),
            (&["--spline", "--noise-m=-1"][..], "noise_m"),
        ] {
            let args: crate::process::ProcessArgs = parse(&inputs, cli).expect("parsed");
            let err = args.section().config().expect_err("refused").to_string();
            assert!(err.contains(&format!("[process] {key}")), "{cli:?}: {err}");
        }
        let ok: crate::process::ProcessArgs =
            parse(&inputs, &["--savgol", "--window", "9"]).expect("parsed");
        assert!(ok.section().config().is_ok());
        assert_eq!(section_keys::<ProcessSection>().len(), 18);
    }
}
